import codecs
import gzip
import io
import time
import zipfile

import pytest

from servetriage import InputError, InputTooLarge
from servetriage.classifier import from_bytes, from_stream, normalize, read_inputs, read_path

MB = 1024 * 1024


def test_plain_crlf_ansi_fences_and_quotes_are_normalised():
    raw = b"```\r\n> \x1b[31mERROR\x1b[0m boom\r\n&gt; second\r\n```\r\n"
    log = from_bytes(raw, "paste", 10 * MB)
    assert log.text.splitlines() == ["ERROR boom", "second"]


def test_fence_with_language_and_inline_fence():
    assert normalize("```text\nline one\nline two```").splitlines() == ["line one", "line two"]


def test_invalid_bytes_are_replaced_not_fatal():
    log = from_bytes(b"ok \xff\xfe\xfa bad bytes\nRuntimeError: x\n", "bad", MB)
    assert "RuntimeError: x" in log.text and "\ufffd" in log.text


def test_utf16_with_bom_is_decoded():
    log = from_bytes("RuntimeError: NCCL error\n".encode("utf-16"), "u16", MB)
    assert log.text.strip() == "RuntimeError: NCCL error"


def test_gzip_is_read_by_magic_not_name(tmp_path):
    p = tmp_path / "server.txt"
    p.write_bytes(gzip.compress(b"torch.OutOfMemoryError: CUDA out of memory\n"))
    assert "OutOfMemoryError" in read_path(p, MB).text


