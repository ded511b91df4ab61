"""Whole server logs as people paste them: healthy output is `unknown`, the failure chain that ended
the run is the diagnosis, printouts are never evidence, restarts and orderly stops are read as such."""

from __future__ import annotations

import json

import pytest

from servetriage.classifier import paste_notes, render_text

from wholelogs import (join, sglang_decoding, sglang_ima_crash, sglang_startup, sglang_traffic, sglang_truncation_warning,
                        trtllm_oom_crash, trtllm_startup, trtllm_traffic, trtllm_warmup_then_rejected_prompt, vllm_idle,
                        vllm_long_prompt_warning, vllm_oom_crash, vllm_sigterm_stop, vllm_startup, vllm_traffic)

HEALTHY = {
    "vllm": join(vllm_startup(), vllm_traffic(12), vllm_long_prompt_warning(), vllm_traffic(6, minute=13), vllm_idle(4)),
    "sglang": join(sglang_startup(), sglang_traffic(10), sglang_truncation_warning(), sglang_traffic(8, minute=7)),
    "trtllm": join(trtllm_startup(), trtllm_traffic(20)),
}


@pytest.mark.parametrize("engine_name", sorted(HEALTHY))
def test_a_healthy_whole_log_is_unknown(rules_engine, engine_name):
    d = rules_engine.diagnose_text(HEALTHY[engine_name], f"{engine_name}.log")
    assert d.category == "unknown", (d.category, d.initiating)
    assert d.initiating is None and d.symptoms == ()


def test_a_busy_servers_log_of_mostly_decode_lines_is_healthy(rules_engine):
    busy = join(sglang_startup(), sglang_traffic(3), sglang_decoding(300))
    assert rules_engine.diagnose_text(busy).category == "unknown"
    assert rules_engine.diagnose_text(join(sglang_decoding(12))).category == "performance"  # pasted for its figures


def test_a_handled_warning_is_context_not_the_answer(rules_engine):
    d = rules_engine.diagnose_text(HEALTHY["sglang"])
    assert d.category == "unknown"
    assert [e.category for e in d.earlier] == ["context-length"]
    assert d.earlier[0].outcome == "handled" and d.earlier[0].line == len(sglang_startup()) + 3 * 10 + 1
    assert any(n.startswith("Earlier: line") and "context-length, handled" in n for n in paste_notes(d))


@pytest.mark.parametrize("engine_name, crash, category", [
    ("vllm", vllm_oom_crash(), "gpu-oom"),
    ("sglang", sglang_ima_crash(), "illegal-memory-access"),
    ("trtllm", trtllm_oom_crash(), "gpu-oom"),
])
def test_the_crash_at_the_end_of_a_whole_log_is_found(rules_engine, engine_name, crash, category):
    text = HEALTHY[engine_name] + join(crash)
    d = rules_engine.diagnose_text(text)
    assert d.category == category
    first_crash_line = HEALTHY[engine_name].count("\n") + 1
    assert d.initiating is not None and d.initiating.line >= first_crash_line
    assert all(e.line >= first_crash_line for e in d.evidence)


def test_routine_records_before_an_error_are_not_read_by_the_learned_passes(rules_engine):
    """Info records and a warning printed while the server still worked explain no error, whether or
    not the catalogue knows their wording; the error and the warning after it are read."""
    tail = trtllm_warmup_then_rejected_prompt()
    text = join(trtllm_startup(), trtllm_traffic(5), tail)
    read = [l.text for l in rules_engine.focus(text).lines]
    assert read == tail[-2:]
    # with no error in the chain there is nothing to set the warning against: it is what is read
    assert [l.text for l in rules_engine.focus(join(tail[:-2])).lines] == [tail[-3]]


def test_open_mpi_reporting_a_killed_rank_is_evidence_and_its_command_line_is_not(rules_engine):
    """`mpirun -n 4 …` pasted above the log is a printout; Open MPI's own 'mpirun noticed that …'
    report of a rank killed by signal 9 is the host running out of memory."""
    command = "mpirun -n 4 --allow-run-as-root python3 run.py --engine_dir /engines/chat-70b --max_output_len 256"
    killed = "mpirun noticed that process rank 2 with PID 51234 on node gpu-a3 exited on signal 9 (Killed)."
    d = rules_engine.diagnose_text(join([command], trtllm_startup(), [killed]))
    assert d.category == "host-memory"
    assert d.initiating is not None and d.initiating.text == killed
    assert command not in [e.text for e in d.evidence]


