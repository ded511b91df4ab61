"""Mining the message catalogue: every message an engine's source can print, as a linear-time regex.

An engine only prints what its source contains. The miner reads a source tree and records each message
template with where it comes from: Python `raise X(...)`, `logger.error/warning/exception/critical/
info/debug(...)`, `warnings.warn(...)` and `assert cond, "..."` (read with `ast`, so f-strings,
`%`-formats and `.format()` are understood), and C++ `TLLM_CHECK_WITH_INFO`, `TLLM_THROW`,
`TLLM_LOG_*`, `TORCH_CHECK`, `C10_CUDA_CHECK`-style checks and NCCL's `WARN(...)`/`INFO(...)`, and
stream macros (`XGRAMMAR_CHECK(cond) << "…"`, `LOG(FATAL) << …`): the head the macro prints, then the
literals streamed after it, any other operand a placeholder.
Placeholders become bounded wildcards; the literal text around them is escaped, so every regex is RE2
(no backtracking) and matches the template it came from when its placeholders are rendered.
"""

from __future__ import annotations

import ast
import dataclasses
import gzip
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

MIN_LITERAL = 12          # a template with less literal text than this matches too much to be evidence
MIN_LINE_LITERAL = 24     # ... and a line taken from a message printed over several lines needs this much
MAX_TEMPLATE = 400        # longer messages are cut (the head of a message identifies it)
PY_LEVELS = {"error": "error", "exception": "error", "critical": "error", "fatal": "error", "warning": "warning",
             "warn": "warning", "warning_once": "warning", "info": "info", "info_once": "info", "debug": "debug"}
CPP_MACROS = {  # macro -> (level, index of the first message argument)
    "TLLM_CHECK_WITH_INFO": ("check", 1), "TLLM_THROW": ("raise", 0), "TLLM_LOG_ERROR": ("error", 0),
    "TLLM_LOG_WARNING": ("warning", 0), "TLLM_LOG_INFO": ("info", 0), "TLLM_LOG_DEBUG": ("debug", 0),
    "TLLM_LOG_EXCEPTION": ("error", 1), "TORCH_CHECK": ("check", 1), "TORCH_CHECK_WITH": ("check", 2),
    "TORCH_WARN": ("warning", 0), "TORCH_WARN_ONCE": ("warning", 0), "C10_THROW_ERROR": ("raise", 1),
    "WARN": ("warning", 0), "INFO": ("info", 1),
    "TORCH_INTERNAL_ASSERT": ("check", 1),
    "TLLM_CHECK": ("check", -1),  # no message: TensorRT-LLM prints the condition, "Assertion failed: <cond>"
}
# Stream macros print a fixed head, then what is streamed after them (`<< "text" << value`): the macro
# -> (level, the head; `{cond}` is the checked condition as the preprocessor spells it, `#x`).
CPP_STREAMS = {
    "XGRAMMAR_CHECK": ("check", "Check failed: ({cond}) is false: "),
    "XGRAMMAR_ICHECK": ("check", "Internal check failed: ({cond}) is false: "),
    "XGRAMMAR_LOG(FATAL)": ("error", ""), "XGRAMMAR_LOG_FATAL": ("error", ""),
    "XGRAMMAR_LOG(WARNING)": ("warning", ""), "XGRAMMAR_LOG_WARNING": ("warning", ""),
    "XGRAMMAR_LOG(INFO)": ("info", ""), "XGRAMMAR_LOG_INFO": ("info", ""),
    "LOG(FATAL)": ("error", ""), "LOG(ERROR)": ("error", ""), "LOG(WARNING)": ("warning", ""), "LOG(INFO)": ("info", ""),
}
PLACEHOLDER = "{}"
PY_SUFFIXES = (".py",)
CPP_SUFFIXES = (".cpp", ".cc", ".cu", ".h", ".hpp", ".cuh", ".c")
KEPT_LEVELS = frozenset({"error", "warning", "info", "raise", "assert", "check"})  # debug never reaches a paste

