"""Labelled excerpts, alone and inside real healthy server logs: `python eval/inside.py PROBES HEALTHY…`.

The shared sets hold no TensorRT-LLM log, so TensorRT-LLM is measured here on excerpts written for
this project (`eval/probes/trtllm.txt`: blocks headed `=== <category>`, in the engine's own log
formats, no line copied from a thread) pasted alone and appended to two thirds of each healthy log
given (`eval/healthy/trtllm-*.log`), the way a whole log reaches the failure after start-up and
traffic. It reads the installed model (`servetriage train`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

HEALTHY_SHARE = 2 / 3  # how much of a healthy log goes before the excerpt


@dataclass(frozen=True)
class Probe:
    category: str
    text: str


def load_probes(path: Path) -> list[Probe]:
    blocks = path.read_text(encoding="utf-8").split("=== ")[1:]
    return [Probe(head.strip(), body.rstrip("\n")) for head, _, body in (b.partition("\n") for b in blocks)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("probes", type=Path)
    ap.add_argument("healthy", type=Path, nargs="*", help="healthy logs to paste each excerpt into")
    ap.add_argument("--misses", action="store_true", help="list every answer not right first")
    args = ap.parse_args()

    from servetriage import Settings  # noqa: PLC0415
    from servetriage.classifier import UNKNOWN, engine_for_model, from_text, load_model  # noqa: PLC0415
    from servetriage.corpus import load_corpus  # noqa: PLC0415
    from servetriage.eval import Prediction, top_k  # noqa: PLC0415

    settings = Settings.from_env()
    corpus = load_corpus(settings.extra_corpus_dirs)
    engine = engine_for_model(settings, corpus, load_model(settings, corpus))
    probes = load_probes(args.probes)
    hosts = [("alone", [])] + [(p.stem, p.read_text(encoding="utf-8", errors="replace").splitlines()) for p in args.healthy]
    print(f"{'pasted':40s} {'n':>4s} {'top-1':>6s} {'top-3':>6s} {'unknown':>8s}")
    for name, lines in hosts:
        head = lines[: int(len(lines) * HEALTHY_SHARE)]
        preds = []
        for i, probe in enumerate(probes):
            d = engine.diagnose(from_text("\n".join([*head, *probe.text.splitlines()]), f"{name}-{i}"))
            preds.append(Prediction(f"{name}-{i}", probe.category, None, d.category,
                                    (d.category, *(c.category for c in d.top)), d.confidence))
        if args.misses:
            for p in preds:
                if p.category != p.label:
                    print(f"  miss {p.case_id:44s} {p.label:24s} got {p.category} ({p.confidence:.2f})")
        unknown = sum(p.category == UNKNOWN for p in preds) / len(preds)
        print(f"{name:40s} {len(preds):4d} {top_k(preds, 1):6.3f} {top_k(preds, 3):6.3f} {unknown:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
