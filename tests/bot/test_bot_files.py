"""Shared log files: downloaded with the bot token, streamed under the limit, diagnosed; or explained."""

from __future__ import annotations

import dataclasses
import gzip
import io
import zipfile

from slack_harness import OOM_CATEGORY, OOM_LOG, replies

from servetriage.bot.standin import message_event

MB = 1024 * 1024


def _share(slack, name: str, content: bytes, ts: str = "1712000100.000100", **kw) -> dict:
    f = slack.add_file(name, content, channel="C0001", ts=ts, **kw)
    return message_event("", ts=ts, subtype="file_share", files=[f])


def test_a_shared_log_file_is_downloaded_and_diagnosed(bot, slack):
    bot.event(_share(slack, "vllm-worker.log", OOM_LOG.encode()))
    [reply] = slack.wait_for("chat.postMessage")
    [download] = slack.calls_to("download")
    assert download.headers["authorization"] == f"Bearer {slack.token}"
    assert reply.args["thread_ts"] == "1712000100.000100"
    assert OOM_CATEGORY in reply.text and "vllm-worker.log" in reply.text


def test_gzip_and_zip_files_are_read(bot, slack):
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as zf:
        zf.writestr("logs/server.log", OOM_LOG)
    bot.event(_share(slack, "server.log.gz", gzip.compress(OOM_LOG.encode()), ts="1712000100.000201",
                     mimetype="application/gzip", filetype="gzip"))
    bot.event(_share(slack, "bundle.zip", zbuf.getvalue(), ts="1712000100.000202", mimetype="application/zip",
                     filetype="zip"))
    got = slack.wait_for("chat.postMessage", count=2)
    assert all(OOM_CATEGORY in r.text for r in got)


def test_a_file_over_the_limit_gets_an_explanation_without_a_download(start_bot, settings, slack):
    bot = start_bot(dataclasses.replace(settings, max_input_bytes=1 * MB))
    bot.event(_share(slack, "huge.log", b"x" * 10, size=50 * MB))
    [reply] = slack.wait_for("chat.postMessage")
    assert "larger than the 1.0 MB limit" in reply.text
    bot.drain()
    assert slack.calls_to("download") == []


def test_a_file_that_unpacks_over_the_limit_is_stopped_while_streaming(start_bot, settings, slack):
    bot = start_bot(dataclasses.replace(settings, max_input_bytes=1 * MB))
    bomb = gzip.compress(OOM_LOG.encode() + b"\n" * (3 * MB))
    bot.event(_share(slack, "bomb.log.gz", bomb, mimetype="application/gzip", filetype="gzip"))
    [reply] = slack.wait_for("chat.postMessage")
    assert "larger than the 1.0 MB limit" in reply.text


def test_unsupported_files_are_explained_and_images_in_passing_ignored(bot, slack):
    bot.event(_share(slack, "report.pdf", b"%PDF-1.4", ts="1712000100.000301", mimetype="application/pdf",
                     filetype="pdf"))
    bot.event(_share(slack, "screenshot.png", b"\x89PNG", ts="1712000100.000302", mimetype="image/png",
                     filetype="png"))
    [reply] = slack.wait_for("chat.postMessage")
    bot.drain()
    assert len(replies(slack)) == 1 and "report.pdf" in reply.text and "only read text logs" in reply.text


def test_a_failed_download_is_explained(bot, slack):
    slack.fail_next("download", status=500)
    bot.event(_share(slack, "worker.log", OOM_LOG.encode()))
    [reply] = slack.wait_for("chat.postMessage")
    assert "could not read" in reply.text and "HTTP 500" in reply.text


def test_an_unreachable_download_host_is_explained(bot, slack):
    event = _share(slack, "worker.log", OOM_LOG.encode())
    event["files"][0]["url_private_download"] = "http://127.0.0.1:9/files-pri/T-F/download/worker.log"
    bot.event(event)
    [reply] = slack.wait_for("chat.postMessage")
    assert "could not read" in reply.text and "download failed" in reply.text


def test_a_partial_file_object_is_completed_with_files_info(bot, slack):
    f = slack.add_file("partial.log", OOM_LOG.encode(), channel="C0001", ts="1712000100.000401")
    partial = {"id": f["id"], "mode": "hidden_by_limit", "file_access": "check_file_info"}
    bot.event(message_event("", ts="1712000100.000401", subtype="file_share", files=[partial]))
    [reply] = slack.wait_for("chat.postMessage")
    assert slack.calls_to("files.info") and OOM_CATEGORY in reply.text


def test_a_deleted_file_is_explained(bot, slack):
    partial = {"id": "F0GONE", "name": "gone.log", "file_access": "check_file_info"}
    bot.event(message_event("", ts="1712000100.000501", subtype="file_share", files=[partial]))
    [reply] = slack.wait_for("chat.postMessage")
    assert "no longer available" in reply.text


def test_file_shared_and_the_message_event_answer_once(bot, slack):
    event = _share(slack, "once.log", OOM_LOG.encode(), ts="1712000100.000601")
    fid = event["files"][0]["id"]
    bot.event({"type": "file_shared", "file_id": fid, "user_id": "U0001", "file": {"id": fid},
               "channel_id": "C0001", "event_ts": "1712000100.000602"})
    bot.event(event)
    slack.wait_for("chat.postMessage")
    bot.drain()
    assert len(replies(slack)) == 1


def test_file_shared_alone_is_followed_through_files_info(bot, slack):
    f = slack.add_file("alone.log", OOM_LOG.encode(), channel="C0001", ts="1712000100.000701")
    bot.event({"type": "file_shared", "file_id": f["id"], "user_id": "U0001", "file": {"id": f["id"]},
               "channel_id": "C0001", "event_ts": "1712000100.000702"})
    [reply] = slack.wait_for("chat.postMessage")
    assert reply.args["thread_ts"] == "1712000100.000701" and OOM_CATEGORY in reply.text


def test_a_large_file_gets_a_placeholder_updated_in_place(bot, slack):
    big = (OOM_LOG + "INFO 05-12 10:01:00 metrics.py:100] Avg prompt throughput: 0.0 tokens/s\n" * 40_000).encode()
    bot.event(_share(slack, "big.log", big))
    [update] = slack.wait_for("chat.update")
    [placeholder] = replies(slack)
    assert "Reading" in placeholder.text and OOM_CATEGORY in update.text
