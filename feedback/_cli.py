"""The feedback loop's commands: `model list|promote|rollback`, `feedback export|forget`, `db backup`.

Every command checks its input before it changes anything; a mistake is one line on stderr (a
`FeedbackError`, printed by the CLI) and the database and the models are as they were.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from servetriage._errors import ModelError
from servetriage._settings import Settings

from ._errors import FeedbackError

if TYPE_CHECKING:
    from ._store import FeedbackStore


def register_cli(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    m = sub.add_parser("model", help="model versions: list, promote one, roll back")
    msub = m.add_subparsers(metavar="ACTION")
    ml = msub.add_parser("list", help="every version with its state (candidate, active, rejected, retired)")
    ml.add_argument("--json", action="store_true")
    ml.set_defaults(func=cmd_model_list)
    mp = msub.add_parser("promote", help="make VERSION the active model (the running bot follows within seconds)")
    mp.add_argument("version")
    mp.set_defaults(func=cmd_model_promote)
    mr = msub.add_parser("rollback", help="go back to the previously active version")
    mr.set_defaults(func=cmd_model_rollback)
    m.set_defaults(func=_usage(m))

    f = sub.add_parser("feedback", help="export or forget stored feedback")
    fsub = f.add_subparsers(metavar="ACTION")
    fe = fsub.add_parser("export", help="one row per vote, with the answer it judged and any correction")
    fe.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    fe.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    fe.add_argument("--no-excerpt", action="store_true", help="leave the (redacted) log excerpts out")
    fe.set_defaults(func=cmd_feedback_export)
    ff = fsub.add_parser("forget", help="delete a vote, a user's feedback or a whole diagnosis, and retrain")
    who = ff.add_mutually_exclusive_group(required=True)
    who.add_argument("--vote", type=int, metavar="ID")
    who.add_argument("--user", metavar="U")
    who.add_argument("--diagnosis", metavar="ID")
    ff.add_argument("--no-retrain", action="store_true",
                    help="only delete; the running bot (or the next retrain) drops the examples from the model")
    ff.set_defaults(func=cmd_feedback_forget)
    f.set_defaults(func=_usage(f))

    d = sub.add_parser("db", help="the feedback database")
    dsub = d.add_subparsers(metavar="ACTION")
    db = dsub.add_parser("backup", help="a consistent copy, safe while the bot writes (SQLite backup API)")
    db.add_argument("path")
    db.set_defaults(func=cmd_db_backup)
    d.set_defaults(func=_usage(d))


def _usage(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace, Settings], int]:
    def show(args: argparse.Namespace, settings: Settings) -> int:
        parser.print_help(sys.stderr)
        return 2
    return show


def _store(settings: Settings, must_exist: bool = True) -> FeedbackStore:
    from ._store import FeedbackStore  # noqa: PLC0415
    if must_exist and not settings.database_url and not settings.db_path.is_file():
        raise FeedbackError(f"no feedback database at {settings.db_path} yet (the bot creates it)")
    return FeedbackStore.open(settings)


# -- model ----------------------------------------------------------------------------------------------
def cmd_model_list(args: argparse.Namespace, settings: Settings) -> int:
    from servetriage.classifier import artefacts_for  # noqa: PLC0415

    artefacts = artefacts_for(settings)
    rows = [(m, artefacts.status(m.version), artefacts.loadable(m.version)) for m in artefacts.versions()]
    with _store(settings, must_exist=False) as store:
        quarantined = store.training.quarantined()
    if args.json:
        for m, st, on_disk in rows:
            print(json.dumps({"version": m.version, "state": st.state, "parent": m.parent, "created": m.created,
                              "activated": st.activated, "examples": m.examples,
                              "feedback_examples": m.feedback_examples, "training_hash": st.training_hash,
                              "metrics": m.metrics, "gate": st.gate, "note": st.note, "on_disk": on_disk}))
        return 0
    if not rows:
        print("no model versions yet: run `servetriage train`")
        return 0
    print(f"{'version':<20} {'state':<9} {'created (UTC)':<17} {'feedback':>8}  {'gate: candidate / active':<25} note")
    for m, st, on_disk in rows:
        gate = ""
        if st.gate.get("candidate") and st.gate.get("active"):
            c, a = st.gate["candidate"], st.gate["active"]
            gate = f"{c['correct']}/{c['cases']} vs {a['correct']}/{a['cases']}"
        created = time.strftime("%Y-%m-%d %H:%M", time.gmtime(m.created)) if m.created else "-"
        gone = "" if on_disk else " [artefacts pruned]"
        print(f"{m.version:<20} {st.state:<9} {created:<17} {m.feedback_examples or 0:>8}  {gate:<25} "
              f"{(st.note or '')}{gone}")
    if quarantined:
        print(f"{len(quarantined)} feedback example(s) quarantined by the gate (see `servetriage feedback export`)")
    return 0


def _check_loadable(settings: Settings, version: str) -> None:
    from servetriage.classifier import MODEL_FORMAT, artefacts_for  # noqa: PLC0415
    from servetriage.corpus import load_corpus  # noqa: PLC0415

    artefacts = artefacts_for(settings)
    if not artefacts.loadable(version):
        raise FeedbackError(f"no model version {version!r} on disk (see `servetriage model list`)")
    try:
        meta = artefacts.meta(version)
    except ModelError as exc:
        raise FeedbackError(str(exc)) from None
    if meta.format != MODEL_FORMAT:
        raise FeedbackError(f"model {version} has format {meta.format}; this build reads {MODEL_FORMAT}")
    fingerprint = load_corpus(settings.extra_corpus_dirs).fingerprint
    if meta.corpus_fingerprint != fingerprint:
        raise FeedbackError(f"model {version} was trained on another corpus ({meta.corpus_fingerprint}, now "
                            f"{fingerprint}); the bot would retrain it from scratch")


def cmd_model_promote(args: argparse.Namespace, settings: Settings) -> int:
    from servetriage.classifier import artefacts_for  # noqa: PLC0415

    _check_loadable(settings, args.version)
    artefacts = artefacts_for(settings)
    if artefacts.active() == args.version:
        print(f"model {args.version} is already active")
        return 0
    artefacts.activate(args.version, note="promoted by hand")
    with _store(settings, must_exist=False) as store:
        released = store.training.release([k for k, r in store.training.quarantined().items()
                                           if r.get("version") == args.version])
    extra = f"; {released} quarantined example(s) released" if released else ""
    print(f"model {args.version} is now active (a running bot switches within seconds){extra}")
    return 0


def cmd_model_rollback(args: argparse.Namespace, settings: Settings) -> int:
    from servetriage.classifier import artefacts_for  # noqa: PLC0415

    artefacts = artefacts_for(settings)
    current = artefacts.active()
    if current is None:
        raise FeedbackError("no active model to roll back from")
    earlier = sorted(((artefacts.status(m.version), m) for m in artefacts.versions()
                      if m.version != current and artefacts.loadable(m.version)),
                     key=lambda sm: (sm[0].activated or 0.0, sm[1].version), reverse=True)
    target = next((m.version for st, m in earlier if st.activated and st.state == "retired"), None)
    parent = artefacts.meta(current).parent
    if target is None and parent is not None and artefacts.loadable(parent):
        target = parent
    if target is None:
        raise FeedbackError(f"nothing to roll back to: no earlier active version of {current} is on disk")
    _check_loadable(settings, target)
    artefacts.activate(target, note=f"rolled back to (from {current})")
    artefacts.set_status(current, state="rejected", note="rolled back by hand")
    print(f"rolled back: model {target} is active again; {current} is marked rejected")
    return 0


# -- feedback ------------------------------------------------------------------------------------------
def cmd_feedback_export(args: argparse.Namespace, settings: Settings) -> int:
    from ._export import output, write_feedback  # noqa: PLC0415

    with _store(settings) as store, output(args.output) as fh:
        n = write_feedback(store, fh, args.format, with_excerpt=not args.no_excerpt)
    print(f"exported {n} vote(s)", file=sys.stderr)
    return 0


def cmd_feedback_forget(args: argparse.Namespace, settings: Settings) -> int:
    with _store(settings) as store:
        if args.vote is not None:
            what, counts = f"vote {args.vote}", store.forget.vote(args.vote)
        elif args.user is not None:
            what, counts = f"user {args.user}", store.forget.user(args.user)
        else:
            what, counts = f"diagnosis {args.diagnosis}", store.forget.diagnosis(args.diagnosis)
        summary = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
        print(f"forgot {what}: {summary or 'nothing else'}")
        if args.no_retrain:
            print("the examples leave the model at the next retrain (a running bot retrains within a minute)")
            return 0
        result = _retrain_now(settings, store)
    print(f"retrained: {result.state} {result.version or ''} ({result.reason})".rstrip())
    return 0


def _retrain_now(settings: Settings, store: FeedbackStore) -> Any:
    from ._handle import ModelHandle  # noqa: PLC0415
    from ._retrain import Retrainer  # noqa: PLC0415

    handle = ModelHandle(settings, training=store.training, incidents=store.incidents)
    if not handle.learning:
        raise FeedbackError("the learned passes are off (SERVETRIAGE_EMBEDDINGS=off): nothing to retrain")
    return Retrainer(settings, store, handle).run_once()


# -- db ----------------------------------------------------------------------------------------------------
def cmd_db_backup(args: argparse.Namespace, settings: Settings) -> int:
    from ._store import backup_database  # noqa: PLC0415

    if settings.database_url:
        raise FeedbackError("the database is PostgreSQL (SERVETRIAGE_DATABASE_URL): back it up with pg_dump")
    dest = backup_database(settings.db_path, args.path)
    print(f"backed up {settings.db_path} to {dest}")
    return 0
