"""The incident manual: the corpus rendered as static HTML, the page a reply's link opens.

One index page (the categories, the seed manual's sections with the incidents that cite them, the
engine options the incidents name) and one page per category holding its incidents. Anchors are
stable: `<category>.html#incident-<id>` for an incident, `index.html#section-3.2` for a seed manual
section. The output depends on the corpus alone (no dates, no paths), so the same corpus gives the
same bytes. Built with `html.escape` only; every page carries the same small inline stylesheet.
"""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from servetriage._errors import CorpusError, InputError

from ._types import UNKNOWN, Category, Corpus, Incident, OptionDoc

INDEX_PAGE = "index.html"
_PAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM", "trtllm": "TensorRT-LLM", "any": "any engine"}
# The seed manual's parts, as its index (seed 001) groups the sections: §3.2 is in part 3.
PARTS = {"1": "the request path", "2": "the request path", "3": "the KV cache", "4": "each forward pass",
         "5": "measuring", "6": "fleets and operations", "7": "fleets and operations"}


@dataclasses.dataclass(frozen=True)
class Manual:
    """The rendered manual: file name -> page bytes (the index first), and what it holds."""

    pages: dict[str, bytes]
    incidents: int
    categories: int
    sections: int

    def page(self, name: str) -> bytes | None:
        return self.pages.get(name)

    @property
    def summary(self) -> str:
        return (f"{len(self.pages)} pages: {self.incidents} incidents in {self.categories} categories, "
                f"{self.sections} manual sections")


def category_page(category_id: str) -> str:
    """The file a category's incidents are on."""
    return f"{category_id}.html"


def incident_anchor(incident_id: str) -> str:
    return f"incident-{incident_id}"


def section_anchor(section: str) -> str:
    return f"section-{section}"


def incident_link(base: str, inc: Incident) -> str:
    """Where a reply sends the reader: the incident's own anchor in the manual served at `base`."""
    return f"{base.rstrip('/')}/{_href(inc)}"


def options_named(corpus: Corpus, inc: Incident) -> tuple[tuple[str, tuple[OptionDoc, ...]], ...]:
    """The engine options (options.yaml) the incident's first action names, in the order it names them,
    each with its documentation pages: for an option two engines share, the pages of the incident's
    engines (all of them when it names `any`, or none of those engines)."""
    rx = _option_regex(tuple(corpus.options))
    if rx is None:
        return ()
    out: dict[str, tuple[OptionDoc, ...]] = {}
    engines = set(inc.engines)
    for m in rx.finditer(inc.first_action):
        name = m.group(1)
        if name in out:
            continue
        docs = corpus.options[name]
        mine = tuple(d for d in docs if d.engine in engines)
        out[name] = mine if mine and "any" not in engines else docs
    return tuple(out.items())


def render_manual(corpus: Corpus) -> Manual:
    """Every page of the manual, in memory."""
    categories = list(corpus.categories.values())
    bad = [c.id for c in categories if not _PAGE_NAME.match(c.id) or category_page(c.id) == INDEX_PAGE]
    if bad:
        raise CorpusError(f"category id {bad[0]!r} cannot name a manual page (use lowercase letters, digits and '-')")
    counts = {c.id: 0 for c in categories}
    for inc in corpus.incidents:
        counts[inc.category] = counts.get(inc.category, 0) + 1
    sections = _sections(corpus.incidents)
    pages = {INDEX_PAGE: _page("Incident manual", _sidebar(corpus, counts, None), _index(corpus, counts, sections), corpus)}
    for cat in categories:
        pages[category_page(cat.id)] = _page(cat.title, _sidebar(corpus, counts, cat.id), _category(corpus, cat.id), corpus)
    return Manual(pages=pages, incidents=len(corpus.incidents), categories=len(categories), sections=len(sections))


def build_manual(corpus: Corpus, directory: Path | str) -> Manual:
    """Render the manual and write it into `directory` (created if missing); an unusable directory is
    an `InputError` naming it."""
    out = Path(directory)
    manual = render_manual(corpus)
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out}: cannot create the directory ({exc.strerror or exc})") from None
    for name, body in manual.pages.items():
        try:
            (out / name).write_bytes(body)
        except OSError as exc:
            raise InputError(f"{out}: cannot write {name} ({exc.strerror or exc})") from None
    return manual