def test_an_earlier_handled_warning_does_not_outrank_the_fatal_chain(rules_engine):
    text = join(sglang_startup(), sglang_traffic(4), sglang_truncation_warning(), sglang_traffic(4, minute=7),
                sglang_ima_crash())
    d = rules_engine.diagnose_text(text)
    assert d.category == "illegal-memory-access"
    assert "Truncated" not in d.initiating.text
    assert [e.category for e in d.earlier] == ["context-length"]


def test_a_restart_in_the_middle_diagnoses_the_run_that_failed(rules_engine):
    crashed = join(vllm_startup(), vllm_traffic(6), vllm_oom_crash())
    text = crashed + join(vllm_startup(minute=45), vllm_traffic(6, minute=46))
    d = rules_engine.diagnose_text(text)
    assert d.category == "gpu-oom" and d.runs == 2 and d.run == 1
    assert d.initiating.line <= crashed.count("\n")
    assert any("this is start 1" in n for n in paste_notes(d))


def test_a_crash_loop_reports_the_earlier_starts_that_failed_the_same_way(rules_engine):
    one = join(vllm_startup(), vllm_traffic(2), vllm_oom_crash())
    d = rules_engine.diagnose_text(one * 3)
    assert d.category == "gpu-oom" and d.runs == 3 and d.run == 3
    assert [r.category for r in d.other_runs] == ["gpu-oom", "gpu-oom"]
    assert d.initiating.line > 2 * one.count("\n")
    assert "Also in this paste: 2 earlier starts ended in the same gpu-oom" in " ".join(paste_notes(d))


def test_an_idle_server_is_not_a_hang_or_slow(rules_engine):
    d = rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(3), vllm_idle(30)))
    assert d.category == "unknown"
    assert rules_engine.diagnose_text(join(vllm_idle(30))).category == "unknown"


def test_requests_in_flight_without_progress_is_a_hang(rules_engine):
    stalled = [line.replace("Running: 0 reqs", "Running: 6 reqs") for line in vllm_idle(6)]
    d = rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(4), stalled))
    assert d.category == "engine-hang"
    assert d.initiating is not None and "Running: 6 reqs" in d.initiating.text


def test_a_sustained_crawl_with_work_in_flight_is_performance(rules_engine):
    crawl = [line.replace("Avg generation throughput: 0.0", "Avg generation throughput: 3.1")
                 .replace("Running: 0 reqs", "Running: 8 reqs") for line in vllm_idle(5)]
    assert rules_engine.diagnose_text(join(vllm_startup(), crawl)).category == "performance"
    # the same averages with nothing running (a request that finished early in the interval) are healthy
    finished = [line.replace("Avg generation throughput: 0.0", "Avg generation throughput: 3.1") for line in vllm_idle(5)]
    assert rules_engine.diagnose_text(join(vllm_startup(), finished)).category == "unknown"


def test_a_config_dump_full_of_alarming_words_is_never_evidence(rules_engine):
    dump = [
        "INFO 11-30 07:00:03 [cli_args.py:325] non-default args: {'crash_dump_folder': '/tmp/crash', "
        "'disable_cuda_graph': True, 'speculative_algorithm': 'EAGLE', 'enable_prefix_caching': True, "
        "'nccl_timeout': 600, 'enable_nan_detection': True, 'max_model_len': 131072}",
        "pip3 install list:",
        "[pip3] nvidia-nccl-cu12==2.21.5",
        "[pip3] torch==2.7.1",
        "flashinfer-python==0.2.8",
        "$ python -m sglang.launch_server --model-path acme/coder-7b --disable-cuda-graph --speculative-algorithm EAGLE",
    ]
    text = join(sglang_startup(), dump, sglang_traffic(5))
    d = rules_engine.diagnose_text(text)
    assert d.category == "unknown"
    assert d.evidence == () or all("args" not in e.text and "pip3" not in e.text for e in d.evidence)
    assert d.passes.rules == {}
    # the versions it prints are still read
    crashed = rules_engine.diagnose_text(text + join(sglang_ima_crash()))
    assert crashed.category == "illegal-memory-access"
    assert all("server_args" not in e.text and "non-default" not in e.text for e in crashed.evidence)


def test_collect_env_output_is_a_printout(rules_engine):
    env = ["Collecting environment information...", "PyTorch version: 2.7.1+cu126", "Is debug build: False",
           "CUDA used to build PyTorch: 12.6", "NCCL version: 2.26.2", "Nvidia driver version: 570.86.15",
           "cuDNN version: Could not collect", "Is XNNPACK available: True", "[pip3] triton==3.3.1"]
    d = rules_engine.diagnose_text(join(env, vllm_startup(), vllm_traffic(3)))
    assert d.category == "unknown" and d.passes.rules == {}


