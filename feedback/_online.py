"""`servetriage eval --online DIR`: does the bot learn from on-call? Replay a labelled set as traffic.

Everything happens in a temporary data directory (a copy of the active model, or a freshly trained
one; an empty feedback database), so the installed model and database are never touched. The replay
goes through the same parts as the bot: `ModelHandle` answers, `FeedbackStore` records the answer
and the vote (👍 when right, a correction to the true label when wrong), `Retrainer.run_once` retrains
and gates exactly as the background thread would — only synchronously, one cycle after each case.

`locality` (`--locality`) gives one log's feedback at a time, from the starting model each time,
and counts the other logs whose answer it changed (`unrelated_*`: those whose failure is of another
category): a correction should fix its failure wherever it shows again, not drift the rest.

Figures: `static_top1` (the starting model, no learning), `online_top1` (prequential: each log is
answered before its own feedback is given), `second_pass_top1` (the whole set again with the final
model), and the seconds each retrain cycle took. Only aggregates are printed, never a log line.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any

from servetriage._settings import Settings

from ._handle import ModelHandle
from ._retrain import Retrainer
from ._rules import RateLimit
from ._store import FeedbackStore

NOISE_SEED = 7  # the same careless feedback on every run
REPLAY_USER = "oncall-replay"


def _prepare_data_dir(settings: Settings, tmp: Path) -> Settings:
    """A temporary data dir holding a copy of the active model version (and the same embedder)."""
    from servetriage.classifier import ArtefactStore, artefacts_for, embedder_path  # noqa: PLC0415

    replay = dataclasses.replace(settings, data_dir=tmp / "data", database_url=None, trainer_allowlist=(),
                                 embedder_path=embedder_path(settings))
    src = artefacts_for(settings)
    active = src.active()
    if active is not None:
        dst = ArtefactStore(replay.model_dir)
        replay.model_dir.mkdir(parents=True, exist_ok=True)
        shutil.copytree(src.path(active), dst.path(active))
        dst.activate(active)
    return replay


@dataclasses.dataclass(frozen=True)
class _Bench:
    """What a replay runs on: a throw-away data directory's settings, its store, handle and retrainer."""

    settings: Settings
    corpus: Any
    store: FeedbackStore
    handle: ModelHandle
    retrainer: Retrainer

    def ask(self, log: Any, n: int) -> tuple[Any, str]:
        """Diagnose one replayed log and record the answer as the bot would; (diagnosis, its id)."""
        d = self.handle.diagnose(log)
        did = self.store.replies.record(d, log.text, team="replay", channel="replay", thread_ts=f"case-{n}",
                                        user="replay-asker", source="replay")
        return d, did


@contextlib.contextmanager
def _bench(settings: Settings, prefix: str, progress: Callable[[str], None]) -> Iterator[_Bench]:
    """A copy of the active model in a temporary directory, an empty feedback store, the model warm."""
    from servetriage.corpus import load_corpus  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        rs = _prepare_data_dir(settings, Path(tmp))
        corpus = load_corpus(rs.extra_corpus_dirs)
        store = FeedbackStore(rs.db_path, rate_limit=RateLimit.off(), categories=corpus.categories)
        try:
            handle = ModelHandle(rs, corpus, training=store.training, incidents=store.incidents, check_every_s=3600.0)
            progress("loading the model")
            handle.warm()
            yield _Bench(rs, corpus, store, handle, Retrainer(rs, store, handle))
        finally:
            store.close()


def _hits(diags: list[Any], cases: list[Any], k: int) -> float:
    """Top-k accuracy: the label among the answer and the first k candidates."""
    right = sum(c.category in ([d.category] + [t.category for t in d.top])[:k] for d, c in zip(diags, cases))
    return round(right / len(cases), 4) if cases else 0.0