_CPP_CALL = re.compile(r"\b(" + "|".join(re.escape(m) for m in sorted(
    CPP_MACROS, key=len, reverse=True)) + r")\s*\(")
_CPP_STREAM = re.compile(r"(?<![\w.])(" + "|".join(re.escape(m).replace(r"\(", r"\(\s*").replace(r"\)", r"\s*\)")
                                                for m in sorted(CPP_STREAMS, key=len, reverse=True)) + r")(?!\w)")
_CPP_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_CPP_NOT_CODE = re.compile(r"\\\s*\n|//[^\n]*|/\*.*?\*/", re.S)  # a macro's line continuations, comments
_CPP_FORMAT = re.compile(r"%[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfgGcspaA]|%%|\{\}")
_PY_PERCENT = re.compile(r"%(?:\([^)]*\))?[-+ #0]*\d*(?:\.\d+)?[diouxXeEfgGcrsa%]")
_PY_BRACES = re.compile(r"\{[^{}]*\}")
_NUMERIC_SPEC = re.compile(r"[diouxXeEfgG]$")
_LITERAL = re.compile(r"[A-Za-z]")


@dataclasses.dataclass(frozen=True)
class Template:
    """One message an engine can print, and where its source prints it."""

    engine: str
    versions: tuple[str, ...]
    file: str          # source path relative to the tree's root (the package path for Python)
    function: str
    level: str         # error | warning | info | debug | raise | assert | check
    exception: str     # the exception type raised, when `level` is raise
    template: str      # the message, each placeholder written as {}

    @property
    def regex(self) -> str:
        """RE2, matching the message with any values in its placeholders (derived, so not stored)."""
        return template_regex(_regex_parts(self.template))

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), ensure_ascii=False, separators=(",", ":"))

    @property
    def is_cpp(self) -> bool:
        """Printed from C++ (its text reaches Python as an exception's message, or a raw log line)."""
        return self.file.endswith(CPP_SUFFIXES)

    @property
    def literal(self) -> int:
        return len(self.template.replace(PLACEHOLDER, ""))


def template_regex(parts: list[str | None]) -> str:
    """Literal parts escaped, placeholders (None) as lazy wildcards: RE2, linear whatever the line."""
    out = []
    for part in parts:
        out.append(r".*?" if part is None else _escape(part))
    return "".join(out).replace(r".*?.*?", r".*?")


def _escape(text: str) -> str:
    """RE2-safe: metacharacters escaped, a space as any run of whitespace (logs re-wrap messages)."""
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text).replace(" ", r"\s+")


def render(template: str, value: str = "7") -> str:
    """The template with a value in every placeholder (what `corpus check` matches each regex against)."""
    return template.replace(PLACEHOLDER, value)


