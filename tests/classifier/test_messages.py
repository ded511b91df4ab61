"""Known messages: error lines no signature names, placed by where the engine prints them."""

from __future__ import annotations

from pathlib import Path

import pytest

from servetriage.classifier import Engine
from servetriage.classifier._messages import MessageIndex
from servetriage.corpus import MessagePath, load_catalogue, mine_tree

TREE = Path(__file__).resolve().parents[1] / "corpus" / "minetree"
PATHS = (MessagePath("invalid-config", ("runtime/world",), "parallelism"),
         MessagePath("kv-cache-exhausted", ("mem_cache/",)),
         MessagePath("worker-dead", ("executor/",)))
WARNED = (MessagePath("kv-cache-exhausted", ("mem_cache/",), "[Ee]victing", warnings=True),) + PATHS


def _index() -> MessageIndex:
    return MessageIndex(list(mine_tree(TREE, "fake", "1.0")), PATHS)


def test_a_line_is_matched_to_its_template_and_placed_by_its_source():
    index = _index()
    t = index.lookup("[2026-11-30 10:00:01 TP0] RuntimeError: Token pool exhausted: need 4096 slots but only 3 are free")
    assert t is not None and t.file == "fakeengine/srt/mem_cache/pool.py" and t.level == "raise"
    assert index.place(t.file, t.template) == "kv-cache-exhausted"
    assert index.lookup("Token pool is fine today") is None


def test_info_messages_are_noise_and_error_lines_become_weak_hits():
    from servetriage.classifier import Line
    index = _index()
    info = Line(no=1, text="Allocated 12 slots from the token pool", body="Allocated 12 slots from the token pool")
    err = Line(no=2, text="RuntimeError: Token pool exhausted: need 9 slots but only 1 are free",
               body="RuntimeError: Token pool exhausted: need 9 slots but only 1 are free", exception=True)
    assert index.is_noise(info) and not index.is_noise(err)
    hits = index.attribute([info, err], named=(), symptoms=frozenset())
    assert [(h.line.no, h.category) for h in hits] == [(2, "kv-cache-exhausted")]
    assert hits[0].pattern.startswith("catalogue: fake fakeengine/srt/mem_cache/pool.py") and hits[0].specificity < 1
    assert index.attribute([err], named=(2,), symptoms=frozenset()) == []  # a signature already named it


def test_a_warning_is_a_hit_only_where_an_entry_takes_warnings():
    from servetriage.classifier import Line
    text = "WARNING pool.py:12] Pool usage at 0.97, evicting 12 entries"
    line = Line(no=3, text=text, body=text)
    assert _index().warned([line], named=(), symptoms=frozenset()) == []  # placed by its file alone: chatter
    index = MessageIndex(list(mine_tree(TREE, "fake", "1.0")), WARNED)
    [hit] = index.warned([line], named=(), symptoms=frozenset())
    assert hit.category == "kv-cache-exhausted" and hit.pattern.endswith("(a warning)") and hit.specificity < 0.55
    assert index.warned([line], named=(3,), symptoms=frozenset()) == []
    assert index.warned([line], named=(), symptoms=frozenset({"kv-cache-exhausted"})) == []
    # read as an error (its own level says more than where it was printed), a warning's template is
    # still placed only where an entry takes warnings: NCCL reports a failed verbs call with WARN
    assert _index().attribute([line], named=(), symptoms=frozenset()) == []
    [hit] = index.attribute([line], named=(), symptoms=frozenset())
    assert hit.category == "kv-cache-exhausted" and hit.pattern.endswith("(a warning)")


