"""Loading the spec and the incident files into `Corpus`, with schema errors that name file and entry."""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import re2
import yaml

from servetriage._errors import CorpusError
from servetriage._re2 import QUIET

from ._types import (ENGINES, TRIAGE_CLASSES, UNKNOWN, Category, CodePath, Corpus, Incident, Lifecycle, MessagePath,
                     OptionDoc, PrintoutBlock, Signature)

# libyaml's safe loader reads the corpus about ten times faster than the pure-Python one.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_REQUIRED = ("id", "category", "engines", "title", "symptom", "cause", "first_action", "fix_or_status",
             "class", "signatures", "examples", "sources")
_OPTIONAL = ("section", "verify", "overlaps", "recovery")


def builtin_dir() -> Path:
    """The packaged corpus directory (categories.yaml and incidents/)."""
    return Path(str(resources.files("servetriage.corpus")))


def load_categories(path: Path | None = None) -> dict[str, Category]:
    path = path or builtin_dir() / "categories.yaml"
    data = _read_yaml(path)
    cats = data.get("categories") if isinstance(data, dict) else None
    if not isinstance(cats, dict) or not cats:
        raise CorpusError(f"{path}: expected a mapping under 'categories'")
    out: dict[str, Category] = {}
    for cid, body in cats.items():
        if not isinstance(body, dict):
            raise CorpusError(f"{path}: category {cid!r} is not a mapping")
        out[cid] = Category(
            id=cid,
            title=str(body.get("title", cid)),
            meaning=str(body.get("meaning", "")),
            first_look=str(body.get("first_look", "")),
            signatures=tuple(str(s) for s in body.get("signatures") or ()),
            cues=tuple(str(c) for c in body.get("cues") or ()),
            symptom=body.get("role") == "symptom",
        )
    if UNKNOWN not in out:
        raise CorpusError(f"{path}: the spec must define the '{UNKNOWN}' category")
    return out


def incident_files(extra_dirs: Iterable[Path] = ()) -> list[Path]:
    dirs = [builtin_dir() / "incidents", *extra_dirs]
    files: list[Path] = []
    for d in dirs:
        if not d.is_dir():
            raise CorpusError(f"corpus directory not found: {d}")
        files.extend(sorted(d.glob("*.yaml")))
    return files


def load_corpus(extra_dirs: Iterable[Path] = (), categories_path: Path | None = None,
                extra_incidents: Iterable[Incident] = ()) -> Corpus:
    """Read every incident file; raise `CorpusError` on the first malformed entry."""
    categories = load_categories(categories_path)
    incidents: list[Incident] = []
    for path in incident_files(tuple(extra_dirs)):
        incidents.extend(parse_incidents(_read_yaml(path), categories, origin=path.name))
    incidents.extend(extra_incidents)
    seen: dict[str, str] = {}
    for inc in incidents:
        if inc.id in seen:
            raise CorpusError(f"{inc.origin}: duplicate incident id {inc.id!r} (also in {seen[inc.id]})")
        seen[inc.id] = inc.origin
    precedence = load_precedence(categories)
    lifecycle = load_lifecycle()
    strays = [c for c in lifecycle.stop_categories if c not in categories]
    if strays:
        raise CorpusError(f"lifecycle.yaml: stop_categories names unknown categories {', '.join(strays)}")
    recovery_path, recovery_data = _recovery_yaml(None)
    missing, other_rank = load_missing(categories, recovery_path, recovery_data)
    return Corpus(categories=categories, incidents=tuple(incidents), lifecycle=lifecycle,
                  recovery=load_recovery(categories, recovery_path, recovery_data), missing=missing,
                  other_rank=other_rank, options=load_options(), **precedence)


# How options.yaml spells an option: a long flag, or a snake_case field of an engine's Python API.
OPTION_NAME = re.compile(r"^(--[a-z0-9][a-z0-9-]*[a-z0-9]|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)$")