# ---- the pages --------------------------------------------------------------------------------

_CSS = """
:root{--fg:#1f2328;--muted:#59636e;--line:#d8dee4;--soft:#f6f8fa;--accent:#0969da;--mark:#fff8c5}
*{box-sizing:border-box}
html{scroll-padding-top:1rem}
body{margin:0;color:var(--fg);background:#fff;
font:16px/1.6 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
a{color:var(--accent);text-decoration:none}
a:hover{text-decoration:underline}
header.top{border-bottom:1px solid var(--line);background:var(--soft)}
header.top div{max-width:78rem;margin:0 auto;padding:.7rem 1.5rem;display:flex;gap:1rem;align-items:baseline}
header.top a.home{font-weight:600;color:var(--fg)}
header.top span{color:var(--muted);font-size:.9rem}
.layout{display:flex;gap:2.5rem;max-width:78rem;margin:0 auto;padding:0 1.5rem}
nav.side{flex:0 0 17rem;position:sticky;top:0;align-self:flex-start;max-height:100vh;overflow-y:auto;
padding:1.5rem 0 2rem;font-size:.9rem}
nav.side h2{font-size:.75rem;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);margin:1.2rem 0 .4rem}
nav.side ul{list-style:none;margin:0;padding:0}
nav.side li a{display:flex;justify-content:space-between;gap:.5rem;padding:.22rem .5rem;border-radius:6px;color:var(--fg)}
nav.side li a:hover{background:var(--soft);text-decoration:none}
nav.side li a[aria-current=page]{background:#ddf4ff;font-weight:600}
nav.side .n{color:var(--muted);font-variant-numeric:tabular-nums}
main{flex:1;min-width:0;max-width:50rem;padding:1.5rem 0 5rem;overflow-wrap:break-word}
h1{font-size:1.8rem;line-height:1.25;margin:.3rem 0 .6rem}
h2{font-size:1.3rem;line-height:1.3;margin:2.2rem 0 .6rem}
h3{font-size:1.05rem;margin:1.4rem 0 .4rem}
p.lead{color:var(--muted);margin-top:0}
code,pre{font-family:ui-monospace,SFMono-Regular,"SF Mono",Menlo,Consolas,"Liberation Mono",monospace;font-size:.86em}
code{background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:.05em .3em;overflow-wrap:break-word}
code.opt{white-space:nowrap}
pre{background:#0d1117;color:#e6edf3;border-radius:6px;padding:.8rem 1rem;overflow-x:auto;line-height:1.45;font-size:.8rem}
pre code{background:none;border:0;padding:0;color:inherit;font-size:inherit;overflow-wrap:normal}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{text-align:left;vertical-align:top;padding:.45rem .6rem;border-bottom:1px solid var(--line)}
th{font-weight:600;color:var(--muted);font-size:.8rem;text-transform:uppercase;letter-spacing:.04em}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.box{background:var(--soft);border:1px solid var(--line);border-radius:8px;padding:.8rem 1rem;margin:1rem 0}
.box dl{margin:0}
ol.toc{padding-left:1.3rem;columns:2 18rem;column-gap:2rem;font-size:.92rem}
ol.toc li{break-inside:avoid;margin:.1rem 0}
article.incident{border-top:1px solid var(--line);margin-top:2.2rem;padding-top:1.1rem}
article.incident h2{margin:0 0 .3rem;font-size:1.2rem}
article.incident h2 a{color:var(--fg)}
article.incident:target,section.msection:target{background:var(--mark);box-shadow:0 0 0 .8rem var(--mark);border-radius:2px}
p.meta{margin:.2rem 0 .9rem;display:flex;flex-wrap:wrap;gap:.35rem;align-items:center;font-size:.85rem;color:var(--muted)}
.tag{display:inline-block;border:1px solid var(--line);border-radius:999px;padding:0 .55rem;background:#fff;white-space:nowrap;
font-size:.78rem;color:var(--muted);line-height:1.5}
section.msection li{margin:.15rem 0}
.tag.owner{background:#eef6ff;border-color:#b6d7ff;color:#0a3069}
dl.facts{display:grid;grid-template-columns:9.5rem minmax(0,1fr);gap:.45rem 1.1rem;margin:0}
dl.facts dt{font-weight:600;color:var(--muted);font-size:.9rem}
dl.facts dd{margin:0}
ul.links{margin:0;padding-left:1.1rem}
details{margin-top:.9rem}
summary{cursor:pointer;color:var(--muted);font-size:.9rem}
p.sub{margin:.7rem 0 .3rem;font-size:.8rem;font-weight:600;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
section.msection{margin:1.3rem 0}
section.msection h3{margin-bottom:.2rem}
section.msection .part{color:var(--muted);font-weight:400;font-size:.9rem}
footer{max-width:78rem;margin:0 auto;padding:1.5rem;color:var(--muted);font-size:.85rem;border-top:1px solid var(--line)}
@media (max-width:56rem){.layout{flex-direction:column;gap:0}main{padding-bottom:1rem}
header.top span{display:none}h1{font-size:1.5rem}
nav.side{order:2;flex:none;position:static;max-height:none;border-top:1px solid var(--line)}
dl.facts{grid-template-columns:1fr;gap:.1rem}dl.facts dd{margin-bottom:.5rem}}
""".strip()


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _page(title: str, sidebar: str, body: str, corpus: Corpus) -> bytes:
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)} · servetriage manual</title>",
        f"<style>\n{_CSS}\n</style>",
        "</head>",
        "<body>",
        '<header class="top"><div><a class="home" href="index.html">servetriage manual</a>'
        "<span>LLM-serving failures: SGLang, vLLM, TensorRT-LLM</span></div></header>",
        '<div class="layout">',
        sidebar,
        f"<main>\n{body}\n</main>",
        "</div>",
        f"<footer>Built by <code>servetriage manual build</code> from {len(corpus.incidents)} incidents in "
        f"{len(corpus.categories)} categories. Each reply of the bot links the incident it names here.</footer>",
        "</body>",
        "</html>",
        "",
    ]).encode("utf-8")


