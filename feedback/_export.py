"""Exports: feedback as JSONL or CSV, and incidents written through the bot as corpus YAML."""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from collections.abc import Iterator

import yaml

from servetriage._settings import Settings

from ._errors import FeedbackError
from ._incidents import NewIncident
from ._store import FeedbackStore

if TYPE_CHECKING:
    from servetriage.corpus import Corpus

FORMATS = ("jsonl", "csv")
EXAMPLE_LINES = 20
CSV_FIELDS = ("vote_id", "diagnosis_id", "user", "vote", "source", "created", "updated", "team", "channel",
              "thread_ts", "reply_ts", "predicted", "confidence", "predicted_incident", "model_version",
              "corrected_category", "corrected_incident", "new_incident", "trusted", "throttled", "example_id",
              "example_label", "example_holdout", "excerpt_hash", "excerpt")


@contextlib.contextmanager
def output(path: str | None) -> Iterator[IO[str]]:
    """stdout for '-' (or None); else a file written whole or not at all (temporary file, then rename)."""
    if not path or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    dest = Path(path)
    if dest.is_dir():
        raise FeedbackError(f"{dest}: is a directory")
    if not dest.parent.is_dir():
        raise FeedbackError(f"{dest.parent}: no such directory")
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=str(dest.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            yield fh
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_feedback(store: FeedbackStore, fh: IO[str], fmt: str = "jsonl", with_excerpt: bool = True) -> int:
    if fmt not in FORMATS:
        raise FeedbackError(f"unknown format {fmt!r} (jsonl or csv)")
    n = 0
    if fmt == "jsonl":
        for row in store.votes.export_rows({e.diagnosis_id: e for e in store.training.examples()}, with_excerpt):
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
        return n
    fields = [f for f in CSV_FIELDS if with_excerpt or f != "excerpt"]
    writer = csv.DictWriter(fh, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    for row in store.votes.export_rows({e.diagnosis_id: e for e in store.training.examples()}, with_excerpt):
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
        n += 1
    return n


# -- incidents as corpus YAML -------------------------------------------------------------------------
class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def incident_entry(inc: NewIncident, store: FeedbackStore, corpus: Corpus) -> dict[str, Any]:
    """One corpus incident (corpus/SCHEMA.md) for a reviewer to finish: signatures are left to them."""
    row = store.replies.get(inc.diagnosis_id) if inc.diagnosis_id else None
    shown = ""
    if row is not None:
        d = row.diagnosis or {}
        first = (d.get("initiating") or {}).get("text") or next((e.get("text") for e in d.get("evidence") or []), "")
        shown = " ".join(str(first).split())[:300]
    classes = Counter(i.klass for i in corpus.incidents if i.category == inc.category)
    entry: dict[str, Any] = {
        "id": inc.id,
        "category": inc.category,
        "engines": list(inc.engines or ("any",)),
        "title": inc.title,
        "symptom": f"On-call reported it in Slack; the log shows: {shown}" if shown else f"On-call reported: {inc.title}",
        "cause": inc.cause,
        "first_action": inc.first_action,
        "fix_or_status": "Unknown: written by on-call through the bot, not reviewed yet.",
        "class": classes.most_common(1)[0][0] if classes else "Environment / runtime",
        "signatures": [],
        "examples": [example_of(row.excerpt)] if row is not None and row.excerpt.strip() else [],
        "sources": [f"feedback:{inc.diagnosis_id}"],
    }
    return entry


def example_of(excerpt: str, limit: int = EXAMPLE_LINES) -> str:
    """At most `limit` lines of the (redacted) excerpt, starting a little before its first fault line."""
    from servetriage.classifier import extract  # noqa: PLC0415

    lines = [l for l in excerpt.splitlines() if l.strip()]
    if len(lines) <= limit:
        return "\n".join(lines) + "\n"
    salient = [l.no for l in extract("\n".join(lines)).lines if l.exception or l.level in ("ERROR", "FATAL", "CRITICAL")]
    start = max(0, (salient[0] - 1 if salient else len(lines) - limit) - 3)
    start = min(start, len(lines) - limit)
    return "\n".join(lines[start:start + limit]) + "\n"


HEADER = ("# Incidents written by on-call through the servetriage bot (`servetriage corpus export`).\n"
          "# Review each before moving it into corpus/incidents/: add signatures, trim the example to the\n"
          "# failure, replace the feedback: source with the issue or document it came from.\n")


def export_incidents(args: argparse.Namespace, settings: Settings) -> int:
    from servetriage.corpus import load_corpus  # noqa: PLC0415

    corpus = load_corpus(settings.extra_corpus_dirs)
    if not settings.db_path.is_file():
        entries: list[dict[str, Any]] = []
    else:
        with FeedbackStore.open(settings) as store:
            incidents = store.incidents.all()
            entries = [incident_entry(inc, store, corpus) for inc in incidents]
            if incidents and getattr(args, "output", "-") not in (None, "-"):
                store.incidents.mark_exported([i.id for i in incidents])
    text = HEADER + yaml.dump({"incidents": entries}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
    with output(getattr(args, "output", "-")) as fh:
        fh.write(text)
    print(f"exported {len(entries)} incident(s) written through the bot", file=sys.stderr)
    return 0

