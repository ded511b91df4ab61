"""The "Diagnose a log" modal that `/diagnose` alone opens: a paste box and an optional file."""

from __future__ import annotations

import json
from typing import Any

from ._limits import INPUT_MAX

MODAL_CALLBACK = "diagnose_modal"
LOG_BLOCK, LOG_ACTION = "log_block", "log_input"
FILE_BLOCK, FILE_ACTION = "file_block", "file_input"


def diagnose_modal(metadata: dict[str, Any]) -> dict[str, Any]:
    """`metadata` (channel, response_url) rides in `private_metadata` back to the submission."""
    return {
        "type": "modal",
        "callback_id": MODAL_CALLBACK,
        "title": {"type": "plain_text", "text": "Diagnose a log"},
        "submit": {"type": "plain_text", "text": "Diagnose"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "private_metadata": json.dumps(metadata, separators=(",", ":"))[:3000],
        "blocks": [
            {"type": "input", "block_id": LOG_BLOCK, "optional": True,
             "label": {"type": "plain_text", "text": "Paste the failure log"},
             "hint": {"type": "plain_text", "text": f"Up to {INPUT_MAX:,} characters; attach a file for more."},
             "element": {"type": "plain_text_input", "action_id": LOG_ACTION, "multiline": True,
                         "max_length": INPUT_MAX,
                         "placeholder": {"type": "plain_text", "text": "Traceback (most recent call last): …"}}},
            {"type": "input", "block_id": FILE_BLOCK, "optional": True,
             "label": {"type": "plain_text", "text": "…or attach a log file"},
             "element": {"type": "file_input", "action_id": FILE_ACTION, "max_files": 1,
                         "filetypes": ["log", "txt", "out", "gz", "zip"]}},
        ],
    }
