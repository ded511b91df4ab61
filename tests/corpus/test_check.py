"""The validator catches each kind of mistake it promises to."""

import textwrap

import yaml

from servetriage.corpus import Corpus, check_corpus, load_categories, load_recovery, parse_incidents


def corpus_of(text: str) -> Corpus:
    cats = load_categories()
    return Corpus(cats, tuple(parse_incidents(yaml.safe_load(textwrap.dedent(text)), cats, "t.yaml")),
                  recovery=load_recovery(cats))


BASE = """
incidents:
  - id: a
    category: gpu-oom
    engines: [vllm]
    title: t
    symptom: s
    cause: c
    first_action: f
    fix_or_status: x
    class: Capacity
    section: "{section}"
    signatures: [{sig}]
    examples: ["{example}"]
    sources: [seed:000]
  - id: b
    category: port-in-use
    engines: [any]
    title: t
    symptom: s
    cause: c
    first_action: f
    fix_or_status: x
    class: Configuration
    signatures: ["Address already in use"]
    examples: ["OSError: [Errno 98] Address already in use"]
    sources: [seed:000]
"""


def problems(**kw):
    values = {"section": "3.2", "sig": '"CUDA out of memory. Tried"', "example": "CUDA out of memory. Tried to allocate"}
    values.update(kw)
    return [p.message for p in check_corpus(corpus_of(BASE.format(**values)), adversarial=False)]


def test_clean_corpus_has_no_problems():
    assert problems() == []


def test_bad_section():
    assert any("section" in m for m in problems(section="three"))


def test_regex_that_re2_refuses():
    assert any("RE2" in m for m in problems(sig="{regex: '(?=a)b'}"))


def test_literal_not_in_own_examples():
    assert any("no single line of its own examples" in m for m in problems(sig='"Something else entirely here"'))


def test_short_literal_is_too_generic():
    assert any("too generic" in m for m in problems(sig='"OOM"', example="OOM"))


def test_example_matched_by_another_categorys_signature():
    msgs = problems(example="CUDA out of memory. Tried; then Address already in use")
    assert any("port-in-use" in m and "overlaps" in m for m in msgs)


def test_adversarial_line_runs_in_linear_time():
    corpus = corpus_of(BASE.format(section="3.2", sig="{regex: '(a+)+$'}", example="aaaa"))
    assert check_corpus(corpus, adversarial=True) == []  # RE2 has no catastrophic backtracking


def test_regex_spanning_lines_is_refused_because_rules_read_one_line_at_a_time():
    found = problems(sig="{regex: '(?s)CUDA out.{0,40}allocate'}", example="CUDA out of memory.\\nTried to allocate")
    assert any("no single line" in m for m in found)
