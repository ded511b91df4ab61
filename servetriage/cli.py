"""The `servetriage` command: diagnose, eval, corpus, manual, train, serve, run (and the feedback tools).

Each subcommand is a small function; errors this package raises become one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import InputError, ServetriageError
from ._settings import Settings

if TYPE_CHECKING:
    from .classifier import Engine, LogText

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        settings = Settings.from_env()
        if getattr(args, "rules_only", False):
            settings = dataclasses.replace(settings, embeddings=False)
        return int(args.func(args, settings) or 0)
    except ServetriageError as exc:
        print(f"servetriage: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="servetriage", description="Explain LLM-serving failure logs.")
    sub = p.add_subparsers(metavar="COMMAND")

    d = sub.add_parser("diagnose", help="diagnose log files (or - for stdin)")
    d.add_argument("paths", nargs="+", metavar="PATH")
    d.add_argument("--json", action="store_true", help="one JSON object per input per line")
    d.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    d.add_argument("--rules-only", action="store_true", help="skip the embedding passes")
    d.add_argument("--together", action="store_true",
                   help="one answer for all inputs (a log per rank or node), merged on one timeline")
    d.set_defaults(func=cmd_diagnose)

    e = sub.add_parser("eval", help="figures on labelled sets (directories with labels.jsonl), side by side")
    e.add_argument("directories", nargs="*", metavar="directory",
                   help="labelled sets, e.g. the excerpts and the same failures as whole logs")
    e.add_argument("--healthy", action="append", default=[], metavar="DIR",
                   help="a directory of logs with no failure: each must be answered unknown (repeatable)")
    e.add_argument("--json", action="store_true")
    e.add_argument("--rules-only", action="store_true")
    e.add_argument("--online", action="store_true", help="replay as on-call traffic with feedback and retraining")
    e.add_argument("--then", metavar="DIR", help="with --online: afterwards, evaluate DIR with what was learned")
    e.add_argument("--noise", type=float, metavar="FRACTION",
                   help="with --online: this fraction of the replayed feedback names a wrong category")
    e.add_argument("--locality", action="store_true",
                   help="with --online: each log's feedback alone, counting the other answers it changed")
    e.set_defaults(func=cmd_eval)

    c = sub.add_parser("corpus", help="check, count or export the incident corpus")
    csub = c.add_subparsers(metavar="ACTION")
    cc = csub.add_parser("check", help="validate every incident file")
    cc.add_argument("--fast", action="store_true", help="skip the 1 MB adversarial regex run")
    cc.set_defaults(func=cmd_corpus_check)
    cs = csub.add_parser("stats", help="incidents and examples per category and engine")
    cs.add_argument("--json", action="store_true")
    cs.set_defaults(func=cmd_corpus_stats)
    cm = csub.add_parser("mine", help="mine an engine's source tree into the message catalogue")
    cm.add_argument("source_dir", help="the directory holding the package (sglang/, vllm/, cpp/tensorrt_llm/ …)")
    cm.add_argument("--engine", required=True, help="catalogue name: sglang, vllm, trtllm, torch, nccl")
    cm.add_argument("--version", required=True)
    cm.add_argument("--under", action="append", default=[], metavar="PREFIX", help="mine only below this path")
    cm.add_argument("--catalogue", type=Path, default=None, help="catalogue directory (default: the packaged one)")
    cm.set_defaults(func=cmd_corpus_mine)
    ce = csub.add_parser("export", help="write incidents written through the bot as YAML for review")
    ce.add_argument("--output", "-o", default="-")
    ce.set_defaults(func=cmd_corpus_export)

    m = sub.add_parser("manual", help="the incident manual as static HTML (what replies link)")
    msub = m.add_subparsers(metavar="ACTION")
    mb = msub.add_parser("build", help="render the corpus into DIR: index.html and a page per category")
    mb.add_argument("directory", metavar="DIR", help="created if missing; pages already there are replaced")
    mb.set_defaults(func=cmd_manual_build)

    t = sub.add_parser("train", help="train the classifier (and optionally fine-tune the embedder)")
    t.add_argument("--fine-tune", action="store_true")
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=cmd_train)

    s = sub.add_parser("serve", help="run the Slack bot (Socket Mode with SLACK_APP_TOKEN, else HTTP)")
    s.add_argument("--host")
    s.add_argument("--port", type=int)
    s.set_defaults(func=cmd_serve)

    r = sub.add_parser("run", help="the main job: the bot when Slack tokens are set, else the bundled example")
    r.set_defaults(func=cmd_run)

    for register in _extra_commands():
        register(sub)
    return p


def _extra_commands() -> list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]]:
    """Commands owned by other subpackages register themselves here (feedback, model, db)."""
    try:
        from servetriage.feedback import register_cli  # noqa: PLC0415
    except ImportError:
        return []
    return [register_cli]


def _engine(settings: Settings) -> Engine:
    from .classifier import Engine  # noqa: PLC0415
    return Engine(settings)


def cmd_diagnose(args: argparse.Namespace, settings: Settings) -> int:
    from .classifier import read_inputs, render_text  # noqa: PLC0415

    missing = [p for p in args.paths if p != "-" and not Path(p).exists()]
    if missing:
        raise InputError(f"{missing[0]}: no such file or directory")
    colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    engine = _engine(settings)
    failed = False
    inputs = read_inputs(args.paths, settings.max_input_bytes, stdin=sys.stdin.buffer)
    if args.together:
        return _diagnose_together(engine, inputs, args, colour)
    first = True
    while True:
        try:
            log = next(inputs)
        except StopIteration:
            break
        except InputError as exc:
            print(f"servetriage: error: {exc}", file=sys.stderr)
            failed = True
            continue
        d = engine.diagnose(log)
        if args.json:
            print(d.to_json(), flush=True)
        else:
            if not first:
                print()
            print(render_text(d, colour=colour), flush=True)
        first = False
    return EXIT_USAGE if failed else EXIT_OK


def _diagnose_together(engine: Engine, inputs: Iterable[LogText], args: argparse.Namespace, colour: bool) -> int:
    """`diagnose --together`: every input read (any unreadable one is a one-line error and nothing is
    diagnosed; a zip of rank logs counts its members), merged on one timeline, answered once, with the
    first failing file named."""
    from .classifier import merge, placed, render_text, split_members  # noqa: PLC0415

    logs = [member for log in inputs for member in split_members(log)]  # an InputError stops here, before any answer
    if len(logs) < 2:
        raise InputError("--together needs two or more logs (a log per rank or node)")
    total = sum(log.size for log in logs)
    if total > engine.settings.max_input_bytes:
        raise InputError(f"--together: {total >> 20} MB in all, over the {engine.settings.max_input_bytes >> 20} MB limit")
    merged = merge(logs)
    d = placed(engine.diagnose(merged.log), merged, [engine.diagnose(log) for log in logs])
    print(d.to_json() if args.json else render_text(d, colour=colour), flush=True)
    return EXIT_OK


def cmd_eval(args: argparse.Namespace, settings: Settings) -> int:
    if not args.directories and not args.healthy:
        raise InputError("eval: give a labelled directory, or --healthy DIR")
    if (args.then or args.noise or args.locality) and not args.online:
        raise InputError("eval --then, --noise and --locality go with --online (replay one set, then evaluate another)")
    if args.locality and (args.then or args.noise):
        raise InputError("eval --online --locality measures one piece of feedback at a time: no --then or --noise")
    if args.noise is not None and not 0.0 <= args.noise <= 1.0:
        raise InputError("eval --noise: a fraction between 0 and 1")
    if args.online:
        from servetriage.feedback import online_eval  # noqa: PLC0415
        if len(args.directories) != 1 or args.healthy:
            raise InputError("eval --online replays exactly one labelled directory")
        args.directory = args.directories[0]
        return online_eval(args, settings)
    from .eval import evaluate, evaluate_healthy, render_report, render_side_by_side, reports_json  # noqa: PLC0415

    engine = _engine(settings)
    reports = [(Path(d).name or d, evaluate(engine, d)) for d in args.directories]
    healthy = [evaluate_healthy(engine, d) for d in args.healthy]
    if args.json:
        print(json.dumps(reports_json(reports, healthy)))
    elif len(reports) == 1 and not healthy:
        render_report(reports[0][1])
    else:
        for name, r in reports:
            print(f"== {name}")
            render_report(r)
            print()
        render_side_by_side(reports, healthy)
    return EXIT_OK


def cmd_corpus_check(args: argparse.Namespace, settings: Settings) -> int:
    from .corpus import Problem, check_catalogue, check_corpus, corpus_stats, load_catalogue, load_corpus  # noqa: PLC0415

    corpus = load_corpus(settings.extra_corpus_dirs)
    problems = check_corpus(corpus, adversarial=not args.fast)
    catalogue = load_catalogue()
    problems += [Problem(incident="-", origin="catalogue", message=p) for p in check_catalogue(catalogue)]
    for prob in problems:
        print(prob)
    stats = corpus_stats(corpus)
    verdict = "FAILED" if problems else "ok"
    print(f"corpus {verdict}: {stats['incidents']} incidents, {stats['examples']} examples, "
          f"{stats['signatures']} signatures, {len(catalogue)} catalogue templates, {len(problems)} problems",
          file=sys.stderr if problems else sys.stdout)
    return EXIT_FAIL if problems else EXIT_OK


def cmd_corpus_stats(args: argparse.Namespace, settings: Settings) -> int:
    from .corpus import corpus_stats, load_corpus  # noqa: PLC0415

    stats = corpus_stats(load_corpus(settings.extra_corpus_dirs))
    if args.json:
        print(json.dumps(stats))
        return EXIT_OK
    print(f"{stats['incidents']} incidents, {stats['examples']} examples, {stats['signatures']} signatures")
    print(f"{'category':<26}{'incidents':>10}{'examples':>10}")
    for cat, n in stats["per_category"].items():
        print(f"{cat:<26}{n:>10}{stats['examples_per_category'][cat]:>10}")
    print("engines: " + ", ".join(f"{k} {v}" for k, v in stats["per_engine"].items()))
    return EXIT_OK


def cmd_corpus_mine(args: argparse.Namespace, settings: Settings) -> int:
    from .corpus import add_to_catalogue, mine_tree  # noqa: PLC0415

    root = Path(args.source_dir)
    if not root.is_dir():
        raise InputError(f"{root}: not a source directory")
    if not args.engine.replace("-", "").replace("_", "").isalnum():
        raise InputError(f"--engine {args.engine!r}: use a plain name such as sglang, vllm, trtllm, torch, nccl")
    mined = list(mine_tree(root, args.engine, args.version, args.under))
    if not mined:
        raise InputError(f"{root}: no message templates found (is it the directory holding the package?)")
    path, before, after = add_to_catalogue(mined, args.engine, args.catalogue)
    print(f"{args.engine} {args.version}: {len(mined)} templates mined; {path.name} {before} -> {after}")
    return EXIT_OK


def cmd_corpus_export(args: argparse.Namespace, settings: Settings) -> int:
    from servetriage.feedback import export_incidents  # noqa: PLC0415
    return export_incidents(args, settings)


def cmd_manual_build(args: argparse.Namespace, settings: Settings) -> int:
    from .corpus import build_manual, load_corpus  # noqa: PLC0415 (the CLI starts quick: nothing heavy at import)

    manual = build_manual(load_corpus(settings.extra_corpus_dirs), Path(args.directory))
    print(f"manual: {manual.summary}, written to {args.directory}")
    return EXIT_OK


def cmd_train(args: argparse.Namespace, settings: Settings) -> int:
    if args.fine_tune:
        from .feedback import fine_tune_command  # noqa: PLC0415 (feedback: the gate and on-call's examples)
        return fine_tune_command(settings, as_json=args.json)
    from .classifier import train_command  # noqa: PLC0415
    status: int = train_command(settings, as_json=args.json)  # a lazy name: Any to mypy
    return status


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    if args.host or args.port:
        settings = dataclasses.replace(settings, host=args.host or settings.host, port=args.port or settings.port)
    from .bot import Metrics, serve  # noqa: PLC0415
    from .feedback import for_bot  # noqa: PLC0415

    if not settings.slack_enabled:
        return serve(settings)  # refuses with the names of the missing variables
    # The feedback loop answers through the active model, records every reply, and retrains behind it.
    metrics = Metrics()
    parts = for_bot(settings, on_retrain=metrics.retrained).start()
    try:
        return serve(settings, diagnoser=parts.diagnoser, recorder=parts.recorder, feedback=parts.feedback,
                     metrics=metrics)
    finally:
        parts.close()


def bundled_example() -> Path:
    return Path(str(resources.files("servetriage") / "examples" / "vllm-oom-then-dead.log"))


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    if settings.slack_enabled:
        return cmd_serve(argparse.Namespace(host=None, port=None), settings)
    print("No Slack tokens set (SLACK_BOT_TOKEN with SLACK_APP_TOKEN for Socket Mode, or with "
          "SLACK_SIGNING_SECRET for HTTP mode), so here is the CLI on the bundled example log:\n", file=sys.stderr)
    ns = argparse.Namespace(paths=[str(bundled_example())], json=False, color="auto", together=False)
    return cmd_diagnose(ns, settings)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