def load_options(path: Path | None = None) -> dict[str, tuple[OptionDoc, ...]]:
    """options.yaml: per engine option, the engines' documentation pages that explain it (pages are
    declared once under `pages` and named by id under `options`)."""
    path = path or builtin_dir() / "options.yaml"
    data = _read_yaml(path) if path.is_file() else {}
    if not isinstance(data, dict) or set(data) - {"pages", "options"}:
        raise CorpusError(f"{path}: expected a mapping with 'pages' and 'options'")
    pages_in, options_in = data.get("pages") or {}, data.get("options") or {}
    if not isinstance(pages_in, dict) or not isinstance(options_in, dict):
        raise CorpusError(f"{path}: 'pages' and 'options' must be mappings")
    pages: dict[str, OptionDoc] = {}
    for pid, page in pages_in.items():
        where = f"{path}: pages.{pid}"
        if not isinstance(page, dict) or set(page) != {"engine", "title", "url"} \
                or not all(isinstance(v, str) and v.strip() for v in page.values()):
            raise CorpusError(f"{where}: expected engine, title and url, each a string")
        if page["engine"] not in ENGINES or page["engine"] == "any":
            raise CorpusError(f"{where}: engine must be one of {', '.join(e for e in ENGINES if e != 'any')}")
        if not re.match(r"^https://[^\s\"'<>]+$", page["url"]):
            raise CorpusError(f"{where}: url must be an https:// address")
        pages[str(pid)] = OptionDoc(engine=page["engine"], title=page["title"].strip(), url=page["url"])
    out: dict[str, tuple[OptionDoc, ...]] = {}
    for name, ids in options_in.items():
        where = f"{path}: options.{name}"
        if not isinstance(name, str) or not OPTION_NAME.match(name):
            raise CorpusError(f"{where}: an option is a --flag or a snake_case name")
        if not _is_str_list(ids) or not ids or len(set(ids)) != len(ids):
            raise CorpusError(f"{where}: expected a list of page ids")
        strays = [i for i in ids if i not in pages]
        if strays:
            raise CorpusError(f"{where}: unknown page {strays[0]!r} (declare it under 'pages')")
        out[name] = tuple(pages[i] for i in ids)
    return out


RECOVERY_STARTS = ("Restart required", "Retry is safe", "Change the config first", "Drain the node")


def _recovery_yaml(path: Path | None) -> tuple[Path, Any]:
    path = path or builtin_dir() / "recovery.yaml"
    return path, (_read_yaml(path) if path.is_file() else {})


def load_missing(categories: dict[str, Category], path: Path | None = None,
                 data: Any = None) -> tuple[dict[str, str], str]:
    """recovery.yaml: what to fetch when the answer is only a symptom (`missing`), and the line used
    when a log names another rank as the one that failed (`other_rank`, with a {rank} slot).
    `data`: the file already read (load_corpus reads it once for both tables)."""
    if data is None:
        path, data = _recovery_yaml(path)
    missing = data.get("missing") or {} if isinstance(data, dict) else {}
    other = data.get("other_rank") or "" if isinstance(data, dict) else ""
    if not isinstance(missing, dict) or not all(isinstance(v, str) and v for v in missing.values()):
        raise CorpusError(f"{path}: 'missing' maps a category to what to fetch")
    strays = [c for c in missing if c not in categories]
    if strays:
        raise CorpusError(f"{path}: 'missing' names unknown categories {', '.join(strays)}")
    if other and "{rank}" not in other:
        raise CorpusError(f"{path}: 'other_rank' needs a {{rank}} slot")
    return dict(missing), str(other)


def load_recovery(categories: dict[str, Category], path: Path | None = None,
                  data: Any = None) -> dict[str, tuple[str, str]]:
    """recovery.yaml: per category, what to do with the process and how to verify the fix."""
    if data is None:
        path, data = _recovery_yaml(path)
    table = data.get("categories") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise CorpusError(f"{path}: expected a mapping under 'categories'")
    out: dict[str, tuple[str, str]] = {}
    for cid, entry in table.items():
        where = f"{path}: {cid}"
        if cid not in categories or cid == UNKNOWN:
            raise CorpusError(f"{where}: not a category of the spec (or unknown, which needs no recovery)")
        if not isinstance(entry, dict) or set(entry) != {"recovery", "verify"} \
                or not all(isinstance(v, str) and v.strip() for v in entry.values()):
            raise CorpusError(f"{where}: expected recovery and verify, each a sentence")
        if not entry["recovery"].startswith(RECOVERY_STARTS):
            raise CorpusError(f"{where}: recovery must start with one of: {', '.join(RECOVERY_STARTS)}")
        out[cid] = (entry["recovery"].strip(), entry["verify"].strip())
    return out