def test_a_wrappers_line_is_placed_by_the_message_it_quotes():
    """vLLM's `Worker failed with error '…'` names only a symptom; the message inside it says where."""
    from servetriage.classifier import Line
    index = _index()
    text = ("RuntimeError: Worker failed with error 'Token pool exhausted: need 9 slots but only 1 are free', "
            "please check the stack trace above for the root cause")
    line = Line(no=4, text=text, body=text, exception=True)
    assert index.lookup(text).file == "fakeengine/srt/executor/worker.py"  # the most literal is the wrapper
    [hit] = index.attribute([line], named=(), symptoms=frozenset({"worker-dead"}))
    assert hit.category == "kv-cache-exhausted" and "mem_cache/pool.py" in hit.pattern
    quoting_nothing = text.replace("Token pool exhausted: need 9 slots but only 1 are free", "cannot reach rank 3")
    assert index.attribute([Line(no=4, text=quoting_nothing, body=quoting_nothing)], named=(),
                           symptoms=frozenset({"worker-dead"})) == []  # a symptom's place is no hit
    # a short template that merely occurs inside a long quoted text is not the quoted message
    occurring = text.replace("Token pool exhausted: need 9 slots but only 1 are free",
                             "rank 3 lost its peer after a timeout, and while draining its queue it also saw "
                             "No free slots in pool kv (size 0) from the allocator")
    assert index.attribute([Line(no=4, text=occurring, body=occurring)], named=(),
                           symptoms=frozenset({"worker-dead"})) == []
    alone = text.replace("Token pool exhausted: need 9 slots but only 1 are free", "No free slots in pool kv (size 0)")
    assert [h.category for h in index.attribute([Line(no=4, text=alone, body=alone)], named=(),
                                                symptoms=frozenset({"worker-dead"}))] == ["kv-cache-exhausted"]


def test_a_cpp_location_in_the_line_is_read_like_a_frame():
    index = _index()
    line = "[TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (/src/cpp/tensorrt_llm/runtime/worldCheck.cpp:7)"
    from servetriage.classifier import Line
    hits = index.attribute([Line(no=1, text=line, body=line)], named=(), symptoms=frozenset())
    assert hits == []  # the location fits, but its entry's words do not: no "parallelism" in this line
    worded = line.replace("mpiSize == tp * pp", "pipeline parallelism times tensor parallelism != world size")
    hits = index.attribute([Line(no=1, text=worded, body=worded)], named=(), symptoms=frozenset())
    assert hits[0].category == "invalid-config" and hits[0].pattern == "location: /src/cpp/tensorrt_llm/runtime/worldCheck.cpp:7"
    # a server's glog prefix names where it reported the failure; the message's own location is read
    prefixed = f"E0301 10:00:00.000001 88 model_lifecycle.cc:654] failed to load: {worded}"
    hits = index.attribute([Line(no=1, text=prefixed, body=prefixed)], named=(), symptoms=frozenset())
    assert [h.category for h in hits] == ["invalid-config"] and hits[0].pattern.endswith("worldCheck.cpp:7")


def test_the_packaged_catalogue_serves_the_engine(rules_engine):
    assert len(load_catalogue()) >= 20000
    assert {"sglang", "vllm", "nccl", "torch"} <= {t.engine for t in load_catalogue()}
    d = rules_engine.diagnose_text("[rank0]: AssertionError: 4096 is not divisible by 3")
    assert d.category == "invalid-config"
    assert any(p.startswith("catalogue: ") and "distributed/utils.py in ensure_divisibility" in p
               for p in _patterns(rules_engine, d))


def _patterns(engine: Engine, d) -> list[str]:
    from servetriage.classifier._reading import read_log
    r = read_log("[rank0]: AssertionError: 4096 is not divisible by 3", engine.scanner, engine.corpus, engine.lifecycle,
                 engine.symptom_roles, engine.messages)
    return [h.pattern for h in r.hits]


def test_tensorrt_llm_assertions_pasted_alone_get_the_category_of_their_location(rules_engine):
    """The catalogue's own C++ checks, as TensorRT-LLM prints them: `Assertion failed: … (file:line)`."""
    checks = [t for t in load_catalogue() if t.engine == "trtllm" and t.level == "check" and t.file.startswith("cpp/")]
    assert len(checks) >= 20
    wrong = []
    for t in checks:
        text = t.template if t.template.startswith("Assertion failed") else f"Assertion failed: {t.template}"
        line = f"[TensorRT-LLM][ERROR] {text.replace('{}', '7')} (/src/tensorrt_llm/{t.file}:120)"
        expected = rules_engine.messages.place(t.file, t.template)
        if expected is None or rules_engine.scanner.scan(line):
            continue  # unplaced, or a hand-written signature names it (signatures outrank locations)
        d = rules_engine.diagnose_text(line)
        if (d.passes.rules and max(d.passes.rules, key=d.passes.rules.get)) != expected:
            wrong.append((t.file, t.template, d.passes.rules))
    assert wrong == []


