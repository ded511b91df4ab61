"""`servetriage train --fine-tune`: tune the sentence model on the corpus, the catalogue and on-call's
confirmed feedback, and make it the default only when it earns it twice over.

First on cross-validation (`classifier.fine_tune`: folds holding out whole incidents, catalogue
source directories and feedback pastes; the tuned model must beat the packaged one there), then on
the promotion gate every retrain passes (`Retrainer.judge`): a model built with the tuned embedder
must answer the gate set no worse than the active model. It runs as its own process beside the bot
(minutes on two cores); the bot follows the model it promotes as it follows any promotion.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from collections.abc import Callable
from typing import Any

from servetriage._settings import Settings

from ._handle import ModelHandle
from ._retrain import Retrainer, training_set
from ._store import FeedbackStore


def fine_tune_and_promote(settings: Settings, say: Callable[[str], None] = lambda m: None) -> dict[str, Any]:
    from servetriage.classifier import activate_embedder, artefacts_for, embedder_at, fine_tune, train  # noqa: PLC0415
    from servetriage.corpus import load_corpus  # noqa: PLC0415

    corpus = load_corpus(settings.extra_corpus_dirs)
    with FeedbackStore.open(settings, categories=corpus.categories) as store:  # SQLite, or the shared database
        quarantined = store.training.quarantined()
        confirmed = [e for e in store.training.examples() if (e.text_hash, e.category) not in quarantined]
        extra = training_set(confirmed)
        say(f"cross-validating a tuned sentence model ({len(extra)} feedback examples with the corpus)")
        result = fine_tune(settings, corpus, extra, say=say)
        report: dict[str, Any] = {**{k: v for k, v in dataclasses.asdict(result).items() if k != "candidate"},
                                  "candidate": str(result.candidate) if result.candidate else None,
                                  "promoted": False, "gate": None}
        if result.candidate is None:
            report["verdict"] = "the packaged model stays the default: the tuned one did not beat it on held-out folds"
            return report
        handle = ModelHandle(settings, corpus, training=store.training, incidents=store.incidents)
        tuned = embedder_at(result.candidate, settings.threads)
        parent = handle.model
        say("building a model with the tuned sentence model")
        candidate = train(corpus, tuned, artefacts_for(settings), extra, parent=parent.meta.version)
        judged = Retrainer(settings, store, handle).judge(candidate, how="fine-tuned embedder")
        report["gate"] = judged.gate
        report["model_version"] = candidate.meta.version
        if judged.state == "active":
            activate_embedder(settings, result.candidate)
            report["promoted"] = True
            report["verdict"] = "now the default (held-out folds and the gate)"
        else:
            report["verdict"] = f"discarded: {judged.reason}"
            shutil.rmtree(result.candidate, ignore_errors=True)  # a tuned model nobody will load: its disk back
        return report


def fine_tune_command(settings: Settings, as_json: bool = False) -> int:
    say: Callable[[str], None] = (lambda m: None) if as_json else (lambda m: print(f"  {m}", file=sys.stderr))
    report = fine_tune_and_promote(settings, say=say)
    if as_json:
        print(json.dumps(report))
    else:
        print(f"fine-tuned sentence model {report['version']} in {report['seconds']} s on {report['pairs']} pairs: "
              f"held-out retrieval top-1 {report['tuned_top1']} vs packaged {report['frozen_top1']} — "
              f"{report['verdict']}")
    return 0
