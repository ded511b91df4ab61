"""The shipped corpus: valid, large enough, and faithful to the seeds it was made from."""

import re
from pathlib import Path

import pytest

from servetriage import CorpusError
from servetriage.corpus import check_corpus, corpus_stats, load_corpus, parse_incidents, load_categories

SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


def test_corpus_check_passes(corpus):
    problems = check_corpus(corpus, adversarial=True)
    assert problems == [], "\n".join(map(str, problems[:20]))


def test_coverage_targets(corpus):
    stats = corpus_stats(corpus)
    assert stats["incidents"] >= 150 and stats["examples"] >= 600
    thin = {c: n for c, n in stats["per_category"].items() if c != "unknown" and n < 3}
    assert not thin, thin


def test_every_spec_signature_is_in_the_corpus(corpus):
    patterns = {s.pattern for i in corpus.incidents for s in i.signatures}
    examples = "\n".join(e for i in corpus.incidents for e in i.examples)
    for cat in corpus.categories.values():
        for sig in cat.signatures:
            # Short spec strings (under the 12-character literal minimum) live on as regexes.
            assert sig in patterns or sig in examples, f"{cat.id}: {sig!r}"


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the shared seeds are not beside this checkout")
def test_every_issue_number_of_the_seed_index_is_cited(corpus):
    index = next(SEEDS.glob("001_*")).read_text()
    cited = "\n".join(s for i in corpus.incidents for s in i.sources)
    numbers = set(re.findall(r"(?<![\w/])#(\d{3,6})\b", index)) | set(re.findall(r"pull request #?(\d{3,6})", index))
    missing = sorted(n for n in numbers if not re.search(rf"/{n}\b", cited))
    assert not missing, missing


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the shared seeds are not beside this checkout")
def test_every_seed_page_is_cited(corpus):
    cited = {s for i in corpus.incidents for s in i.sources}
    for prefix in ("000", "001", "002", "003"):
        assert f"seed:{prefix}" in cited


def test_incident_fields_are_filled(corpus):
    for inc in corpus.incidents:
        assert inc.sources and inc.first_action and inc.cause and inc.examples, inc.id


def test_schema_errors_name_the_entry():
    cats = load_categories()
    bad = {"incidents": [{"id": "x", "category": "no-such-category"}]}
    with pytest.raises(CorpusError, match="x"):
        parse_incidents(bad, cats, "bad.yaml")
    with pytest.raises(CorpusError, match="unknown category"):
        parse_incidents({"incidents": [dict(id="x", category="nope", engines=["vllm"], title="t", symptom="s",
                                             cause="c", first_action="f", fix_or_status="x", **{"class": "Capacity"},
                                             signatures=[], examples=["e"], sources=["seed:000"])]}, cats, "bad.yaml")


def test_extra_directory_is_picked_up_without_code(tmp_path):
    (tmp_path / "ours.yaml").write_text(
        "incidents:\n  - id: local-widget-crash\n    category: invalid-config\n    engines: [vllm]\n"
        "    title: Widget flag\n    symptom: s\n    cause: c\n    first_action: f\n    fix_or_status: open\n"
        "    class: Configuration\n    signatures: ['WidgetConfig rejected the frobnicate flag']\n"
        "    examples: ['ValueError: WidgetConfig rejected the frobnicate flag']\n    sources: [seed:000]\n")
    corpus = load_corpus([tmp_path])
    assert corpus.incident("local-widget-crash").category == "invalid-config"


@pytest.mark.parametrize("text, fragment", [
    ("code_paths: [{category: no-such-thing, frames: [x]}]", "unknown category"),
    ("code_paths: [{category: gpu-oom, frames: []}]", "frames"),
    ("code_paths: [{category: gpu-oom, frames: [x], exceptions: KeyError}]", "exceptions"),
    ("code_paths: [{category: gpu-oom, frames: [x], when: always}]", "expected a mapping"),
    ("explains: {distributed-comm: [no-such-thing]}", "explains"),
    ("details: {host-memory: [no-such-thing]}", "details"),
    ("feature_markers: {structured-output: [1, 2]}", "feature_markers"),
    ("message_paths: [{category: context-length, paths: [core/], warnings: true}]", "true only with words"),
    ("message_paths: [{category: context-length, paths: [core/], words: long, warnings: 1}]", "warnings must be"),
    ("generic_messages: ['object has (no']", "generic_messages"),
    ("generic_messages: {a: b}", "generic_messages"),
])
def test_bad_precedence_data_is_refused_with_its_place(tmp_path, text, fragment):
    from servetriage._errors import CorpusError
    from servetriage.corpus import load_categories, load_precedence
    path = tmp_path / "precedence.yaml"
    path.write_text(text + "\n")
    with pytest.raises(CorpusError, match=fragment):
        load_precedence(load_categories(), path)