def test_a_python_warning_inside_collect_env_output_is_read(rules_engine):
    """collect_env imports torch: its warning that the GPU is too new for the build is the runtime speaking."""
    env = ["Collecting environment information...", "PyTorch version: 2.6.0+cu124",
           "/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:235: UserWarning: ",
           "NVIDIA RTX PRO 6000 Blackwell with CUDA capability sm_120 is not compatible with the current PyTorch installation.",
           "The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
           "  warnings.warn(", "Is debug build: False", "CUDA used to build PyTorch: 12.4"]
    d = rules_engine.diagnose_text(join(env))
    assert d.category == "unsupported-hardware"


def test_an_orderly_stop_is_unknown_and_said_so(rules_engine):
    d = rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(6), vllm_sigterm_stop()))
    assert d.category == "unknown" and d.orderly_stop
    assert any("orderly stop" in n for n in paste_notes(d))


def test_a_failure_before_the_stop_is_still_diagnosed(rules_engine):
    d = rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(6), vllm_oom_crash()))
    assert d.category == "gpu-oom" and not d.orderly_stop  # vLLM shuts its HTTP server down after the crash


def test_a_clean_stop_then_a_new_start_that_fails(rules_engine):
    text = join(vllm_startup(), vllm_traffic(4), vllm_sigterm_stop(), vllm_startup(minute=20), vllm_oom_crash())
    d = rules_engine.diagnose_text(text)
    assert d.category == "gpu-oom" and d.runs == 2 and d.run == 2 and d.other_runs == ()


def test_short_excerpts_still_read_as_before(rules_engine):
    """A few lines cut around a fault the server handled: with no start-up shown, the fault is the subject."""
    d = rules_engine.diagnose_text(join(vllm_long_prompt_warning(), vllm_traffic(1)))
    assert d.category == "context-length"


def test_a_short_paste_that_served_past_a_notice_is_not_about_it(rules_engine):
    """An info-level stall notice during start-up compilation, or a tuning hint no rule names, that the
    server then served past: a short healthy paste, not a question about the notice."""
    stall = ("(EngineCore pid=88) INFO 11-30 07:08:41 [shm_broadcast.py:681] No available shared memory broadcast "
             "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
             "time-consuming work (e.g. compilation, weight/kv cache quantization).")
    hint = ("(EngineCore pid=88) WARNING 11-30 07:09:02 [vllm.py:1402] max_num_scheduled_tokens is set to 8184; "
            "this may lead to suboptimal performance.")
    assert rules_engine.diagnose_text(join([stall], vllm_traffic(2))).category == "unknown"
    assert rules_engine.diagnose_text(join([hint], vllm_traffic(2))).category == "unknown"
    # polls that ask for no work (a job's status, /health) answer while the engine is stuck: not progress
    polls = [f'INFO:     127.0.0.1:5{6000 + i} - "GET /v1/videos/job-{i % 2} HTTP/1.1" 200 OK' for i in range(6)]
    assert rules_engine.diagnose_text(join([stall], polls)).category == "engine-hang"
    # with nothing served after it, the same notice is still the subject
    assert rules_engine.diagnose_text(join(vllm_traffic(2), [stall, stall.replace("07:08:41", "07:09:41")])
                                      ).category == "engine-hang"


def test_a_triton_start_up_that_reached_its_services_is_healthy(rules_engine):
    """The TensorRT-LLM backend's notices about parameters it defaults are handled once Triton says its
    services started: a pasted Triton start-up is no failure."""
    notices = [f"[TensorRT-LLM][WARNING] {p} is not specified, will use default value"
               for p in ("max_beam_width", "max_tokens_in_paged_kv_cache", "kv_cache_free_gpu_mem_fraction")]
    started = ["I1130 10:02:11.402113 512 model_lifecycle.cc:827] successfully loaded 'tensorrt_llm'",
               "I1130 10:02:11.610045 512 grpc_server.cc:2519] Started GRPCInferenceService at 0.0.0.0:8001",
               "I1130 10:02:11.610301 512 http_server.cc:4623] Started HTTPService at 0.0.0.0:8000"]
    assert rules_engine.focus(join(notices, started)).lines == ()  # no run failed: the passes read nothing
    assert len(rules_engine.focus(join(notices)).lines) == 3  # cut before the services: they are the subject