def replay(settings: Settings, directory: Path | str, progress: Callable[[str], None] = lambda msg: None,
           then: Path | str | None = None, noise: float = 0.0) -> dict[str, Any]:
    """Replay `directory` as on-call traffic (diagnose, 👍 or the true label, retrain as the bot does);
    with `then`, evaluate that set before any learning and again after it (the installed model untouched);
    with `noise`, that fraction of the feedback names a wrong category (one careless user, seeded)."""
    rng = random.Random(NOISE_SEED)
    wrong_feedback = 0
    from servetriage.classifier import read_path  # noqa: PLC0415
    from servetriage.eval import load_cases  # noqa: PLC0415

    cases = load_cases(directory)
    then_cases = load_cases(then) if then is not None else []
    with _bench(settings, "servetriage-online-", progress) as b:
        rs, corpus, store, handle, retrainer = b.settings, b.corpus, b.store, b.handle, b.retrainer
        start_version = handle.version
        logs = [read_path(c.file, rs.max_input_bytes) for c in cases]

        progress(f"static pass over {len(cases)} logs")
        static = [handle.diagnose(log).category == c.category for log, c in zip(logs, cases)]
        then_logs = [read_path(c.file, rs.max_input_bytes) for c in then_cases]
        static_then = [handle.diagnose(log) for log in then_logs]

        retrainer.prime()
        progress("online replay")
        online: list[bool] = []
        diagnosis_ids: list[str] = []
        memory_online = 0
        cycles = []
        for n, (log, case) in enumerate(zip(logs, cases), 1):
            d, did = b.ask(log, n)
            online.append(d.category == case.category)
            memory_online += int(d.passes.memory is not None)
            diagnosis_ids.append(did)
            said = case.category  # what on-call says: the truth, or (with `noise`) now and then not
            if noise and rng.random() < noise:
                said = rng.choice([c for c in sorted(corpus.categories) if c != case.category])
                wrong_feedback += 1
            _give(store, d, said, did)
            result = retrainer.run_once()
            if result.state != "skipped":
                cycles.append(result)
            if n % 10 == 0:
                progress(f"  {n}/{len(cases)}: online top-1 so far {sum(online) / n:.3f}, "
                         f"{sum(r.promoted for r in cycles)} promoted / {len(cycles)} retrains")

        progress("second pass")
        finals = [handle.diagnose(log) for log in logs]
        second = [d.category == c.category for d, c in zip(finals, cases)]
        if then_cases:
            progress(f"then: {len(then_cases)} other logs with what was learned")
        then_diags = [handle.diagnose(log) for log in then_logs]
        examples = {e.diagnosis_id: e for e in store.training.examples()}
        quarantined = store.training.quarantined()
        misses = {"held_out": 0, "quarantined": 0, "memory_answered": 0, "right_at_first": 0}
        for did, d, ok, first in zip(diagnosis_ids, finals, second, online):
            if ok:
                continue
            ex = examples.get(did)
            misses["held_out"] += int(bool(ex and ex.holdout))
            misses["quarantined"] += int(bool(ex and (ex.text_hash, ex.category) in quarantined))
            misses["memory_answered"] += int(d.passes.memory is not None)
            misses["right_at_first"] += int(first)
        seconds = [r.seconds for r in cycles]
        refit = [r.retrain_seconds for r in cycles]
        return {
            "cases": len(cases),
            "static_top1": round(sum(static) / len(cases), 4),
            "online_top1": round(sum(online) / len(cases), 4),
            "second_pass_top1": round(sum(second) / len(cases), 4),
            "retrain_seconds_p50": round(statistics.median(seconds), 3) if seconds else 0.0,
            "retrain_seconds_max": round(max(seconds), 3) if seconds else 0.0,
            "refit_seconds_p50": round(statistics.median(refit), 3) if refit else 0.0,
            "refit_seconds_max": round(max(refit), 3) if refit else 0.0,
            "gate_seconds_p50": round(statistics.median(r.gate.get("seconds", 0.0) for r in cycles), 3)
            if cycles else 0.0,
            "retrains": len(cycles),
            "promoted": sum(r.state == "active" for r in cycles),
            "rejected": sum(r.state == "rejected" for r in cycles),
            "feedback_examples": len(examples),
            "quarantined": len(quarantined),
            "second_pass_misses": misses,
            "online_vs_static": {"gained": sum(o and not st for o, st in zip(online, static)),
                                 "lost": sum(st and not o for o, st in zip(online, static)),
                                 "memory_answered": memory_online},
            "start_model": start_version,
            "noise": noise, "wrong_feedback": wrong_feedback,
            **({"then_cases": len(then_cases), "static_then_top1": _hits(static_then, then_cases, 1),
                "static_then_top3": _hits(static_then, then_cases, 3), "then_top1": _hits(then_diags, then_cases, 1),
                "then_top3": _hits(then_diags, then_cases, 3)} if then_cases else {}),
        }


def _give(store: FeedbackStore, d: Any, said: str, did: str) -> None:
    """On-call's word on one answer: 👍 when it names `said`, else a correction to `said`."""
    if d.category == said:
        store.votes.vote(did, REPLAY_USER, True, source="replay")
    else:
        incident = next((c.incident for c in d.top if c.category == said and c.incident), None)
        store.votes.correct(did, REPLAY_USER, said, incident, source="replay")


