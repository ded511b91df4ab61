"""Code-path attribution: an exception no signature names takes the category of the code that raised it."""

import dataclasses

import pytest

from servetriage.classifier import Engine, extract
from servetriage.corpus import CodePath, load_corpus

PATHS = (
    CodePath("engine-hang", ("in run_engine_loop",), ("TimeoutError",)),
    CodePath("radix-cache-state", ("radix_cache",)),
    CodePath("speculative-decoding", ("spec_decode/",)),
)

RADIX = (
    "[2025-04-14 10:01:02 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    'File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 1200, in get_new_batch_prefill\n'
    "self.tree_cache.flush_pending()\n"
    'File "/opt/sglang/python/sglang/srt/mem_cache/hiradix_cache.py", line 160, in flush_pending\n'
    "self.release(self.pending[key])\n"
    "KeyError: 91\n"
)


@pytest.fixture
def corpus(mini_corpus):
    return dataclasses.replace(mini_corpus, code_paths=PATHS)


def test_unnamed_exception_takes_the_category_of_its_innermost_frame(settings, corpus):
    # the header sits mid-line and the frames lost their indent, as pasted logs often do
    d = Engine(settings, corpus=corpus).diagnose_text(RADIX)
    assert d.category == "radix-cache-state"
    assert d.initiating.line == 6 and d.initiating.text == "KeyError: 91"
    assert d.passes.rules == {"radix-cache-state": 0.5}


def test_the_innermost_matching_frame_wins(settings, corpus):
    outer = ('  File "/usr/lib/python3/dist-packages/vllm/spec_decode/spec_decode_worker.py", line 388, in step\n'
             "    self.cache.release()\n")
    log = RADIX.replace("Scheduler hit an exception: Traceback (most recent call last):\n",
                        "Traceback (most recent call last):\n" + outer)
    assert Engine(settings, corpus=corpus).diagnose_text(log).category == "radix-cache-state"


def test_a_paste_that_starts_inside_the_traceback_still_reads_its_frames(settings, corpus):
    headless = "\n".join(RADIX.splitlines()[1:]) + "\n"
    d = Engine(settings, corpus=corpus).diagnose_text(headless)
    assert d.category == "radix-cache-state" and d.initiating.line == 5


def test_a_signature_on_the_exception_line_beats_the_code_path(settings, corpus):
    log = RADIX.replace("KeyError: 91", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert Engine(settings, corpus=corpus).diagnose_text(log).category == "gpu-oom"


def test_exception_types_limit_an_entry(settings, corpus):
    loop = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/dist-packages/vllm/engine/async_llm_engine.py", line 630, in run_engine_loop\n'
            "    done, _ = await asyncio.wait(requests_in_progress, timeout=ENGINE_ITERATION_TIMEOUT_S)\n"
            "{exc}\n")
    engine = Engine(settings, corpus=corpus)
    assert engine.diagnose_text(loop.format(exc="asyncio.exceptions.TimeoutError")).category == "engine-hang"
    assert engine.diagnose_text(loop.format(exc="ValueError: bad request id")).category == "unknown"


@pytest.mark.parametrize("raised", ["KeyboardInterrupt", "ModuleNotFoundError: No module named 'acme_kernels'"])
def test_signals_and_failed_imports_are_never_attributed(settings, corpus, raised):
    """A signal says where the process was, a failed import who imported the module: neither says what
    went wrong there (the environment is what a failed import is about)."""
    log = RADIX.replace("KeyError: 91", raised)
    assert "radix-cache-state" not in Engine(settings, corpus=corpus).diagnose_text(log).passes.rules


def test_shipped_code_paths_name_real_categories(settings):
    corpus = load_corpus()
    assert corpus.code_paths and all(c.category in corpus.categories for c in corpus.code_paths)
    assert Engine(settings, corpus=corpus).diagnose_text(RADIX).category == "radix-cache-state"


CUT = (
    "ERROR 03-02 10:00:01 [core.py:500] EngineCore failed to start.\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3/dist-packages/vllm/v1/engine/core.py", line 80, in __init__\n'
    "    self.scheduler = Scheduler(cfg)\n"
    '  File "/opt/sglang/python/sglang/srt/mem_cache/radix_cache.py", line 160, in flush_pending\n'
    "    self.release(self.pending[key])\n"
)


