"""A `Diagnosis` as a Slack message: Block Kit for people, a plain-text fallback for notifications.

The order follows what an on-call engineer needs first: what it is and how sure, why, what to do,
where the manual says more; then the proof (evidence, what came first); then the doubt
("might also be") and the 👍/👎 buttons that feed the learning loop.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from servetriage.classifier import on_call_lines, paste_notes

from ._limits import FALLBACK_TEXT, HEADER_TEXT, MAX_BLOCKS, SECTION_TEXT, clip, code, escape

if TYPE_CHECKING:
    from servetriage.classifier import Diagnosis, SeenBefore

FEEDBACK_UP = "feedback_up"
FEEDBACK_DOWN = "feedback_down"
FEEDBACK_BLOCK = "servetriage_feedback"
MAX_SYMPTOMS = 5
MAX_ALTERNATIVES = 3

Block = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Reply:
    """What one `chat.postMessage` carries: `text` is the fallback, `blocks` the layout."""

    text: str
    blocks: tuple[Block, ...] = ()

    def as_kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text}
        if self.blocks:
            out["blocks"] = list(self.blocks)
        return out


def render_diagnosis(d: Diagnosis, diagnosis_id: str, label: str | None = None) -> Reply:
    """The full answer; `label` names the input (a file name) when it is not the message itself."""
    blocks: list[Block] = _unknown_head(d) if d.is_unknown else _known_head(d)
    if not d.is_unknown:
        order = _ordering(d)
        if order:
            blocks.append(_section(order))
    evidence = _evidence(d)
    if evidence:
        blocks.append(_section(evidence))
    context = _context(d, label)
    if context:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": clip(t, 2000)} for t in context[:10]]})
    blocks.append(feedback_actions(diagnosis_id))
    if len(blocks) > MAX_BLOCKS:
        blocks = blocks[: MAX_BLOCKS - 1] + [blocks[-1]]
    return Reply(text=clip(fallback_text(d, label), FALLBACK_TEXT), blocks=tuple(blocks))


def feedback_actions(diagnosis_id: str) -> Block:
    """The 👍/👎 buttons; their `value` is the recorder's id, which is all the feedback listener needs."""
    return {"type": "actions", "block_id": FEEDBACK_BLOCK, "elements": [
        {"type": "button", "action_id": FEEDBACK_UP, "value": diagnosis_id,
         "text": {"type": "plain_text", "text": "👍 Right", "emoji": True}},
        {"type": "button", "action_id": FEEDBACK_DOWN, "value": diagnosis_id,
         "text": {"type": "plain_text", "text": "👎 Wrong", "emoji": True}},
    ]}


def fallback_text(d: Diagnosis, label: str | None = None) -> str:
    where = f" in {label}" if label else ""
    if d.is_unknown:
        near = ", ".join(c.category for c in d.top[:MAX_ALTERNATIVES])
        return escape(f"Not recognised{where}: no known serving failure matches this log "
                      f"(confidence {d.confidence:.2f})." + (f" Nearest: {near}." if near else ""))
    title = d.category_title or d.category
    parts = [f"{title} ({d.category}, confidence {d.confidence:.2f}){where}."]
    if d.incident is not None:
        parts += [f"Cause: {d.incident.cause}", f"First action: {d.incident.first_action}", f"Manual: {d.incident.link}"]
    return escape(" ".join(parts))


# -- pieces ------------------------------------------------------------------------------------
def _known_head(d: Diagnosis) -> list[Block]:
    title = d.category_title or d.category
    blocks: list[Block] = [{"type": "header", "text": {"type": "plain_text", "emoji": True,
                                                       "text": clip(f"🚨 {title}", HEADER_TEXT)}}]
    lines = [f"*Category:* {code(d.category)}  ·  *confidence* {d.confidence:.2f}"]
    inc = d.incident
    if inc is not None:
        lines.append(f"*Cause:* {escape(inc.cause)}")
        lines.append(f"*First action:* {escape(inc.first_action)}")
        if inc.fix_or_status:
            lines.append(f"*Fix / status:* {escape(inc.fix_or_status)}")
        lines.extend(f"*{label}:* {escape(text)}" for label, text in on_call_lines(inc))
        section = f"§{inc.section} " if inc.section else ""
        lines.append(f"*Manual:* <{_url(inc.link)}|{escape(section + inc.title)}>")
    blocks.append(_section("\n".join(lines)))
    return blocks


