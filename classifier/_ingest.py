"""Reading logs: paths, directories, stdin, gzip and zip, under a size limit checked while streaming.

A log arrives as bytes of unknown encoding, often pasted through Slack or Markdown; what leaves here
is one normalised `LogText`, or an `InputError` with a one-line message and nothing half-read.
"""

from __future__ import annotations

import codecs
import dataclasses
import gzip
import io
import re
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import AnyStr, BinaryIO, Generic, Protocol

from servetriage._errors import InputError, InputTooLarge

_BINARY_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".pdf", ".so", ".bin", ".pt", ".safetensors", ".whl",
                    ".tar", ".xz", ".bz2", ".7z", ".exe", ".pyc", ".npy"}
_ANSI = r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])"
_FENCE = r"^[ \t]*```[A-Za-z0-9_+-]*[ \t]*$\n?|^[ \t]*```|```[ \t]*$"
_QUOTE = r"^(?:>|&gt;)(?: |$)"
# A runner's own prefix on every line: docker compose `vllm-1  | `, kubectl/stern `[pod/x/c] `,
# journald `Dec 03 10:00:01 gpu-7 vllm[2291]: `, a Kubernetes node's container log (CRI)
# `2025-07-25T07:53:08.217487+08:00 stdout F `, `kubectl logs --timestamps` / `docker logs -t`
# `2025-07-25T07:53:08.217487123Z `, a log explorer's export of the same, one list item a line, and
# Google Cloud Logging's copy, severity first (`ERROR 2025-07-25T07:53:08.217487123Z `).
_CONTAINER = (r"^(?:[A-Za-z0-9][\w.-]*[ \t]+\|(?: |$)|\[pod/[^\]\s]+\] "
              r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ [\w.@-]+(?:\[\d+\])?: "
              r"|(?:- |(?:DEFAULT|DEBUG|INFO|NOTICE|WARNING|ERROR|CRITICAL|ALERT|EMERGENCY) )?"
              r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?(?: (?:stdout|stderr) [FP])? )")
# A parent process that logs its child's output streams, inside or outside a runner's prefix
# (FastChat's `2024-02-20 21:46:23 | ERROR | stderr | `: the level is the stream's, not the line's).
_SUPERVISOR = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)? \| [A-Z]+ +\| (?:stdout|stderr) \| "
# Colour codes pasted in caret notation (`^[[31m`), as a pager or a terminal copy shows them.
_CARET_ANSI = r"\^\[\[[0-?]*[ -/]*[@-~]"
# A text table (Triton's model status table, whole or only its rows) whose long cells wrap onto
# continuation rows: a row, then more rows or borders.
_TABLE = r"^[ \t]*[|+].*(?:\n[ \t]*[|+].*)+"
_RUNNER_MARKS = r"\||\[pod/|\]: |\dT\d\d:\d\d:"  # a cheap look before the full check


@dataclasses.dataclass(frozen=True)
class _Paste(Generic[AnyStr]):
    """What a paste adds around a log, as patterns over its text or over its UTF-8 bytes (a whole log
    is normalised as bytes, never held as text): one source for both."""

    ansi: re.Pattern[AnyStr]
    caret: re.Pattern[AnyStr]
    fence: re.Pattern[AnyStr]
    quote: re.Pattern[AnyStr]
    container: re.Pattern[AnyStr]
    supervisor: re.Pattern[AnyStr]
    table: re.Pattern[AnyStr]
    runner_marks: re.Pattern[AnyStr]
    word: Callable[[str], AnyStr]  # a literal of the same kind

    @staticmethod
    def of(word: Callable[[str], AnyStr]) -> _Paste[AnyStr]:
        def rx(source: str, flags: int = 0) -> re.Pattern[AnyStr]:
            return re.compile(word(source), flags)
        return _Paste(rx(_ANSI), rx(_CARET_ANSI), rx(_FENCE, re.M), rx(_QUOTE, re.M), rx(_CONTAINER, re.M),
                      rx(_SUPERVISOR, re.M), rx(_TABLE, re.M), rx(_RUNNER_MARKS), word)


_TEXT: _Paste[str] = _Paste.of(str)
_BYTES: _Paste[bytes] = _Paste.of(str.encode)
_NOT_SPACE = re.compile(rb"\S")  # bytes.strip's whitespace, the same ASCII set
CONTAINER_SHARE = 0.5  # the prefix is the runner's when at least this share of the first lines carry one
_SAMPLE_LINES = 200


class _Reader(Protocol):
    """What `_read_limited` reads from: a binary file, a gzip stream or a zip member."""

    def read(self, size: int = -1, /) -> bytes: ...