def test_a_traceback_cut_before_its_exception_is_read_by_its_innermost_frame(settings, corpus):
    d = Engine(settings, corpus=corpus).diagnose_text(CUT)
    assert d.passes.rules == {"radix-cache-state": 0.4}  # weaker than an exception's attribution (0.5)
    assert d.initiating is not None and d.initiating.line == 2  # the traceback's header carries it


def test_a_cut_traceback_without_its_header_is_read_from_its_first_frame(settings, corpus):
    headless = "\n".join(CUT.splitlines()[2:]) + "\n"  # a paste that starts and ends inside the traceback
    d = Engine(settings, corpus=corpus).diagnose_text(headless)
    assert d.passes.rules == {"radix-cache-state": 0.4} and d.initiating.line == 1


def test_a_cut_traceback_through_unknown_code_is_no_hit(settings, corpus):
    unknown = CUT.replace("mem_cache/radix_cache.py", "managers/io_struct.py")
    assert not Engine(settings, corpus=corpus).diagnose_text(unknown).passes.rules


def test_an_exception_module_named_line_is_found_though_its_class_name_says_no_error():
    # `triton.runtime.errors.OutOfResources: …` carries none of the usual fault words
    line = "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, Hardware limit: 65536"
    assert [l.no for l in extract("INFO starting\n" + line + "\n").lines if l.exception] == [2]


NATIVE = (
    "[TensorRT-LLM][ERROR] CUDA runtime error in cudaIpcOpenMemHandle(&peer, handle, cudaIpcMemLazyEnablePeerAccess): "
    "peer access is not supported between these two devices\n"
    "1       0x7f2a10c1d045 /opt/trtllm/libs/libtensorrt_llm.so(+0x91045) [0x7f2a10c1d045]\n"
    "2       0x7f2a10e4a2fd tensorrt_llm::runtime::IpcMemory::allocateIpcMemory() + 685\n"
    "3       0x7f2a10e4a4eb tensorrt_llm::runtime::IpcMemory::IpcMemory(unsigned long) + 283\n"
    "4       0x7f2a10f01a13 tensorrt_llm::batch_manager::RuntimeBuffers::RuntimeBuffers() + 1412\n"
)


def test_an_error_over_a_native_backtrace_takes_the_category_of_its_innermost_known_symbol(settings, mini_corpus):
    paths = (CodePath("distributed-comm", ("ipcmemory::",)), CodePath("model-load", ("runtimebuffers",)))
    d = Engine(settings, corpus=dataclasses.replace(mini_corpus, code_paths=paths)).diagnose_text(NATIVE)
    assert d.category == "distributed-comm" and d.initiating.line == 1
    assert d.passes.rules == {"distributed-comm": 0.5}


def test_a_native_backtrace_is_read_only_right_under_its_error(settings, mini_corpus):
    paths = (CodePath("distributed-comm", ("ipcmemory::",)),)
    apart = NATIVE.replace("\n1 ", "\nretrying once\nstill failing\nwaiting for peers\ngiving up\n1 ", 1)
    d = Engine(settings, corpus=dataclasses.replace(mini_corpus, code_paths=paths)).diagnose_text(apart)
    assert "distributed-comm" not in d.passes.rules


DUMP = (
    "Fatal Python error: Segmentation fault\n"
    "\n"
    "Current thread 0x00007f3a2bfff640 (most recent call first):\n"
    '  File "/opt/venv/lib/python3.11/site-packages/vllm/spec_decode/ngram_worker.py", line 88 in sampler_output\n'
    '  File "/opt/venv/lib/python3.11/site-packages/acme/srt/mem_cache/radix_cache.py", line 140 in match_prefix\n'
    "\n"
    "Thread 0x00007f3a3c7fe640 (most recent call first):\n"
    '  File "/usr/lib/python3.11/threading.py", line 331 in wait\n'
)


def test_a_stack_dump_printed_innermost_first_is_read_by_its_innermost_known_frame(settings, corpus):
    healthy = "".join(f"INFO 11-30 09:00:{s:02d} [loggers.py:118] Engine 000: Avg prompt throughput: 12.0 tokens/s, "
                      "Avg generation throughput: 210.5 tokens/s, Running: 3 reqs, Waiting: 0 reqs\n" for s in range(40))
    d = Engine(settings, corpus=corpus).diagnose_text(healthy + DUMP)
    assert d.passes.rules == {"speculative-decoding": 0.4}  # ngram_worker is innermost, not the radix cache
    assert d.category == "speculative-decoding"


