"""The feedback flow through slack-bolt itself: the real app from `bot.build_app` with the feedback
service, served over loopback HTTP, signed requests as Slack sends them, and a local stand-in for
Slack's Web API recording every call. The diagnoser is the real engine behind a `ModelHandle`.

Every click is made with the `block_id`, `action_id` and `value` of a button the bot really posted
(read back from the stand-in), so a renamed id in the renderer or the listener fails here."""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.error
import urllib.request
import uuid
from typing import Any

import pytest
from fbhelpers import NOVEL_LABEL, NOVEL_LOG, novel_variant

from servetriage.bot import HttpAdapter, HttpServer, build_app
from servetriage.bot.standin import (SlackStandIn, event_envelope, interactive_body, message_event, posted_button,
                                     signed_headers, view_submission)
from servetriage.feedback import for_bot

SECRET = "feedbacksecret0123456789abcdef00"
CHANNEL = "C0FB"


class StandIn(SlackStandIn):
    """Slack's stand-in, also answering `usergroups.users.list` (the allow-list's user groups)."""

    groups = {"SONCALL": ["U1", "U2", "U4", "U5"]}

    def answer(self, method: str, args: dict[str, Any], token: str | None) -> dict[str, Any]:
        if method == "usergroups.users.list" and token == self.token:
            return {"ok": True, "users": self.groups.get(str(args.get("usergroup")), [])}
        return super().answer(method, args, token)