def test_precedence_data_is_part_of_the_fingerprint():
    import dataclasses
    from servetriage.corpus import CodePath, load_corpus
    corpus = load_corpus()
    moved = dataclasses.replace(corpus, code_paths=corpus.code_paths + (CodePath("gpu-oom", ("alloc",)),))
    assert moved.fingerprint != corpus.fingerprint
    quieter = dataclasses.replace(corpus, generic_messages=corpus.generic_messages + ("is not ready",))
    assert quieter.fingerprint != corpus.fingerprint


@pytest.mark.parametrize("text, fragment", [
    ("banners: ['(unclosed']", "not a valid RE2 pattern"),
    ("progress: ['a(?=b)']", "not a valid RE2 pattern"),
    ("progress: 'one string'", "list of RE2 patterns"),
    ("printout_blocks: [{start: 'x'}]", "start and max_lines"),
    ("printout_blocks: [{start: 'x', max_lines: 0}]", "max_lines"),
    ("severity: {dire: ['x']}", "severity"),
    ("ready: ['x']\nretries: 3", "unknown keys retries"),
])
def test_bad_lifecycle_data_is_refused_with_its_place(tmp_path, text, fragment):
    from servetriage._errors import CorpusError
    from servetriage.corpus import load_lifecycle
    path = tmp_path / "lifecycle.yaml"
    path.write_text(text + "\n")
    with pytest.raises(CorpusError, match=fragment):
        load_lifecycle(path)


def test_the_packaged_lifecycle_data_loads_and_is_part_of_the_fingerprint():
    import dataclasses
    from servetriage.corpus import load_corpus
    corpus = load_corpus()
    life = corpus.lifecycle
    assert life.banners and life.progress and life.stopped and life.printouts and life.fatal
    assert set(life.stop_categories) <= set(corpus.categories)
    moved = dataclasses.replace(corpus, lifecycle=dataclasses.replace(life, banners=life.banners[1:]))
    assert moved.fingerprint != corpus.fingerprint


def test_the_packaged_catalogue_is_valid_and_counted():
    from servetriage.corpus import check_catalogue, corpus_stats, load_catalogue, load_corpus
    catalogue = load_catalogue()
    assert check_catalogue(catalogue) == []
    counts = corpus_stats(load_corpus())["catalogue"]
    assert sum(counts.values()) == len(catalogue) >= 20000 and len(counts) >= 4


@pytest.mark.parametrize("text, fragment", [
    ("categories: {gpu-oom: {recovery: 'Reboot the planet', verify: 'x'}}", "must start with"),
    ("categories: {no-such: {recovery: 'Retry is safe', verify: 'x'}}", "not a category"),
    ("categories: {gpu-oom: {recovery: 'Retry is safe'}}", "recovery and verify"),
])
def test_bad_recovery_data_is_refused_with_its_place(tmp_path, text, fragment):
    from servetriage._errors import CorpusError
    from servetriage.corpus import load_categories
    from servetriage.corpus import load_recovery
    path = tmp_path / "recovery.yaml"
    path.write_text(text + "\n")
    with pytest.raises(CorpusError, match=fragment):
        load_recovery(load_categories(), path)


def test_every_incident_has_class_verify_and_recovery(corpus):
    import dataclasses
    from servetriage.corpus import check_corpus
    for inc in corpus.incidents:
        if inc.category != "unknown":
            assert inc.klass and corpus.verify_of(inc) and corpus.recovery_of(inc), inc.id
    gap = dataclasses.replace(corpus, recovery={k: v for k, v in corpus.recovery.items() if k != "gpu-oom"})
    assert any("no recovery or verify" in p.message for p in check_corpus(gap, adversarial=False))


@pytest.mark.parametrize("text, fragment", [
    ("missing: {no-such: 'the log'}", "unknown categories"),
    ("other_rank: 'the other log'", "rank"),
])
def test_bad_missing_data_is_refused(tmp_path, text, fragment):
    from servetriage._errors import CorpusError
    from servetriage.corpus import load_categories
    from servetriage.corpus import load_missing
    path = tmp_path / "recovery.yaml"
    path.write_text(text + "\ncategories: {}\n")
    with pytest.raises(CorpusError, match=fragment):
        load_missing(load_categories(), path)