def test_an_entry_with_words_takes_only_the_exceptions_that_say_them(settings, mini_corpus):
    refusal = CodePath("invalid-config", ("acme/",), ("ValueError",), r"only supports|not supported with")
    paths = (refusal, CodePath("radix-cache-state", ("radix_cache",)))
    engine = Engine(settings, corpus=dataclasses.replace(mini_corpus, code_paths=paths))
    tb = ("Traceback (most recent call last):\n"
          '  File "/opt/venv/lib/python3.11/site-packages/acme/srt/mem_cache/radix_cache.py", line 96, in __init__\n'
          "    raise ValueError(msg)\n"
          "ValueError: {}\n")
    assert engine.diagnose_text(tb.format("The hierarchical cache only supports MHA and MLA models")).passes.rules \
        == {"invalid-config": 0.5}
    assert engine.diagnose_text(tb.format("node 17 has no parent")).passes.rules == {"radix-cache-state": 0.5}


def test_an_exception_naming_a_features_object_takes_the_features_category(settings, corpus):
    """`'EagleProposer' object has no attribute …`: whose object it is, when no frame says whose code."""
    engine = Engine(settings, corpus=corpus)
    cut = ("Traceback (most recent call last):\n"
           '  File "/opt/venv/lib/python3.12/site-packages/acme/worker/runner.py", line 88, in step\n'
           "    self.helper.step(batch)\n")
    for body in (cut + "AttributeError: 'SpecDecodeHelper' object has no attribute 'k'\n",
                 "AttributeError: 'SpecDecodeHelper' object has no attribute 'k'\n"):
        assert engine.diagnose_text(body).passes.rules == {"speculative-decoding": 0.45}
    assert engine.diagnose_text("AttributeError: 'RadixCache' object has no attribute 'x'\n").passes.rules \
        == {"radix-cache-state": 0.45}
    assert not engine.diagnose_text("AttributeError: 'NoneType' object has no attribute 'k'\n").passes.rules
    framed = RADIX.replace("KeyError: 91", "AttributeError: 'SpecDecodeHelper' object has no attribute 'k'")
    assert engine.diagnose_text(framed).passes.rules == {"radix-cache-state": 0.5}  # the frame says more



def test_a_request_parameter_the_api_layer_applies_is_the_requests_configuration(rules_engine):
    """A logit bias naming a token beyond the vocabulary fails inside the API layer's processor: the
    request's own parameter, not the engine, whatever dies after it."""
    text = (
        "ERROR 07-29 11:02:41 async_llm_engine.py:61] Engine background task failed\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.10/site-packages/vllm/model_executor/layers/logits_processor.py", line 116, '
        "in _apply_logits_processors\n"
        "    logits_row = logits_processor(past_tokens_ids, logits_row)\n"
        '  File "/opt/venv/lib/python3.10/site-packages/vllm/entrypoints/openai/protocol.py", line 251, '
        "in logit_bias_logits_processor\n"
        "    logits[int(token_id)] += bias\n"
        "IndexError: index 70211 is out of bounds for dimension 0 with size 50304\n"
    )
    d = rules_engine.diagnose_text(text)
    assert d.category == "invalid-config" and d.initiating.text.startswith("IndexError")


def test_a_crash_handlers_backtrace_of_mangled_frames_is_read_by_its_innermost_known_symbol(rules_engine):
    """UCX's and glibc's backtraces print `lib.so(_ZN…+0x2ad)`: the mangled nested name says whose code
    faulted, under a line that names only a dead worker."""
    crash = ("[node-2:4411:0:4411] Caught signal 7 (Bus error: nonexistent physical address)\n"
             "==== backtrace (tid:   4411) ====\n"
             " 0  /opt/hpcx/ucx/lib/libucs.so.0(ucs_handle_error+0x2e4) [0x7f1c2a3e4774]\n"
             " 1  /opt/trtllm/libs/libtensorrt_llm.so(_ZN12tensorrt_llm7runtime9IpcMemory17allocateIpcMemoryEv+0x2ad)"
             " [0x7f1b9c0a12ad]\n"
             " 2  /opt/trtllm/libs/libtensorrt_llm.so(_ZNK12tensorrt_llm7runtime9IpcMemoryC1Emm+0x61) [0x7f1b9c0a1b41]\n")
    d = rules_engine.diagnose_text(crash)
    assert d.category == "distributed-comm" and d.passes.rules.get("distributed-comm") == 0.5
    assert d.passes.rules.get("worker-dead")  # the handler's line is still the symptom it names