def locality(settings: Settings, directory: Path | str,
             progress: Callable[[str], None] = lambda msg: None) -> dict[str, Any]:
    """How far one piece of feedback reaches: for each log of `directory` alone, give its feedback
    (👍, or the true label as a correction), retrain as the bot does, and count how many of the other
    logs' answers changed. Each case starts again from the starting model and an empty memory."""
    from servetriage.classifier import artefacts_for, read_path  # noqa: PLC0415
    from servetriage.eval import load_cases  # noqa: PLC0415

    cases = load_cases(directory)
    with _bench(settings, "servetriage-locality-", progress) as b:
        rs, store, handle, retrainer = b.settings, b.store, b.handle, b.retrainer
        start, start_model = handle.version, handle.model
        artefacts = artefacts_for(rs)
        retrainer.prime()
        logs = [read_path(c.file, rs.max_input_bytes) for c in cases]
        static = [handle.diagnose(log).category for log in logs]
        changed: list[int] = []
        unrelated: list[int] = []   # changed answers of logs whose failure is another category
        corrections: list[int] = []
        progress(f"one piece of feedback at a time over {len(cases)} logs")
        for n, (log, case) in enumerate(zip(logs, cases)):
            d, did = b.ask(log, n)
            _give(store, d, case.category, did)
            retrainer.run_once()
            now = {m: handle.diagnose(other).category for m, other in enumerate(logs) if m != n}
            moved = sum(now[m] != static[m] for m in now)
            changed.append(moved)
            unrelated.append(sum(now[m] != static[m] for m in now if cases[m].category != case.category))
            if d.category != case.category:
                corrections.append(moved)
            store.forget.diagnosis(did)
            if start is not None:
                artefacts.activate(start, note="locality replay: back to the starting model")
                handle.swap(start_model)
            if (n + 1) % 10 == 0:
                progress(f"  {n + 1}/{len(cases)}: most other answers moved by one piece of feedback {max(changed)}")
        return {
            "cases": len(cases),
            "others_changed_max": max(changed) if changed else 0,
            "others_changed_mean": round(statistics.mean(changed), 3) if changed else 0.0,
            "feedback_moving_others": sum(c > 0 for c in changed),
            "within_one": round(sum(c <= 1 for c in changed) / len(changed), 4) if changed else 1.0,
            "unrelated_changed_max": max(unrelated) if unrelated else 0,
            "unrelated_within_one": round(sum(c <= 1 for c in unrelated) / len(unrelated), 4) if unrelated else 1.0,
            "corrections": len(corrections),
            "corrections_others_changed_max": max(corrections) if corrections else 0,
            "start_model": start,
        }


def online_eval(args: argparse.Namespace, settings: Settings) -> int:
    t0 = time.perf_counter()
    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if getattr(args, "locality", False):
        report = locality(settings, args.directory, progress=say)
        report["wall_seconds"] = round(time.perf_counter() - t0, 1)
        if args.json:
            print(json.dumps(report), flush=True)
        else:
            print(f"cases {report['cases']}: one piece of feedback changed at most {report['others_changed_max']} "
                  f"other answers (mean {report['others_changed_mean']:.2f}), at most "
                  f"{report['unrelated_changed_max']} of another category; within one case for "
                  f"{report['within_one']:.0%}; corrections: {report['corrections']}, "
                  f"at most {report['corrections_others_changed_max']} other answers moved")
        return 0
    report = replay(settings, args.directory, progress=say, then=getattr(args, "then", None),
                    noise=getattr(args, "noise", None) or 0.0)
    report["wall_seconds"] = round(time.perf_counter() - t0, 1)
    if not args.json:
        print(f"cases {report['cases']}  static top-1 {report['static_top1']:.3f}  online top-1 "
              f"{report['online_top1']:.3f}  second pass top-1 {report['second_pass_top1']:.3f}")
        print(f"retrains {report['retrains']} ({report['promoted']} promoted, {report['rejected']} rejected); "
              f"seconds per retrain p50 {report['retrain_seconds_p50']:.2f}, max {report['retrain_seconds_max']:.2f}")
        if "then_cases" in report:
            print(f"then {report['then_cases']} other logs: top-1 {report['static_then_top1']:.3f} -> "
                  f"{report['then_top1']:.3f}, top-3 {report['static_then_top3']:.3f} -> {report['then_top3']:.3f}")
    else:
        print(json.dumps(report), flush=True)
    return 0
