"""Cross-validation of each pass over the corpus examples: `python eval/crossval.py [--json]`.

Folds are grouped by incident, so every held-out example comes from an incident whose signatures,
examples and index entries the fold never saw: the figure says how the passes do on variants no rule
knows. It trains into a temporary directory and leaves the installed model alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from servetriage import Settings  # noqa: PLC0415
    from servetriage.classifier import ArtefactStore, embedder_for, train  # noqa: PLC0415
    from servetriage.corpus import load_corpus  # noqa: PLC0415

    settings = Settings.from_env()
    corpus = load_corpus(settings.extra_corpus_dirs)
    with tempfile.TemporaryDirectory() as tmp:
        model = train(corpus, embedder_for(settings), ArtefactStore(Path(tmp)))
    m = model.meta.metrics
    if args.json:
        print(json.dumps(m))
        return 0
    print(f"{m['cv_examples']} held-out examples, folds grouped by incident")
    for name in ("rules", "retrieval", "classifier", "fused"):
        print(f"  {name:<11} top-1 {m[f'cv_top1_{name}']:.3f}")
    print(f"  abstention threshold fitted on the folds: {m['threshold']}")
    print(f"  train {m['train_seconds']} s (embedding {m['embed_seconds']} s, {m['index_entries']} index entries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
