"""Learning from on-call feedback: 👍/👎 and corrections, stored, retrain the model, gated.

The parts, and how `servetriage serve` wires them:

    parts = for_bot(settings).start()    # FeedbackStore, ModelHandle, Retrainer (started), StoreFeedback
    serve(settings, parts.diagnoser, recorder=parts.recorder, feedback=parts.feedback)
    parts.close()                        # on shutdown, after the bot has drained

* `FeedbackStore` — one repository per concern (replies, votes, training set, incidents, trust,
  forgetting) over one database: SQLite, or PostgreSQL for replicas.
* `ModelHandle` — the bot's diagnoser; answers with the active model, swapped on promotion.
* `Retrainer` — debounced background retraining, promoted only when no worse on the gate.
* `StoreFeedback` — the Slack-free service the bot's feedback listeners call (`bot.FeedbackService`).
* CLI: `servetriage model list|promote|rollback`, `feedback export|forget`, `db backup`,
  `corpus export`, `eval --online`.

Importing this package is cheap: the engine, Slack and the CLI parts load on first use.
"""

from __future__ import annotations

import argparse
import importlib
from typing import TYPE_CHECKING, Any

from ._errors import FeedbackError, NotFound, SchemaError

_LAZY = {
    "GateCase": "._gate", "corpus_gate_cases": "._gate",
    "ModelHandle": "._handle",
    "FeedbackMemory": "._memory",
    "Retrainer": "._retrain", "RetrainResult": "._retrain", "prune": "._retrain",
    "training_hash": "._retrain", "training_set": "._retrain",
    "Allowlist": "._rules", "RateLimit": "._rules", "derive": "._rules",
    "DiagnosisRow": "._replies", "FeedbackExample": "._training", "FeedbackStore": "._store",
    "NewIncident": "._incidents", "Tally": "._derive", "VoteResult": "._votes", "backup_database": "._store",
    "StoreFeedback": "._service",
    "BotParts": "._wiring", "for_bot": "._wiring",
}
SCHEMA_VERSION = 4  # the latest migration (checked against _schema.LATEST by the tests)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from servetriage._settings import Settings


def register_cli(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ._cli import register_cli as register  # noqa: PLC0415
    register(subparsers)


def online_eval(args: argparse.Namespace, settings: Settings) -> int:
    from ._online import online_eval as run  # noqa: PLC0415
    return run(args, settings)


def fine_tune_command(settings: Settings, as_json: bool = False) -> int:
    from ._tune import fine_tune_command as run  # noqa: PLC0415
    return run(settings, as_json=as_json)


def export_incidents(args: argparse.Namespace, settings: Settings) -> int:
    from ._export import export_incidents as run  # noqa: PLC0415
    return run(args, settings)


__all__ = [
    "Allowlist", "BotParts", "DiagnosisRow", "FeedbackError", "FeedbackExample", "FeedbackMemory",
    "FeedbackStore", "GateCase",
    "ModelHandle", "NewIncident", "NotFound", "RateLimit", "RetrainResult", "Retrainer", "SCHEMA_VERSION",
    "SchemaError", "StoreFeedback", "Tally", "VoteResult", "backup_database", "corpus_gate_cases", "derive", "export_incidents",
    "fine_tune_command", "for_bot", "online_eval", "prune", "register_cli", "training_hash",
    "training_set",
]
