"""The shipped Slack app manifest asks for what the code uses, and names what the code listens for."""

from __future__ import annotations

from pathlib import Path

import yaml

import servetriage.bot as bot


def _manifest() -> dict:
    return yaml.safe_load((Path(bot.__file__).parent / "manifest.yaml").read_text())


def test_manifest_scopes_events_command_shortcut_and_modes():
    m = _manifest()
    assert set(m["oauth_config"]["scopes"]["bot"]) == {
        "app_mentions:read", "channels:history", "groups:history", "chat:write", "commands", "files:read",
        "reactions:read", "users:read", "usergroups:read"}
    assert set(m["settings"]["event_subscriptions"]["bot_events"]) == {
        "message.channels", "message.groups", "app_mention", "reaction_added", "reaction_removed", "file_shared"}
    assert [c["command"] for c in m["features"]["slash_commands"]] == [bot.COMMAND]
    [shortcut] = m["features"]["shortcuts"]
    assert shortcut["type"] == "message" and shortcut["callback_id"] == bot.SHORTCUT
    assert m["settings"]["interactivity"]["is_enabled"] is True
    assert m["settings"]["socket_mode_enabled"] is True