def _sidebar(corpus: Corpus, counts: dict[str, int], current: str | None) -> str:
    rows = []
    for cat in corpus.categories.values():
        here = ' aria-current="page"' if cat.id == current else ""
        rows.append(f'<li><a href="{_e(category_page(cat.id))}"{here} title="{_e(cat.title)}">'
                    f'<span>{_e(_short(cat))}</span><span class="n">{counts.get(cat.id, 0)}</span></a></li>')
    index_here = ' aria-current="page"' if current is None else ""
    return "\n".join([
        '<nav class="side" aria-label="Categories">',
        "<h2>Manual</h2>",
        "<ul>",
        f'<li><a href="{INDEX_PAGE}"{index_here}><span>Overview</span></a></li>',
        f'<li><a href="{INDEX_PAGE}#sections"><span>Seed manual sections</span></a></li>',
        f'<li><a href="{INDEX_PAGE}#options"><span>Engine options</span></a></li>',
        "</ul>",
        "<h2>Categories</h2>",
        "<ul>", *rows, "</ul>",
        "</nav>",
    ])


def _short(cat: Category) -> str:
    """A category's title without its parenthesis, for the sidebar and tags."""
    return cat.title.split(" (")[0]


def _index(corpus: Corpus, counts: dict[str, int], sections: dict[str, list[Incident]]) -> str:
    out = [
        "<h1>Incident manual</h1>",
        '<p class="lead">Every failure the triage bot knows: what the operator sees, why it happens, the first '
        "thing to do, the fix or its status, what to do with the process, how to verify the fix, whose problem it "
        "is, and the upstream threads. A reply in Slack links the incident it names.</p>",
        "<h2 id=\"categories\">Categories</h2>",
        "<table>",
        "<thead><tr><th>Category</th><th>What it means</th><th>Incidents</th></tr></thead>",
        "<tbody>",
    ]
    for cat in corpus.categories.values():
        out.append(f'<tr><td><a href="{_e(category_page(cat.id))}">{_e(cat.title)}</a><br><code>{_e(cat.id)}</code></td>'
                   f"<td>{_text(cat.meaning)}</td><td class=\"n\">{counts.get(cat.id, 0)}</td></tr>")
    out += ["</tbody>", "</table>",
            '<h2 id="sections">Seed manual sections</h2>',
            '<p class="lead">The sections of the seed manual that incidents cite, each with the incidents that '
            "cite it.</p>"]
    for sec, incs in sections.items():
        part = sec.split(".")[0]
        label = f"Part {part}: {PARTS[part]}" if part in PARTS else ""
        items = "".join(f'<li><a href="{_e(_href(i))}">{_e(i.title)}</a> '
                        f'<span class="tag">{_e(_short(corpus.categories[i.category]))}</span></li>' for i in incs)
        out.append(f'<section class="msection" id="{_e(section_anchor(sec))}"><h3>§{_e(sec)} '
                   f'<span class="part">{_e(label)}</span></h3><ul class="links">{items}</ul></section>')
    if not sections:
        out.append("<p>No incident cites a section of the seed manual.</p>")
    out += ['<h2 id="options">Engine options</h2>',
            '<p class="lead">The engine options first actions name, and the documentation that explains each.</p>']
    if corpus.options:
        out += ["<table>", "<thead><tr><th>Option</th><th>Documented in</th></tr></thead>", "<tbody>"]
        for name, docs in sorted(corpus.options.items(), key=lambda kv: kv[0].lstrip("-")):
            links = "<br>".join(f'<a href="{_e(d.url)}">{_e(d.title)}</a>' for d in docs)
            out.append(f"<tr><td><code>{_e(name)}</code></td><td>{links}</td></tr>")
        out += ["</tbody>", "</table>"]
    else:
        out.append("<p>No engine options are listed.</p>")
    return "\n".join(out)


