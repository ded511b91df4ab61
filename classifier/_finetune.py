"""Fine-tuning the sentence model on serving logs, judged on what it has not seen.

What it learns from (`pairs`): contrastive pairs of lines that mean the same failure — two lines of
one incident (its examples' query lines and its signatures' text), two of one catalogue source
directory, a line with one of another incident of the same category, and the lines of a paste
on-call confirmed or corrected with those of its label's incident (or category). Trained with
sentence-transformers' own `SentenceTransformerTrainer` and MultipleNegativesRankingLoss: every
other pair in the batch is a negative (the no-duplicates sampler keeps a text out of its own
negatives).

How it is judged (`fine_tune`): folds that hold out whole incidents, whole catalogue source
directories and whole feedback pastes (`FOLDS`, grouped as the training's cross-validation is). In
each fold the packaged model and one tuned on the other folds' pairs answer the held-out examples by
retrieval over the other folds' lines. Only when the tuned mean beats the packaged one by
`MIN_GAIN` is a model tuned on every pair saved as a candidate; it becomes the default only after
the candidate model built with it passes the same promotion gate as any retrain (`feedback/`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import logging
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sklearn.model_selection import GroupKFold

from servetriage._errors import ModelError
from servetriage._settings import Settings
from servetriage.corpus import Corpus

from ._artefacts import ArtefactStore
from ._embed import SentenceEmbedder, normalize_line
from ._extract import extract
from ._features import query_lines
from ._retrieval import Entry, Index
from ._train import TrainingExample, base_examples

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

FOLDS = 3
MAX_PAIRS = 640           # pairs per tuning run: twenty steps of `BATCH`, under a minute on two cores
TRAIN_TOKENS = 32         # lines are cut here while tuning (the message comes first; half the cost of 64)
PAIRS_PER_GROUP = 12      # within one incident or directory: a big one must not drown the rest
CATEGORY_PAIRS = 2        # per group: its lines with another group's of the same category
BATCH = 32
LEARNING_RATE = 3e-5
WARMUP = 0.1              # share of the steps the learning rate warms up over
MIN_GAIN = 0.01           # held-out retrieval top-1 the tuned model must add to be a candidate
EMBEDDER_DIR = "embedder"


@dataclasses.dataclass(frozen=True)
class _Source:
    """One example's lines, with the group cross-validation holds out together."""

    group: str
    category: str
    incident: str | None
    lines: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class FineTuneResult:
    version: str
    frozen_top1: float             # the packaged model, mean over folds
    tuned_top1: float              # tuned on the other folds, mean over folds
    folds: tuple[tuple[float, float], ...]
    candidate: Path | None         # the saved tuned model, when it beat the packaged one
    seconds: float
    pairs: int
    feedback_examples: int

    @property
    def wins(self) -> bool:
        return self.candidate is not None


def _sources(corpus: Corpus, feedback: Sequence[TrainingExample]) -> list[_Source]:
    out: list[_Source] = []
    for inc in corpus.incidents:
        sigs = tuple(normalize_line(s.pattern) for s in inc.signatures if not s.regex)
        if sigs:
            out.append(_Source(inc.id, inc.category, inc.id, sigs))
    for n, e in enumerate([*base_examples(corpus), *feedback]):
        lines = tuple(dict.fromkeys(query_lines(extract(e.text))))
        if not lines:
            continue
        group = e.incident if e.source != "feedback" else f"feedback:{n}"
        out.append(_Source(group, e.category, e.incident or None, lines))
    return out


