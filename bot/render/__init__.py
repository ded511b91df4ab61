"""Block Kit: the diagnosis reply, the short notices, and the `/diagnose` modal."""

from . import _notices as notices
from ._diagnosis import FEEDBACK_BLOCK, FEEDBACK_DOWN, FEEDBACK_UP, Reply, fallback_text, feedback_actions, render_diagnosis
from ._limits import MAX_BLOCKS, SECTION_TEXT, clip, code, escape
from ._modal import FILE_ACTION, FILE_BLOCK, LOG_ACTION, LOG_BLOCK, MODAL_CALLBACK, diagnose_modal

__all__ = [
    "FEEDBACK_BLOCK", "FEEDBACK_DOWN", "FEEDBACK_UP", "FILE_ACTION", "FILE_BLOCK", "LOG_ACTION", "LOG_BLOCK",
    "MAX_BLOCKS", "MODAL_CALLBACK", "Reply", "SECTION_TEXT", "clip", "code", "diagnose_modal", "escape",
    "fallback_text", "feedback_actions", "notices", "render_diagnosis",
]
