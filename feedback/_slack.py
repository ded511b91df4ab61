"""The Slack side of feedback, as a `build_app` extension: votes, corrections, a new incident.

* 👍/👎 buttons on a reply (`feedback_up` / `feedback_down`, value = the diagnosis id) and 👍/👎
  reactions on the bot's reply count the same (one vote per user per diagnosis; the latest wins;
  removing the reaction withdraws a vote the reaction cast).
* The vote is committed to the database *before* the click is acknowledged: a click Slack saw
  acknowledged is a stored vote, even if the process dies the next instant.
* The reply is updated (`chat.update`) with the tally; the voter gets a short ephemeral
  acknowledgement. After a 👎 that acknowledgement is the correction, in one step: a select of the
  answer's alternatives, every category and every incident (choosing one records it), or a
  "New incident…" button opening a modal (category, title, cause, first action).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ._errors import FeedbackError, NotFound
from ._store import FeedbackStore, Tally, VoteResult

if TYPE_CHECKING:
    from slack_bolt import App

    from ._handle import ModelHandle
    from ._retrain import Retrainer

log = logging.getLogger(__name__)

FEEDBACK_UP = "feedback_up"
FEEDBACK_DOWN = "feedback_down"
FEEDBACK_BLOCK = "servetriage_feedback"
CORRECT_ACTION = "feedback_correct"
NEW_INCIDENT_ACTION = "feedback_new_incident"
NEW_INCIDENT_VIEW = "servetriage_new_incident"
TALLY_BLOCK = "servetriage_tally"
CORRECT_BLOCK_PREFIX = "servetriage_correct:"
UP_REACTIONS = frozenset({"+1", "thumbsup"})
DOWN_REACTIONS = frozenset({"-1", "thumbsdown"})
MAX_BLOCKS = 50
OPTION_TEXT = 75
GROUP_REFRESH_S = 600.0


def reaction_direction(name: str) -> int | None:
    base = name.split("::", 1)[0]
    return 1 if base in UP_REACTIONS else -1 if base in DOWN_REACTIONS else None


class FeedbackFlow:
    """Registers the listeners on an `App`; call the instance with the app (it is an `Extension`)."""

    def __init__(self, store: FeedbackStore, *, handle: "ModelHandle | None" = None,
                 retrainer: "Retrainer | None" = None, settings=None, corpus=None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.handle = handle
        self.retrainer = retrainer
        self.settings = settings or (handle.settings if handle is not None else None)
        self._corpus = corpus
        self._clock = clock
        self._reply_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._groups_fetched = -1e18

    @property
    def corpus(self):
        if self._corpus is None:
            if self.handle is not None:
                self._corpus = self.handle.corpus
            else:
                from servetriage.corpus import load_corpus  # noqa: PLC0415
                self._corpus = load_corpus(self.settings.extra_corpus_dirs if self.settings else ())
        return self._corpus

    def __call__(self, app: "App") -> None:
        self.register(app)

    def register(self, app: "App") -> None:
        app.action(FEEDBACK_UP)(self._on_button)
        app.action(FEEDBACK_DOWN)(self._on_button)
        app.action(CORRECT_ACTION)(self._on_correct)
        app.action(NEW_INCIDENT_ACTION)(self._on_new_incident)
        app.view(NEW_INCIDENT_VIEW)(self._on_new_incident_submit)
        app.event("reaction_added")(self._on_reaction_added)
        app.event("reaction_removed")(self._on_reaction_removed)

    # -- listeners ---------------------------------------------------------------------------------
    def _on_button(self, ack, body: dict[str, Any], action: dict[str, Any], client, respond) -> None:
        user = (body.get("user") or {}).get("id") or ""
        diagnosis_id = str(action.get("value") or "")
        up = action.get("action_id") == FEEDBACK_UP
        self._refresh_groups(client)
        try:
            result = self.store.vote(diagnosis_id, user, up, source="button")  # committed before the ack
        except NotFound:
            ack()
            respond(text="I no longer have that answer on record, so I could not count your vote.",
                    response_type="ephemeral", replace_original=False)
            return
        ack()
        message = body.get("message") or {}
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        ts = (body.get("container") or {}).get("message_ts") or message.get("ts")
        blocks = message.get("blocks")
        if blocks:
            try:
                self.store.set_blocks(diagnosis_id, [b for b in blocks if b.get("block_id") != TALLY_BLOCK])
            except FeedbackError:
                pass
        self._after_vote(client, result, channel, ts, blocks, message.get("text"))

    def _on_reaction_added(self, event: dict[str, Any], client, context) -> None:
        self._on_reaction(event, client, context, added=True)

    def _on_reaction_removed(self, event: dict[str, Any], client, context) -> None:
        self._on_reaction(event, client, context, added=False)

    def _on_reaction(self, event: dict[str, Any], client, context, *, added: bool) -> None:
        item = event.get("item") or {}
        direction = reaction_direction(str(event.get("reaction") or ""))
        user = str(event.get("user") or "")
        if item.get("type") != "message" or direction is None or not user:
            return
        if user == getattr(context, "bot_user_id", None):
            return
        row = self.store.diagnosis_by_reply(str(item.get("channel")), str(item.get("ts")))
        if row is None:
            return  # not one of our answers
        if added:
            self._refresh_groups(client)
            result = self.store.vote(row.id, user, direction > 0, source="reaction")
            self._after_vote(client, result, row.channel, row.message_ts, None, None)
        elif self.store.retract(row.id, user, direction=direction, source="reaction"):
            self._update_reply(client, row.id, row.channel, row.message_ts, None, None)
            self._notify()

    def _on_correct(self, ack, body: dict[str, Any], action: dict[str, Any], client, respond) -> None:
        user = (body.get("user") or {}).get("id") or ""
        block_id = str(action.get("block_id") or "")
        diagnosis_id = block_id[len(CORRECT_BLOCK_PREFIX):] if block_id.startswith(CORRECT_BLOCK_PREFIX) else ""
        value = str(((action.get("selected_option") or {}).get("value")) or "")
        try:
            category, incident = self._parse_choice(value)
            self.store.correct(diagnosis_id, user, category, incident, source="button")
        except FeedbackError as exc:
            ack()
            respond(text=f"⚠️ Not recorded: {exc}.", response_type="ephemeral", replace_original=False)
            return
        ack()
        label = f"`{category}`" + (f" ({incident})" if incident else "")
        respond(text=f"✅ Recorded: this was {label}. Thanks — the bot learns from it.", replace_original=True,
                response_type="ephemeral")
        row = self.store.diagnosis(diagnosis_id)
        self._update_reply(client, diagnosis_id, row.channel, row.message_ts, None, None)
        self._notify()

    def _on_new_incident(self, ack, body: dict[str, Any], action: dict[str, Any], client) -> None:
        ack()
        diagnosis_id = str(action.get("value") or "")
        try:
            row = self.store.diagnosis(diagnosis_id)
        except NotFound:
            return
        client.views_open(trigger_id=body.get("trigger_id"), view=self._incident_modal(row))

    def _on_new_incident_submit(self, ack, body: dict[str, Any], view: dict[str, Any], client) -> None:
        user = (body.get("user") or {}).get("id") or ""
        values = (view.get("state") or {}).get("values") or {}

        def value(block: str) -> str:
            v = (values.get(block) or {}).get("value") or {}
            return str(((v.get("selected_option") or {}).get("value")) or v.get("value") or "").strip()

        meta = json.loads(view.get("private_metadata") or "{}")
        diagnosis_id = str(meta.get("diagnosis") or "")
        errors = {b: "Required." for b in ("category", "title", "cause", "first_action") if not value(b)}
        category = value("category")
        if category and category not in self.corpus.categories:
            errors["category"] = "Unknown category."
        if errors:
            ack(response_action="errors", errors=errors)
            return
        try:
            incident, result = self.store.new_incident(diagnosis_id, user, category=category, title=value("title"),
                                                       cause=value("cause"), first_action=value("first_action"))
        except FeedbackError as exc:
            ack(response_action="errors", errors={"title": str(exc)[:150]})
            return
        ack()
        row = self.store.diagnosis(diagnosis_id)
        self._ephemeral(client, row.channel, user, row.thread_ts,
                        f"✅ Recorded a new incident, *{_mrkdwn(incident.title)}* (`{incident.id}`, category "
                        f"`{category}`). It answers from now on and is exported for review with "
                        f"`servetriage corpus export`.")
        self._update_reply(client, diagnosis_id, row.channel, row.message_ts, None, None)
        self._notify()

    # -- after a vote -------------------------------------------------------------------------------
    def _after_vote(self, client, result: VoteResult, channel: str | None, ts: str | None,
                    blocks: list[dict[str, Any]] | None, text: str | None) -> None:
        if channel and ts:
            self._update_reply(client, result.diagnosis_id, channel, ts, blocks, text)
        if channel:
            row = self.store.diagnosis(result.diagnosis_id)
            if result.direction > 0:
                self._ephemeral(client, channel, result.user, row.thread_ts, _ack_text(result))
            else:
                self._ephemeral(client, channel, result.user, row.thread_ts, _ack_text(result),
                                blocks=self._correction_prompt(row, result))
        if result.changed:
            self._notify()

    def _notify(self) -> None:
        if self.retrainer is not None:
            self.retrainer.notify()

    def _update_reply(self, client, diagnosis_id: str, channel: str | None, ts: str | None,
                      blocks: list[dict[str, Any]] | None, text: str | None) -> None:
        """The reply with the current tally; one update at a time per reply, so the last one is current."""
        if not channel or not ts:
            return
        with self._reply_lock(diagnosis_id):
            row = self.store.diagnosis(diagnosis_id)
            base = blocks or row.blocks
            fallback = text
            if not base or not fallback:
                rendered = _render(row)
                if rendered is not None:
                    base = base or rendered[1]
                    fallback = fallback or rendered[0]
            if not base:
                return
            tally = self.store.tally(diagnosis_id)
            try:
                client.chat_update(channel=channel, ts=ts, text=fallback or "servetriage", blocks=with_tally(base, tally))
            except Exception as exc:  # noqa: BLE001 — a failed update must not lose the vote's other effects
                log.warning("chat.update of %s in %s failed: %s", ts, channel, exc)

    def _reply_lock(self, diagnosis_id: str) -> threading.Lock:
        with self._locks_lock:
            lock = self._reply_locks.get(diagnosis_id)
            if lock is None:
                if len(self._reply_locks) > 10000:
                    self._reply_locks.clear()
                lock = self._reply_locks[diagnosis_id] = threading.Lock()
            return lock

    def _ephemeral(self, client, channel: str, user: str, thread_ts: str | None, text: str,
                   blocks: list[dict[str, Any]] | None = None) -> None:
        kwargs: dict[str, Any] = {"channel": channel, "user": user, "text": text}
        if thread_ts:
            kwargs["thread_ts"] = thread_ts
        if blocks:
            kwargs["blocks"] = blocks
        try:
            client.chat_postEphemeral(**kwargs)
        except Exception as exc:  # noqa: BLE001
            log.warning("chat.postEphemeral to %s in %s failed: %s", user, channel, exc)

    def _refresh_groups(self, client) -> None:
        """Resolve allow-listed user groups (usergroups.users.list), at most every ten minutes."""
        groups = self.store.allowlist.groups
        now = self._clock()
        if not groups or now - self._groups_fetched < GROUP_REFRESH_S:
            return
        self._groups_fetched = now
        for group in groups:
            try:
                resp = client.usergroups_users_list(usergroup=group)
                self.store.set_group_members(group, [str(u) for u in resp.get("users") or []])
            except Exception as exc:  # noqa: BLE001 — keep the cached members
                log.warning("usergroups.users.list %s failed: %s", group, exc)

    # -- the correction ------------------------------------------------------------------------------
    def _correction_prompt(self, row, result: VoteResult) -> list[dict[str, Any]]:
        text = _ack_text(result) + " *What was it?* Pick it below, or describe a new incident."
        return [
            {"type": "section", "text": {"type": "mrkdwn", "text": text}},
            {"type": "actions", "block_id": CORRECT_BLOCK_PREFIX + row.id, "elements": [
                {"type": "static_select", "action_id": CORRECT_ACTION,
                 "placeholder": {"type": "plain_text", "text": "The right category or incident"},
                 "option_groups": self._option_groups(row)},
                {"type": "button", "action_id": NEW_INCIDENT_ACTION, "value": row.id,
                 "text": {"type": "plain_text", "text": "New incident…"}},
            ]},
        ]

    def _option_groups(self, row) -> list[dict[str, Any]]:
        corpus = self.corpus
        alternatives = []
        seen = set()
        for alt in row.alternatives:
            cat = alt.get("category")
            if not cat or cat == row.category or cat in seen:
                continue
            seen.add(cat)
            inc = alt.get("incident")
            if inc and corpus.incident(inc) is not None:
                alternatives.append(_option(f"{cat}: {corpus.incident(inc).title}", f"i:{inc}"))
            else:
                alternatives.append(_option(_category_text(corpus, cat), f"c:{cat}"))
        groups = []
        if alternatives:
            groups.append({"label": {"type": "plain_text", "text": "Likely"}, "options": alternatives[:100]})
        cats = [_option(_category_text(corpus, c), f"c:{c}") for c in corpus.categories if c != row.category]
        groups.append({"label": {"type": "plain_text", "text": "Categories"}, "options": cats[:100]})
        by_cat: dict[str, list[dict[str, Any]]] = {}
        for inc in corpus.incidents:
            if inc.category == "unknown":
                continue
            by_cat.setdefault(inc.category, []).append(_option(inc.title, f"i:{inc.id}"))
        for new in self.store.new_incidents():
            by_cat.setdefault(new.category, []).append(_option(new.title + " (on-call)", f"i:{new.id}"))
        for cat, options in by_cat.items():
            if len(groups) >= 100:
                break
            groups.append({"label": {"type": "plain_text", "text": _clip(f"Incidents: {cat}", OPTION_TEXT)},
                           "options": options[:100]})
        return groups

    def _parse_choice(self, value: str) -> tuple[str, str | None]:
        kind, _, ident = value.partition(":")
        if kind == "c" and ident:
            return ident, None
        if kind == "i" and ident:
            inc = self.corpus.incident(ident)
            if inc is not None:
                return inc.category, inc.id
            try:
                new = self.store.incident(ident)
            except NotFound:
                raise FeedbackError(f"unknown incident {ident!r}") from None
            return new.category, new.id
        raise FeedbackError("nothing was chosen")

    def _incident_modal(self, row) -> dict[str, Any]:
        corpus = self.corpus
        cats = [_option(_category_text(corpus, c), c) for c in corpus.categories][:100]
        guess = next((a.get("category") for a in row.alternatives if a.get("category") not in (None, row.category)), None)
        select: dict[str, Any] = {"type": "static_select", "action_id": "value", "options": cats,
                                  "placeholder": {"type": "plain_text", "text": "Category"}}
        initial = next((o for o in cats if o["value"] == guess), None)
        if initial is not None:
            select["initial_option"] = initial

        def text_input(block: str, label: str, multiline: bool, limit: int) -> dict[str, Any]:
            return {"type": "input", "block_id": block, "label": {"type": "plain_text", "text": label},
                    "element": {"type": "plain_text_input", "action_id": "value", "multiline": multiline,
                                "max_length": limit}}

        return {
            "type": "modal", "callback_id": NEW_INCIDENT_VIEW,
            "private_metadata": json.dumps({"diagnosis": row.id}),
            "title": {"type": "plain_text", "text": "New incident"},
            "submit": {"type": "plain_text", "text": "Save"},
            "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text":
                    f"The bot answered `{row.category}`. Describe what this log really shows; the bot answers "
                    f"with it from now on, and it is exported for review into the corpus."}},
                {"type": "input", "block_id": "category", "label": {"type": "plain_text", "text": "Category"},
                 "element": select},
                text_input("title", "Title", False, 150),
                text_input("cause", "Cause", True, 1000),
                text_input("first_action", "First action", True, 1000),
            ],
        }


def feedback_extension(store: FeedbackStore, **kw: Any) -> FeedbackFlow:
    """The extension for `build_app(..., extensions=(feedback_extension(store, handle=…, retrainer=…),))`."""
    return FeedbackFlow(store, **kw)


# -- blocks ------------------------------------------------------------------------------------------
def tally_text(t: Tally) -> str:
    parts = [f"👍 {t.up}", f"👎 {t.down}"]
    if t.label is not None and t.label.kind == "corrected":
        parts.append(f"on-call says: `{t.label.category}`")
    elif t.label is not None:
        parts.append("confirmed by on-call")
    elif t.suggested:
        parts.append("suggested: " + ", ".join(f"`{c}` ({n})" for c, n in t.suggested[:3]))
    return " · ".join(parts)


def with_tally(blocks: list[dict[str, Any]], t: Tally) -> list[dict[str, Any]]:
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


def _render(row) -> tuple[str, list[dict[str, Any]]] | None:
    """Render the stored answer again (a reaction carries no blocks); None without the bot package."""
    try:
        from servetriage.bot.render import render_diagnosis  # noqa: PLC0415
        from servetriage.classifier import Diagnosis  # noqa: PLC0415
        reply = render_diagnosis(Diagnosis.from_dict(row.diagnosis), row.id)
    except Exception as exc:  # noqa: BLE001
        log.warning("cannot render diagnosis %s again: %s", row.id, exc)
        return None
    return reply.text, list(reply.blocks)


def _ack_text(result: VoteResult) -> str:
    mark = "👍" if result.direction > 0 else "👎"
    text = f"Thanks — your {mark} is recorded." if result.changed else f"You had already voted {mark}."
    if not result.trusted:
        text += " (It is kept, but only the on-call trainers' votes train the model.)"
    elif result.throttled:
        text += " (You have voted a lot in a short time: it is kept, but does not train the model for now.)"
    return text


def _option(text: str, value: str) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": _clip(text, OPTION_TEXT)}, "value": value[:150]}


def _category_text(corpus, category: str) -> str:
    cat = corpus.categories.get(category)
    return f"{category}: {cat.title}" if cat else category


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _mrkdwn(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
