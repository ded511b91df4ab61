from servetriage.classifier import detect_engine, detect_versions, extract, parse_prefix

INTERLEAVED = """\
INFO 03-04 10:11:12 [api_server.py:10] vLLM API server version 0.8.5
[rank1]: Traceback (most recent call last):
[rank0]: Traceback (most recent call last):
[rank1]:   File "/usr/lib/python3/dist-packages/vllm/worker/model_runner.py", line 1700, in execute_model
[rank0]:   File "/usr/lib/python3/dist-packages/torch/distributed/c10d.py", line 2501, in all_reduce
[rank1]:     hidden = self.model(input_ids)
[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB
[rank0]:     work = group.allreduce([tensor])
[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317
(VllmWorker rank=2 pid=77) ERROR 03-04 10:11:15 [multiproc_executor.py:470] WorkerProc failed
[2025-03-04 10:11:16 DP1 TP3] Scheduler hit an exception: boom
"""


def test_tracebacks_stay_whole_per_rank():
    ex = extract(INTERLEAVED)
    r1 = [l for l in ex.lines if l.rank == "rank 1"]
    r0 = [l for l in ex.lines if l.rank == "rank 0"]
    assert len({l.block for l in r1}) == 1 and len({l.block for l in r0}) == 1
    assert r1[-1].exception and r1[-1].body.startswith("torch.OutOfMemoryError")
    assert r0[-1].exception and "DistBackendError" in r0[-1].body
    assert r1[0].block != r0[0].block
    assert any(l.frame and "model_runner.py" in l.body for l in r1)


def test_prefixes_give_rank_timestamp_and_level():
    assert (parse_prefix("(VllmWorker rank=2 pid=77) ERROR 03-04 10:11:15 [x.py:1] boom")
            == ("boom", "rank 2", "03-04 10:11:15", "ERROR"))
    body, rank, stamp, _ = parse_prefix("[2025-03-04 10:11:16 DP1 TP3] Scheduler hit an exception: x")
    assert (body, rank, stamp) == ("Scheduler hit an exception: x", "DP1 TP3", "03-04 10:11:16")
    body, rank, _, _ = parse_prefix("(EngineCore_0 pid=12) RuntimeError: x")
    assert (body, rank) == ("RuntimeError: x", "EngineCore_0")
    body, _, _, level = parse_prefix("[TensorRT-LLM][ERROR] Assertion failed: x")
    assert (body, level) == ("Assertion failed: x", "ERROR")
    assert parse_prefix("[TensorRT-LLM][RANK 3][ERROR] boom")[:2] == ("boom", "rank 3")
    assert parse_prefix("[12/01/2026-09:30:02] [TRT] [E] 1: Error Code 1: Serialization") == (  # TensorRT's own
        "1: Error Code 1: Serialization", None, "12-01 09:30:02", "ERROR")
    # glog, as PyTorch's c10 and C++ transfer engines log: the level and time are read, the location kept
    assert parse_prefix("[rank2]:[E1201 09:30:02.517 88 ProcessGroupNCCL.cpp:632] [Rank 2] collective timed out") == (
        "ProcessGroupNCCL.cpp:632] [Rank 2] collective timed out", "rank 2", "12-01 09:30:02.517", "ERROR")
    assert parse_prefix("W1201 09:30:03.001 4411 transfer_engine.cpp:88] segment not found")[2:] == (
        "12-01 09:30:03.001", "WARNING")
    assert parse_prefix("[2026-12-01 09:30:04,250 E 5120 5120] (raylet) node_manager.cc:301: workers killed") == (
        "(raylet) node_manager.cc:301: workers killed", None, "12-01 09:30:04.250", "ERROR")
    body, rank, _, _ = parse_prefix("[rank3]: RuntimeError: y")
    assert (body, rank) == ("RuntimeError: y", "rank 3")
    _, rank, _, _ = parse_prefix("[PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread terminated")
    assert rank == "rank 1"


def test_engine_and_versions_are_detected():
    assert detect_engine(INTERLEAVED) == "vllm"
    assert detect_versions(INTERLEAVED)["vllm"] == "0.8.5"
    assert detect_engine("[2025-01-01 00:00:00] The server is fired up and ready to roll!") == "sglang"
    assert detect_engine("[TensorRT-LLM][INFO] Engine version 0.17.0") == "trtllm"
    assert detect_engine("hello world") is None


def test_log_without_salient_lines_falls_back_to_its_tail():
    ex = extract("\n".join(f"step {i} ok" for i in range(100)))
    assert ex.lines and ex.lines[-1].body == "step 99 ok" and len(ex.lines) <= 25