class Client:
    def __init__(self, url: str) -> None:
        self.url = url

    def post(self, body: str) -> tuple[int, str]:
        req = urllib.request.Request(self.url, data=body.encode(), headers=signed_headers(SECRET, body), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def click(self, user: str, action: dict[str, Any], message: dict[str, Any] | None, response_url: str,
              trigger_id: str | None = None) -> tuple[int, str]:
        payload = {"type": "block_actions", "user": {"id": user}, "team": {"id": "T0001"}, "api_app_id": "A0001",
                   "token": "legacy", "trigger_id": trigger_id or f"trig.{uuid.uuid4().hex[:8]}",
                   "channel": {"id": CHANNEL}, "response_url": response_url,
                   "actions": [{"type": "button", "action_ts": f"{time.time():.6f}", **action}]}
        if message is not None:
            payload["container"] = {"type": "message", "message_ts": message["ts"], "channel_id": CHANNEL}
            payload["message"] = message
        else:
            payload["container"] = {"type": "message", "message_ts": "1.0", "channel_id": CHANNEL, "is_ephemeral": True}
        return self.post(interactive_body(payload))

    def event(self, event: dict[str, Any]) -> tuple[int, str]:
        return self.post(json.dumps(event_envelope(event)))


@pytest.fixture
def served(fb_settings, fb_corpus):
    with StandIn() as slack:
        settings = dataclasses.replace(fb_settings, slack_bot_token=slack.token, slack_signing_secret=SECRET,
                                       slack_api_url=slack.api_url, workers=2, channel_rate_per_minute=0,
                                       trainer_allowlist=("SONCALL",))
        parts = for_bot(settings, corpus=fb_corpus, debounce_s=0.2)
        bot = build_app(settings, parts.diagnoser, recorder=parts.recorder, feedback=parts.feedback)
        bot.warm_in_background()
        assert bot.readiness.wait(60)
        server = HttpServer(HttpAdapter(bot).asgi(), "127.0.0.1", 0).start()
        try:
            yield slack, Client(server.url + "/slack/events"), parts
        finally:
            server.stop()
            bot.close()
            parts.close()


def _reply(slack, n: int = 1):
    posted = slack.wait_for("chat.postMessage", n)[n - 1]
    up = posted_button(posted.blocks, "👍")
    return posted, up["value"]


def test_buttons_reactions_correction_and_new_incident(served):
    slack, client, parts = served
    store = parts.store
    assert client.event(message_event(NOVEL_LOG, channel=CHANNEL, user="UASK", ts="1712000000.000100"))[0] == 200
    posted, did = _reply(slack)
    _wait(lambda: store.replies.get(did).message_ts is not None)  # attach_reply follows chat.postMessage
    row = store.replies.get(did)
    reply_ts = row.message_ts
    assert row.channel == CHANNEL and row.thread_ts == "1712000000.000100" and row.category != NOVEL_LABEL
    message = {"ts": reply_ts, "text": posted.args.get("text"), "blocks": posted.blocks}

    # 👍 from U1: stored before the click is acknowledged, then the tally and an ephemeral thank-you
    status, _ = client.click("U1", posted_button(posted.blocks, "👍"), message, slack.response_url())
    assert status == 200 and [(v["user"], v["direction"]) for v in store.votes.all(did)] == [("U1", 1)]
    slack.wait_for("chat.update", where=lambda c: c.args.get("ts") == reply_ts and "👍 1" in c.text)
    [thanks] = slack.wait_for("chat.postEphemeral", where=lambda c: c.args.get("user") == "U1")
    assert "recorded" in thanks.text and thanks.args["thread_ts"] == "1712000000.000100"

    # 👎 from U2: the acknowledgement is the correction, in one step
    client.click("U2", posted_button(posted.blocks, "👎"), message, slack.response_url())
    [prompt] = slack.wait_for("chat.postEphemeral", where=lambda c: c.args.get("user") == "U2")
    [select_block] = [b for b in prompt.blocks if b["type"] == "actions"]
    select = select_block["elements"][0]
    labels = [g["label"]["text"] for g in select["option_groups"]]
    assert select["type"] == "static_select" and "Categories" in labels and any(l.startswith("Incidents") for l in labels)
    values = {o["value"] for g in select["option_groups"] for o in g["options"]}
    assert f"c:{NOVEL_LABEL}" in values and "i:fb-test-engine-dead" in values
    new_incident = posted_button([select_block], "New incident")

    url = slack.response_url("fix-u2")
    status, _ = client.click("U2", {"action_id": select["action_id"], "block_id": select_block["block_id"],
                                    "type": "static_select",
                                    "selected_option": {"value": f"c:{NOVEL_LABEL}", "text": {"type": "plain_text",
                                                                                           "text": NOVEL_LABEL}}},
                             None, url)
    assert status == 200 and store.votes.corrections(did)[0]["category"] == NOVEL_LABEL
    [done] = slack.wait_for("response_url", where=lambda c: c.path.endswith("/fix-u2"))
    assert "Recorded" in done.text and done.args.get("replace_original") in (True, "true")
    slack.wait_for("chat.update", where=lambda c: c.args.get("ts") == reply_ts and "suggested" in c.text)
    assert store.training.examples() == []  # 1 👍 against 1 correction: no agreement yet

    # a 👎 reaction counts like the button; removing it withdraws it
    reaction = {"type": "reaction_added", "user": "U3", "reaction": "-1::skin-tone-2", "item_user": "UBOT",
                "item": {"type": "message", "channel": CHANNEL, "ts": reply_ts}, "event_ts": "1712000001.0"}
    assert client.event(reaction)[0] == 200
    _wait(lambda: any(v["user"] == "U3" for v in store.votes.all(did)))
    assert [v for v in store.votes.all(did) if v["user"] == "U3"][0]["source"] == "reaction"
    client.event({**reaction, "type": "reaction_removed"})
    _wait(lambda: not any(v["user"] == "U3" for v in store.votes.all(did)))

    # U4 writes a new incident in the modal
    client.click("U4", new_incident, None, slack.response_url(), trigger_id="trig.newinc")
    [opened] = slack.wait_for("views.open")
    view = opened.args["view"] if isinstance(opened.args["view"], dict) else json.loads(opened.args["view"])
    assert opened.args["trigger_id"] == "trig.newinc" and view["callback_id"] == "servetriage_new_incident"
    status, body = client.post(interactive_body(view_submission(view, {}, user="U4")))
    assert status == 200 and json.loads(body)["response_action"] == "errors" and store.incidents.all() == []
    filled = {"category": {"value": {"type": "static_select", "selected_option": {"value": NOVEL_LABEL}}},
              "title": {"value": {"type": "plain_text_input", "value": "Triton cannot compile fp8 kernels on Ampere"}},
              "cause": {"value": {"type": "plain_text_input", "value": "fp8e4nv needs compute capability 8.9."}},
              "first_action": {"value": {"type": "plain_text_input", "value": "Use --kv-cache-dtype auto on A100."}}}
    assert client.post(interactive_body(view_submission(view, filled, user="U4")))[0] == 200
    [inc] = store.incidents.all()
    assert inc.category == NOVEL_LABEL and inc.created_by == "U4"
    [ex] = store.training.examples()  # two corrections against one 👍: agreed
    assert (ex.category, ex.kind, ex.incident) == (NOVEL_LABEL, "corrected", inc.id)
    slack.wait_for("chat.update", where=lambda c: c.args.get("ts") == reply_ts and "on-call says" in c.text)

    # the retrain learns it; the next paste of the same failure gets the incident on-call wrote
    result = parts.retrainer.run_once()
    assert result.state == "active"
    client.event(message_event(novel_variant(5), channel=CHANNEL, user="UASK", ts="1712000100.000100"))
    second = slack.wait_for("chat.postMessage", 2)[1]
    assert NOVEL_LABEL in second.text and "Triton cannot compile fp8 kernels" in second.text


def test_votes_outside_the_allowlist_are_kept_and_said_so(served):
    slack, client, parts = served
    client.event(message_event(NOVEL_LOG, channel=CHANNEL, user="UASK", ts="1712000200.000100"))
    posted, did = _reply(slack)
    message = {"ts": "1712000200.999", "text": posted.args.get("text"), "blocks": posted.blocks}
    client.click("UOUTSIDER", posted_button(posted.blocks, "👍"), message, slack.response_url())
    [said] = slack.wait_for("chat.postEphemeral", where=lambda c: c.args.get("user") == "UOUTSIDER")
    assert "only the on-call trainers" in said.text
    assert slack.calls_to("usergroups.users.list")[0].args["usergroup"] == "SONCALL"
    assert len(parts.store.votes.all(did)) == 1 and parts.store.training.examples() == []
    status, _ = client.click("U1", {**posted_button(posted.blocks, "👍"), "value": "no-such-diagnosis"}, message,
                             slack.response_url("gone"))
    assert status == 200
    [gone] = slack.wait_for("response_url", where=lambda c: c.path.endswith("/gone"))
    assert "no longer have" in gone.text


def _wait(cond, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(0.02)