def test_the_reply_shows_the_whole_log_notes(rules_engine):
    text = join(sglang_startup(), sglang_traffic(4), sglang_truncation_warning(), sglang_traffic(4, minute=7),
                sglang_ima_crash())
    out = render_text(rules_engine.diagnose_text(text, "server.log"))
    assert "Came first:" in out and "context-length, handled (the server went on serving)" in out


def test_the_learned_passes_read_only_the_chain(trained):
    _, _, engine = trained
    for name, crash, category in (("vllm", vllm_oom_crash(), "gpu-oom"),
                                  ("sglang", sglang_ima_crash(), "illegal-memory-access")):
        assert engine.diagnose_text(HEALTHY[name]).category == "unknown"
        assert engine.diagnose_text(HEALTHY[name] + join(crash)).category == category


def test_printouts_still_tell_the_setup(rules_engine):
    d = rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(2), vllm_oom_crash()))
    assert d.setup == {"model": "acme/chat-13b", "tensor_parallel": "2"}
    assert "tensor-parallel 2" in render_text(d)
    s = rules_engine.diagnose_text(join(sglang_startup(), sglang_traffic(2)))
    assert s.setup == {"model": "acme/coder-7b", "tensor_parallel": "1"}


def test_figures_well_below_what_the_same_log_showed_earlier_are_performance(rules_engine):
    fast = vllm_traffic(8, running=4)  # about 75 tokens/s per request
    slow = [line.replace("Avg generation throughput: 30", "Avg generation throughput: 4")  # about 10 per request
            for line in vllm_traffic(5, minute=40) if "loggers.py" in line]
    d = rules_engine.diagnose_text(join(vllm_startup(), fast, slow))
    assert d.category == "performance"
    assert d.passes.figures == {"performance": 0.8}


def test_the_answer_says_whose_problem_what_to_do_with_the_process_and_how_to_verify(rules_engine):
    d = rules_engine.diagnose_text(join(sglang_startup(), sglang_traffic(2), sglang_ima_crash()))
    assert d.category == "illegal-memory-access"
    assert d.incident.klass in ("Application bug", "Environment / runtime", "Hardware")
    assert d.incident.recovery.startswith("Restart required")  # a poisoned CUDA context
    assert d.incident.verify
    data = json.loads(d.to_json())
    assert data["class"] == d.incident.klass and data["recovery"] == d.incident.recovery and data["verify"]
    out = render_text(d)
    assert "Whose problem:" in out and "The process:" in out and "Verify the fix:" in out
    assert json.loads(rules_engine.diagnose_text(HEALTHY["vllm"]).to_json())["recovery"] is None