@dataclasses.dataclass(frozen=True)
class LogText:
    """One input, decoded, normalised and held as UTF-8 bytes: `name` is the path, `-` for stdin, or a
    caller's label. A whole log is held once, as bytes; the passes read it a line at a time."""

    name: str
    data: bytes
    size: int  # bytes read after decompression

    @classmethod
    def of(cls, name: str, text: str, size: int | None = None) -> LogText:
        """A log from text already decoded and normalised."""
        data = as_utf8(text)
        return cls(name=name, data=data, size=len(data) if size is None else size)

    @property
    def text(self) -> str:
        """The log as text, decoded when asked and kept nowhere: a whole log's text is up to four times
        its bytes (one non-Latin character, a progress bar's block, makes every character two bytes)."""
        return self.data.decode("utf-8", "replace")

    @property
    def blank(self) -> bool:
        """Nothing but whitespace: looked for from the start, never by stripping (a copy of the whole log)."""
        return _NOT_SPACE.search(self.data) is None


def as_utf8(log: str | bytes) -> bytes:
    """A log as the passes read it: its UTF-8 bytes (text is encoded once, bytes are kept as they are)."""
    return log if isinstance(log, bytes) else log.encode("utf-8", "surrogatepass")


def read_inputs(paths: Iterable[str], limit: int, stdin: BinaryIO | None = None) -> Iterator[LogText]:
    """Yield one `LogText` per file; a directory yields its files in name order, `-` reads stdin."""
    for raw in paths:
        if raw == "-":
            if stdin is None:
                raise InputError("'-' given but there is no standard input")
            yield from_stream(stdin, "-", limit)
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
            if not files:
                raise InputError(f"{raw}: directory holds no files")
            for file in files:
                yield read_path(file, limit)
        else:
            yield read_path(path, limit)


