from servetriage.classifier import Scanner
from servetriage.classifier._precedence import order  # the ordering is the rule pass's contract
from servetriage.classifier._rules import REPEATS_KEPT


def test_scanner_finds_literals_and_regexes_with_line_numbers(mini_corpus):
    text = "ok\nfailed: cudaErrorIllegalAddress (700)\nok\ntorch.OutOfMemoryError: CUDA out of memory. x\n"
    hits = Scanner(mini_corpus).scan(text)
    assert [(h.line.no, h.incident) for h in hits] == [(2, "t-ima"), (4, "t-oom")]


def test_symptom_after_fault_is_reported_as_consequence(mini_corpus):
    text = ("(VllmWorker rank=1 pid=3) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n"
            "ERROR vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue\n")
    o = order(Scanner(mini_corpus).scan(text))
    assert o.initiating.category == "gpu-oom" and o.initiating.best.line.rank == "rank 1"
    assert [e.category for e in o.symptoms] == ["worker-dead"]


def test_symptom_alone_is_the_answer(mini_corpus):
    o = order(Scanner(mini_corpus).scan("vllm.v1.engine.exceptions.EngineDeadError: x\n"))
    assert o.initiating.category == "worker-dead"


def test_earliest_fault_wins_over_later_fault_of_equal_specificity(mini_corpus):
    text = ("RuntimeError: CUDA error: an illegal memory access was encountered\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n")
    assert order(Scanner(mini_corpus).scan(text)).initiating.category == "illegal-memory-access"


def test_specific_signature_beats_earlier_generic_one(mini_corpus):
    text = ("RuntimeError: NCCL error in: ../nccl.cpp:1, unhandled cuda error\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    o = order(Scanner(mini_corpus).scan(text))
    assert o.initiating.category == "illegal-memory-access"


def test_timestamps_order_ranks_pasted_one_after_another(mini_corpus):
    text = ("[2025-01-01 10:00:09 TP1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1 GiB\n"
            "[2025-01-01 10:00:02 TP0] RuntimeError: CUDA error: an illegal memory access was encountered\n")
    o = order(Scanner(mini_corpus).scan(text))
    assert o.initiating.category == "illegal-memory-access" and o.initiating.best.line.rank == "TP0"


def test_a_repeated_line_is_reported_a_bounded_number_of_times_first_and_last_among_them(mini_corpus):
    text = "ok\n" + "torch.OutOfMemoryError: CUDA out of memory\n" * 200_000 + "EngineDeadError: x\n"
    hits = Scanner(mini_corpus).scan(text)
    oom = [h.line.no for h in hits if h.category == "gpu-oom"]
    assert oom[0] == 2 and oom[-1] == 200_001 and len(oom) <= 1 + REPEATS_KEPT
    assert oom == sorted(oom)
    assert [(h.line.no, h.category) for h in hits if h.category != "gpu-oom"] == [(200_002, "worker-dead")]


def test_a_categorys_own_signature_names_it_where_no_incident_does(mini_corpus):
    from servetriage.classifier._rules import SPEC_FACTOR
    from servetriage.corpus import Signature
    assert "NVRM: Xid" in mini_corpus.categories["gpu-hardware"].signatures
    assert not any(i.category == "gpu-hardware" for i in mini_corpus.incidents)
    [hit] = Scanner(mini_corpus).scan("kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=4121, name=python3\n")
    assert (hit.incident, hit.category) == ("", "gpu-hardware")
    assert hit.specificity == Signature("NVRM: Xid").specificity * SPEC_FACTOR
    # where an incident of the same category names the line, it alone is reported
    text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert [(h.incident, h.category) for h in Scanner(mini_corpus).scan(text)] == [("t-oom", "gpu-oom")]


NCCL_HEADLINE = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.cpp:77, "
                 "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.26.2\n"
                 "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n")
SHM_DETAIL = "Error while creating shared memory segment /dev/shm/nccl-Ab12Cd (size 9637888)\n"


def test_a_messages_own_detail_line_explains_its_headline(rules_engine):
    d = rules_engine.diagnose_text(NCCL_HEADLINE + "Last error:\n" + SHM_DETAIL)
    assert d.category == "host-memory" and d.initiating.line == 4
    far = rules_engine.diagnose_text(NCCL_HEADLINE + "".join(f"[rank0]: still waiting on peer {i}\n" for i in range(8))
                                     + SHM_DETAIL)
    assert {"distributed-comm", "host-memory"} <= set(far.passes.rules)  # both still seen …
    assert far.category == "distributed-comm"  # … but a detail far below its headline is a fault of its own


def test_the_kernels_oom_killer_under_a_driver_allocation_failure_is_the_hosts_memory(rules_engine):
    """dmesg: the NVIDIA driver fails a system-memory allocation, then the kernel's OOM killer runs."""
    driver = "[Mon Mar  2 21:14:03 2026] NVRM: nvCheckOkFailedNoLog: Check failed: Out of memory [NV_ERR_NO_MEMORY]\n"
    killer = "[Mon Mar  2 21:14:03 2026] python3 invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE), order=0\n"
    d = rules_engine.diagnose_text(driver + killer)
    assert d.category == "host-memory" and d.initiating.line == 2
    assert rules_engine.diagnose_text(driver).category == "gpu-hardware"  # alone, the seed manual's reading


def test_running_out_of_memory_while_capturing_graphs_is_gpu_oom_and_other_capture_failures_are_not(rules_engine):
    """The category spec files an out-of-memory error in graph capture under gpu-oom; a capture that
    fails for another reason is a cuda-graph failure."""
    head = ("[2026-01-09 04:12:51 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=0.8 GB\n"
            "[2026-01-09 04:12:53 TP0] Scheduler hit an exception: Traceback (most recent call last):\n")
    oom = "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 96.00 MiB.\n"
    other = "Exception: Capture cuda graph failed: AssertionError: buffer for bs=256 was never prepared\n"
    assert rules_engine.diagnose_text(head + oom).category == "gpu-oom"
    assert rules_engine.diagnose_text(head + other).category == "cuda-graph"
