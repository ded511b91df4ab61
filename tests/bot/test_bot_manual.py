"""HTTP mode serves the incident manual at /manual/: the index, a page per category, the page a
reply links; 404 for anything else, traversal attempts included."""

from __future__ import annotations

import http.client
import re
from urllib.parse import urlsplit

from slack_harness import OOM_LOG

from servetriage.bot.standin import message_event


def _get(server, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """One request with the path sent exactly as written (no client-side normalisation)."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_the_index_and_a_category_page_are_served_as_html(bot):
    status, headers, body = _get(bot.server, "/manual/")
    assert status == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert b"<h1>Incident manual</h1>" in body and b'id="section-3.2"' in body
    assert headers["x-content-type-options"] == "nosniff" and "default-src 'none'" in headers["content-security-policy"]
    status, headers, body = _get(bot.server, "/manual/gpu-oom.html")
    assert status == 200 and headers["content-type"].startswith("text/html") and b'id="incident-' in body
    assert _get(bot.server, "/manual/index.html")[2] == _get(bot.server, "/manual/")[2]
    status, headers, _ = _get(bot.server, "/manual")
    assert status in (307, 308) and headers["location"].endswith("/manual/")


def test_anything_else_is_404_and_traversal_reads_no_file(bot):
    for path in ("/manual/nope.html", "/manual/../slack/events", "/manual/..%2F..%2Fetc%2Fpasswd",
                 "/manual/%2e%2e/%2e%2e/etc/passwd", "/manual/%2e%2e", "/manual/..", "/manual/.",
                 "/manual/gpu-oom.html/..", "/manual//etc/passwd", "/manual/..%5c..%5cetc%5cpasswd",
                 "/manual/index.html%00.txt"):
        status, _, body = _get(bot.server, path)
        assert status == 404, (path, status)
        assert b"root:" not in body
    assert _get(bot.server, "/manual/", method="POST")[0] == 405


def test_the_link_in_a_reply_opens_its_incident_on_the_served_manual(bot, slack, settings):
    bot.event(message_event("```\n" + OOM_LOG + "```"))
    [reply] = slack.wait_for("chat.postMessage")
    text = "\n".join(str(b) for b in reply.blocks)
    links = re.findall(re.escape(settings.manual_base_url) + r"[^|>\s'\"]+", text)
    assert links, text
    parts = urlsplit(links[0])
    assert parts.fragment.startswith("incident-")
    status, _, body = _get(bot.server, parts.path)
    assert status == 200 and f'id="{parts.fragment}"'.encode() in body