# -- Python ---------------------------------------------------------------------------------------
def _parts_of(node: ast.AST, names: Mapping[str, list[str | None]] | None = None) -> list[str | None] | None:
    """The message of an expression as literal parts and placeholders; None when it is not a message.
    `names`: the messages bound to names so far (`msg = "…"; raise ValueError(msg)`)."""
    if isinstance(node, ast.Name) and names is not None:
        return names.get(node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        parts: list[str | None] = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            else:
                parts.append(None)
        return parts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _parts_of(node.left, names)
        return _split(left, _PY_PERCENT) if left else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _parts_of(node.left, names), _parts_of(node.right, names)
        if left is None and right is None:
            return None
        return (left or [None]) + (right or [None])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = _parts_of(node.func.value, names)
        return _split(base, _PY_BRACES) if base else None
    return None


def _split(parts: list[str | None], placeholder: re.Pattern[str]) -> list[str | None]:
    out: list[str | None] = []
    for part in parts:
        if part is None:
            out.append(None)
            continue
        pos = 0
        for m in placeholder.finditer(part):
            if m.group(0) in ("%%", "{{", "}}"):
                continue
            out.append(part[pos:m.start()])
            out.append(None)
            pos = m.end()
        out.append(part[pos:])
    return out


class _PyVisitor(ast.NodeVisitor):
    """Messages raised, asserted, logged or warned, also through a name bound to the message first
    (in the function, or as a module constant)."""

    def __init__(self, constants: dict[str, list[str | None]]) -> None:
        self.found: list[tuple[str, str, str, list[str | None]]] = []  # function, level, exception, parts
        self._func: list[str] = []
        self._names: list[dict[str, list[str | None]]] = [constants]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._func.append(node.name)
        self._names.append(dict(self._names[0]))
        self.generic_visit(node)
        self._names.pop()
        self._func.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            parts = _parts_of(node.value, self._names[-1])
            if parts is not None:
                self._names[-1][node.targets[0].id] = parts
            else:
                self._names[-1].pop(node.targets[0].id, None)
        self.generic_visit(node)

    def _add(self, level: str, exception: str, node: ast.AST | None) -> None:
        parts = _parts_of(node, self._names[-1]) if node is not None else None
        if parts:
            self.found.append((self._func[-1] if self._func else "<module>", level, exception, parts))

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            name = exc.func.id if isinstance(exc.func, ast.Name) else \
                exc.func.attr if isinstance(exc.func, ast.Attribute) else "Exception"
            self._add("raise", name, exc.args[0])
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._add("assert", "AssertionError", node.msg)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and node.args:
            owner = func.value
            owner_name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if func.attr in PY_LEVELS and "log" in owner_name.lower():
                parts = _parts_of(node.args[0], self._names[-1])
                if parts:  # logging formats its arguments %-style, lazily
                    self.found.append((self._func[-1] if self._func else "<module>", PY_LEVELS[func.attr], "",
                                       _split(parts, _PY_PERCENT)))
            elif func.attr == "warn" and owner_name == "warnings":
                self._add("warning", "", node.args[0])
        self.generic_visit(node)


def mine_python(source: str) -> list[tuple[str, str, str, list[str | None]]]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    constants: dict[str, list[str | None]] = {}
    for stmt in tree.body:  # module constants, wherever a function below uses them
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            parts = _parts_of(stmt.value)
            if parts is not None:
                constants[stmt.targets[0].id] = parts
    visitor = _PyVisitor(constants)
    visitor.visit(tree)
    return visitor.found


# -- C++ ------------------------------------------------------------------------------------------
_CPP_FUNC = re.compile(r"^[\w:<>,\s*&~]+?\b([A-Za-z_]\w*(?:::~?\w+)*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:noexcept\s*)?\{",
                       re.M)


_PREPROCESSOR = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)  # a directive, with its continued lines
_CPP_KEYWORDS = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "defined", "else"})


def mine_cpp(source: str) -> list[tuple[str, str, str, list[str | None]]]:
    found: list[tuple[str, str, str, list[str | None]]] = []
    code = _PREPROCESSOR.sub(lambda d: re.sub(r"[^\n]", " ", d.group(0)), source)  # offsets kept
    funcs = [(m.start(), m.group(1)) for m in _CPP_FUNC.finditer(code) if m.group(1) not in _CPP_KEYWORDS]
    for m in _CPP_CALL.finditer(source):
        macro = m.group(1)
        level, first = CPP_MACROS[macro]
        call = _call(source, m.end())
        if call is None or len(call[0]) <= max(first, 0):
            continue
        args = call[0]
        parts: list[str | None] | None = (["Assertion failed: " + " ".join(args[0].split())] if first < 0
                                          else _cpp_message(args[first:]))
        if not parts:
            continue
        func = next((name for pos, name in reversed(funcs) if pos < m.start()), "<file>")
        exception = "TllmException" if macro.startswith("TLLM_") and level in ("check", "raise") else ""
        found.append((func, level, exception, parts))
    for m in _CPP_STREAM.finditer(code):  # (not inside a directive: the macro's own definition)
        level, head = CPP_STREAMS[re.sub(r"\s+", "", m.group(1))]
        pos = m.end()
        if "{cond}" in head:
            call = _call(source, pos + 1) if source[pos:pos + 1] == "(" else None
            if call is None or len(call[0]) != 1:
                continue
            head = head.replace("{cond}", " ".join(call[0][0].split()))
            pos = call[1]
        streamed = _streamed(source, pos)
        if streamed is None:
            continue
        func = next((name for p, name in reversed(funcs) if p < m.start()), "<file>")
        found.append((func, level, "", [head, *streamed] if head else streamed))
    return found