def _pairs(sources: Sequence[_Source], rnd: random.Random) -> list[tuple[str, str]]:
    by_group: dict[str, list[str]] = {}
    by_category: dict[str, list[str]] = {}
    for s in sources:
        if not s.group.startswith("feedback:"):
            by_group.setdefault(s.group, []).extend(s.lines)
            by_category.setdefault(s.category, []).extend(s.lines)
    pairs: list[tuple[str, str]] = []
    for _group, lines in sorted(by_group.items()):
        uniq = list(dict.fromkeys(lines))
        within = [(a, b) for i, a in enumerate(uniq) for b in uniq[i + 1:]]
        rnd.shuffle(within)
        pairs += within[:PAIRS_PER_GROUP]
    groups_of = {s.group: s.category for s in sources if not s.group.startswith("feedback:")}
    for group, category in sorted(groups_of.items()):
        own = set(by_group[group])
        others = [line for line in by_category.get(category, []) if line not in own]
        for _ in range(CATEGORY_PAIRS if others else 0):
            pairs.append((rnd.choice(by_group[group]), rnd.choice(others)))
    for s in sources:  # on-call's pastes: pulled towards what their label is known by
        if not s.group.startswith("feedback:"):
            continue
        known = by_group.get(s.incident or "") or by_category.get(s.category) or []
        for line in s.lines[:PAIRS_PER_GROUP // 2]:
            if known:
                pairs.append((line, rnd.choice(known)))
    pairs = [(a, b) for a, b in pairs if a != b]
    rnd.shuffle(pairs)
    return pairs[:MAX_PAIRS]


def _top1(embedder: SentenceEmbedder, train: Sequence[_Source], held: Sequence[_Source]) -> float:
    """Held-out examples answered by retrieval over the training sources' lines."""
    index = Index.build([Entry(line, s.category, s.group, "example") for s in train for line in s.lines], embedder)
    hits = total = 0
    for s in held:
        q = index.usable(list(s.lines))[:4]
        if not q:
            continue
        scores, _ = index.search(embedder.encode(q))
        total += 1
        hits += int(bool(scores) and max(scores, key=scores.__getitem__) == s.category)
    return hits / total if total else 0.0


def _tune(pairs: Sequence[tuple[str, str]], threads: int, seed: int) -> SentenceEmbedder:
    """A fresh copy of the packaged model tuned on `pairs` by sentence-transformers' trainer."""
    try:
        import accelerate  # type: ignore[import-untyped]  # noqa: F401, PLC0415 - checked for a clear message
        import datasets  # type: ignore[import-untyped]  # noqa: F401, PLC0415
    except ImportError:
        raise ModelError("fine-tuning needs the trainer's extras: pip install 'servetriage[finetune]'") from None
    from datasets import Dataset  # noqa: PLC0415 - loaded only to tune
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments  # noqa: PLC0415
    from sentence_transformers.base.sampler import BatchSamplers  # noqa: PLC0415
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss  # noqa: PLC0415
    from transformers.utils import logging as hf_logging  # noqa: PLC0415

    from transformers.trainer_callback import PrinterCallback  # noqa: PLC0415

    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call, unused-ignore]  # unannotated in transformers
    logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
    tuned = SentenceEmbedder(None, threads=threads, trainable=True)
    model: SentenceTransformer = tuned.model
    serving_tokens, model.max_seq_length = model.max_seq_length, TRAIN_TOKENS
    data = Dataset.from_dict({"anchor": [a for a, _ in pairs], "positive": [b for _, b in pairs]})
    with tempfile.TemporaryDirectory(prefix="servetriage-tune-") as out, \
            contextlib.redirect_stderr(io.StringIO()):  # the trainer's progress bars and notices: not ours to show
        args = SentenceTransformerTrainingArguments(
            output_dir=out, num_train_epochs=1, per_device_train_batch_size=BATCH, learning_rate=LEARNING_RATE,
            warmup_steps=WARMUP, seed=seed, data_seed=seed, batch_sampler=BatchSamplers.NO_DUPLICATES,
            save_strategy="no", logging_strategy="no", report_to="none", disable_tqdm=True, use_cpu=True,
            dataloader_num_workers=0)
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data,
                                             loss=MultipleNegativesRankingLoss(model))
        trainer.remove_callback(PrinterCallback)  # it prints the run's figures to stdout
        trainer.train()
    model.max_seq_length = serving_tokens
    model.eval()
    tuned.forget()
    return tuned


def fine_tune(settings: Settings, corpus: Corpus, feedback: Sequence[TrainingExample] = (), seed: int = 13,
              say: Callable[[str], None] = lambda m: None) -> FineTuneResult:
    """Cross-validate a tuned model against the packaged one; save a candidate when it wins."""
    t0 = time.perf_counter()
    rnd = random.Random(seed)
    sources = _sources(corpus, feedback)
    groups = [s.group for s in sources]
    n_folds = min(FOLDS, len(set(groups)))
    frozen = SentenceEmbedder(None, threads=settings.threads)
    folds: list[tuple[float, float]] = []
    if n_folds >= 2:
        for k, (train_idx, test_idx) in enumerate(GroupKFold(n_splits=n_folds).split(sources, groups=groups), 1):
            train, held = [sources[i] for i in train_idx], [sources[i] for i in test_idx]
            pairs = _pairs(train, rnd)
            say(f"fold {k}/{n_folds}: tuning on {len(pairs)} pairs, {len(held)} held-out examples")
            tuned = _tune(pairs, settings.threads, seed)
            folds.append((_top1(frozen, train, held), _top1(tuned, train, held)))
            say(f"fold {k}/{n_folds}: held-out retrieval top-1 packaged {folds[-1][0]:.3f}, tuned {folds[-1][1]:.3f}")
    frozen_top1 = statistics.mean(f for f, _ in folds) if folds else 0.0
    tuned_top1 = statistics.mean(t for _, t in folds) if folds else 0.0
    root = settings.model_dir / EMBEDDER_DIR
    version = ArtefactStore(root).new_version()
    all_pairs = _pairs(sources, rnd)
    candidate = None
    if folds and tuned_top1 >= frozen_top1 + MIN_GAIN:
        say(f"tuning on all {len(all_pairs)} pairs")
        final = _tune(all_pairs, settings.threads, seed)
        candidate = root / version
        final.model.save(str(candidate))
        (candidate / "servetriage.json").write_text(json.dumps({
            "frozen_top1": round(frozen_top1, 4), "tuned_top1": round(tuned_top1, 4), "folds": folds,
            "pairs": len(all_pairs), "feedback_examples": len(feedback), "seed": seed}))
    return FineTuneResult(version, round(frozen_top1, 4), round(tuned_top1, 4), tuple(folds), candidate,
                          round(time.perf_counter() - t0, 1), len(all_pairs), len(feedback))


def activate_embedder(settings: Settings, candidate: Path) -> None:
    """Make a tuned model the one new models are built with (`model_dir/embedder/ACTIVE`)."""
    root = settings.model_dir / EMBEDDER_DIR
    tmp = root / ".ACTIVE.tmp"
    tmp.write_text(candidate.name)
    tmp.replace(root / "ACTIVE")
