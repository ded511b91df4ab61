"""Block Kit rendering: every part of the answer, Slack's limits, escaping, and the unknown case."""

from __future__ import annotations

import json

from servetriage.bot import FEEDBACK_DOWN, FEEDBACK_UP, render_diagnosis
from servetriage.bot.render import MAX_BLOCKS, SECTION_TEXT, diagnose_modal
from servetriage.classifier import Candidate, Diagnosis, EvidenceLine, IncidentRef, Initiating, Symptom


def _diagnosis(**kw) -> Diagnosis:
    base = {
        "category": "gpu-oom", "confidence": 0.91, "category_title": "GPU out of memory",
        "incident": IncidentRef(id="mem-oom", title="Activation OOM under load",
                             cause="The KV pool left no room <for> activations & buffers.",
                             first_action="Lower --gpu-memory-utilization to 0.85.", fix_or_status="Config fix.",
                             section="3.2", link="https://servetriage.dev/manual/#section-3.2", sources=("seed:001",)),
        "top": (Candidate("gpu-oom", "mem-oom", 0.91, "GPU out of memory"),
             Candidate("worker-dead", None, 0.31, "Worker died"), Candidate("host-memory", None, 0.12, "Host memory")),
        "evidence": (EvidenceLine(12, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "TP0", "gpu-oom"),
                  EvidenceLine(40, "RuntimeError: Worker died <unexpectedly> ```", "TP1", "worker-dead")),
        "initiating": Initiating(12, "torch.OutOfMemoryError: CUDA out of memory.", "TP0", "2024-05-12 10:00:41"),
        "symptoms": (Symptom("worker-dead", 40, "RuntimeError: Worker died", "TP1"),),
        "engine": "vllm", "versions": {"vllm": "0.6.3"}, "lines_read": 1234, "file": "x.log",
    }
    base.update(kw)
    return Diagnosis(**base)


def _all_text(reply) -> str:
    return reply.text + "\n" + json.dumps(reply.blocks, ensure_ascii=False)


def test_the_answer_has_every_part():
    reply = render_diagnosis(_diagnosis(), "id-1", label="x.log")
    text = _all_text(reply)
    for part in ("GPU out of memory", "gpu-oom", "0.91", "Cause:", "First action:", "Lower --gpu-memory-utilization",
                 "<https://servetriage.dev/manual/#section-3.2|§3.2 Activation OOM under load>", "Evidence",
                 "What came first:", "line 12", "rank TP0", "Later symptoms", "worker-dead", "Might also be",
                 "host-memory", "vllm", "x.log"):
        assert part in text, part
    actions = reply.blocks[-1]
    assert [e["action_id"] for e in actions["elements"]] == [FEEDBACK_UP, FEEDBACK_DOWN]
    assert all(e["value"] == "id-1" for e in actions["elements"])
    assert "Cause:" in reply.text and "First action:" in reply.text  # the plain-text fallback


def test_log_text_is_escaped_and_cannot_break_the_code_block():
    text = _all_text(render_diagnosis(_diagnosis(), "id"))
    assert "&lt;unexpectedly&gt;" in text and "&lt;for&gt; activations &amp; buffers" in text
    evidence = next(b for b in render_diagnosis(_diagnosis(), "id").blocks if "Evidence" in json.dumps(b))
    assert evidence["text"]["text"].count("```") == 2


def test_huge_evidence_is_trimmed_to_slacks_limits():
    evidence = tuple(EvidenceLine(i, "x" * 399, None, None) for i in range(1, 200))
    symptoms = tuple(Symptom("worker-dead", i, "y" * 399, None) for i in range(100))
    reply = render_diagnosis(_diagnosis(evidence=evidence, symptoms=symptoms), "id")
    assert len(reply.blocks) <= MAX_BLOCKS
    for block in reply.blocks:
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= SECTION_TEXT
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= 150
    assert "more line(s)" in _all_text(reply)
    assert len(reply.text) <= 3000


def test_unknown_says_so_plainly_and_shows_the_nearest_candidates():
    d = _diagnosis(category="unknown", confidence=0.12, incident=None, initiating=None, symptoms=(),
                   category_title="Not enough evidence")
    text = _all_text(render_diagnosis(d, "id"))
    assert "Not recognised" in text and "Nearest candidates" in text and "gpu-oom" in text
    assert "First action" not in text and "What came first" not in text


def test_unknown_without_candidates():
    d = _diagnosis(category="unknown", confidence=0.0, incident=None, top=(), evidence=(), initiating=None, symptoms=())
    reply = render_diagnosis(d, "id")
    assert "none had any support" in _all_text(reply)
    assert reply.blocks[-1]["type"] == "actions"


def test_the_modal_carries_its_metadata_and_input_limits():
    view = diagnose_modal({"channel": "C1", "response_url": "https://hooks.slack.com/x"})
    assert json.loads(view["private_metadata"]) == {"channel": "C1", "response_url": "https://hooks.slack.com/x"}
    log_input = view["blocks"][0]["element"]
    assert log_input["multiline"] and log_input["max_length"] == 3000


def test_whole_log_notes_reach_the_slack_answer_escaped():
    from servetriage.classifier import Earlier, OtherRun
    d = _diagnosis(earlier=(Earlier(55, "Request length is longer than <the pool>. Truncated.", "warning", "handled",
                                    "context-length", "11-30 10:02:01"),),
                   other_runs=(OtherRun(1, 120, 80, "gpu-oom"), OtherRun(121, 260, 200, "gpu-oom")), runs=3, run=3)
    context = [b for b in render_diagnosis(d, "id-9").blocks if b["type"] == "context"][0]
    text = json.dumps(context)
    assert "Also in this paste: 2 earlier starts ended in the same gpu-oom" in text
    assert "Earlier: line 55 (11-30 10:02:01), context-length, handled" in text
    assert "&lt;the pool&gt;" in text and "<the pool>" not in text
    assert Diagnosis.from_dict(json.loads(d.to_json())) == d  # the new fields survive storage


def test_the_slack_answer_says_whose_problem_the_process_and_the_check():
    import dataclasses
    base = _diagnosis()
    inc = dataclasses.replace(base.incident, klass="Capacity", recovery="Restart required: the worker is gone.",
                              verify="Replay the peak load <twice>.")
    text = _all_text(render_diagnosis(dataclasses.replace(base, incident=inc), "id-3"))
    assert "*Whose problem:* Capacity" in text and "*The process:* Restart required: the worker is gone." in text
    assert "*Verify the fix:* Replay the peak load &lt;twice&gt;." in text


def test_the_slack_answer_says_what_to_fetch_when_only_a_symptom_is_in_the_paste():
    import dataclasses
    text = _all_text(render_diagnosis(dataclasses.replace(_diagnosis(), missing="rank 3's log <now>"), "id-4"))
    assert "*To settle the cause, fetch:* rank 3's log &lt;now&gt;" in text


def test_the_slack_answer_names_the_file_that_failed_first_when_several_were_read():
    import dataclasses
    d = _diagnosis()
    d = dataclasses.replace(d, initiating=dataclasses.replace(d.initiating, file="rank3.log"),
                            symptoms=(dataclasses.replace(d.symptoms[0], file="rank0.log"),))
    text = _all_text(render_diagnosis(d, "id-5"))
    assert "*What came first:* `rank3.log` line 12" in text and "at `rank0.log` line 40" in text
