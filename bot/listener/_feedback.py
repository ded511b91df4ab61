"""👍/👎 buttons and reactions, the correction select and the new-incident modal, over a `FeedbackService`.

* The buttons are the ones `render_diagnosis` draws (`FEEDBACK_UP` / `FEEDBACK_DOWN`, value = the
  recorder's id). A 👍/👎 reaction on the bot's reply counts the same (one vote per user per
  diagnosis, the latest wins); removing the reaction withdraws a vote the reaction cast.
* The vote is stored *before* the click is acknowledged: a click Slack saw acknowledged is a stored
  vote, even if the process dies the next instant.
* The reply is updated (`chat.update`) with the tally; the voter gets a short ephemeral note. After
  a 👎 that note is the correction, in one step: a select of the answer's alternatives, every
  category and every incident, or a "New incident…" button opening a modal.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from slack_bolt import Ack, App, Respond
from slack_sdk import WebClient

from servetriage._errors import NotFound, ServetriageError

from ..render import FEEDBACK_DOWN, FEEDBACK_UP, render_diagnosis
from ..render import _feedback as blocks

if TYPE_CHECKING:
    from slack_bolt.context import BoltContext

    from .._protocols import Answer, FeedbackService, VoteOutcome

log = logging.getLogger(__name__)

UP_REACTIONS = frozenset({"+1", "thumbsup"})
DOWN_REACTIONS = frozenset({"-1", "thumbsdown"})
GROUP_REFRESH_S = 600.0      # how often allow-listed user groups are resolved again
REPLY_LOCKS_KEPT = 10_000

Block = dict[str, Any]


def _now(fn: Callable[..., object], *args: Any, **kwargs: Any) -> None:
    fn(*args, **kwargs)


def _logged(fn: Callable[..., object], *args: Any, **kwargs: Any) -> None:
    try:
        fn(*args, **kwargs)
    except Exception:
        log.exception("after a stored vote, %s failed", getattr(fn, "__name__", fn))


def reaction_direction(name: str) -> int | None:
    base = name.split("::", 1)[0]
    return 1 if base in UP_REACTIONS else -1 if base in DOWN_REACTIONS else None


class _ReplyLocks:
    """One `chat.update` at a time per reply, so the last update shows the current tally."""

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def __call__(self, key: str) -> threading.Lock:
        with self._lock:
            lock = self._locks.get(key)
            if lock is None:
                if len(self._locks) > REPLY_LOCKS_KEPT:
                    self._locks.clear()
                lock = self._locks[key] = threading.Lock()
            return lock


class FeedbackListener:
    def __init__(self, service: FeedbackService, *, clock: Callable[[], float] = time.monotonic,
                 after_ack: Callable[..., object] | None = None,
                 on_vote: Callable[[str], None] | None = None) -> None:
        self.service = service
        self._on_vote = on_vote or (lambda kind: None)  # up | down | correction | new_incident
        self._clock = clock
        # The Web API calls that follow a stored vote (the tally, the note) run after Slack's 200:
        # `after_ack(fn, *args)` (an executor's submit); by default in line. A failure there is logged.
        self._run_after = after_ack or _now
        self._reply_lock = _ReplyLocks()
        self._groups_fetched = -1e18

    def _later(self, fn: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        self._run_after(_logged, fn, *args, **kwargs)

    def register(self, app: App) -> None:
        app.action(FEEDBACK_UP)(self.on_button)
        app.action(FEEDBACK_DOWN)(self.on_button)
        app.action(blocks.CORRECT_ACTION)(self.on_correct)
        app.action(blocks.NEW_INCIDENT_ACTION)(self.on_new_incident)
        app.view(blocks.NEW_INCIDENT_VIEW)(self.on_new_incident_submit)
        app.event("reaction_added")(self.on_reaction_added)
        app.event("reaction_removed")(self.on_reaction_removed)

    # -- listeners ---------------------------------------------------------------------------------
    def on_button(self, ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient,
                  respond: Respond) -> None:
        user = (body.get("user") or {}).get("id") or ""
        diagnosis_id = str(action.get("value") or "")
        self._refresh_groups(client)
        try:
            result = self.service.vote(diagnosis_id, user, action.get("action_id") == FEEDBACK_UP, source="button")
            self._on_vote("up" if result.direction > 0 else "down")
        except NotFound:
            ack()
            respond(text=blocks.VOTE_LOST, response_type="ephemeral", replace_original=False)
            return
        ack()  # after the vote is stored
        message = body.get("message") or {}
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        ts = (body.get("container") or {}).get("message_ts") or message.get("ts")
        layout = message.get("blocks")
        if layout:
            try:
                self.service.keep_layout(diagnosis_id, blocks.without_tally(layout))
            except ServetriageError as exc:
                log.warning("keeping the layout of %s failed: %s", diagnosis_id, exc)
        self._later(self._after_vote, client, result, channel, ts, layout, message.get("text"))

    def on_reaction_added(self, event: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        self._on_reaction(event, client, context, added=True)

    def on_reaction_removed(self, event: dict[str, Any], client: WebClient, context: BoltContext) -> None:
        self._on_reaction(event, client, context, added=False)

    def _on_reaction(self, event: dict[str, Any], client: WebClient, context: BoltContext, *, added: bool) -> None:
        item = event.get("item") or {}
        direction = reaction_direction(str(event.get("reaction") or ""))
        user = str(event.get("user") or "")
        if item.get("type") != "message" or direction is None or not user:
            return
        if user == getattr(context, "bot_user_id", None):
            return
        answer = self.service.answer_for_reply(str(item.get("channel")), str(item.get("ts")))
        if answer is None:
            return  # not one of our answers
        if added:
            self._refresh_groups(client)
            result = self.service.vote(answer.id, user, direction > 0, source="reaction")
            self._on_vote("up" if direction > 0 else "down")
            self._after_vote(client, result, answer.channel, answer.message_ts, None, None)
        elif self.service.retract(answer.id, user, direction=direction, source="reaction"):
            self._update_reply(client, answer.id, answer.channel, answer.message_ts, None, None)

    def on_correct(self, ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient,
                   respond: Respond) -> None:
        user = (body.get("user") or {}).get("id") or ""
        block_id = str(action.get("block_id") or "")
        prefix = blocks.CORRECT_BLOCK_PREFIX
        diagnosis_id = block_id[len(prefix):] if block_id.startswith(prefix) else ""
        picked = blocks.parse_choice(str(((action.get("selected_option") or {}).get("value")) or ""))
        try:
            if picked is None:
                raise ServetriageError(blocks.NOTHING_CHOSEN)
            category, incident = self._label(*picked)
            result = self.service.correct(diagnosis_id, user, category, incident, source="button")
            self._on_vote("correction")
        except ServetriageError as exc:
            ack()
            respond(text=blocks.not_recorded(str(exc)), response_type="ephemeral", replace_original=False)
            return
        ack()
        answer = self.service.answer(diagnosis_id)
        waiting = result.trusted and result.tally.waiting == category
        self._later(respond, text=blocks.correction_recorded(category, incident, waiting), replace_original=True,
                    response_type="ephemeral")
        self._later(self._update_reply, client, diagnosis_id, answer.channel, answer.message_ts, None, None)

    def on_new_incident(self, ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        ack()
        try:
            answer = self.service.answer(str(action.get("value") or ""))
        except NotFound:
            return
        client.views_open(trigger_id=body.get("trigger_id"), view=blocks.incident_modal(answer, self.service.choices()))

    def on_new_incident_submit(self, ack: Ack, body: dict[str, Any], view: dict[str, Any], client: WebClient) -> None:
        user = (body.get("user") or {}).get("id") or ""
        values = blocks.modal_values(view)
        diagnosis_id = str(json.loads(view.get("private_metadata") or "{}").get("diagnosis") or "")
        errors = {b: "Required." for b in blocks.REQUIRED_FIELDS if not values[b]}
        category = values["category"]
        if category and category not in {c.category for c in self.service.choices()}:
            errors["category"] = "Unknown category."
        if errors:
            ack(response_action="errors", errors=errors)
            return
        try:
            incident, _ = self.service.new_incident(diagnosis_id, user, category=category, title=values["title"],
                                                    cause=values["cause"], first_action=values["first_action"])
            self._on_vote("new_incident")
        except ServetriageError as exc:
            ack(response_action="errors", errors={"title": str(exc)[:150]})
            return
        ack()
        answer = self.service.answer(diagnosis_id)
        self._later(self._ephemeral, client, answer.channel, user, answer.thread_ts,
                    blocks.incident_recorded(incident.title, incident.id, category))
        self._later(self._update_reply, client, diagnosis_id, answer.channel, answer.message_ts, None, None)

    # -- after a vote -------------------------------------------------------------------------------
    def _label(self, kind: str, ident: str) -> tuple[str, str | None]:
        if kind == "c":
            return ident, None
        found = next((c for c in self.service.choices() if c.incident == ident), None)
        if found is None:
            raise ServetriageError(f"unknown incident {ident!r}")
        return found.category, ident

    def _after_vote(self, client: WebClient, result: VoteOutcome, channel: str | None, ts: str | None,
                    layout: list[Block] | None, text: str | None) -> None:
        if channel and ts:
            self._update_reply(client, result.diagnosis_id, channel, ts, layout, text)
        if channel:
            answer = self.service.answer(result.diagnosis_id)
            prompt = blocks.correction_prompt(answer, result, self.service.choices()) if result.direction < 0 else None
            self._ephemeral(client, channel, result.user, answer.thread_ts, blocks.vote_ack(result), blocks=prompt)

    def _update_reply(self, client: WebClient, diagnosis_id: str, channel: str | None, ts: str | None,
                      layout: list[Block] | None, text: str | None) -> None:
        if not channel or not ts:
            return
        with self._reply_lock(diagnosis_id):
            answer = self.service.answer(diagnosis_id)
            base, fallback = layout or answer.blocks, text
            if not base or not fallback:
                rendered = _render_again(answer)
                if rendered is not None:
                    base, fallback = base or rendered[1], fallback or rendered[0]
            if not base:
                return
            try:
                client.chat_update(channel=channel, ts=ts, text=fallback or "servetriage",
                                   blocks=blocks.with_tally(base, self.service.tally(diagnosis_id)))
            except Exception as exc:  # noqa: BLE001 — a failed update must not lose the vote's other effects
                log.warning("chat.update of %s in %s failed: %s", ts, channel, exc)

    def _ephemeral(self, client: WebClient, channel: str, user: str, thread_ts: str | None, text: str,
                   blocks: list[Block] | None = None) -> None:
        kwargs: dict[str, Any] = {"channel": channel, "user": user, "text": text}
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        if blocks:
            kwargs["blocks"] = blocks
        try:
            client.chat_postEphemeral(**kwargs)
        except Exception as exc:  # noqa: BLE001 — the vote is stored; the note is a courtesy
            log.warning("chat.postEphemeral to %s in %s failed: %s", user, channel, exc)

    def _refresh_groups(self, client: WebClient) -> None:
        """Resolve allow-listed user groups (usergroups.users.list), at most every ten minutes."""
        groups = self.service.trusted_groups()
        now = self._clock()
        if not groups or now - self._groups_fetched < GROUP_REFRESH_S:
            return
        self._groups_fetched = now
        for group in groups:
            try:
                resp = client.usergroups_users_list(usergroup=group)
                self.service.set_group_members(group, [str(u) for u in resp.get("users") or []])
            except Exception as exc:  # noqa: BLE001 — keep the cached members
                log.warning("usergroups.users.list %s failed: %s", group, exc)


def _render_again(answer: Answer) -> tuple[str, list[Block]] | None:
    """The stored answer rendered again (a reaction carries no blocks)."""
    from servetriage.classifier import Diagnosis  # noqa: PLC0415 (the engine's public result type)

    try:
        reply = render_diagnosis(Diagnosis.from_dict(answer.diagnosis), answer.id)
    except (KeyError, TypeError, ValueError) as exc:
        log.warning("cannot render diagnosis %s again: %s", answer.id, exc)
        return None
    return reply.text, list(reply.blocks)
