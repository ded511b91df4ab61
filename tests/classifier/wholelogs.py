"""Whole server logs written for the tests: start-up, traffic, handled warnings, crashes, restarts.

Every line is written here in the engines' log formats (no line is copied from any shared or public
log). Builders return lists of lines so a test can compose a whole paste the way people paste one.
"""

from __future__ import annotations


def join(*parts: list[str]) -> str:
    return "\n".join(line for part in parts for line in part) + "\n"


# -- vLLM ----------------------------------------------------------------------------------------
def vllm_startup(version: str = "0.9.2", minute: int = 0) -> list[str]:
    t = f"11-30 07:{minute:02d}"
    return [
        f"INFO {t}:01 [__init__.py:244] Automatically detected platform cuda.",
        f"INFO {t}:03 [api_server.py:1395] vLLM API server version {version}",
        f"INFO {t}:03 [cli_args.py:325] non-default args: {{'model': 'acme/chat-13b', 'tensor_parallel_size': 2, "
        "'enable_prefix_caching': True, 'disable_custom_all_reduce': True, 'max_model_len': 32768}",
        f"INFO {t}:09 [config.py:841] This model supports multiple tasks: {{'generate'}}. Defaulting to 'generate'.",
        f"WARNING {t}:09 [config.py:1363] Default sampling parameters have been overridden by the model's config.",
        f"INFO {t}:12 [core.py:526] Waiting for init message from front-end.",
        f"INFO {t}:12 [core.py:69] Initializing a V1 LLM engine (v{version}) with config: model='acme/chat-13b', "
        "speculative_config=None, tokenizer='acme/chat-13b', dtype=torch.bfloat16, max_seq_len=32768, "
        "tensor_parallel_size=2, disable_custom_all_reduce=True, quantization=None, enforce_eager=False, "
        "enable_prefix_caching=True, compilation_config={\"cudagraph_capture_sizes\": [8, 4, 2, 1]}",
        f"INFO {t}:14 [parallel_state.py:1076] rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 0",
        f"INFO {t}:15 [gpu_model_runner.py:1770] Starting to load model acme/chat-13b...",
        f"INFO {t}:31 [default_loader.py:272] Loading weights took 14.20 seconds",
        f"INFO {t}:32 [gpu_model_runner.py:1801] Model loading took 12.4182 GiB and 15.02 seconds",
        f"INFO {t}:44 [gpu_worker.py:232] Available KV cache memory: 51.07 GiB",
        f"INFO {t}:44 [kv_cache_utils.py:716] GPU KV cache size: 836,704 tokens",
        f"INFO {t}:44 [kv_cache_utils.py:720] Maximum concurrency for 32,768 tokens per request: 25.53x",
        f"INFO {t}:51 [gpu_model_runner.py:2326] Graph capturing finished in 7 secs, took 0.52 GiB",
        f"INFO {t}:52 [api_server.py:1457] Starting vLLM API server 0 on http://0.0.0.0:8000",
        "INFO:     Started server process [7311]",
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
    ]


def vllm_traffic(intervals: int, running: int = 4, minute: int = 10) -> list[str]:
    out: list[str] = []
    for i in range(intervals):
        stamp = f"11-30 07:{minute + i // 6:02d}:{(i % 6) * 10:02d}"
        out.append(f'INFO:     10.20.0.{5 + i % 3}:5{1000 + i} - "POST /v1/chat/completions HTTP/1.1" 200 OK')
        out.append(f"INFO {stamp} [loggers.py:118] Engine 000: Avg prompt throughput: {812.4 + i:.1f} tokens/s, "
                   f"Avg generation throughput: {301.7 + i:.1f} tokens/s, Running: {running} reqs, Waiting: 0 reqs, "
                   "GPU KV cache usage: 6.3%, Prefix cache hit rate: 41.0%")
    return out


def vllm_idle(intervals: int, minute: int = 30) -> list[str]:
    return [f"INFO 11-30 07:{minute + i // 6:02d}:{(i % 6) * 10:02d} [loggers.py:118] Engine 000: Avg prompt throughput: "
            "0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, "
            "GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%" for i in range(intervals)]


