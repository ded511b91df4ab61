"""`servetriage eval`: diagnose every case of a labelled set and report the figures."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from servetriage._errors import InputError
from servetriage.classifier import Diagnosis, Engine, read_path

from ._dataset import Case, load_cases
from ._metrics import UNKNOWN, Prediction, per_category, reliability, summary

HEALTHY_SUFFIXES = (".log", ".txt", ".gz")


@dataclasses.dataclass(frozen=True)
class Report:
    summary: dict[str, Any]
    ablation: dict[str, dict[str, Any]]
    per_category: list[dict[str, Any]]
    reliability: list[dict[str, float]]
    misses: list[dict[str, Any]]
    latency_ms: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def predict(engine: Engine, cases: Sequence[Case]) -> tuple[list[Prediction], list[Diagnosis]]:
    preds, diags = [], []
    for case in cases:
        log = read_path(case.file, engine.settings.max_input_bytes)
        t = time.perf_counter()
        d = engine.diagnose(log)
        seconds = time.perf_counter() - t
        cands = (d.category, *(c.category for c in d.top))
        preds.append(Prediction(case.id, case.category, case.surface, d.category, cands, d.confidence, seconds))
        diags.append(d)
    return preds, diags


def _pass_alone(preds: Sequence[Prediction], diags: Sequence[Diagnosis], name: str) -> list[Prediction]:
    out = []
    for p, d in zip(preds, diags):
        scores: dict[str, float] = d.passes.ran().get(name) or {}
        ranked = [c for c, _ in sorted(scores.items(), key=lambda kv: -kv[1]) if c != UNKNOWN]
        best = ranked[0] if ranked else UNKNOWN
        conf = max(scores.values()) if scores else 0.0
        out.append(dataclasses.replace(p, category=best, candidates=(best, *ranked), confidence=conf))
    return out


def evaluate(engine: Engine, directory: Path | str) -> Report:
    cases = load_cases(directory)
    engine.warm()
    preds, diags = predict(engine, cases)
    ablation = {"fused": summary(preds)}
    for name in sorted({k for d in diags for k in d.passes.ran()}):
        ablation[f"{name} alone"] = summary(_pass_alone(preds, diags, name))
    rows = [{"category": r.category, "support": r.support, "predicted": r.predicted, "correct": r.correct,
             "precision": round(r.precision, 3), "recall": round(r.recall, 3), "f1": round(r.f1, 3)}
            for r in per_category(preds)]
    misses = [{"id": p.case_id, "label": p.label, "surface": p.surface, "predicted": p.category,
               "confidence": round(p.confidence, 3), "alternatives": list(p.candidates[1:4])}
              for p in preds if p.category != p.label]
    lat = sorted(p.seconds * 1000 for p in preds)
    latency = {"p50": round(lat[len(lat) // 2], 2), "p99": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 2),
               "max": round(lat[-1], 2)} if lat else {}
    return Report(summary(preds), ablation, rows, reliability(preds), misses, latency)


@dataclasses.dataclass(frozen=True)
class HealthyReport:
    """Logs with no failure in them: each must be answered `unknown`."""

    directory: str
    files: int
    unknown: int
    wrong: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def evaluate_healthy(engine: Engine, directory: Path | str) -> HealthyReport:
    """Diagnose every log file of `directory` alone; any answer but `unknown` is a false alarm."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory of healthy logs")
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in HEALTHY_SUFFIXES)
    if not files:
        raise InputError(f"{root}: no log files ({', '.join(HEALTHY_SUFFIXES)}) in it")
    engine.warm()
    wrong = []
    for path in files:
        d = engine.diagnose(read_path(path, engine.settings.max_input_bytes))
        if d.category != UNKNOWN:
            where = d.initiating.line if d.initiating is not None else None
            wrong.append({"file": path.name, "predicted": d.category, "confidence": round(d.confidence, 3), "line": where})
    return HealthyReport(str(root), len(files), len(files) - len(wrong), wrong)