def _category(corpus: Corpus, cid: str) -> str:
    cat = corpus.categories[cid]
    incs = list(corpus.by_category(cid))
    out = [f"<h1>{_e(cat.title)}</h1>", f'<p class="meta"><code>{_e(cat.id)}</code>'
           + ('<span class="tag">usually a symptom of an earlier fault</span>' if cat.symptom else "") + "</p>"]
    if cat.meaning:
        out.append(f"<p>{_text(cat.meaning)}</p>")
    facts = []
    if cat.first_look:
        facts.append(("Look first at", _text(cat.first_look)))
    recovery, verify = corpus.recovery.get(cid, (None, None))
    if recovery:
        facts.append(("Recovery", _text(recovery)))
    if verify:
        facts.append(("Verify", _text(verify)))
    if corpus.missing.get(cid):
        facts.append(("Fetch next", _text(corpus.missing[cid])))
    if facts:
        out.append('<div class="box"><dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
                   + "</dl></div>")
    if cid == UNKNOWN:
        out.append("<p>These are negative examples: logs that show no fault of any category, kept so that the bot "
                   "answers them <code>unknown</code> and asks for what would settle it.</p>")
    out.append(f"<h2>Incidents ({len(incs)})</h2>")
    if incs:
        out.append('<ol class="toc">' + "".join(f'<li><a href="#{_e(_fragment(i))}">{_e(i.title)}</a></li>' for i in incs)
                   + "</ol>")
    else:
        out.append("<p>No incident in the corpus yet.</p>")
    out.extend(_incident(corpus, inc) for inc in incs)
    return "\n".join(out)


