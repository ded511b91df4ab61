"""Short messages that are not diagnoses: why a file was not read, how to ask, when to retry.

Never silence: whatever stops a diagnosis is said in the thread, in one or two sentences that
name the fix (a scope, a smaller file, an invite).
"""

from __future__ import annotations

from ._diagnosis import Reply
from ._limits import SECTION_TEXT, clip, code, escape

HELP = ("Paste a failure log in a code block, attach a `.log`, `.txt`, `.gz` or `.zip` file, mention me in the thread "
        "under one, or use `/diagnose <log>` (`/diagnose` alone opens a form).")


def notice(text: str) -> Reply:
    """`text` is mrkdwn already escaped by the caller (use `code()` / `escape()` for anything pasted)."""
    body = clip(text, SECTION_TEXT)
    return Reply(text=body, blocks=({"type": "section", "text": {"type": "mrkdwn", "text": body}},))


def too_large(name: str, limit_bytes: int) -> Reply:
    return notice(f"📦 {code(name)} is larger than the {_mb(limit_bytes)} limit I read, so I did not diagnose it. "
                  "Attach the part around the failure (or gzip it), or raise `SERVETRIAGE_MAX_INPUT_MB`.")


def unsupported(name: str, kind: str) -> Reply:
    return notice(f"📄 I can only read text logs (`.log`, `.txt`, `.gz`, `.zip`); {code(name)} is {escape(kind)}.")


def download_failed(name: str, why: str) -> Reply:
    return notice(f"⚠️ I could not read {code(name)}: {escape(why)}")


def nothing_to_diagnose(where: str) -> Reply:
    return notice(f"🤔 I found no log {escape(where)}. {HELP}")


def queued(depth: int) -> Reply:
    return notice(f"⏳ I have {depth - 1} other logs to diagnose first; yours is queued and will be answered here. "
                  "No need to paste it again.")


def parked() -> Reply:
    return notice("⚠️ I could not diagnose this log after three tries; the error is logged for the operators "
                  "(`servetriage` keeps the job). Paste it again later, or run `servetriage diagnose` on it.")


def same_failure(link: str, category: str, up: int, down: int) -> Reply:
    votes = f", 👍 {up}" + (f" 👎 {down}" if down else "") if up or down else ""
    return notice(f"🔁 Same failure as <{link}|this answer> a few minutes ago: {code(category)}{votes}. "
                  "Mention me here if this one is different.")


def read_together() -> Reply:
    return notice("📚 Read together with the other files of this message: the answer is below.")


def reading(name: str, size: int | None) -> Reply:
    return notice(f"⏳ Reading {code(name)}{f' ({_mb(size)})' if size else ''}…")


def not_in_channel() -> Reply:
    return notice("I am not a member of this channel, so I can only answer you here. "
                  "Invite me (`/invite @servetriage`) to get answers in the thread.")


def _mb(n: int) -> str:
    mb = n / (1024 * 1024)
    return f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"
