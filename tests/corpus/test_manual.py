"""The incident manual: every link a reply can carry opens an existing page at an existing anchor,
every category and seed-manual section has its place, the output is deterministic, and the command
builds it (or refuses a bad directory in one line)."""

from __future__ import annotations

import dataclasses
import html
import html.parser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest

from servetriage import ConfigError, CorpusError, InputError, Settings
from servetriage.classifier import Engine
from servetriage.corpus import (INDEX_PAGE, build_manual, category_page, incident_link, load_corpus, load_options,
                                options_named, render_manual, section_anchor)

EXE = shutil.which("servetriage") or str(Path(sys.executable).with_name("servetriage"))


class _Links(html.parser.HTMLParser):
    """The ids a page defines and the hrefs it carries."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])


def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="module")
def corpus():
    return load_corpus()


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("manual")
    manual = build_manual(corpus, out)
    return out, manual, {p.name: _parse(p) for p in out.glob("*.html")}


def _resolves(pages: dict[str, _Links], page: str, fragment: str) -> bool:
    return page in pages and (not fragment or unquote(fragment) in pages[page].ids)


def test_every_link_a_reply_can_carry_opens_its_incident(corpus, built, tmp_path):
    out, _, pages = built
    settings = Settings(embeddings=False, data_dir=tmp_path / "data")
    base = settings.manual_base_url
    # The link the engine gives each incident (the function it calls), for every incident...
    expected = {incident_link(base, inc) for inc in corpus.incidents}
    # ...and what the engine really answers when it reads the corpus's own examples.
    engine = Engine(settings, corpus=corpus)
    answered = {}
    for inc in corpus.incidents:
        for example in inc.examples:
            d = engine.diagnose_text(example, "paste")
            if d.incident is not None:
                answered[d.incident.id] = d.incident.link
    assert len(answered) > len(corpus.incidents) // 2
    for incident_id, link in answered.items():
        assert link == incident_link(base, corpus.incident(incident_id))
    for link in expected | set(answered.values()):
        assert link.startswith(base), link
        page, _, fragment = link[len(base):].partition("#")
        assert fragment.startswith("incident-") and _resolves(pages, page, fragment), link


def test_every_link_inside_the_manual_resolves(built):
    _, _, pages = built
    internal = 0
    for name, links in pages.items():
        for href in links.hrefs:
            if href.startswith(("https://", "http://")):  # an upstream thread or an engine's documentation
                continue
            assert not href.startswith(("//", "/", "javascript:", "file:")), (name, href)  # relative, so it works anywhere
            page, _, fragment = href.partition("#")
            assert _resolves(pages, page or name, fragment), (name, href)
            internal += 1
    assert internal > 1000


def test_every_category_has_its_page_and_every_cited_section_its_anchor(corpus, built):
    out, manual, pages = built
    assert set(pages) == {INDEX_PAGE, *(category_page(c) for c in corpus.categories)} == set(manual.pages)
    index = (out / INDEX_PAGE).read_text(encoding="utf-8")
    for cid, cat in corpus.categories.items():
        assert category_page(cid) in pages[INDEX_PAGE].hrefs
        text = (out / category_page(cid)).read_text(encoding="utf-8")
        assert f"<h1>{_esc(cat.title)}</h1>" in text
        for inc in corpus.by_category(cid):
            assert f"incident-{inc.id}" in pages[category_page(cid)].ids
    cited = {s for inc in corpus.incidents for s in inc.sections}
    assert cited and all(section_anchor(s) in pages[INDEX_PAGE].ids for s in cited)
    assert manual.sections == len(cited) and 'id="section-3.2"' in index


def test_an_incident_shows_every_field_its_sources_and_its_options_docs(corpus, built):
    out, _, pages = built
    inc = corpus.incident("page-vllm-no-available-memory-cache-blocks")
    text = (out / category_page(inc.category)).read_text(encoding="utf-8")
    article = text[text.index(f'id="incident-{inc.id}"'):]
    article = article[:article.index("</article>")]
    shown = html.unescape(re.sub(r"<[^>]+>", "", article))  # the text a reader sees
    for value in (inc.title, inc.symptom, inc.cause, inc.first_action, inc.fix_or_status, corpus.recovery_of(inc),
                  corpus.verify_of(inc), inc.klass):
        assert value in shown, value
    assert '<code class="opt">--gpu-memory-utilization</code>' in article  # the first action's option, set as code
    for src in inc.sources:
        assert f'href="{_esc(src)}"' in article if src.startswith("http") else src.split(":")[1] in article
    assert 'href="https://docs.vllm.ai/en/latest/configuration/engine_args.html"' in article
    with_sections = next(i for i in corpus.incidents if i.sections)
    page = (out / category_page(with_sections.category)).read_text(encoding="utf-8")
    assert f'href="index.html#section-{with_sections.sections[0]}"' in page
    assert "<pre><code>" in page  # the example log lines


def test_same_corpus_same_bytes(corpus, built, tmp_path):
    out, manual, _ = built
    again = build_manual(load_corpus(), tmp_path / "again")
    assert again.pages == manual.pages == render_manual(corpus).pages
    assert {p.name: p.read_bytes() for p in out.glob("*.html")} == manual.pages


def test_text_is_escaped(corpus, tmp_path):
    inc = next(corpus.by_category("gpu-oom"))
    evil = dataclasses.replace(inc, title='<script>alert("x")</script>', cause="a & b < c", sources=('https://x/"><b>',))
    manual = render_manual(dataclasses.replace(corpus, incidents=(evil,)))
    page = manual.page(category_page("gpu-oom")).decode()
    assert "<script>" not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "a &amp; b &lt; c" in page and '"><b>' not in page


def test_options_match_whole_names_and_the_incidents_engines(corpus):
    inc = next(i for i in corpus.incidents if i.engines == ("sglang",))

    def named(text, engines=("sglang",)):
        probe = dataclasses.replace(inc, first_action=text, engines=engines)
        return {name: [d.engine for d in docs] for name, docs in options_named(corpus, probe)}

    assert named("Lower --mem-fraction-static (e.g. 0.8).") == {"--mem-fraction-static": ["sglang"]}
    assert named("Try --disable-cuda-graph-padding first.") == {}
    assert named("Lower cuda_graph_config.max_batch_size, then max_batch_size.") == {"max_batch_size": ["trtllm"]}
    assert named("Set `--kv-cache-dtype fp8`.") == {"--kv-cache-dtype": ["sglang"]}
    assert named("Set --kv-cache-dtype fp8.", ("vllm",)) == {"--kv-cache-dtype": ["vllm"]}
    assert named("Set --kv-cache-dtype fp8.", ("sglang", "any")) == {"--kv-cache-dtype": ["sglang", "vllm"]}
    # an option of another engine still links its own engine's page
    assert named("Compare --gpu-memory-utilization with it.") == {"--gpu-memory-utilization": ["vllm"]}


@pytest.mark.parametrize("text, message", [
    ("pages: {p: {engine: vllm, title: t, url: 'http://insecure'}}\noptions: {--x-y: [p]}", "https://"),
    ("pages: {p: {engine: any, title: t, url: 'https://a'}}\noptions: {}", "engine"),
    ("pages: {p: {engine: vllm, title: t, url: 'https://a'}}\noptions: {--x-y: [q]}", "unknown page"),
    ("pages: {p: {engine: vllm, title: t, url: 'https://a'}}\noptions: {'not an option': [p]}", "--flag"),
    ("pages: {}\noptions: {}\nextra: 1", "expected a mapping"),
])
def test_options_yaml_is_validated(tmp_path, text, message):
    path = tmp_path / "options.yaml"
    path.write_text(text)
    with pytest.raises(CorpusError, match=message) as err:
        load_options(path)
    assert str(path) in str(err.value)


def test_every_listed_option_is_named_by_some_first_action(corpus):
    assert corpus.options, "options.yaml is loaded with the corpus"
    named = {name for inc in corpus.incidents for name, _ in options_named(corpus, inc)}
    assert named == set(corpus.options)


def test_a_bad_directory_is_an_input_error(corpus, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    with pytest.raises(InputError, match="not a directory"):
        build_manual(corpus, afile)
    with pytest.raises(InputError, match="cannot create"):
        build_manual(corpus, afile / "sub")


# ---- the setting that places the manual -------------------------------------------------------

def test_the_manual_is_the_bots_own_by_default(tmp_path):
    s = Settings.from_env({"SERVETRIAGE_DATA_DIR": str(tmp_path)})
    assert s.public_base_url == "http://127.0.0.1:3000" and s.manual_base_url == "http://127.0.0.1:3000/manual/"
    moved = dataclasses.replace(s, host="0.0.0.0", port=8080)  # `serve --host --port`
    assert moved.manual_base_url == "http://localhost:8080/manual/"
    assert dataclasses.replace(s, host="::1").public_base_url == "http://[::1]:3000"


def test_public_and_manual_urls_from_the_environment(tmp_path):
    env = {"SERVETRIAGE_DATA_DIR": str(tmp_path), "SERVETRIAGE_PUBLIC_URL": "https://triage.example.org/"}
    assert Settings.from_env(env).manual_base_url == "https://triage.example.org/manual/"
    env["SERVETRIAGE_MANUAL_URL"] = "https://docs.example.org/servetriage/"
    assert Settings.from_env(env).manual_base_url == "https://docs.example.org/servetriage/"


@pytest.mark.parametrize("env", [{"SERVETRIAGE_PUBLIC_URL": "triage.example.org"},
                                 {"SERVETRIAGE_PUBLIC_URL": "ftp://x"}, {"SERVETRIAGE_MANUAL_URL": "not a url"}])
def test_bad_urls_are_config_errors(env):
    with pytest.raises(ConfigError, match=next(iter(env))):
        Settings.from_env(env)


# ---- the command ------------------------------------------------------------------------------

def _run(*args, tmp):
    env = {**os.environ, "SERVETRIAGE_EMBEDDINGS": "off", "SERVETRIAGE_DATA_DIR": str(tmp / "data"), "NO_COLOR": "1"}
    return subprocess.run([EXE, *args], capture_output=True, env=env, timeout=120)


def test_manual_build_writes_the_pages_and_says_so_in_one_line(corpus, tmp_path):
    out = tmp_path / "site" / "manual"
    r = _run("manual", "build", str(out), tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().strip().splitlines()
    assert len(lines) == 1 and str(out) in lines[0] and f"{len(corpus.incidents)} incidents" in lines[0]
    assert (out / INDEX_PAGE).is_file() and len(list(out.glob("*.html"))) == len(corpus.categories) + 1


@pytest.mark.parametrize("make", ["file", "under-a-file", "read-only"])
def test_manual_build_refuses_a_bad_directory_in_one_line(tmp_path, make):
    target = tmp_path / "target"
    if make == "file":
        target.write_text("not a directory")
    elif make == "under-a-file":
        (tmp_path / "afile").write_text("x")
        target = tmp_path / "afile" / "manual"
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only directory")
        target.mkdir()
        target.chmod(0o555)
    r = _run("manual", "build", str(target), tmp=tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 2 and r.stdout == b""
    assert len(err.strip().splitlines()) == 1 and err.startswith("servetriage: error: ") and str(target) in err
    assert "Traceback" not in err


def _esc(text: str) -> str:
    return html.escape(text, quote=True)