def _incident(corpus: Corpus, inc: Incident) -> str:
    anchor = incident_anchor(inc.id)
    tags = [f"<code>{_e(inc.id)}</code>"]
    tags += [f'<span class="tag">{_e(ENGINE_NAMES.get(e, e))}</span>' for e in inc.engines]
    tags.append(f'<span class="tag owner" title="whose problem it is">{_e(inc.klass)}</span>')
    tags += [f'<a class="tag" href="{INDEX_PAGE}#{_e(section_anchor(s))}">§{_e(s)}</a>' for s in inc.sections]
    opts = tuple(corpus.options)
    facts = [("Symptom", _text(inc.symptom, opts)), ("Cause", _text(inc.cause, opts)),
             ("First action", _text(inc.first_action, opts)), ("Fix or status", _text(inc.fix_or_status, opts))]
    recovery, verify = corpus.recovery_of(inc), corpus.verify_of(inc)
    if recovery:
        facts.append(("Recovery", _text(recovery, opts)))
    if verify:
        facts.append(("Verify", _text(verify, opts)))
    facts.append(("Whose problem", _e(inc.klass)))
    named = options_named(corpus, inc)
    if named:
        facts.append(("Engine docs", '<ul class="links">' + "".join(
            f'<li><code class="opt">{_e(name)}</code>: ' + ", ".join(f'<a href="{_e(d.url)}">{_e(d.title)}</a>' for d in docs)
            + "</li>" for name, docs in named) + "</ul>"))
    if inc.sections:
        facts.append(("Manual", ", ".join(f'<a href="{INDEX_PAGE}#{_e(section_anchor(s))}">§{_e(s)}</a>' for s in inc.sections)))
    facts.append(("Sources", '<ul class="links">' + "".join(f"<li>{_source(s)}</li>" for s in inc.sources) + "</ul>"))
    out = [f'<article class="incident" id="{_e(anchor)}">',
           f'<h2><a href="#{_e(_fragment(inc))}">{_e(inc.title)}</a></h2>',
           f'<p class="meta">{" ".join(tags)}</p>',
           '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"]
    if inc.signatures or inc.examples:
        n = len(inc.examples)
        out.append(f"<details><summary>What it looks like in the log ({n} example{'s' if n != 1 else ''})</summary>")
        if inc.signatures:
            out.append('<p class="sub">Signatures the rule pass matches</p><ul class="links">' + "".join(
                f"<li><code>{_e(s.pattern)}</code>{' (regex)' if s.regex else ''}</li>" for s in inc.signatures) + "</ul>")
        out.append('<p class="sub">Example log excerpts</p>')
        out.extend(f"<pre><code>{_e(ex.rstrip())}</code></pre>" for ex in inc.examples)
        out.append("</details>")
    out.append("</article>")
    return "\n".join(out)


_GITHUB = re.compile(r"^https://github\.com/([^/]+/[^/]+)/(issues|pull|discussions)/(\d+)")
_KINDS = {"issues": "issue", "pull": "pull request", "discussions": "discussion"}


def _source(src: str) -> str:
    if src.startswith(("https://", "http://")):
        m = _GITHUB.match(src)
        label = f"{m.group(1)} {_KINDS[m.group(2)]} #{m.group(3)}" if m else src.split("://", 1)[1].rstrip("/")
        return f'<a href="{_e(src)}">{_e(label)}</a>'
    if src.startswith("seed:"):
        return f"seed document {_e(src[5:])}"
    return _e(src)


def _fragment(inc: Incident) -> str:
    return quote(incident_anchor(inc.id), safe="-._~")


def _href(inc: Incident) -> str:
    return f"{category_page(inc.category)}#{_fragment(inc)}"


def _sections(incidents: Iterable[Incident]) -> dict[str, list[Incident]]:
    """Each cited seed-manual section (in the manual's order) with the incidents citing it."""
    out: dict[str, list[Incident]] = {}
    for inc in incidents:
        for sec in inc.sections:
            out.setdefault(sec, []).append(inc)
    return dict(sorted(out.items(), key=lambda kv: tuple(int(p) if p.isdigit() else 0 for p in kv[0].split("."))))


_CODE_SPAN = re.compile(r"`([^`]+)`")


def _text(text: str, options: tuple[str, ...] = ()) -> str:
    """Prose escaped, with `backtick` spans and the named engine options set as code."""
    rx = _option_regex(options)
    out = []
    for n, part in enumerate(_CODE_SPAN.split(text)):
        if n % 2:
            out.append(f"<code>{_e(part)}</code>")
        elif rx is None:
            out.append(_e(part))
        else:
            pos = 0
            for m in rx.finditer(part):
                out.append(_e(part[pos:m.start(1)]) + f'<code class="opt">{_e(m.group(1))}</code>')
                pos = m.end(1)
            out.append(_e(part[pos:]))
    return "".join(out)


_REGEX_CACHE: dict[tuple[str, ...], re.Pattern[str] | None] = {}


def _option_regex(names: tuple[str, ...]) -> re.Pattern[str] | None:
    """One pattern for all option names, longest first; a name matches only as a whole token (not
    inside a longer flag, nor as a field of another object: `cuda_graph_config.max_batch_size`)."""
    if names not in _REGEX_CACHE:
        alts = "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))
        _REGEX_CACHE[names] = re.compile(rf"(?<![\w.-])({alts})(?![\w-])") if names else None
    return _REGEX_CACHE[names]
