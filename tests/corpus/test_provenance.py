"""No corpus example is a copy of an evaluation log.

The evaluation logs come from public threads the corpus also learns from; an example must be written
around an engine's error strings, never pasted from a thread. Fixed engine messages are shared by
design, so only lines carrying a run's own details (a timestamp, a date, a pid, a request id) count.
"""

import re
from pathlib import Path

import pytest

from servetriage.corpus import load_corpus

DEV = Path(__file__).resolve().parents[3] / "shared" / "eval" / "dev"
_RUN_DETAIL = re.compile(r"\d\d:\d\d:\d\d|[0-9a-f]{16,}|pid=\d{3,}|\d{4}-\d\d-\d\d")


def _norm(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip())


@pytest.mark.skipif(not DEV.is_dir(), reason="the evaluation set is not beside this checkout")
def test_no_example_line_with_run_details_comes_from_an_evaluation_log():
    seen = {_norm(l) for f in DEV.glob("*.log") for l in f.read_text(errors="replace").splitlines()}
    copied = [(inc.id, _norm(line)) for inc in load_corpus().incidents for ex in inc.examples
              for line in ex.splitlines()
              if len(_norm(line)) >= 30 and _RUN_DETAIL.search(line) and _norm(line) in seen]
    assert copied == []