def _streamed(source: str, pos: int, limit: int = 4000) -> list[str | None] | None:
    """What a statement streams from `pos` (`<< "text" << value …;`): string literals as text, any other
    operand as a placeholder. None when no `<<` follows (the macro is not used as a stream here)."""
    rest = source[pos:pos + limit]
    semicolon = _statement_end(rest)
    if semicolon is None:
        return None
    statement = rest[:semicolon].strip()
    if statement and not statement.startswith("<<"):
        return None
    parts: list[str | None] = []
    for operand in _top_level_split(statement[2:] if statement else "", "<<"):
        operand = operand.strip()
        strings = _CPP_STRING.findall(operand)
        if strings and _CPP_STRING.sub("", operand).strip() == "":
            parts.append("".join(_unescape(x) for x in strings))
        elif operand:
            parts.append(None)
    return parts


def _code_chars(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, str]]:
    """(offset, character) of `text[start:end]` outside string literals: what brackets, commas and
    `<<` are read from."""
    i, end = start, len(text) if end is None else min(end, len(text))
    in_str = False
    while i < end:
        ch = text[i]
        if in_str:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        else:
            yield i, ch
        i += 1


def _statement_end(text: str) -> int | None:
    """The offset of the `;` that ends the statement starting `text` (strings and brackets skipped)."""
    depth = 0
    for i, ch in _code_chars(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                return None
        elif ch == ";" and depth == 0:
            return i
    return None


def _top_level_split(text: str, sep: str) -> list[str]:
    """`text` cut at each `sep` outside strings and brackets."""
    out, depth, begin = [], 0, 0
    for i, ch in _code_chars(text):
        if i < begin:
            continue  # inside the separator just cut at
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            out.append(text[begin:i])
            begin = i + len(sep)
    out.append(text[begin:])
    return out


def _call(source: str, pos: int, limit: int = 4000) -> tuple[list[str], int] | None:
    """The top-level comma-separated arguments of a call whose '(' ends at `pos`, and the offset just
    past its closing parenthesis."""
    depth, args, begin = 1, [], pos
    for i, ch in _code_chars(source, pos, pos + limit):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(source[begin:i].strip())
                return args, i + 1
        elif ch == "," and depth == 1:
            args.append(source[begin:i].strip())
            begin = i + 1
    return None


def _cpp_message(args: list[str]) -> list[str | None] | None:
    """The format string (adjacent literals joined) with printf/{} placeholders; the rest are values."""
    found = list(_CPP_STRING.finditer(args[0]))
    if not found:
        return None
    # Literals joined; a name between two of them is a macro's argument pasted into the text
    # (`"Call to " name " failed with error %s"`), a value like any other.
    pieces = [_unescape(found[0].group(1))]
    for before, m in zip(found, found[1:]):
        gap = _CPP_NOT_CODE.sub("", args[0][before.end():m.start()]).strip()
        if gap:  # `"%" PRIu64` completes a conversion; any other name is a value of its own
            pieces.append("s" if pieces[-1].endswith("%") else "%s")
        pieces.append(_unescape(m.group(1)))
    text = "".join(pieces)
    parts: list[str | None] = []
    pos = 0
    for m in _CPP_FORMAT.finditer(text):
        if m.group(0) == "%%":
            continue
        parts.append(text[pos:m.start()])
        parts.append(None)
        pos = m.end()
    parts.append(text[pos:])
    return parts


def _unescape(s: str) -> str:
    return s.replace(r"\"", '"').replace(r"\n", " ").replace(r"\t", " ").replace("\\\\", "\\")


# -- the tree -------------------------------------------------------------------------------------


def mine_tree(root: Path, engine: str, version: str, under: Iterable[str] = ()) -> Iterator[Template]:
    """Every template under `root` (only below the `under` prefixes when given), in file order, paths
    relative to `root` (so `root` is the directory holding the package: `sglang/srt/...`)."""
    seen: set[tuple[str, str, str]] = set()
    prefixes = tuple(under)
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in PY_SUFFIXES + CPP_SUFFIXES):
        rel = path.relative_to(root).as_posix()
        if _skipped(rel) or (prefixes and not rel.startswith(prefixes)):
            continue
        try:
            source = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        mined = mine_python(source) if path.suffix in PY_SUFFIXES else mine_cpp(source)
        for func, level, exception, parts in mined:
            if level not in KEPT_LEVELS:
                continue
            template = _template(parts)
            if template is None or (rel, level, template) in seen:
                continue
            seen.add((rel, level, template))
            yield Template(engine, (version,), rel, func, level, exception, template)


