"""Slack message text back to what the user pasted.

Slack sends message text with `&`, `<` and `>` escaped and wraps links, mentions and channels in
`<...>` markup; a log diagnosed in that form would carry `&gt;` and `<http://host|host>` where the
engine expects `>` and `host`, so the markup is resolved first and the three entities last.
"""

from __future__ import annotations

import re

_LINK = re.compile(r"<((?:https?|ftp|mailto|file|tel):[^|>\s]*)(?:\|([^>]*))?>")
_USER = re.compile(r"<@([UWB][A-Z0-9]+)(?:\|([^>]*))?>")
_CHANNEL = re.compile(r"<#([CGD][A-Z0-9]+)(?:\|([^>]*))?>")
_SPECIAL = re.compile(r"<!([a-z]+)(?:\^[^|>]*)?(?:\|([^>]*))?>")


def unformat(text: str) -> str:
    """Resolve Slack's markup and unescape `&lt;`, `&gt;`, `&amp;` (in that order, so `&amp;lt;` stays `&lt;`)."""
    if "<" in text:
        text = _LINK.sub(lambda m: m.group(2) or m.group(1), text)
        text = _USER.sub(lambda m: "@" + (m.group(2) or m.group(1)), text)
        text = _CHANNEL.sub(lambda m: "#" + (m.group(2) or m.group(1)), text)
        text = _SPECIAL.sub(lambda m: m.group(2) or "@" + m.group(1), text)
    if "&" in text:
        text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return text


def strip_mention(text: str, user_id: str | None) -> str:
    """The text without mentions of `user_id` (the bot), still in Slack's escaped form."""
    if not user_id:
        return re.sub(r"^\s*<@[UW][A-Z0-9]+(?:\|[^>]*)?>\s*", "", text)
    return re.sub(rf"<@{re.escape(user_id)}(?:\|[^>]*)?>\s*", "", text).strip()


def mentions(text: str, user_id: str | None) -> bool:
    return bool(user_id) and f"<@{user_id}" in text