def test_the_index_kept_in_the_cache_dir_answers_as_the_one_built(rules_engine, tmp_path):
    from servetriage.classifier._messages import message_index
    corpus = rules_engine.corpus
    built = message_index(corpus)
    message_index(corpus, tmp_path)
    [kept] = tmp_path.glob("messages-*")
    cached = message_index(corpus, tmp_path)
    assert cached.templates == built.templates
    from servetriage.corpus._catalogue import render
    lines = ["[rank0]: AssertionError: 4096 is not divisible by 3"] + [render(t.template) for t in built.templates[::2000]]
    found = [built.lookup(line) for line in lines]
    assert [cached.lookup(line) for line in lines] == found and found[0] is not None and sum(map(bool, found)) > 5
    kept.write_bytes(b"not an index")  # a torn or foreign file is rebuilt, never trusted
    assert message_index(corpus, tmp_path).templates == built.templates
    assert kept.read_bytes() != b"not an index"
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert len(message_index(corpus, blocked)) == len(built)  # an unwritable cache only costs time


def test_tensorrt_llm_python_errors_pasted_alone_get_the_category_of_their_module(rules_engine):
    """The PyTorch executor's and the LLM API's own raises, as a traceback names them."""
    from servetriage.classifier._messages import ERROR_LEVELS
    from servetriage.classifier._train import render_in_log
    raised = [t for t in load_catalogue() if t.engine == "trtllm" and t.file.startswith("tensorrt_llm/")
              and t.level in ERROR_LEVELS]
    assert len(raised) >= 300
    wrong, placed = [], 0
    for t in raised:
        paste = render_in_log(t)
        found = rules_engine.messages.lookup(paste.splitlines()[-1], ERROR_LEVELS)  # the most literal match
        generic = found is None or rules_engine.messages.places_nothing(found)
        expected = None if generic else rules_engine.messages.place(found.file, found.template)
        if expected is None or expected in rules_engine.symptom_roles or rules_engine.scanner.scan(paste):
            continue  # unplaced, a symptom (never a cause), or a hand-written signature names it
        placed += 1
        d = rules_engine.diagnose_text(paste)
        if (d.passes.rules and max(d.passes.rules, key=d.passes.rules.get)) != expected:
            wrong.append((t.file, t.template, d.passes.rules))
    assert placed >= 200 and wrong == []


def test_a_length_check_in_a_broad_cpp_directory_is_context_length_by_its_words(rules_engine):
    located = "(/src/cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp:560)"
    too_long = f"[TensorRT-LLM][ERROR] Assertion failed: Prompt length (9000) exceeds maximum input length (8192). {located}"
    other = f"[TensorRT-LLM][ERROR] Assertion failed: numContextBlocks must be greater than 0 {located}"
    assert rules_engine.diagnose_text(too_long).category == "context-length"
    d = rules_engine.diagnose_text(other)
    assert "context-length" not in (d.passes.rules or {})  # "Context" and "greater than" alone say nothing of length
    engine_file = ("[TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine. "
                   "(/src/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:239)")
    assert rules_engine.diagnose_text(engine_file).category == "model-load"  # not the runtime's config checks


def test_a_location_from_a_build_machine_is_the_catalogue_file_of_the_same_name():
    from servetriage.classifier import Line
    index = MessageIndex(list(mine_tree(TREE, "fake", "1.0")), (MessagePath("structured-output", ("cpp/grammar/",)),))
    text = "[09:14:02] /build/workspace/grammar/matchCheck.cc:41: the grammar cannot go on from here"
    [hit] = index.attribute([Line(no=1, text=text, body=text)], named=(), symptoms=frozenset())
    assert hit.category == "structured-output" and hit.pattern == "location: /build/workspace/grammar/matchCheck.cc:41"
    other = text.replace("grammar/matchCheck.cc", "grammar/otherFile.cc")
    assert index.attribute([Line(no=1, text=other, body=other)], named=(), symptoms=frozenset()) == []
    # a library that logs only `__FILE__`'s base name: the catalogue's file of that name
    bare = "RuntimeError: matchCheck.cc:41: the grammar cannot go on from here"
    [hit] = index.attribute([Line(no=1, text=bare, body=bare)], named=(), symptoms=frozenset())
    assert hit.category == "structured-output" and hit.pattern == "location: matchCheck.cc:41"
    unknown = bare.replace("matchCheck.cc", "otherFile.cc")
    assert index.attribute([Line(no=1, text=unknown, body=unknown)], named=(), symptoms=frozenset()) == []


