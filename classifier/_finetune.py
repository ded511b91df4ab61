"""`servetriage train --fine-tune`: adapt the sentence model to log text, keep it only if it helps.

Pairs of lines from the same incident (and a signature with its examples) are pulled together with
sentence-transformers' MultipleNegativesRankingLoss; every other pair in the batch is a negative.
A quarter of the incidents is held out of tuning: the tuned model becomes the default only when its
retrieval top-1 on those unseen incidents beats the packaged model's; otherwise it is discarded and
the packaged (frozen) model stays.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from servetriage._settings import Settings
from servetriage.corpus import Corpus

from ._artefacts import ArtefactStore
from ._embed import SentenceEmbedder, normalize_line
from ._extract import extract
from ._features import query_lines
from ._retrieval import Entry, Index

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer
    from torch import Tensor

HELD_OUT_SHARE = 0.25
MAX_PAIRS = 640
BATCH = 32
MIN_GAIN = 0.01


@dataclasses.dataclass(frozen=True)
class FineTuneResult:
    version: str
    frozen_top1: float
    tuned_top1: float
    promoted: bool
    seconds: float
    pairs: int


def _lines_by_incident(corpus: Corpus) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for inc in corpus.incidents:
        lines: list[str] = [normalize_line(s.pattern) for s in inc.signatures if not s.regex]
        for ex in inc.examples:
            lines.extend(query_lines(extract(ex)))
        out[inc.id] = list(dict.fromkeys(l for l in lines if l))
    return out


def _pairs(lines: dict[str, list[str]], incidents: list[str], rnd: random.Random) -> list[tuple[str, str]]:
    pairs = []
    for inc in incidents:
        ls = lines[inc]
        for i in range(len(ls)):
            for j in range(i + 1, len(ls)):
                pairs.append((ls[i], ls[j]))
    rnd.shuffle(pairs)
    return pairs[:MAX_PAIRS]


def _held_out_top1(embedder: SentenceEmbedder, corpus: Corpus, lines: dict[str, list[str]], held: set[str]) -> float:
    cat = {i.id: i.category for i in corpus.incidents}
    entries = [Entry(l, cat[i], i, "example") for i, ls in lines.items() if i not in held for l in ls]
    index = Index.build(entries, embedder)
    hits = total = 0
    for inc in corpus.incidents:
        if inc.id not in held:
            continue
        for ex in inc.examples:
            q = query_lines(extract(ex))
            if not q:
                continue
            scores, _ = index.search(embedder.encode(q))
            total += 1
            hits += int(bool(scores) and max(scores, key=scores.__getitem__) == inc.category)
    return hits / total if total else 0.0


def _features(model: SentenceTransformer, texts: list[str]) -> dict[str, Tensor]:
    prepare = getattr(model, "preprocess", None) or model.tokenize
    features: dict[str, Tensor] = prepare(texts)
    return features


def fine_tune(settings: Settings, corpus: Corpus, seed: int = 13, epochs: int = 1,
              say: Callable[[str], None] = lambda m: None) -> FineTuneResult:
    import torch  # noqa: PLC0415
    try:
        from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss  # noqa: PLC0415
    except ImportError:  # sentence-transformers before 6 (mypy reads 6's types, where this module is gone)
        from sentence_transformers.losses import (  # type: ignore[import-not-found, no-redef]  # noqa: PLC0415
            MultipleNegativesRankingLoss,
        )

    t0 = time.perf_counter()
    rnd = random.Random(seed)
    torch.manual_seed(seed)
    lines = _lines_by_incident(corpus)
    ids = sorted(lines)
    rnd.shuffle(ids)
    held = set(ids[: int(len(ids) * HELD_OUT_SHARE)])
    frozen = SentenceEmbedder(None, threads=settings.threads)
    say("scoring the packaged model on held-out incidents")
    frozen_top1 = _held_out_top1(frozen, corpus, lines, held)

    tuned = SentenceEmbedder(None, threads=settings.threads)
    model = tuned.model
    loss_fn = MultipleNegativesRankingLoss(model)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-5)
    pairs = _pairs(lines, [i for i in ids if i not in held], rnd)
    say(f"tuning on {len(pairs)} pairs from {len(ids) - len(held)} incidents")
    model.train()
    for _ in range(epochs):
        for b in range(0, len(pairs), BATCH):
            batch = pairs[b: b + BATCH]
            if len(batch) < 2:
                continue
            a = _features(model, [x for x, _ in batch])
            p = _features(model, [y for _, y in batch])
            loss = loss_fn([a, p], torch.zeros(len(batch)))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()
    tuned._cache.clear()
    say("scoring the tuned model on the same held-out incidents")
    tuned_top1 = _held_out_top1(tuned, corpus, lines, held)

    root = settings.model_dir / "embedder"
    version = ArtefactStore(root).new_version()
    promoted = tuned_top1 >= frozen_top1 + MIN_GAIN
    if promoted:
        out = root / version
        model.save(str(out))
        (out / "servetriage.json").write_text(json.dumps({"frozen_top1": frozen_top1, "tuned_top1": tuned_top1,
                                                          "pairs": len(pairs), "seed": seed}))
        (root / "ACTIVE").write_text(version)
    return FineTuneResult(version, round(frozen_top1, 4), round(tuned_top1, 4), promoted,
                          round(time.perf_counter() - t0, 1), len(pairs))


def fine_tune_command(settings: Settings, corpus: Corpus, as_json: bool = False) -> int:
    say: Callable[[str], None] = (lambda m: None) if as_json else (lambda m: print(f"  {m}", file=sys.stderr))
    result = fine_tune(settings, corpus, say=say)
    if result.promoted:
        from ._learned import train_command  # noqa: PLC0415 - _learned imports this module
        say("retraining the classifier and index with the tuned model")
        train_command(settings, fine_tune=False, as_json=as_json)
    if as_json:
        print(json.dumps(dataclasses.asdict(result)))
    else:
        verdict = "now the default" if result.promoted else "discarded; the packaged model stays the default"
        print(f"fine-tuned embedder {result.version} in {result.seconds} s on {result.pairs} pairs: held-out "
              f"retrieval top-1 {result.tuned_top1} vs packaged {result.frozen_top1} — {verdict}")
    return 0