def vllm_long_prompt_warning() -> list[str]:
    return ["WARNING 11-30 07:12:05 [scheduler.py:1046] Input prompt (40211 tokens) is too long and exceeds "
            "limit of 32768"]


def vllm_oom_crash() -> list[str]:
    p = "(VllmWorker rank=1 pid=7390) ERROR 11-30 07:40:02 [multiproc_executor.py:546]"
    return [
        f"{p} WorkerProc hit an exception.",
        f"{p} Traceback (most recent call last):",
        f'{p}   File "/srv/venv/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", '
        'line 541, in worker_busy_loop',
        f"{p}     output = func(*args, **kwargs)",
        f'{p}   File "/srv/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 1402, in execute_model',
        f"{p}     logits = self.model.compute_logits(sample_hidden_states, None)",
        f"{p} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.10 GiB. GPU 1 has a total capacity of "
        "79.19 GiB of which 2.75 GiB is free. Including non-PyTorch memory, this process has 76.43 GiB memory in use.",
        "ERROR 11-30 07:40:02 [core.py:586] EngineCore encountered a fatal error.",
        "ERROR 11-30 07:40:07 [async_llm.py:419] AsyncLLM output_handler failed.",
        "ERROR 11-30 07:40:07 [async_llm.py:419] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
        "an issue. See stack trace (above) for the root cause.",
        "INFO 11-30 07:40:08 [launcher.py:80] Shutting down FastAPI HTTP server.",
        "INFO:     Shutting down",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
    ]


def vllm_sigterm_stop() -> list[str]:
    return [
        "INFO 11-30 07:50:00 [launcher.py:80] Shutting down FastAPI HTTP server.",
        "INFO:     Shutting down",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
        "INFO:     Finished server process [7311]",
    ]


# -- SGLang --------------------------------------------------------------------------------------
def sglang_startup(minute: int = 0) -> list[str]:
    t = f"2026-11-30 09:{minute:02d}"
    return [
        f"[{t}:02] server_args=ServerArgs(model_path='acme/coder-7b', tokenizer_path='acme/coder-7b', "
        "tp_size=1, mem_fraction_static=0.88, disable_cuda_graph=False, enable_torch_compile=False, "
        "speculative_algorithm=None, crash_dump_folder=None, disable_radix_cache=False, "
        "watchdog_timeout=300, enable_nan_detection=False, grammar_backend='xgrammar', random_seed=81723)",
        f"[{t}:05 TP0] Attention backend not set. Use flashinfer backend by default.",
        f"[{t}:05 TP0] Init torch distributed begin.",
        f"[{t}:06 TP0] Load weight begin. avail mem=78.52 GB",
        f"[{t}:19 TP0] Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem=64.11 GB, mem usage=14.41 GB.",
        f"[{t}:19 TP0] KV Cache is allocated. #tokens: 921344, K size: 24.60 GB, V size: 24.60 GB",
        f"[{t}:20 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=13.90 GB",
        f"[{t}:31 TP0] Capture cuda graph end. Time elapsed: 11.02 s. mem usage=0.71 GB. avail mem=13.19 GB.",
        f"[{t}:32 TP0] max_total_num_tokens=921344, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=4096, context_len=32768",
        f"[{t}:33] INFO:     Started server process [9120]",
        f"[{t}:33] INFO:     Waiting for application startup.",
        f"[{t}:33] INFO:     Application startup complete.",
        f"[{t}:33] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)",
        f"[{t}:35] The server is fired up and ready to roll!",
    ]


def sglang_traffic(batches: int, minute: int = 5) -> list[str]:
    out: list[str] = []
    for i in range(batches):
        t = f"2026-11-30 09:{minute + i // 30:02d}:{(i * 2) % 60:02d}"
        out.append(f"[{t} TP0] Prefill batch. #new-seq: 1, #new-token: {300 + i}, #cached-token: {40 + i}, "
                   "token usage: 0.01, #running-req: 2, #queue-req: 0")
        out.append(f"[{t} TP0] Decode batch. #running-req: 3, #token: {2100 + 40 * i}, token usage: 0.01, "
                   f"cuda graph: True, gen throughput (token/s): {212.4 + i:.2f}, #queue-req: 0")
        out.append(f'[{t}] INFO:     127.0.0.1:4{1000 + i} - "POST /generate HTTP/1.1" 200 OK')
    return out