def test_a_grammar_library_error_printed_raw_at_the_end_of_a_whole_log_is_found(rules_engine):
    from wholelogs import join, vllm_startup, vllm_traffic
    raw = ("/workspace/cpp/grammar_matcher.cc:388: Check failed: (!IsTerminated()) is false: "
           "GrammarMatcher has terminated after accepting the stop token, but is trying to accept another token")
    d = rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(30), [raw]))
    assert d.category == "structured-output" and d.initiating is not None and d.initiating.text == raw
    assert rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(30))).is_unknown


def test_the_libraries_the_engines_load_through_are_known_by_their_place(rules_engine):
    """transformers and the hub (model-load), flashinfer's architecture checks (unsupported-hardware)."""
    cases = {
        "OSError: Cannot find the requested files in the disk cache and outgoing traffic has been disabled. "
        "To enable hf.co look-ups and downloads online, set 'local_files_only' to False.": "model-load",
        "RuntimeError: FP4 data type is not supported on SM < 90": "unsupported-hardware",
    }
    for line, category in cases.items():
        d = rules_engine.diagnose_text(line)
        assert d.category == category, line
        assert any(p.startswith("catalogue: ") for p in _patterns(rules_engine, d)), line


def test_a_place_takes_a_message_only_with_the_words_that_say_so(rules_engine):
    """Reviewed placements: a directory's entry with `words` takes only its own kind of message."""
    place = rules_engine.messages.place
    assert place("tensorrt_llm/commands/serve.py", "Failed to bind socket to {}:{}: {}") == "port-in-use"
    assert place("torch/cuda/_utils.py", "cuda.bindings is not available") != "port-in-use"
    assert place("torch/cuda/__init__.py", "Torch not compiled with CUDA enabled") == "cuda-runtime-mismatch"
    assert place("torch/cuda/__init__.py", "Cannot re-initialize CUDA in forked subprocess.") != "cuda-runtime-mismatch"
    assert place("vllm/model_executor/warmup/deep_gemm_warmup.py", "w1 and w2 must have the same number of experts") \
        != "health-check"
    # the scheduler fails requests whose KV a connector could not load: the transfer, not the pool
    assert place("vllm/v1/core/sched/scheduler.py", "Failing {} request(s) due to KV load failure") == "disaggregation-transfer"
    assert place("vllm/v1/core/sched/scheduler.py", "Request {} is preempted") == "kv-cache-exhausted"
    assert place("vllm/model_executor/models/utils.py", "There is no module or parameter named '{}' in {}") == "model-load"


def test_a_message_that_names_the_gpu_generation_it_needs_is_unsupported_hardware_wherever_it_is(rules_engine):
    place = rules_engine.messages.place
    assert place("tensorrt_llm/llmapi/llm_args.py", "indexer_k_dtype='fp4' requires SM>=100 (Blackwell); current device "
                 "is SM90.") == "unsupported-hardware"
    assert place("sglang/srt/server_args.py", "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100).") \
        == "unsupported-hardware"
    assert place("sglang/srt/server_args.py", "--tp-size must be divisible by --dp-size") != "unsupported-hardware"


def test_a_refused_setting_is_invalid_config_in_any_features_directory_but_an_unknown_model_is_model_load(rules_engine):
    place = rules_engine.messages.place
    assert place("sglang/srt/mem_cache/hiradix_cache.py", "HiRadixCache only supports MHA and MLA models") \
        == "invalid-config"
    assert place("vllm/v1/spec_decode/eagle.py", "draft_tensor_parallel_size is not supported with {}") == "invalid-config"
    assert place("tensorrt_llm/models/automodel.py",
                 "The given huggingface model architecture {} is not supported in TRT-LLM yet") == "model-load"
    assert place("sglang/srt/mem_cache/radix_cache.py", "node {} has no parent") == "radix-cache-state"