_LIFECYCLE_LISTS = ("banners", "ready", "started", "progress", "stats", "stopping", "stopped", "printouts")
_SEVERITIES = ("fatal", "error", "warning")


def load_lifecycle(path: Path | None = None) -> Lifecycle:
    """lifecycle.yaml: run boundaries, progress, orderly stops, printouts and severity words, each
    pattern compiled with RE2 here so that a bad one is refused on load, not at the first paste."""
    path = path or builtin_dir() / "lifecycle.yaml"
    data = _read_yaml(path) if path.is_file() else {}
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected a mapping")
    unknown = sorted(set(data) - set(_LIFECYCLE_LISTS) - {"printout_blocks", "severity", "stop_categories", "setup"})
    if unknown:
        raise CorpusError(f"{path}: unknown keys {', '.join(unknown)}")
    lists = {key: _patterns(data.get(key) or [], f"{path}: {key}") for key in _LIFECYCLE_LISTS}
    severity = data.get("severity") or {}
    if not isinstance(severity, dict) or set(severity) - set(_SEVERITIES):
        raise CorpusError(f"{path}: 'severity' maps {', '.join(_SEVERITIES)} to lists of patterns")
    levels = {key: _patterns(severity.get(key) or [], f"{path}: severity.{key}") for key in _SEVERITIES}
    blocks = []
    for n, entry in enumerate(data.get("printout_blocks") or []):
        where = f"{path}: printout_blocks[{n}]"
        if not isinstance(entry, dict) or set(entry) != {"start", "max_lines"}:
            raise CorpusError(f"{where}: expected a mapping with start and max_lines")
        if not isinstance(entry["max_lines"], int) or not 0 < entry["max_lines"] <= 10_000:
            raise CorpusError(f"{where}: max_lines must be a whole number from 1 to 10000")
        blocks.append(PrintoutBlock(_patterns([entry["start"]], where)[0], entry["max_lines"]))
    setup = data.get("setup") or {}
    if not isinstance(setup, dict):
        raise CorpusError(f"{path}: 'setup' maps a name to a list of patterns with one capture group")
    for name, pats in setup.items():
        for pattern in _patterns(pats, f"{path}: setup.{name}"):
            if re.compile(pattern).groups != 1:
                raise CorpusError(f"{path}: setup.{name}: {pattern!r} needs exactly one capture group")
    stop_categories = data.get("stop_categories") or []
    if not _is_str_list(stop_categories) and stop_categories != []:
        raise CorpusError(f"{path}: stop_categories must be a list of category ids")
    return Lifecycle(**lists, printout_blocks=tuple(blocks), stop_categories=tuple(stop_categories),
                     setup=tuple((str(k), tuple(v)) for k, v in setup.items()), **levels)


def _patterns(value: Any, where: str) -> tuple[str, ...]:
    if not _is_str_list(value) and value != []:
        raise CorpusError(f"{where}: expected a list of RE2 patterns")
    for pattern in value:
        try:
            re2.compile(pattern, QUIET)
        except re2.error:
            raise CorpusError(f"{where}: {pattern!r} is not a valid RE2 pattern") from None
    return tuple(value)


