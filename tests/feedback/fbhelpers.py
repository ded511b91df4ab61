"""Shared test data for the feedback tests (imported by name: a module name no other test dir uses)."""

from __future__ import annotations

import textwrap
from typing import Any

FB_CORPUS = textwrap.dedent("""
incidents:
  - id: fb-test-oom-forward
    category: gpu-oom
    engines: [vllm]
    title: CUDA OOM in the forward pass
    symptom: An allocation fails during a forward pass.
    cause: Activations do not fit next to the weights and the KV cache.
    first_action: Lower max_num_seqs or the chunked prefill size.
    fix_or_status: Configuration.
    class: Capacity
    signatures: ["torch.OutOfMemoryError: CUDA out of memory"]
    examples:
      - |
        INFO 05-12 10:00:01 llm_engine.py:200] Initializing an LLM engine (v0.6.3)
        ERROR 05-12 10:00:41 model_runner.py:1204] Error in model execution
        torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has 1.06 GiB free.
      - |
        (VllmWorker rank=1 pid=311) ERROR 03-04 10:11:13 [multiproc_executor.py:470] Exception in worker
        (VllmWorker rank=1 pid=311) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB
    sources: [seed:000]
  - id: fb-test-engine-dead
    category: worker-dead
    engines: [vllm]
    title: Engine core died
    symptom: The API server reports a dead engine.
    cause: An earlier fault killed the engine core process.
    first_action: Read the engine log above the first EngineDeadError.
    fix_or_status: Symptom.
    class: Environment / runtime
    signatures: ["EngineDeadError"]
    examples:
      - |
        ERROR 03-04 10:11:14 [async_llm.py:399] AsyncLLM output_handler failed.
        vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace for the root cause.
      - |
        ERROR 06-01 08:00:02 [core_client.py:600] Engine core proc EngineCore_0 died unexpectedly, shutting down client.
        vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.
    sources: [seed:000]
  - id: fb-test-nccl-timeout
    category: distributed-comm
    engines: [any]
    title: NCCL collective timed out
    symptom: A collective operation never completes and the watchdog kills the process.
    cause: Ranks cannot reach each other or one rank hung.
    first_action: Run with NCCL_DEBUG=INFO and check the network between nodes.
    fix_or_status: Depends on the network.
    class: Environment / runtime
    signatures: ["Watchdog caught collective operation timeout"]
    examples:
      - |
        [rank3]:[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.
        [rank3]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 3] Process group watchdog thread terminated with exception
      - |
        [rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=BROADCAST) ran for 1800000 milliseconds before timing out.
    sources: [seed:000]
  - id: fb-test-ima
    category: illegal-memory-access
    engines: [any]
    title: Illegal memory access
    symptom: A kernel faults on an invalid address.
    cause: An out-of-bounds access in a kernel.
    first_action: Rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel.
    fix_or_status: Depends.
    class: Application bug
    signatures: ["CUDA error: an illegal memory access was encountered"]
    examples:
      - |
        [2025-06-01 10:12:03 TP0] Scheduler hit an exception: Traceback (most recent call last):
          File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2100, in run_scheduler_process
        RuntimeError: CUDA error: an illegal memory access was encountered
      - |
        ERROR 07-02 11:00:00 [engine.py:160] RuntimeError: CUDA error: an illegal memory access was encountered
        CUDA kernel errors might be asynchronously reported at some other API call.
    sources: [seed:000]
  - id: fb-test-kv-retract
    category: kv-cache-exhausted
    engines: [sglang]
    title: KV pool full, requests retracted
    symptom: The scheduler retracts requests again and again.
    cause: The running batch needs more KV slots than the pool has.
    first_action: Lower --max-running-requests.
    fix_or_status: Capacity.
    class: Capacity
    signatures: ["KV cache pool is full. Retract requests."]
    examples:
      - |
        [2025-05-12 14:02:31 TP0] Decode batch. #running-req: 187, #token: 412876, token usage: 0.98
        [2025-05-12 14:02:32 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.4113 -> 0.7000
      - |
        [2026-01-20 03:11:07 DP1 TP1] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: 0.1120 -> 0.3604
        [2026-01-20 03:11:08 DP1 TP1] KV cache pool is full. Retract requests. #retracted_reqs: 2, #new_token_ratio: 0.3791 -> 0.4350
    sources: [seed:000]
  - id: fb-test-context
    category: context-length
    engines: [vllm]
    title: Prompt longer than the context window
    symptom: Requests are rejected with a 400.
    cause: The prompt plus max_tokens exceeds max_model_len.
    first_action: Raise --max-model-len or truncate prompts.
    fix_or_status: Configuration.
    class: Configuration
    signatures: ["This model's maximum context length is"]
    examples:
      - |
        ERROR 08-01 09:00:00 [serving_chat.py:200] Error in preprocessing prompt inputs
        ValueError: This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.
    sources: [seed:000]
  - id: fb-test-healthy
    category: unknown
    engines: [any]
    title: A healthy log
    symptom: Nothing failed.
    cause: Nothing.
    first_action: Nothing to do.
    fix_or_status: Not a failure.
    class: Configuration
    signatures: []
    examples:
      - |
        INFO 05-12 10:00:01 api_server.py:10] vLLM API server version 0.8.5
        INFO 05-12 10:00:02 launcher.py:30] Route: /v1/chat/completions, Methods: POST
        INFO:     127.0.0.1:52214 - "POST /v1/chat/completions HTTP/1.1" 200 OK
    sources: [seed:000]
""")  # noqa: E501 (log lines as the engines print them)

# A failure the corpus has no incident for: the engine answers something else until on-call corrects it.
NOVEL_LOG = textwrap.dedent("""\
    INFO 09-09 12:00:00 [api_server.py:10] vLLM API server version 0.9.1
    ERROR 09-09 12:00:05 [gpu_model_runner.py:1800] Triton compilation failed for kernel _fwd_kernel_stage2
    triton.compiler.errors.CompilationError: at 12:8: unsupported data type fp8e4nv on this architecture
    ERROR 09-09 12:00:05 [core.py:520] EngineCore failed to start.
    """)
NOVEL_LABEL = "build-toolchain"


def novel_variant(n: int) -> str:
    """The same failure again: other numbers and times, which the memory and the passes ignore."""
    return NOVEL_LOG.replace("12:00:05", f"13:{n:02d}:17").replace("1800", str(1800 + n)).replace("0.9.1", f"0.9.{n}")


def diagnosis(category: str = "gpu-oom", incident: str | None = "fb-test-oom-forward", top: tuple = ()) -> Any:
    """A `Diagnosis` as the engine returns one (for store tests that need no engine)."""
    from servetriage.classifier import Candidate, Diagnosis, IncidentRef

    inc = IncidentRef(id=incident, title="t", cause="c", first_action="a", fix_or_status="f", section=None,
                      link="https://x/", sources=("seed:000",)) if incident else None
    cands = top or (Candidate(category, incident, 0.9, "title"), Candidate("worker-dead", "fb-test-engine-dead", 0.3, "t"))
    return Diagnosis(category=category, confidence=0.9, incident=inc, top=cands, evidence=(), initiating=None,
                     symptoms=(), engine="vllm", versions={}, timings_ms={"total_ms": 3.0})