def test_zip_text_members_are_joined_and_binaries_skipped(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("rank0.log", "INFO starting\n")
        zf.writestr("rank1.log", "RuntimeError: NCCL error\n")
        zf.writestr("weights.bin", b"\x00\x01\x02" * 100)
        zf.writestr("nested.log.gz", gzip.compress(b"inner gz line\n"))
    log = from_bytes(buf.getvalue(), "bundle.zip", MB)
    assert "==> rank1.log <==" in log.text and "RuntimeError: NCCL error" in log.text
    assert "inner gz line" in log.text and "weights.bin" not in log.text


def test_empty_input_is_empty_text():
    assert from_bytes(b"", "empty", MB).text == ""


def test_fifty_megabyte_single_line(tmp_path):
    p = tmp_path / "one-line.log"
    p.write_bytes(b"x" * (50 * MB) + b" RuntimeError: CUDA error: out of memory")
    log = read_path(p, 200 * MB)
    assert log.size == 50 * MB + len(b" RuntimeError: CUDA error: out of memory")
    assert log.text.endswith("out of memory")


def test_over_limit_plain_input_is_refused(tmp_path):
    p = tmp_path / "big.log"
    p.write_bytes(b"a" * (2 * MB))
    with pytest.raises(InputTooLarge, match="limit"):
        read_path(p, MB)


def test_gzip_bomb_is_refused_while_streaming(tmp_path):
    p = tmp_path / "bomb.log.gz"
    with gzip.open(p, "wb", compresslevel=9) as fh:
        chunk = b"\0" * MB
        for _ in range(300):  # 300 MB of zeros compress to ~300 KB
            fh.write(chunk)
    assert p.stat().st_size < 2 * MB
    start = time.monotonic()
    with pytest.raises(InputTooLarge):
        read_path(p, 20 * MB)
    # Streaming stops at the limit instead of inflating all 300 MB (a bound, not a benchmark).
    assert time.monotonic() - start < 30


def test_zip_bomb_is_refused(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("huge.log", b"A" * (30 * MB))
    with pytest.raises(InputTooLarge):
        from_bytes(buf.getvalue(), "bomb.zip", 10 * MB)


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_path(tmp_path / "nope.log", MB)


def test_damaged_gzip_is_an_input_error(tmp_path):
    p = tmp_path / "cut.gz"
    p.write_bytes(gzip.compress(b"hello world" * 1000)[:40])
    with pytest.raises(InputError):
        read_path(p, MB)


def test_directory_and_stdin_inputs(tmp_path):
    (tmp_path / "b.log").write_text("second")
    (tmp_path / "a.log").write_text("first")
    logs = list(read_inputs([str(tmp_path), "-"], MB, stdin=io.BytesIO(b"from stdin")))
    assert [l.text for l in logs] == ["first", "second", "from stdin"]
    assert logs[2].name == "-"


def test_non_seekable_stream_with_peek():
    stream = io.BufferedReader(io.BytesIO(gzip.compress(b"gz over a pipe")))
    assert from_stream(stream, "pipe", MB).text == "gz over a pipe"


@pytest.mark.parametrize("prefix", ["vllm-server-1  | ", "[pod/vllm-0/vllm] ", "Dec 03 10:00:01 gpu-node-7 vllm[2291]: ",
                                    "2026-03-02T10:00:01.123456789+00:00 stderr F ", "2026-03-02T10:00:01.123456789Z ",
                                    "- 2026-03-02T10:00:01.123+00:00 ", "ERROR 2026-03-02T10:00:01.123456789Z "])
def test_a_runners_prefix_on_every_line_is_stripped(prefix):
    body = ["Traceback (most recent call last):", '  File "/app/server.py", line 3, in main', "KeyError: 'x'"]
    assert normalize("".join(prefix + l + "\n" for l in body)).splitlines() == body


@pytest.mark.parametrize("outer", ["", "qa-stack-local  | "])
def test_a_supervisors_stream_prefix_is_stripped_inside_a_runners_too(outer):
    """A parent that logs its child's stderr (FastChat's worker) marks every line ERROR: the level is
    the stream's, and the frames under it must read as frames."""
    body = ["Traceback (most recent call last):", '  File "/app/worker.py", line 9, in init_model', "ValueError: no"]
    pasted = "".join(f"{outer}2026-01-05 08:00:0{n} | ERROR | stderr | {l}\n" for n, l in enumerate(body))
    assert normalize(pasted).splitlines() == body


def test_an_engines_own_timestamps_are_kept():
    own = ("[2026-03-02 10:00:01] Scheduler hit an exception\n"
           "2026-03-02 10:00:01,120 - ERROR - boom\n"
           "2026-03-02T10:00:01 is when it stopped\n"
           "2026-03-02 10:00:01 | INFO | controller | Register a new worker\n")
    assert normalize(own) == own


def test_a_table_with_pipes_is_left_as_it_is():
    table = "| metric | value |\n|---|---|\nthroughput  | 12.5\nrequests 300\nlatency 2.0 s\n"
    assert normalize(table) == table


def test_colour_codes_pasted_in_caret_notation_are_stripped():
    assert normalize("^[[31mJob 'raysubmit_1' failed^[[39m\nok\n") == "Job 'raysubmit_1' failed\nok\n"


STATUS = "UNAVAILABLE: Internal: CUDA error: not permitted (/src/runtime/pool.cpp:42)"
FRAME = "1  0x7f00 /opt/lib.so(+0x3604)"
WIDTH = 30


def model_table(rows: list[tuple[str, str, str]]) -> str:
    """A table drawn the way Triton draws its model status: each line of a status cut into pieces of
    the column's width (wherever the cut falls), one row a piece, the other cells blank."""
    border = f"+{'-' * 14}+{'-' * 9}+{'-' * (WIDTH + 2)}+"
    out = [border, f"| {'Model':<12} | {'Version':<7} | {'Status':<{WIDTH}} |", border]
    for model, version, status in rows:
        for n, line in enumerate(status.split("\n")):
            for k in range(0, len(line), WIDTH):
                first = n == 0 and k == 0
                out.append(f"| {model if first else '':<12} | {version if first else '':<7} | {line[k:k + WIDTH]:<{WIDTH}} |")
    return "\n".join([*out, border]) + "\n"


MODEL_TABLE = model_table([("preprocess", "1", "READY"), ("tensorrt_llm", "1", f"{STATUS}\n{FRAME}")])


def test_a_status_cell_wrapped_over_rows_reads_as_one_line_on_the_row_that_opens_it():
    raw = MODEL_TABLE.split("\n")
    assert raw[4].endswith("CUDA er |") and raw[5].startswith("|              |         | ror: not")
    lines = normalize(MODEL_TABLE).split("\n")
    assert len(lines) == len(raw)  # every line keeps its number
    # pieces cut at the column's width join as they were; a line of its own follows after a space
    assert lines[4] == f"| tensorrt_llm | 1 | {STATUS} {FRAME} |"
    assert lines[3] == raw[3] and lines[5:] == raw[5:]


def test_a_table_cut_short_by_the_paste_still_joins_its_last_row():
    cut = MODEL_TABLE.split("\n")[:5] + ["|              |         | ror: not permitted (/src/ru"]
    assert normalize("\n".join(cut)).split("\n")[4].endswith("CUDA error: not permitted (/src/ru |")
    rows = MODEL_TABLE.split("\n")[3:6]  # only the rows, no border: pasted from the middle of the table
    assert normalize("\n".join(rows)).split("\n")[1].endswith("CUDA error: not permitted (/src/runti |")


def test_a_log_is_held_once_as_utf8_bytes_and_read_as_text_on_demand(tmp_path):
    raw = "INFO 进度 \u2588\u2588\u2588\r\nRuntimeError: CUDA error\r\n".encode()
    (tmp_path / "a.log").write_bytes(raw)
    log = read_path(tmp_path / "a.log", 10 * MB)
    assert log.data == "INFO 进度 \u2588\u2588\u2588\nRuntimeError: CUDA error\n".encode() and log.size == len(raw)
    assert log.text == log.data.decode() and not log.blank
    assert from_bytes(b" \n\t\n", "paste", MB).blank


@pytest.mark.parametrize("pasted", [
    "```\r\n> \x1b[31mERROR\x1b[0m 进度 \u2588\u2588 boom\r\n&gt; second\r\n```\r\n",
    "^[[31mJob failed^[[39m\n",
    "".join(f"Dec 03 10:00:0{n} gpu-node-7 vllm[2291]: line {n} \u2588\n" for n in range(5)),
    "".join(f"qa-stack-local  | 2026-01-05 08:00:0{n} | ERROR | stderr | frame {n}\n" for n in range(4)),
    MODEL_TABLE,
])
def test_a_file_is_normalised_as_bytes_the_way_its_text_would_be(pasted):
    """A whole log is normalised as UTF-8 bytes, never decoded whole: the same result as its text."""
    assert normalize(pasted.encode()) == normalize(pasted).encode()
    assert from_bytes(pasted.encode(), "f", MB).text == normalize(pasted)
    assert from_bytes(codecs.BOM_UTF8 + pasted.encode(), "f", MB).text == normalize(pasted)  # less its BOM
    assert from_bytes(pasted.encode() + b"\x00", "f", MB).data == normalize(pasted).encode()  # and its NULs
