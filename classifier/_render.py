"""The human reply for a terminal: the same shape as the Slack answer, coloured on a TTY."""

from __future__ import annotations

from ._diagnosis import Diagnosis, IncidentRef, OtherRun

MAX_NOTE_TEXT = 160


def on_call_lines(inc: IncidentRef) -> tuple[tuple[str, str], ...]:
    """(label, text) of what on-call asks after the cause, in the words every front end shows."""
    rows = (("Whose problem", inc.klass), ("The process", inc.recovery), ("Verify the fix", inc.verify))
    return tuple((label, text) for label, text in rows if text)


def paste_notes(d: Diagnosis) -> tuple[str, ...]:
    """What the whole paste adds beside the diagnosis, one plain sentence each (every front end uses
    these words): other failed starts, faults the server handled before the chain, an orderly stop."""
    notes: list[str] = []
    if d.other_runs:
        notes.append(_other_runs(d.category, d.other_runs))
    for e in d.earlier:
        when = f" ({e.timestamp})" if e.timestamp else ""
        what = e.category or f"an {e.severity}"
        text = e.text.strip()
        text = text if len(text) <= MAX_NOTE_TEXT else text[: MAX_NOTE_TEXT - 1] + "…"
        notes.append(f"Earlier: line {e.line}{when}, {what}, handled (the server went on serving): {text}")
    if d.orderly_stop:
        notes.append("The paste ends in an orderly stop (a stop signal, then a clean exit); nothing failed before it.")
    if d.runs > 1 and not d.other_runs and d.run:
        notes.append(f"The paste holds {d.runs} starts of the server; this is start {d.run}, the others show no failure.")
    return tuple(notes)


def _other_runs(category: str, runs: tuple[OtherRun, ...]) -> str:
    where = ", ".join(f"lines {r.first}-{r.last}" for r in runs)
    same = [r for r in runs if r.category == category]
    starts = "start" if len(runs) == 1 else "starts"
    if len(same) == len(runs):
        return f"Also in this paste: {len(runs)} earlier {starts} ended in the same {category} ({where})."
    kinds = ", ".join(f"{r.category or 'an unnamed error'} (line {r.line})" for r in runs)
    return f"Also in this paste: {len(runs)} earlier {starts} failed: {kinds}."

_COLOURS = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def render_text(d: Diagnosis, colour: bool = False) -> str:
    def c(style: str, text: str) -> str:
        return f"\x1b[{_COLOURS[style]}m{text}\x1b[0m" if colour else text

    out: list[str] = []
    head = d.file or "-"
    if d.is_unknown:
        out.append(f"{c('bold', head)}: {c('yellow', 'unknown')} — no serving failure this tool recognises "
                   f"(confidence {d.confidence:.2f})")
        if d.top:
            out.append("  Might be: " + ", ".join(f"{t.category} ({t.score:.2f})" for t in d.top[:3]))
        for ev in d.evidence[:3]:
            out.append(c("dim", f"  {ev.line:>6} | {ev.text}"))
        for note in paste_notes(d):
            out.append(f"  {note}")
        return "\n".join(out)
    out.append(f"{c('bold', head)}: {c('red', d.category)} — {d.category_title} (confidence {d.confidence:.2f})")
    inc = d.incident
    if inc is not None:
        out.append(f"  {c('bold', 'Incident:')}      {inc.title} [{inc.id}]")
        out.append(f"  {c('bold', 'Cause:')}         {inc.cause}")
        out.append(f"  {c('bold', 'First action:')}  {c('green', inc.first_action)}")
        out.append(f"  {c('bold', 'Fix / status:')}  {inc.fix_or_status}")
        for label, text in on_call_lines(inc):
            out.append(f"  {c('bold', (label + ':').ljust(14))} {text}")
        section = f"§{inc.section} " if inc.section else ""
        out.append(f"  {c('bold', 'Manual:')}        {section}{c('cyan', inc.link)}")
    if d.initiating is not None:
        where = ", ".join(x for x in (d.initiating.rank, d.initiating.timestamp) if x)
        file = f"{d.initiating.file} " if d.initiating.file else ""
        out.append(f"  {c('bold', 'Came first:')}    {file}line {d.initiating.line}{f' ({where})' if where else ''}: "
                   f"{d.initiating.text.strip()}")
    for s in d.symptoms[:4]:
        file = f"{s.file} " if s.file else ""
        out.append(f"  {c('bold', 'Then:')}          {s.category} at {file}line {s.line}: {s.text.strip()}")
    if d.missing:
        out.append(f"  {c('bold', 'Fetch next:')}    {d.missing}")
    if d.evidence:
        out.append(f"  {c('bold', 'Evidence:')}")
        for ev in d.evidence:
            out.append(c("dim", f"  {ev.line:>6} | {ev.text}"))
    for note in paste_notes(d):
        out.append(f"  {c('bold', 'Note:')}          {note}")
    others = list(d.top[1:4])
    if others:
        out.append(f"  {c('bold', 'Might also be:')} " + ", ".join(f"{t.category} ({t.score:.2f})" for t in others))
    if d.engine:
        versions = " ".join(f"{k} {v}" for k, v in d.versions.items())
        setup = "".join(f"  {k.replace('_', '-')} {v}" for k, v in d.setup.items())
        out.append(c("dim", f"  engine: {d.engine}{'  ' + versions if versions else ''}{setup}"))
    return "\n".join(out)