SIDE_BY_SIDE = (("top-1", "top1"), ("top-3", "top3"), ("macro-F1", "macro_f1"), ("abstention", "abstention"),
                ("initiating", "initiating"))


def render_side_by_side(reports: Sequence[tuple[str, Report]], healthy: Sequence[HealthyReport] = (),
                        out: Callable[[str], None] = print) -> None:
    """Excerpts and whole logs (or any sets) in columns, then the healthy logs' false alarms."""
    if reports:
        width = max(12, *(len(name) + 2 for name, _ in reports))
        out(f"{'':<14}" + "".join(f"{name:>{width}}" for name, _ in reports))
        out(f"{'cases':<14}" + "".join(f"{r.summary['cases']:>{width}}" for _, r in reports))
        for label, key in SIDE_BY_SIDE:
            out(f"{label:<14}" + "".join(f"{_fmt(r.summary[key]):>{width}}" for _, r in reports))
        out(f"{'p50 ms':<14}" + "".join(f"{r.latency_ms.get('p50', 0):>{width}}" for _, r in reports))
    for h in healthy:
        out(f"healthy logs {h.directory}: {h.unknown} of {h.files} answered unknown")
        for w in h.wrong:
            out(f"  {w['file']:<44} got {w['predicted']} ({w['confidence']:.2f}) at line {w['line']}")


def reports_json(reports: Sequence[tuple[str, Report]], healthy: Sequence[HealthyReport] = ()) -> dict[str, Any]:
    """One set: its report as it always was (with `healthy` beside it when given); several: by name."""
    out: dict[str, Any] = (reports[0][1].to_dict() if len(reports) == 1
                           else {"sets": {name: r.to_dict() for name, r in reports}})
    if healthy:
        out["healthy"] = [h.to_dict() for h in healthy]
    return out


def render_report(report: Report, out: Callable[[str], None] = print) -> None:
    s = report.summary
    out(f"cases {s['cases']}  top-1 {s['top1']:.3f}  top-3 {s['top3']:.3f}  macro-F1 {s['macro_f1']:.3f}")
    out(f"abstention on unknown {_fmt(s['abstention'])}  false abstention {_fmt(s['false_abstention'])}  "
        f"initiating-vs-surface {_fmt(s['initiating'])}")
    out("")
    out(f"{'pass':<18}{'top-1':>7}{'top-3':>7}{'F1':>7}{'abst':>7}{'init':>7}")
    for name, a in report.ablation.items():
        out(f"{name:<18}{a['top1']:>7.3f}{a['top3']:>7.3f}{a['macro_f1']:>7.3f}{_fmt(a['abstention']):>7}{_fmt(a['initiating']):>7}")
    out("")
    out(f"{'category':<26}{'n':>4}{'pred':>6}{'ok':>5}{'P':>7}{'R':>7}{'F1':>7}")
    for r in report.per_category:
        out(f"{r['category']:<26}{r['support']:>4}{r['predicted']:>6}{r['correct']:>5}{r['precision']:>7.2f}{r['recall']:>7.2f}{r['f1']:>7.2f}")
    out("")
    out("reliability (confidence bin: n, mean confidence, accuracy)")
    for b in report.reliability:
        out(f"  {b['low']:.1f}-{b['high']:.1f}: n={b['n']:<3} conf={b['confidence']:.2f} acc={b['accuracy']:.2f}")
    out("")
    out(f"misses ({len(report.misses)}):")
    for m in report.misses:
        alt = ", ".join(m["alternatives"])
        out(f"  {m['id']:<24} label {m['label']:<24} got {m['predicted']:<24} ({m['confidence']:.2f}; {alt})")
    if report.latency_ms:
        out("")
        out(f"latency per log: p50 {report.latency_ms['p50']} ms, p99 {report.latency_ms['p99']} ms")
    out(f"top-1 {s['top1']:.3f}  top-3 {s['top3']:.3f}  macro-F1 {s['macro_f1']:.3f}  "
        f"abstention {_fmt(s['abstention'])}  initiating {_fmt(s['initiating'])}")


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def report_json(report: Report) -> str:
    return json.dumps(report.to_dict())