def _unknown_head(d: Diagnosis) -> list[Block]:
    blocks: list[Block] = [_section(
        f"❔ *Not recognised.* I could not match this log to a known serving failure "
        f"(confidence {d.confidence:.2f}). Nothing below is a diagnosis.")]
    if d.top:
        rows = [f"• {code(c.category)} {escape(c.title)} — {c.score:.2f}" for c in d.top[:MAX_ALTERNATIVES]]
        blocks.append(_section("*Nearest candidates:*\n" + "\n".join(rows)))
    else:
        blocks.append(_section("*Nearest candidates:* none had any support in this log."))
    return blocks


def _ordering(d: Diagnosis) -> str:
    if d.initiating is None:
        return ""
    where = ", ".join(x for x in (f"rank {d.initiating.rank}" if d.initiating.rank else None, d.initiating.timestamp) if x)
    file = f"{code(d.initiating.file)} " if d.initiating.file else ""
    out = [f"*What came first:* {file}line {d.initiating.line}{f' ({escape(where)})' if where else ''}",
           code(clip(d.initiating.text.strip(), 500))]
    if d.symptoms:
        out.append("*Later symptoms:*")
        for s in d.symptoms[:MAX_SYMPTOMS]:
            rank = f", rank {s.rank}" if s.rank else ""
            file = f"{code(s.file)} " if s.file else ""
            out.append(f"• {code(s.category)} at {file}line {s.line}{escape(rank)}: {code(clip(s.text.strip(), 300))}")
        if len(d.symptoms) > MAX_SYMPTOMS:
            out.append(f"…and {len(d.symptoms) - MAX_SYMPTOMS} more")
    if d.missing:
        out.append(f"*To settle the cause, fetch:* {escape(d.missing)}")
    return clip("\n".join(out), SECTION_TEXT)


def _evidence(d: Diagnosis) -> str:
    """The redacted evidence lines in one code block, cut at a line boundary to fit the section."""
    if not d.evidence:
        return ""
    head, fence = "*Evidence* (secrets redacted)\n", "```"
    width = max(len(str(e.line)) for e in d.evidence)
    budget = SECTION_TEXT - len(head) - 2 * len(fence) - 40
    rows: list[str] = []
    used = 0
    for e in d.evidence:
        row = f"{e.line:>{width}} | " + escape(e.text.rstrip().replace(fence, "ˋˋˋ"))
        if used + len(row) + 1 > budget:
            if not rows:
                rows.append(row[: budget - 1] + "…")
            rows.append(f"… {len(d.evidence) - len(rows)} more line(s)")
            break
        rows.append(row)
        used += len(row) + 1
    return head + fence + "\n".join(rows) + fence


def _context(d: Diagnosis, label: str | None) -> list[str]:
    out: list[str] = [escape(note) for note in paste_notes(d)]
    if not d.is_unknown:
        alts = [c for c in d.top if c.category != d.category][:MAX_ALTERNATIVES]
        if alts:
            out.append("*Might also be:* " + ", ".join(f"{code(c.category)} {c.score:.2f}" for c in alts))
    if d.seen_before:
        out.append("*Seen before here:* " + ", ".join(_seen(s) for s in d.seen_before))
    facts = []
    if d.engine:
        versions = " ".join(f"{k} {v}" for k, v in d.versions.items())
        facts.append(f"engine {escape(d.engine)}" + (f" ({escape(versions)})" if versions else ""))
    facts.extend(f"{escape(k.replace('_', '-'))} {code(v)}" for k, v in d.setup.items())
    if d.lines_read:
        facts.append(f"{d.lines_read:,} lines read")
    if label:
        facts.append(f"from {code(label)}")
    if facts:
        out.append(" · ".join(facts))
    return out


def _seen(s: SeenBefore) -> str:
    """`<link|12 Nov>` and what came of it: the votes, or the correction on-call made there."""
    day = time.strftime("%d %b", time.gmtime(s.when)).lstrip("0")
    head = f"<{_url(s.link)}|{day}>" if s.link else day
    if s.corrected_to:
        return f"{head} (answered {code(s.category)}, corrected to {code(s.corrected_to)} by on-call)"
    return f"{head} (👍 {s.up} · 👎 {s.down})"


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": clip(text, SECTION_TEXT)}}


def _url(link: str) -> str:
    return link.replace("|", "%7C").replace(">", "%3E").replace("<", "%3C").replace(" ", "%20")
