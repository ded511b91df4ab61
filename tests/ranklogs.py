"""Rank logs of one distributed failure, written for the tests that read several logs together
(the CLI's `--together`, and the bot's several files, archives and follow-ups)."""

RANK0 = """\
[2026-11-30 10:00:00 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.10 GB
[2026-11-30 10:00:02 TP0] Decode batch. #running-req: 3, #token: 2200, token usage: 0.01, gen throughput (token/s): 205.11, #queue-req: 0
[rank0]:[E1130 10:09:58.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.
"""  # noqa: E501 - log lines as the engines print them
# rank 3's clock runs two seconds behind, and its file is given last; its fault still came first.
RANK3 = """\
[2026-11-30 09:59:58 TP3] Decode batch. #running-req: 3, #token: 2200, token usage: 0.01, gen throughput (token/s): 204.90, #queue-req: 0
[2026-11-30 10:00:01 TP3] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/sglang/python/sglang/srt/managers/scheduler.py", line 2612, in run_scheduler_process
    scheduler.event_loop_overlap()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 3 has a total capacity of 79.10 GiB of which 1.20 GiB is free.
"""  # noqa: E501 - log lines as the engines print them
# a wrapper's output with no timestamps at all: it cannot be placed in time and follows the rest
WRAPPER = """\
launcher: rank 1 exited with code 1
launcher: tearing down the remaining ranks
"""