def load_precedence(categories: dict[str, Category], path: Path | None = None) -> dict[str, Any]:
    """precedence.yaml: downstream categories (plus the spec's symptoms), kernel faults, feature code paths
    and markers, and the code paths that attribute an unnamed exception."""
    path = path or builtin_dir() / "precedence.yaml"
    data = (_read_yaml(path) or {}) if path.is_file() else {}
    if not isinstance(data, dict):
        raise CorpusError(f"{path}: expected a mapping")
    downstream = data.get("downstream") or []
    kernel = data.get("kernel_faults") or []
    paths = data.get("feature_code_paths") or {}
    markers = data.get("feature_markers") or {}
    explains = data.get("explains") or {}
    details = data.get("details") or {}
    for name, table in (("explains", explains), ("details", details)):
        if not isinstance(table, dict) or not all(_is_str_list(v) and all(c in categories for c in v)
                                                  for v in table.values()):
            raise CorpusError(f"{path}: '{name}' must map a category id to a list of category ids")
    if not isinstance(paths, dict) or not isinstance(markers, dict):
        raise CorpusError(f"{path}: 'feature_code_paths' and 'feature_markers' must be mappings")
    for name, ids in (("downstream", downstream), ("kernel_faults", kernel), ("feature_code_paths", list(paths)),
                      ("feature_markers", list(markers)), ("explains", list(explains)), ("details", list(details))):
        if not isinstance(ids, list) or any(c not in categories for c in ids):
            raise CorpusError(f"{path}: '{name}' must name category ids from the spec")
    for name, table in (("feature_code_paths", paths), ("feature_markers", markers)):
        if not all(_is_str_list(v) for v in table.values()):
            raise CorpusError(f"{path}: each entry of '{name}' must be a list of non-empty strings")
    return {
        "downstream": frozenset(c for c, cat in categories.items() if cat.symptom) | frozenset(downstream),
        "kernel_faults": frozenset(kernel),
        "feature_code_paths": {c: tuple(v) for c, v in paths.items()},
        "feature_markers": {c: tuple(v) for c, v in markers.items()},
        "code_paths": _code_paths(data.get("code_paths") or [], categories, path),
        "message_paths": _message_paths(data.get("message_paths") or [], categories, path),
        "generic_messages": _patterns(data.get("generic_messages") or [], f"{path}: generic_messages"),
        "explains": {c: frozenset(v) for c, v in explains.items()},
        "details": {c: frozenset(v) for c, v in details.items()},
    }


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) and x for x in value)


def _code_paths(entries: Any, categories: dict[str, Category], path: Path) -> tuple[CodePath, ...]:
    if not isinstance(entries, list):
        raise CorpusError(f"{path}: 'code_paths' must be a list")
    out = []
    for n, entry in enumerate(entries):
        where = f"{path}: code_paths[{n}]"
        if not isinstance(entry, dict) or set(entry) - {"category", "frames", "exceptions", "words"}:
            raise CorpusError(f"{where}: expected a mapping with category, frames and optional exceptions and words")
        if entry.get("category") not in categories or entry["category"] == UNKNOWN:
            raise CorpusError(f"{where}: unknown category {entry.get('category')!r}")
        if not _is_str_list(entry.get("frames")) or not entry["frames"]:
            raise CorpusError(f"{where}: frames must be a non-empty list of strings")
        if "exceptions" in entry and not _is_str_list(entry["exceptions"]):
            raise CorpusError(f"{where}: exceptions must be a list of exception type names")
        words = entry.get("words")
        if words is not None:
            if not isinstance(words, str) or not words:
                raise CorpusError(f"{where}: words must be an RE2 pattern")
            _patterns([words], where)
        out.append(CodePath(entry["category"], tuple(entry["frames"]), tuple(entry.get("exceptions") or ()), words))
    return tuple(out)


def _message_paths(entries: Any, categories: dict[str, Category], path: Path) -> tuple[MessagePath, ...]:
    if not isinstance(entries, list):
        raise CorpusError(f"{path}: 'message_paths' must be a list")
    out = []
    for n, entry in enumerate(entries):
        where = f"{path}: message_paths[{n}]"
        if not isinstance(entry, dict) or set(entry) - {"category", "paths", "words", "warnings"}:
            raise CorpusError(f"{where}: expected a mapping with category, paths and optional words and warnings")
        if entry.get("category") not in categories or entry["category"] == UNKNOWN:
            raise CorpusError(f"{where}: unknown category {entry.get('category')!r}")
        if not _is_str_list(entry.get("paths")) or not entry["paths"]:
            raise CorpusError(f"{where}: paths must be a non-empty list of path fragments")
        words = entry.get("words")
        if words is not None:
            if not isinstance(words, str) or not words:
                raise CorpusError(f"{where}: words must be an RE2 pattern")
            _patterns([words], where)
        warnings = entry.get("warnings", False)
        if not isinstance(warnings, bool) or (warnings and words is None):
            raise CorpusError(f"{where}: warnings must be true or false, and true only with words")
        out.append(MessagePath(entry["category"], tuple(entry["paths"]), words, warnings))
    return tuple(out)