def test_line_numbers_are_exact():
    ex = extract("a\nb\nRuntimeError: boom\nc\n")
    assert [(l.no, l.body) for l in ex.lines] == [(3, "RuntimeError: boom")]


def test_log_viewer_bullets_and_iso_stamps_keep_tracebacks_whole():
    text = ("- 2024-06-22T20:17:30.187+00:00 Traceback (most recent call last):\n"
            '- 2024-06-22T20:17:30.187+00:00   File "/usr/lib/vllm/engine.py", line 3, in check_health\n'
            "- 2024-06-22T20:17:30.187+00:00     raise EngineGone()\n"
            "- 2024-06-22T20:17:30.188+00:00 RuntimeError: engine gone\n")
    lines = extract(text).lines
    assert [l.frame for l in lines] == [False, True, True, False]
    assert lines[-1].exception and lines[-1].timestamp == "06-22 20:17:30.188"


def test_frames_without_indent_or_header_are_still_frames():
    from servetriage.classifier import extract
    log = ('  File "/x/vllm/worker/model_runner.py", line 717, in execute_model\n'
           "    model_executable = self.graph_runners[graph_batch_size]\n"
           "KeyError: 8\n"
           "\n"
           "Engine loop: Traceback (most recent call last):\n"
           'File "/x/lark/lexer.py", line 598, in next_token\n'
           "raise UnexpectedCharacters(text, pos)\n"
           "lark.exceptions.UnexpectedCharacters: No terminal matches '1'\n")
    lines = {l.no: l for l in extract(log).lines}
    assert lines[1].frame and lines[2].frame and lines[3].exception
    assert lines[6].frame and lines[7].frame and lines[8].exception and not lines[6].exception


def test_an_exception_right_under_a_frame_with_no_source_line_is_the_exception():
    log = ("Traceback (most recent call last):\n"
           '  File "/opt/venv/lib/python3.12/site-packages/tensorrt_llm/_torch/distributed/communicator.py", line 120, in wait\n'
           "RuntimeError: Asynchronous operation failed: 7\n"
           "\n"
           "Traceback (most recent call last):\n"
           'File "/x/lark/lexer.py", line 598, in next_token\n'
           "raise UnexpectedCharacters(text, pos)\n"
           "lark.exceptions.UnexpectedCharacters: No terminal matches '1'\n")
    lines = {l.no: l for l in extract(log).lines}
    assert lines[2].frame and lines[3].exception and not lines[3].frame
    assert lines[7].frame and not lines[7].exception and lines[8].exception  # a source line that lost its indent


def test_a_log_read_as_bytes_gives_the_lines_its_text_gives():
    # progress-bar blocks and a CJK note make byte offsets differ from character offsets
    log = ("Loading safetensors checkpoint shards: 100% Completed | \u2588\u2588\u2588\u2588 | 4/4\n"
           "INFO 03-04 10:11:12 [api_server.py:10] 模型加载完成 vLLM API server version 0.8.5\n" + INTERLEAVED
           + "\u2588\u2588 ERROR 03-04 10:11:17 [core.py:1] RuntimeError: 显存不足 CUDA error: out of memory\n")
    as_text, as_bytes = extract(log), extract(log.encode("utf-8"))
    assert as_bytes == as_text
    assert as_bytes.lines[-1].text.endswith("RuntimeError: 显存不足 CUDA error: out of memory")
    # with nothing salient, the tail is read: its last lines, numbered as they stand
    quiet = "第一行\n\n\u2588 second\nthird\n"
    assert [(l.no, l.text) for l in extract(quiet.encode()).lines] == [(1, "第一行"), (3, "\u2588 second"), (4, "third")]


def test_a_traceback_quoted_whole_inside_a_record_keeps_its_exception():
    """Triton's python backend logs a model's traceback inside one record, indented (its quotes
    escaped): the exception line is indented too, but it is not a frame's source line."""
    for quote in ('"', '\\"'):
        log = ('E0302 08:11:09.004512 311 model.py:120] "Traceback (most recent call last):\n'
               f'    File {quote}/models/bls/1/model.py{quote}, line 94, in execute\n'
               "      for part in self.stream(request):\n"
               f'    File {quote}/models/bls/1/lib/client.py{quote}, line 136, in stream\n'
               "      raise pb_utils.TritonModelException(responses.error().message())\n"
               "    c_python_backend_utils.TritonModelException: Executor failed: Assertion failed: bad block\n")
        lines = {l.no: l for l in extract(log).lines}
        assert all(lines[n].frame for n in (2, 3, 4, 5)), quote
        assert lines[6].exception and not lines[6].frame, quote