def read_path(path: Path | str, limit: int) -> LogText:
    path = Path(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the `with` below, once the open's errors are told apart
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with fh:
        return from_stream(fh, str(path), limit)


def from_bytes(data: bytes, name: str, limit: int) -> LogText:
    return from_stream(io.BytesIO(data), name, limit)


def from_text(text: str, name: str = "-") -> LogText:
    """Text that is already decoded (a Slack message): encoded once, then normalised as bytes."""
    data = as_utf8(text)
    return LogText(name=name, data=normalize(data), size=len(data))


def from_stream(stream: BinaryIO, name: str, limit: int) -> LogText:
    """Sniff the container by its magic bytes, not its name, and read it all under `limit`."""
    try:
        head = _peek(stream, 4)
        if head[:2] == b"\x1f\x8b":
            data = _read_limited(gzip.GzipFile(fileobj=stream), name, limit)
        elif head[:4] == b"PK\x03\x04":
            data = _read_zip(stream, name, limit)
        else:
            data = _read_limited(stream, name, limit)
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{name}: damaged archive or unreadable input ({_short(exc)})") from None
    return LogText(name=name, data=normalize(_utf8(data)), size=len(data))


def _utf8(data: bytes | bytearray) -> bytes:
    """The input as UTF-8 bytes, never decoded whole: UTF-8 stays as it is (a byte that is not UTF-8
    reads as U+FFFD wherever a line is decoded), less a BOM and NULs; another encoding is re-encoded."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    elif _foreign(data):
        return decode(data).encode("utf-8", "surrogatepass")
    out = bytes(data)  # no copy when it is bytes already
    return out.replace(b"\x00", b"") if b"\x00" in out else out


def _foreign(data: bytes | bytearray) -> bool:
    """UTF-16 or UTF-32, by a BOM or by the zero bytes of UTF-16 text."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return True
    sample = data[:4096]
    return len(sample) >= 8 and sample[1::2].count(0) > len(sample) // 4 and sample[0::2].count(0) < len(sample) // 16


def decode(data: bytes | bytearray) -> str:
    """Any bytes become text: a BOM picks UTF-16/32, otherwise UTF-8 with bad bytes replaced."""
    for bom, codec in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                       (codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    sample = data[:4096]
    if len(sample) >= 8 and sample[1::2].count(0) > len(sample) // 4 and sample[0::2].count(0) < len(sample) // 16:
        return data.decode("utf-16-le", errors="replace")
    text = data.decode("utf-8", errors="replace")
    return text.replace("\x00", "") if "\x00" in text else text


def normalize(text: AnyStr) -> AnyStr:
    """Strip what the paste added (colour codes, CRLF, code fences, quote markers, a container runner's
    prefixes), keep every log line. `text` is text, or text as UTF-8 bytes (a whole log read from a file)."""
    p = _TEXT if isinstance(text, str) else _BYTES
    w = p.word
    if w("\x1b") in text:
        text = p.ansi.sub(w(""), text)
    if w("^[[") in text:
        text = p.caret.sub(w(""), text)
    if w("\r") in text:
        text = text.replace(w("\r\n"), w("\n")).replace(w("\r"), w("\n"))
    if w("```") in text:
        text = p.fence.sub(w(""), text)
    head = text[:4096]
    if w(">") in head or w("&gt;") in head:
        text = p.quote.sub(w(""), text)
    head = text[:4096]
    if p.runner_marks.search(head) and _runner_prefixed(text, p.container, w("\n")):
        text = p.container.sub(w(""), text)
    if w("| std") in text[:4096] and _runner_prefixed(text, p.supervisor, w("\n")):
        text = p.supervisor.sub(w(""), text)
    if (w("\n|") in text or text.startswith(w("|"))) and w("|  ") in text:
        text = p.table.sub(_join_table, text)
    return text


def _join_table(table: re.Match[AnyStr]) -> AnyStr:
    """`_join_wrapped_cells` for a table found in text or in bytes (a table is small: decoded to read it)."""
    found = table.group(0)
    if isinstance(found, str):
        return _join_wrapped_cells(found)
    return _join_wrapped_cells(found.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def _join_wrapped_cells(table: str) -> str:
    """Triton prints each model's status in a table whose last cell wraps onto rows with the other cells
    blank, cut at the column's width wherever that falls (`… operation no` / `t supported (…:170)`), and
    starts a row for each line of a multi-line status. The row that opens a cell gets its whole text, so
    the message reads as one line; the continuation rows stay, so every line keeps its number."""
    lines = table.split("\n")
    row = -1                 # the row that opened the cell being continued (-1: none)
    heads: list[str] = []    # that row's other cells
    joined, last = "", ""    # the cell's text so far; the raw last piece, to see whether it was cut mid-line
    changed = False
    for i, line in enumerate(lines):
        body = line.strip()
        if not (body.startswith("|") and body.count("|") > 1):
            row = -1
            continue
        cells = body[1:-1 if body.endswith("|") else None].split("|")  # a paste may cut the last row short
        if len(cells) > 1 and row >= 0 and not any(c.strip() for c in cells[:-1]) and cells[-1].strip():
            joined = joined + _cell_text(cells[-1]) if _filled(last) else f"{joined.rstrip()} {_cell_text(cells[-1])}"
            last = cells[-1]
            lines[row] = "| " + " | ".join([*heads, joined.strip()]) + " |"
            changed = True
        elif cells[0].strip():
            row, heads, joined, last = i, [c.strip() for c in cells[:-1]], _cell_text(cells[-1]), cells[-1]
    return "\n".join(lines) if changed else table


def _cell_text(cell: str) -> str:
    """A cell's text without the one space of margin on each side (a cut piece keeps its own spaces)."""
    return cell[1:-1] if len(cell) >= 2 and cell[0] == " " and cell[-1] == " " else cell.strip()


def _filled(cell: str) -> bool:
    """Whether a piece fills its column: the table cut the line there, not the line's own end."""
    text = _cell_text(cell)
    return bool(text) and len(text.rstrip()) == len(text)


def _runner_prefixed(text: AnyStr, prefix: re.Pattern[AnyStr], newline: AnyStr) -> bool:
    """Most of the first lines carry a runner's `prefix` (so a table's `|` is left alone)."""
    lines = [l for l in text[:65536].split(newline, _SAMPLE_LINES)[:_SAMPLE_LINES] if l.strip()]
    return bool(lines) and sum(1 for l in lines if prefix.match(l)) >= CONTAINER_SHARE * len(lines)


def _read_limited(stream: _Reader, name: str, limit: int) -> bytes:
    """The whole stream under `limit`: a file in one read (its bytes are the log's, not a copy)."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(limit + 1 - total)
        if not chunk:
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise InputTooLarge(f"{name}: larger than the {_mb(limit)} limit (SERVETRIAGE_MAX_INPUT_MB)")


def _read_zip(stream: BinaryIO, name: str, limit: int) -> bytes:
    """A zip is one incident: its text members are joined, each under a `==> member <==` header."""
    if not stream.seekable():
        stream = io.BytesIO(_read_limited(stream, name, limit))
    with zipfile.ZipFile(stream) as zf:
        members = [m for m in zf.infolist() if not m.is_dir() and Path(m.filename).suffix.lower() not in _BINARY_SUFFIXES]
        if sum(m.file_size for m in members) > limit:
            raise InputTooLarge(f"{name}: unpacks to more than the {_mb(limit)} limit (SERVETRIAGE_MAX_INPUT_MB)")
        out = bytearray()
        for member in members:
            with zf.open(member) as fh:
                inner: _Reader = fh
                if _peek_zip_member(zf, member) == b"\x1f\x8b":
                    inner = gzip.GzipFile(fileobj=fh)
                data = _read_limited(inner, name, limit - len(out))
            if b"\x00" in data[:8192] and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
                continue  # a binary member
            out += f"==> {member.filename} <==\n".encode() + data + b"\n"
            if len(out) > limit:
                raise InputTooLarge(f"{name}: unpacks to more than the {_mb(limit)} limit (SERVETRIAGE_MAX_INPUT_MB)")
        if not members:
            raise InputError(f"{name}: zip archive holds no text files")
        return bytes(out)


def _peek_zip_member(zf: zipfile.ZipFile, member: zipfile.ZipInfo) -> bytes:
    with zf.open(member) as fh:
        return fh.read(2)


def _peek(stream: BinaryIO, n: int) -> bytes:
    if hasattr(stream, "peek"):
        peeked: bytes = stream.peek(n)
        return peeked[:n]
    if stream.seekable():
        pos = stream.tell()
        head = stream.read(n)
        stream.seek(pos)
        return head
    raise InputError("input stream cannot be inspected")


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):g} MB"


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
