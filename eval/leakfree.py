"""The evaluation without the corpus's knowledge of the set's own threads: `python eval/leakfree.py DIR`.

The evaluation logs come from public issue threads, and the corpus cites public threads too: some
incidents were written from the very thread a log came from (in our own words, but knowing its error
strings). This trains a model, in a temporary directory, on the corpus minus every incident that cites
a thread of the set, and evaluates that: a figure closer to what a set of unseen threads would give.
The installed model is left alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import tempfile
from pathlib import Path

_THREAD = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull)/(\d+)", re.IGNORECASE)


def thread_of(url: str) -> tuple[str, str] | None:
    m = _THREAD.search(url)
    return (m.group(1).lower(), m.group(2)) if m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directories", type=Path, nargs="+", metavar="directory",
                    help="labelled sets (labels.jsonl with a `source` per log), e.g. the excerpts and the whole logs")
    ap.add_argument("--healthy", type=Path, action="append", default=[], metavar="DIR",
                    help="a directory of logs with no failure: each must be answered unknown (repeatable)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from servetriage import Settings  # noqa: PLC0415
    from servetriage.classifier import ArtefactStore, embedder_for, engine_for_model, train  # noqa: PLC0415
    from servetriage.corpus import load_corpus  # noqa: PLC0415
    from servetriage.eval import (evaluate, evaluate_healthy, load_cases, render_report, render_side_by_side,  # noqa: PLC0415
                                  reports_json)

    settings = Settings.from_env()
    corpus = load_corpus(settings.extra_corpus_dirs)
    threads = {t for d in args.directories for c in load_cases(d) if c.source and (t := thread_of(c.source))}
    kept = tuple(i for i in corpus.incidents if not any(thread_of(s) in threads for s in i.sources))
    dropped = len(corpus.incidents) - len(kept)
    held = dataclasses.replace(corpus, incidents=kept)
    with tempfile.TemporaryDirectory() as tmp:
        model = train(held, embedder_for(settings), ArtefactStore(Path(tmp)))
        engine = engine_for_model(settings, held, model)
        reports = [(d.name, evaluate(engine, d)) for d in args.directories]
        healthy = [evaluate_healthy(engine, d) for d in args.healthy]
    if args.json:
        body = reports_json(reports, healthy)  # one set: {"report": …} as before; several: {"sets": …}
        if len(reports) == 1:
            body = {"report": body, **({"healthy": body.pop("healthy")} if healthy else {})}
        print(json.dumps({"dropped_incidents": dropped, **body}))
        return 0
    print(f"corpus without the sets' threads: {dropped} of {len(corpus.incidents)} incidents dropped")
    if len(reports) == 1 and not healthy:
        render_report(reports[0][1])
        return 0
    for name, r in reports:
        print(f"== {name}")
        render_report(r)
        print()
    render_side_by_side(reports, healthy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
