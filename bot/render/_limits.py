"""Slack's Block Kit limits, and the two ways text is made safe for them."""

from __future__ import annotations

SECTION_TEXT = 3000      # characters in a section's text
HEADER_TEXT = 150        # characters in a header's plain_text
CONTEXT_TEXT = 2000      # characters in one context element (we keep well under)
BUTTON_VALUE = 2000
MAX_BLOCKS = 50          # blocks in one message
FALLBACK_TEXT = 3000     # the notification text; Slack truncates at 40,000 but keep it readable
INPUT_MAX = 3000         # a plain_text_input's max_length


def escape(text: str) -> str:
    """mrkdwn needs `&`, `<` and `>` escaped, inside code blocks too, or Slack reads them as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def code(text: str) -> str:
    """Inline code: backticks inside would end it early, so they become a look-alike."""
    return "`" + escape(text.replace("`", "ˋ")) + "`"
