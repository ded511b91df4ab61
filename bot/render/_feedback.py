"""Block Kit of the feedback loop: the tally on a reply, the correction prompt, the new-incident modal.

The 👍/👎 buttons themselves are rendered with the diagnosis (`feedback_actions`); everything here
reuses their ids, so the listener that handles a click is keyed on what the reply carries.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

from ._diagnosis import FEEDBACK_BLOCK, Block
from ._limits import MAX_BLOCKS, escape

if TYPE_CHECKING:
    from .._protocols import Answer, Choice, Tally, VoteOutcome

CORRECT_ACTION = "feedback_correct"
NEW_INCIDENT_ACTION = "feedback_new_incident"
NEW_INCIDENT_VIEW = "servetriage_new_incident"
TALLY_BLOCK = "servetriage_tally"
CORRECT_BLOCK_PREFIX = "servetriage_correct:"
OPTION_TEXT = 75          # Slack's limit on an option's text
OPTION_VALUE = 150
OPTIONS_PER_GROUP = 100
OPTION_GROUPS = 100
MODAL_FIELDS = (("title", "Title", False, 150), ("cause", "Cause", True, 1000),
                ("first_action", "First action", True, 1000))
REQUIRED_FIELDS = ("category", "title", "cause", "first_action")


def tally_text(t: Tally) -> str:
    parts = [f"👍 {t.up}", f"👎 {t.down}"]
    if t.label is not None and t.label.kind == "corrected":
        parts.append(f"on-call says: `{t.label.category}`")
    elif t.label is not None:
        parts.append("confirmed by on-call")
    elif t.suggested:
        parts.append("suggested: " + ", ".join(f"`{c}` ({n})" for c, n in t.suggested[:3]))
    if t.label is None and t.waiting:
        parts.append(f"`{t.waiting}` needs a second voice (the answer's evidence did not point there)")
    return " · ".join(parts)


def with_tally(blocks: Sequence[Block], t: Tally) -> list[Block]:
    """The reply's blocks with the tally as a context block just above the 👍/👎 buttons."""
    out = [b for b in blocks if b.get("block_id") != TALLY_BLOCK]
    tally = {"type": "context", "block_id": TALLY_BLOCK, "elements": [{"type": "mrkdwn", "text": tally_text(t)}]}
    at = next((i for i, b in enumerate(out) if b.get("block_id") == FEEDBACK_BLOCK), len(out))
    out.insert(at, tally)
    while len(out) > MAX_BLOCKS:
        drop = next(i for i in range(len(out) - 1, -1, -1)
                    if out[i].get("block_id") not in (TALLY_BLOCK, FEEDBACK_BLOCK))
        out.pop(drop)
    return out


def without_tally(blocks: Sequence[Block]) -> list[Block]:
    return [b for b in blocks if b.get("block_id") != TALLY_BLOCK]


def vote_ack(result: VoteOutcome) -> str:
    mark = "👍" if result.direction > 0 else "👎"
    text = f"Thanks — your {mark} is recorded." if result.changed else f"You had already voted {mark}."
    if not result.trusted:
        text += " (It is kept, but only the on-call trainers' votes train the model.)"
    elif result.throttled:
        text += " (You have voted a lot in a short time: it is kept, but does not train the model for now.)"
    return text


def correction_prompt(answer: Answer, result: VoteOutcome, choices: Sequence[Choice]) -> list[Block]:
    """After a 👎: pick the right category or incident, or describe a new incident."""
    text = vote_ack(result) + " *What was it?* Pick it below, or describe a new incident."
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": text}},
        {"type": "actions", "block_id": CORRECT_BLOCK_PREFIX + answer.id, "elements": [
            {"type": "static_select", "action_id": CORRECT_ACTION,
             "placeholder": {"type": "plain_text", "text": "The right category or incident"},
             "option_groups": option_groups(answer, choices)},
            {"type": "button", "action_id": NEW_INCIDENT_ACTION, "value": answer.id,
             "text": {"type": "plain_text", "text": "New incident…"}},
        ]},
    ]


def choice_value(choice: Choice) -> str:
    return f"i:{choice.incident}" if choice.incident else f"c:{choice.category}"


def parse_choice(value: str) -> tuple[str, str] | None:
    """(kind, id) of a picked option: ("c", category) or ("i", incident); None when nothing was picked."""
    kind, _, ident = value.partition(":")
    if kind in ("c", "i") and ident:
        return kind, ident
    return None