def sglang_decoding(batches: int, running: int = 24, minute: int = 5) -> list[str]:
    """A busy server between arrivals: nothing but its decode lines."""
    return [f"[2026-11-30 09:{minute + i // 30:02d}:{(i * 2) % 60:02d} TP0] Decode batch. #running-req: {running}, "
            f"#token: {90000 + 900 * i}, token usage: 0.21, cuda graph: True, "
            f"gen throughput (token/s): {running * 31.5 + i % 7:.2f}, #queue-req: 0" for i in range(batches)]


def sglang_truncation_warning() -> list[str]:
    return ["[2026-11-30 09:06:41] Request length is longer than the KV cache pool size or the max context length. "
            "Truncated. len(req.origin_input_ids)=40960, max_req_input_len=32762."]


def sglang_ima_crash() -> list[str]:
    t = "2026-11-30 09:20:13 TP0"
    return [
        f"[{t}] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2612, in run_scheduler_process',
        "    scheduler.event_loop_overlap()",
        '  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 791, in event_loop_overlap',
        "    self.process_batch_result(tmp_batch, tmp_result)",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
        "",
        "[2026-11-30 09:20:13] Received sigquit from a child process. It usually means the child failed.",
    ]


# -- TensorRT-LLM --------------------------------------------------------------------------------
def trtllm_startup() -> list[str]:
    return [
        "[TensorRT-LLM] TensorRT-LLM version: 1.0.0",
        "[11/30/2026-10:00:04] [TRT-LLM] [I] Using LLM with PyTorch backend",
        "[11/30/2026-10:00:04] [TRT-LLM] [I] TorchLlmArgs(model='acme/chat-8b', tensor_parallel_size=1, "
        "enable_chunked_prefill=False, kv_cache_config=KvCacheConfig(enable_block_reuse=True, "
        "free_gpu_memory_fraction=0.9), cuda_graph_config=None, speculative_config=None, disable_overlap_scheduler=False)",
        "[11/30/2026-10:00:19] [TRT-LLM] [I] Memory used after loading model weights (inside torch) in memory usage profiling: "
        "15.02 GiB",
        "[11/30/2026-10:00:23] [TRT-LLM] [I] Max KV cache tokens: 412672",
        "INFO:     Started server process [12001]",
        "INFO:     Waiting for application startup.",
        "INFO:     Application startup complete.",
        "INFO:     Uvicorn running on http://localhost:8000 (Press CTRL+C to quit)",
    ]


def trtllm_traffic(n: int) -> list[str]:
    return [f'INFO:     127.0.0.1:3{3000 + i} - "POST /v1/completions HTTP/1.1" 200 OK' for i in range(n)]


def trtllm_warmup_then_rejected_prompt() -> list[str]:
    """Warm-up records and a workspace warning the server printed while still working (wordings no
    mined release holds), then a request rejected for its length and a warning that follows from it."""
    warmup = [f"[11/30/2026-10:01:{10 + i:02d}] [TRT-LLM] [I] Warming up the decoder graph for {b} sequences"
              for i, b in enumerate((64, 32, 16, 8, 4, 2, 1))]
    return [
        *warmup,
        "[TensorRT-LLM][WARNING] Scratch workspace of 0 bytes is too small; reserving 52428800 bytes",
        "[11/30/2026-10:06:41] [TRT-LLM] [E] Request 7 rejected: prompt length (9120) plus max_tokens (1024) "
        "exceeds max_seq_len (8192)",
        "[11/30/2026-10:06:41] [TRT-LLM] [W] Request 7 was dropped before scheduling",
    ]


def trtllm_oom_crash() -> list[str]:
    return [
        "[11/30/2026-10:14:52] [TRT-LLM] [E] Encountered an error in forward step: CUDA out of memory. "
        "Tried to allocate 2.31 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.08 GiB is free.",
        "[11/30/2026-10:14:52] [TRT-LLM] [E] Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/tensorrt_llm/_torch/pyexecutor/py_executor.py", line 1102, '
        "in _executor_loop",
        "    batch_outputs = self._forward_step(scheduled_batch)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.31 GiB. GPU 0 has a total capacity of "
        "79.10 GiB of which 1.08 GiB is free.",
    ]