def test_when_the_paste_holds_only_a_symptom_the_answer_says_what_to_fetch(rules_engine):
    dead = rules_engine.diagnose_text("ERROR 11-30 07:40:07 [async_llm.py:419] vllm.v1.engine.exceptions.EngineDeadError: "
                                      "EngineCore encountered an issue. See stack trace (above) for the root cause.")
    assert dead.category == "worker-dead" and "dmesg" in dead.missing
    assert "Fetch next:" in render_text(dead)
    named = rules_engine.diagnose_text(
        "[rank0]:[E1130 07:10:02.123456 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=9912, OpType=ALLREDUCE) ran for 600011 milliseconds before timing out; "
        "rank 3 never reached the collective.")
    assert named.category == "distributed-comm" and named.missing.startswith("rank 3's log")
    oom = rules_engine.diagnose_text("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert oom.category == "gpu-oom" and oom.missing is None  # the cause is in the paste


def test_an_error_no_rule_names_does_not_silence_the_warning_a_rule_does(rules_engine):
    probe = 'INFO:     10.0.0.7:51022 - "GET /health HTTP/1.1" 500 Internal Server Error\n'
    d = rules_engine.diagnose_text(probe + "ERROR:    Exception in ASGI application\n")
    assert d.passes.rules and max(d.passes.rules, key=d.passes.rules.get) == "health-check"
    # an error a rule does name still outranks the warning before it
    d = rules_engine.diagnose_text(probe + "ERROR 11-28 09:21:09 torch.OutOfMemoryError: CUDA out of memory. "
                                           "Tried to allocate 4.00 GiB\n")
    assert d.category == "gpu-oom" and max(d.passes.rules, key=d.passes.rules.get) == "gpu-oom"


def test_a_worker_that_dies_after_the_operators_signal_is_the_stop_going_wrong(rules_engine):
    dead = "ERROR 11-30 07:20:05 [async_llm.py:420] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."
    signal = "INFO 11-30 07:20:04 [launcher.py:80] Shutting down FastAPI HTTP server: received signal SIGTERM"
    d = rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(6), [signal, dead]))
    assert d.category == "shutdown"
    unprompted = rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(6), [dead]))
    assert unprompted.category == "worker-dead"  # no stop began: the dead worker is still what to explain
    oom = ("(VllmWorker rank=0 pid=88) ERROR 11-30 07:20:03 [multiproc_executor.py:527] "
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert rules_engine.diagnose_text(join(vllm_startup(), vllm_traffic(6), [oom, signal, dead])).category == "gpu-oom"


def test_a_missing_optional_generation_config_is_no_failure_but_a_missing_config_is(rules_engine):
    notice = ("[2026-11-30 09:00:12] Failed to load generation config for acme/coder-7b: acme/coder-7b does not appear "
              "to have a file named {}. Checkout 'https://huggingface.co/acme/coder-7b/tree/main' for available files.")
    assert rules_engine.diagnose_text(notice.format("generation_config.json")).category == "unknown"
    assert rules_engine.diagnose_text(notice.format("config.json")).category == "model-load"


@pytest.mark.parametrize("pad", range(20, 45))
def test_a_warning_served_past_is_handled_wherever_its_progress_line_falls(rules_engine, pad):
    """The last progress before a fault is looked for backwards in growing windows; a progress line
    split between two windows would be lost, and the warning before it taken for the failure."""
    filler = [f"INFO 11-30 07:20:{i % 60:02d} [logger.py:41] Received request cmpl-{i:05d}: params elided"
              for i in range(pad)]
    served = ['INFO:     10.20.0.5:51000 - "POST /v1/chat/completions HTTP/1.1" 200 OK']
    d = rules_engine.diagnose_text(join(vllm_long_prompt_warning(), served, filler, vllm_oom_crash()))
    assert d.category == "gpu-oom"
    assert [e.category for e in d.earlier] == ["context-length"]


def test_a_symptom_a_rule_names_under_a_traceback_silences_nothing_before_it(rules_engine):
    """SGLang's teardown line after a scheduler's traceback is named (worker-dead, a symptom): the frame
    that placed the fault above it keeps its say."""
    crash = ["[2026-01-02 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
             '  File "/opt/sglang/python/sglang/srt/model_executor/model_runner.py", line 1790, in init_memory_pool',
             "    self.token_to_kv_pool = MHATokenToKVPool(",
             '  File "/opt/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 736, in __init__',
             "    self._create_buffers()",
             "RuntimeError: device out of memory. Tried to allocate 30.00 GiB"]
    teardown = "[2026-01-02 10:00:01] Received sigquit from a child process. It usually means the child failed."
    d = rules_engine.diagnose_text(join(crash, [teardown]))
    assert d.category == "kv-cache-too-small" and "worker-dead" in {s.category for s in d.symptoms}
    assert rules_engine.diagnose_text(teardown).category == "worker-dead"  # alone, the teardown is what there is


def test_a_vllm_start_up_that_reached_its_route_table_is_healthy(rules_engine):
    """vLLM lists its routes once the engine is up: the fallback notices printed while it started were
    handled, even in a paste that ends there (no uvicorn line yet), and uvicorn's banner after the routes
    opens no new run."""
    start = ["(Worker_TP0 pid=184) WARNING 03-01 04:56:15 [marlin_utils_fp8.py:112] Your GPU does not have native "
             "support for FP8 computation but FP8 quantization is being used. Weight-only FP8 compression will be used.",
             "(Worker_TP0 pid=184) WARNING 03-01 04:58:26 [kv_cache_utils.py:1208] Add 3 padding layers, may waste at "
             "most 6.25% KV cache memory"]
    routes = ["(APIServer pid=1) INFO 03-01 04:58:58 [launcher.py:37] Available routes are:",
              "(APIServer pid=1) INFO 03-01 04:58:58 [launcher.py:46] Route: /health, Methods: GET"]
    assert rules_engine.focus(join(start, routes)).lines == ()
    assert rules_engine.focus(join(start)).lines  # cut before the routes: the notices are the subject
    d = rules_engine.diagnose_text(join(vllm_startup(), start, routes, vllm_traffic(3), vllm_oom_crash()))
    assert d.category == "gpu-oom" and d.runs == 1
