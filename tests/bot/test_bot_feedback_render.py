"""The feedback Block Kit and reactions of the bot: the tally above the buttons, reaction names.

The tallies here are plain dataclasses shaped like the service's (`bot.FeedbackService` returns
anything with these attributes)."""

from __future__ import annotations

import dataclasses

from servetriage.bot.listener import reaction_direction
from servetriage.bot.render import TALLY_BLOCK, tally_text, with_tally


@dataclasses.dataclass(frozen=True)
class Derived:
    category: str
    incident: str | None
    kind: str
    vote_ids: tuple[int, ...]
    correction_ids: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Tally:
    up: int
    down: int
    label: Derived | None
    suggested: tuple[tuple[str, int], ...] = ()
    waiting: str | None = None


def test_tally_block_sits_above_the_buttons_and_is_replaced():
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": f"s{i}"}} for i in range(49)]
    blocks.append({"type": "actions", "block_id": "servetriage_feedback", "elements": []})
    once = with_tally(blocks, Tally(1, 0, None))
    twice = with_tally(once, Tally(2, 1, Derived("worker-dead", None, "corrected", (1, 2), (3,))))
    assert len(twice) == 50 and twice[-1]["block_id"] == "servetriage_feedback"
    assert [b.get("block_id") for b in twice].count(TALLY_BLOCK) == 1 and twice[-2]["block_id"] == TALLY_BLOCK
    assert tally_text(Tally(2, 1, Derived("worker-dead", None, "corrected", (1,), (2,)))) == \
        "👍 2 · 👎 1 · on-call says: `worker-dead`"
    assert "suggested: `gpu-oom` (1)" in tally_text(Tally(1, 1, None, (("gpu-oom", 1),)))
    waits = tally_text(Tally(0, 1, None, (("router", 1),), "router"))
    assert "`router` needs a second voice" in waits


def test_reactions():
    assert reaction_direction("+1") == 1 and reaction_direction("thumbsup::skin-tone-3") == 1
    assert reaction_direction("-1") == -1 and reaction_direction("eyes") is None