def parse_incidents(data: Any, categories: dict[str, Category], origin: str) -> list[Incident]:
    if not isinstance(data, dict) or not isinstance(data.get("incidents"), list):
        raise CorpusError(f"{origin}: expected a mapping with an 'incidents' list")
    return [parse_incident(entry, categories, f"{origin}#{n}", origin) for n, entry in enumerate(data["incidents"])]


def parse_incident(entry: Any, categories: dict[str, Category], where: str, origin: str = "") -> Incident:
    if not isinstance(entry, dict):
        raise CorpusError(f"{where}: an incident must be a mapping")
    where = f"{origin}:{entry.get('id', where)}" if origin else str(entry.get("id", where))
    missing = [k for k in _REQUIRED if k not in entry]
    if missing:
        raise CorpusError(f"{where}: missing {', '.join(missing)}")
    unknown = sorted(set(entry) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise CorpusError(f"{where}: unknown keys {', '.join(unknown)}")
    for key in ("id", "category", "title", "symptom", "cause", "first_action", "fix_or_status", "class"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise CorpusError(f"{where}: {key} must be a non-empty string")
    if entry["category"] not in categories:
        raise CorpusError(f"{where}: unknown category {entry['category']!r}")
    if entry["class"] not in TRIAGE_CLASSES:
        raise CorpusError(f"{where}: class must be one of {', '.join(TRIAGE_CLASSES)}")
    engines = _str_list(entry["engines"], where, "engines")
    bad = [e for e in engines if e not in ENGINES]
    if bad or not engines:
        raise CorpusError(f"{where}: engines must be a non-empty list of {', '.join(ENGINES)}")
    sigs: list[Signature] = []
    for sig in entry["signatures"] or []:
        if isinstance(sig, str):
            sigs.append(Signature(sig))
        elif isinstance(sig, dict) and set(sig) == {"regex"} and isinstance(sig["regex"], str):
            sigs.append(Signature(sig["regex"], regex=True))
        else:
            raise CorpusError(f"{where}: a signature is a string or {{regex: '...'}}")
    examples = _str_list(entry["examples"], where, "examples")
    if not examples:
        raise CorpusError(f"{where}: at least one example is required")
    sources = _str_list(entry["sources"], where, "sources")
    if not sources:
        raise CorpusError(f"{where}: at least one source is required")
    overlaps = _str_list(entry.get("overlaps") or [], where, "overlaps")
    section = entry.get("section")
    if section is not None:
        section = str(section)
    verify = entry.get("verify")
    recovery = entry.get("recovery")
    if recovery is not None and (not isinstance(recovery, str) or not recovery.startswith(RECOVERY_STARTS)):
        raise CorpusError(f"{where}: recovery must start with one of: {', '.join(RECOVERY_STARTS)}")
    return Incident(
        id=entry["id"], category=entry["category"], engines=tuple(engines), title=entry["title"].strip(),
        symptom=entry["symptom"].strip(), cause=entry["cause"].strip(), first_action=entry["first_action"].strip(),
        fix_or_status=entry["fix_or_status"].strip(), klass=entry["class"], signatures=tuple(sigs),
        examples=tuple(examples), sources=tuple(sources), section=section,
        verify=str(verify).strip() if verify else None, overlaps=tuple(overlaps), origin=origin,
        recovery=recovery.strip() if recovery else None,
    )


def _str_list(value: Any, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise CorpusError(f"{where}: {key} must be a list of strings")
    return [str(v) for v in value]


def _read_yaml(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.load(fh, Loader=_LOADER)  # noqa: S506 - a safe loader, the C one when built
    except OSError as exc:
        raise CorpusError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" line {mark.line + 1}" if mark else ""
        raise CorpusError(f"{path}:{at} is not valid YAML") from None