def option_groups(answer: Answer, choices: Sequence[Choice]) -> list[Block]:
    titles = {c.category: c.title for c in choices if c.incident is None}
    incidents = {c.incident: c for c in choices if c.incident}
    likely, seen = [], set()
    for alt in answer.alternatives:
        cat = alt.get("category")
        if not cat or cat == answer.category or cat in seen:
            continue
        seen.add(cat)
        inc = incidents.get(str(alt.get("incident") or ""))
        likely.append(_option(f"{cat}: {inc.title}", f"i:{inc.incident}") if inc else
                      _option(_category_text(titles, cat), f"c:{cat}"))
    groups = []
    if likely:
        groups.append(_group("Likely", likely))
    groups.append(_group("Categories", [_option(_category_text(titles, c), f"c:{c}") for c in titles
                                        if c != answer.category]))
    by_cat: dict[str, list[Block]] = {}
    for c in choices:
        if c.incident:
            by_cat.setdefault(c.category, []).append(_option(c.title + (" (on-call)" if c.on_call else ""),
                                                             f"i:{c.incident}"))
    for cat, options in by_cat.items():
        if len(groups) >= OPTION_GROUPS:
            break
        groups.append(_group(f"Incidents: {cat}", options))
    return groups


def incident_modal(answer: Answer, choices: Sequence[Choice]) -> Block:
    cats = [_option(f"{c.category}: {c.title}", c.category) for c in choices if c.incident is None][:OPTIONS_PER_GROUP]
    guess = next((a.get("category") for a in answer.alternatives if a.get("category") not in (None, answer.category)),
                 None)
    select: Block = {"type": "static_select", "action_id": "value", "options": cats,
                     "placeholder": {"type": "plain_text", "text": "Category"}}
    initial = next((o for o in cats if o["value"] == guess), None)
    if initial is not None:
        select["initial_option"] = initial
    fields = [{"type": "input", "block_id": block, "label": {"type": "plain_text", "text": label},
               "element": {"type": "plain_text_input", "action_id": "value", "multiline": multiline,
                           "max_length": limit}} for block, label, multiline, limit in MODAL_FIELDS]
    return {
        "type": "modal", "callback_id": NEW_INCIDENT_VIEW,
        "private_metadata": json.dumps({"diagnosis": answer.id}),
        "title": {"type": "plain_text", "text": "New incident"},
        "submit": {"type": "plain_text", "text": "Save"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text":
                f"The bot answered `{answer.category}`. Describe what this log really shows; the bot answers "
                f"with it from now on, and it is exported for review into the corpus."}},
            {"type": "input", "block_id": "category", "label": {"type": "plain_text", "text": "Category"},
             "element": select},
            *fields,
        ],
    }


def modal_values(view: dict[str, Any]) -> dict[str, str]:
    """The submitted fields of the new-incident modal, stripped."""
    values = (view.get("state") or {}).get("values") or {}
    out = {}
    for block in REQUIRED_FIELDS:
        v = (values.get(block) or {}).get("value") or {}
        out[block] = str(((v.get("selected_option") or {}).get("value")) or v.get("value") or "").strip()
    return out


def _group(label: str, options: list[Block]) -> Block:
    return {"label": {"type": "plain_text", "text": _clip(label, OPTION_TEXT)}, "options": options[:OPTIONS_PER_GROUP]}


def _option(text: str, value: str) -> Block:
    return {"text": {"type": "plain_text", "text": _clip(text, OPTION_TEXT)}, "value": value[:OPTION_VALUE]}


def _category_text(titles: dict[str, str], category: str) -> str:
    title = titles.get(category)
    return f"{category}: {title}" if title else category


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def incident_recorded(title: str, incident_id: str, category: str) -> str:
    return (f"✅ Recorded a new incident, *{escape(title)}* (`{incident_id}`, category `{category}`). It answers "
            f"from now on and is exported for review with `servetriage corpus export`.")


def correction_recorded(category: str, incident: str | None, waiting: bool = False) -> str:
    label = f"`{category}`" + (f" ({incident})" if incident else "")
    if waiting:
        return (f"✅ Recorded: this was {label}. Nothing in the answer's evidence pointed there, so it teaches "
                f"the bot once a second person picks it too.")
    return f"✅ Recorded: this was {label}. Thanks — the bot learns from it."


def not_recorded(reason: str) -> str:
    return f"⚠️ Not recorded: {reason}."


VOTE_LOST = "I no longer have that answer on record, so I could not count your vote."
NOTHING_CHOSEN = "nothing was chosen"