def _skipped(rel: str) -> bool:
    lowered = rel.lower()
    return any(part in lowered for part in ("/tests/", "/test/", "tests/", "/benchmarks/", "/examples/", "test_"))


def _template(parts: list[str | None]) -> str | None:
    """The message as one line: a message printed over several lines is known by its first line that
    says something (the line the exception's type is printed on, or the first after a leading break)."""
    lines: list[list[str | None]] = [[]]
    for part in parts:
        if part is None:
            lines[-1].append(None)
            continue
        first, *rest = part.split("\n")
        lines[-1].append(first)
        lines.extend([chunk] for chunk in rest)
    if len(lines) == 1:
        return _one_line(parts)
    said = next((line for line in lines if any(part and part.strip() for part in line)), None)
    template = _one_line(said) if said is not None else None
    long_enough = template is not None and len(template.replace(PLACEHOLDER, "").strip()) >= MIN_LINE_LITERAL
    return template if long_enough else None  # a first line too short to name the message names nothing


def _one_line(parts: list[str | None]) -> str | None:
    merged: list[str] = []
    for part in parts:
        text = PLACEHOLDER if part is None else re.sub(r"\s+", " ", part)
        if merged and merged[-1] == PLACEHOLDER and text == PLACEHOLDER:
            continue
        merged.append(text)
    template = "".join(merged).strip()
    template = template[:MAX_TEMPLATE]
    literal = template.replace(PLACEHOLDER, "")
    if len(literal) < MIN_LITERAL or not _LITERAL.search(literal):
        return None
    return template


def _regex_parts(template: str) -> list[str | None]:
    parts: list[str | None] = []
    for i, chunk in enumerate(template.split(PLACEHOLDER)):
        if i:
            parts.append(None)
        if chunk:
            parts.append(chunk)
    return parts


def merge(catalogues: Iterable[Iterable[Template]]) -> list[Template]:
    """One entry per (engine, file, level, template), with every version it was seen in."""
    by_key: dict[tuple[str, str, str, str], Template] = {}
    for templates in catalogues:
        for t in templates:
            key = (t.engine, t.file, t.level, t.template)
            old = by_key.get(key)
            if old is None:
                by_key[key] = t
            elif t.versions[0] not in old.versions:
                by_key[key] = dataclasses.replace(old, versions=old.versions + t.versions)
    return sorted(by_key.values(), key=lambda t: (t.engine, t.file, t.template))


def write_catalogue(templates: Iterable[Template], path: Path) -> int:
    """JSON lines, gzip-compressed (`zcat` reads it): tens of thousands of templates in a few MB."""
    n = 0
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as fh:
        for t in templates:
            fh.write(t.to_json() + "\n")
            n += 1
    return n


def read_catalogue(path: Path) -> list[Template]:
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for raw in fh:
            if raw.strip():
                row = json.loads(raw)
                out.append(Template(**{**row, "versions": tuple(row["versions"])}))
    return out
