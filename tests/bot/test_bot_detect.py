"""Telling a pasted failure log from conversation, and undoing Slack's escaping."""

from __future__ import annotations

import pytest

from servetriage.bot.detect import looks_like_log, strip_mention, unformat


@pytest.mark.parametrize("text", [
    "```\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n```",
    "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
    "RuntimeError: CUDA error: an illegal memory access",
    "INFO 05-12 10:00:01 engine.py:200] start\nERROR 05-12 10:00:02 engine.py:300] Engine background task failed",
    "```\n[2024-05-12 10:00:01] Prefill batch\n[2024-05-12 10:00:02] Decode batch\n[2024-05-12 10:00:03] Decode batch\n```",
    "[rank0]: NCCL WARN Call to connect returned Connection refused\n[rank1]: NCCL error: unhandled system error",
    # c10d's glog-style error lines carry no ERROR word: `E` and the date are the level
    "[2026-11-30 10:00:02 TP0] Decode batch. #running-req: 3\n"
    "[rank0]:[E1130 10:09:58.000000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout",
])
def test_logs_are_recognised(text):
    assert looks_like_log(text)


@pytest.mark.parametrize("text", [
    "",
    "good morning!",
    "anyone seen RuntimeError: CUDA error before? happened yesterday",
    "the error rate is fine now\nthanks for the help",
    "```\npip install vllm==0.6.3\n```",
    "I'll look at the ERROR dashboard",
])
def test_conversation_is_not_a_log(text):
    assert not looks_like_log(text)


def test_unformat_resolves_markup_and_entities_in_order():
    raw = "curl <http://localhost:8000/v1|localhost:8000/v1> &amp;&amp; echo &lt;ok&gt; &amp;lt; <@U123|bob> <#C1|ops> <!here>"
    assert unformat(raw) == "curl localhost:8000/v1 && echo <ok> &lt; @bob #ops @here"
    assert unformat("see <https://example.com/a?b=1&amp;c=2>") == "see https://example.com/a?b=1&c=2"


def test_strip_mention():
    assert strip_mention("<@UBOT> look at this", "UBOT") == "look at this"
    assert strip_mention("<@UBOT|servetriage> look", None) == "look"