@pytest.mark.parametrize(("line", "category"), [
    ("what():  [TensorRT-LLM][ERROR] Assertion failed: max_context_len <= mMaxContextLength "
     "(/src/cpp/tensorrt_llm/plugins/gptAttentionPlugin/gptAttentionPlugin.cpp:249)", "context-length"),
    ("[TensorRT-LLM][ERROR] Assertion failed: Input length (7000) + max new tokens (2000) must be less than max sequence "
     "length (8192). (/src/cpp/tensorrt_llm/runtime/gptDecoderBatched.cpp:233)", "context-length"),
    ("[TensorRT-LLM][ERROR] Assertion failed: Number of draft tokens (4) is larger than maximum number of draft tokens (0) "
     "(/src/cpp/tensorrt_llm/batch_manager/trtGptModelInflightBatching.cpp:1021)", "speculative-decoding"),
    ("RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: !mTokens.empty() "
     "(/src/cpp/tensorrt_llm/executor/decodingConfig.cpp:31)", "speculative-decoding"),
    ("[TensorRT-LLM][ERROR] Assertion failed: FP8 context FMHA needs Hopper or newer, not supported on this GPU "
     "(/src/cpp/tensorrt_llm/common/attentionOp.cpp:2400)", "unsupported-hardware"),
    ("[TensorRT-LLM][ERROR] Assertion failed: mFreePrimaryBlocks list has no GPU blocks "
     "(/src/cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp:510)", "kv-cache-exhausted"),
    ("[TensorRT-LLM][ERROR] Assertion failed: Unsupported data type, pre SM 80 GPUs do not support bfloat16 "
     "(/src/cpp/tensorrt_llm/plugins/rmsnormPlugin/rmsnormPlugin.cpp:120)", "unsupported-hardware"),
    ("what():  [TensorRT-LLM][ERROR] Assertion failed: No valid SQ GEMM tactic "
     "(/src/cpp/tensorrt_llm/plugins/smoothQuantGemmPlugin/smoothQuantGemmPlugin.cpp:240)", "unsupported-hardware"),
    ("[TensorRT-LLM][ERROR] Assertion failed: Error opening engine file: /engines/llama/rank3.engine "
     "(/src/cpp/tensorrt_llm/runtime/utils/sessionUtils.cpp:44)", "model-load"),
    ("AssertionError: Engine world size (2 * 1) != Runtime world size (4)", "invalid-config"),
])
def test_tensorrt_llm_checks_in_broad_directories_are_placed_by_their_words(rules_engine, line, category):
    d = rules_engine.diagnose_text(line)
    assert max(d.passes.rules, key=d.passes.rules.get) == category


def test_generic_wording_places_no_line(rules_engine):
    """The interpreter's own wording, re-raised by one file's `__getattr__`, is not that file's message."""
    index = rules_engine.messages
    generic = index.lookup("AttributeError: 'Foo' object has no attribute 'bar'")
    assert generic is not None and index.places_nothing(generic)
    d = rules_engine.diagnose_text("AttributeError: 'Foo' object has no attribute 'bar'")
    assert not d.passes.rules
    wrapped = ("RuntimeError: Worker failed with error ''NoneType' object has no attribute 'cpu'', "
               "please check the stack trace above for the root cause")
    assert not rules_engine.diagnose_text(wrapped).passes.rules  # quoted inside a wrapper, it still places nothing
    # a wrapper that places nothing ('Failed to load {}') is not read through a short template that
    # only occurs in what it quotes ('{} not found in {}', from a Triton kernel's roofline tool)
    loading = "[TRT-LLM] [E] Failed to load the checkpoint: config.json not found in /models/llama-70b-ckpt"
    assert "build-toolchain" not in rules_engine.diagnose_text(loading).passes.rules
    specific = index.lookup("AssertionError: 4096 is not divisible by 3")
    assert specific is not None and not index.places_nothing(specific)


def test_a_glog_line_of_mooncakes_transfer_engine_is_placed_by_its_file(rules_engine):
    """Mooncake prints glog lines that name only the source file: the file places them."""
    line = ("E0302 08:14:07.512093 41177 transfer_task.cpp:305] Failed to complete transfers after 60 seconds "
            "for batch 7301122\n")
    d = rules_engine.diagnose_text(line)
    assert d.category == "disaggregation-transfer"
    assert d.evidence[0].line == 1
