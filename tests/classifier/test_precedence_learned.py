"""Precedence with a learned pass: a symptom after an error no rule names yields to that error.

The learned pass here is a small keyword scorer behind the engine's pass interface (the seam the
real classifier plugs into), so the precedence logic is tested without training a model."""

from servetriage.classifier import Engine
from servetriage.classifier._fuse import Calibrator, PassScores


class KeywordPass:
    name = "classifier"

    def score(self, ex):
        text = "\n".join(l.body for l in ex.lines)
        if "divisible" in text:
            return PassScores({"invalid-config": 0.8, "worker-dead": 0.1, "unknown": 0.1})
        return PassScores({"worker-dead": 0.6, "unknown": 0.4})


LOG = ("INFO 01-02 03:04:05 [engine.py:1] starting\n"
       "[rank0]: ValueError: hidden size 5120 must be divisible by the widget count 3\n"
       "ERROR 01-02 03:04:07 [async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.\n")


def test_unnamed_earlier_error_beats_the_symptom(settings, mini_corpus):
    engine = Engine(settings, corpus=mini_corpus, passes=(KeywordPass(),), calibrator=Calibrator())
    d = engine.diagnose_text(LOG)
    assert d.category == "invalid-config"
    assert d.initiating.line == 2 and d.initiating.rank == "rank 0"
    assert [(s.category, s.line) for s in d.symptoms] == [("worker-dead", 3)]


def test_symptom_stays_when_nothing_came_before(settings, mini_corpus):
    engine = Engine(settings, corpus=mini_corpus, passes=(KeywordPass(),), calibrator=Calibrator())
    d = engine.diagnose_text(LOG.splitlines()[2])
    assert d.category == "worker-dead"


def test_kernel_fault_inside_a_features_code_path_is_the_features_bug(settings, mini_corpus):
    import dataclasses
    corpus = dataclasses.replace(mini_corpus, kernel_faults=frozenset({"illegal-memory-access"}),
                                 feature_code_paths={"structured-output": ("xgrammar",)})
    log = ("Traceback (most recent call last):\n"
           '  File "/opt/venv/lib/python3.12/site-packages/xgrammar/matcher.py", line 210, in fill_next_token_bitmask\n'
           "    self._handle.fill(bitmask)\n"
           "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    d = Engine(settings, corpus=corpus).diagnose_text(log)
    assert d.category == "structured-output" and d.initiating.line == 4
    plain = log.replace("xgrammar/matcher.py", "torch/nn/modules/linear.py")
    assert Engine(settings, corpus=corpus).diagnose_text(plain).category == "illegal-memory-access"


def test_shipped_precedence_data_loads():
    from servetriage.corpus import load_corpus
    corpus = load_corpus()
    assert "shutdown" in corpus.downstream and "worker-dead" in corpus.downstream
    assert corpus.kernel_faults == frozenset({"illegal-memory-access"})
    assert set(corpus.feature_code_paths) == {"structured-output", "speculative-decoding"}
    assert set(corpus.feature_markers) <= set(corpus.feature_code_paths)
    assert {c.category for c in corpus.code_paths} >= {"radix-cache-state", "engine-hang", "health-check"}


def test_feature_marker_lines_count_like_frames(settings, mini_corpus):
    """outlines prints its FSM compile progress; a device-side assert after it is the grammar's bug."""
    import dataclasses
    corpus = dataclasses.replace(mini_corpus, kernel_faults=frozenset({"illegal-memory-access"}),
                                 feature_code_paths={"structured-output": ("xgrammar",)},
                                 feature_markers={"structured-output": ("Compiling FSM index",)})
    log = ("Compiling FSM index for all state transitions: 100%|##########| 5/5 [00:00<00:00, 9.1it/s]\n"
           "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert Engine(settings, corpus=corpus).diagnose_text(log).category == "structured-output"
    assert Engine(settings, corpus=corpus).diagnose_text(log.splitlines()[1]).category == "illegal-memory-access"


class HangPass:
    """A learned pass convinced the log is a hang, with no line of the log saying so."""

    name = "classifier"

    def score(self, ex):
        return PassScores({"engine-hang": 0.9, "worker-dead": 0.05, "unknown": 0.05})


def test_a_category_with_no_line_of_its_own_does_not_replace_the_rules_symptom(settings, mini_corpus):
    line = "ERROR 01-02 03:04:07 [async_llm.py:1] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."
    d = Engine(settings, corpus=mini_corpus, passes=(HangPass(),), calibrator=Calibrator()).diagnose_text(line)
    assert d.category == "worker-dead"
    assert [c.category for c in d.top][:2] == ["worker-dead", "engine-hang"]


def test_a_late_collective_timeout_explains_the_stall_before_it(settings):
    from servetriage.corpus import load_corpus
    corpus = load_corpus()
    assert "engine-hang" in corpus.explains["distributed-comm"]
    stall = ("INFO 05-06 07:00:0{n} metrics.py:400] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
             "0.0 tokens/s, Running: 6 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 3.1%, "
             "CPU KV cache usage: 0.0%\n")
    log = (stall.format(n=1) + stall.format(n=6)
           + "[rank3]:[E506 07:10:02.123456 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=9912, OpType=ALLREDUCE, NumelIn=8192, NumelOut=8192, Timeout(ms)=600000) ran "
             "for 600011 milliseconds before timing out.\n")
    d = Engine(settings, corpus=corpus).diagnose_text(log)
    assert d.category == "distributed-comm" and d.initiating.line == 3
    assert "engine-hang" in [s.category for s in d.symptoms]
    alone = Engine(settings, corpus=corpus).diagnose_text(stall.format(n=1) + stall.format(n=6))
    assert alone.category == "engine-hang"
