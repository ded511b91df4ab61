"""Block Kit: the diagnosis reply, the feedback tally and correction, the short notices, the `/diagnose` modal."""

from . import _notices as notices
from ._diagnosis import FEEDBACK_BLOCK, FEEDBACK_DOWN, FEEDBACK_UP, Reply, fallback_text, feedback_actions, render_diagnosis
from ._feedback import CORRECT_ACTION, NEW_INCIDENT_ACTION, NEW_INCIDENT_VIEW, TALLY_BLOCK, tally_text, with_tally
from ._limits import MAX_BLOCKS, SECTION_TEXT, clip, code, escape
from ._modal import FILE_ACTION, FILE_BLOCK, LOG_ACTION, LOG_BLOCK, MODAL_CALLBACK, diagnose_modal

__all__ = [
    "CORRECT_ACTION", "FEEDBACK_BLOCK", "FEEDBACK_DOWN", "FEEDBACK_UP", "FILE_ACTION", "FILE_BLOCK", "LOG_ACTION",
    "LOG_BLOCK", "MAX_BLOCKS", "MODAL_CALLBACK", "NEW_INCIDENT_ACTION", "NEW_INCIDENT_VIEW", "Reply", "SECTION_TEXT",
    "TALLY_BLOCK", "clip", "code", "diagnose_modal", "escape", "fallback_text", "feedback_actions", "notices",
    "render_diagnosis", "tally_text", "with_tally",
]
