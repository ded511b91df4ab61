"""Several logs of one failure (a log per rank or node) read as one: merged on one timeline.

A distributed failure arrives as one file per rank; read alone, each file names its own error, and
nobody learns which rank failed first. `merge` interleaves the files' lines by their timestamps (a
line without one keeps the time of the line before it in its file, so a traceback stays whole), and
remembers where every merged line came from, so the answer can name the first failing file, its rank
and its own line number. A file with no timestamp at all cannot be placed in time: it follows the
timed ones, in its own order.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from ._diagnosis import Diagnosis, Symptom
from ._extract import parse_prefix
from ._ingest import LogText

UNTIMED = "\uffff"  # sorts after every month-first timestamp key
_MEMBER = re.compile(r"^==> (.+?) <==$", re.M)  # a zip member's header (ingest), or `tail -f a b`'s


def split_members(log: LogText) -> list[LogText]:
    """The files a joined input holds: a zip of rank logs (ingest joins its members under `==> name <==`
    headers) or a `tail -f` of several files is split back into one log per member."""
    if not log.data.startswith(b"==> ") and b"\n==> " not in log.data:
        return [log]
    text = log.text
    heads = list(_MEMBER.finditer(text))
    if len(heads) < 2 or text[: heads[0].start()].strip():
        return [log]
    out = []
    for head, nxt in zip(heads, heads[1:] + [None]):
        body = text[head.end() + 1: nxt.start() if nxt else len(text)]
        out.append(LogText.of(f"{log.name}:{head.group(1)}", body))
    return out


@dataclasses.dataclass(frozen=True)
class Merged:
    log: LogText
    origin: tuple[tuple[str, int], ...]  # merged line n (1-based) -> (file name, line number in that file)

    def where(self, line: int) -> tuple[str, int] | None:
        return self.origin[line - 1] if 0 < line <= len(self.origin) else None


def merge(logs: Sequence[LogText]) -> Merged:
    keyed: list[tuple[str, int, int, str]] = []  # (time key, file index, line index, text)
    for f, log in enumerate(logs):
        last = UNTIMED
        for i, raw in enumerate(log.text.split("\n")):
            if not raw.strip():
                continue
            stamp = parse_prefix(raw)[2]
            if stamp is not None:
                last = stamp
            keyed.append((last, f, i, raw))
    keyed.sort(key=lambda k: (k[0], k[1], k[2]) if k[0] != UNTIMED else (UNTIMED, k[1], k[2]))
    name = " + ".join(log.name for log in logs)
    text = "\n".join(k[3] for k in keyed) + "\n"
    origin = tuple((logs[k[1]].name, k[2] + 1) for k in keyed)
    return Merged(LogText.of(name, text, sum(log.size for log in logs)), origin)


def placed(d: Diagnosis, merged: Merged, alone: Sequence[Diagnosis] = ()) -> Diagnosis:
    """The merged diagnosis with every line number put back in its own file, and the other files'
    own failures (`alone`: each file diagnosed by itself) listed as what followed."""
    def back(line: int) -> tuple[str | None, int]:
        where = merged.where(line)
        return (where[0], where[1]) if where else (None, line)

    initiating = d.initiating
    if initiating is not None:
        file, no = back(initiating.line)
        initiating = dataclasses.replace(initiating, line=no, file=file)
    symptoms = tuple(dataclasses.replace(s, line=back(s.line)[1], file=back(s.line)[0]) for s in d.symptoms)
    evidence = tuple(dataclasses.replace(e, line=back(e.line)[1], file=back(e.line)[0]) for e in d.evidence)
    first_file = initiating.file if initiating is not None else None
    followed = tuple(
        Symptom(category=a.category, line=a.initiating.line if a.initiating else 0,
                text=a.initiating.text if a.initiating else "", rank=a.initiating.rank if a.initiating else None,
                file=a.file)
        for a in alone if not a.is_unknown and a.file != first_file)
    return dataclasses.replace(d, initiating=initiating, symptoms=symptoms + followed, evidence=evidence)

