"""The work behind every trigger: gather the inputs, diagnose, record, render, reply.

Runs on the bounded pool, never on the request thread, so Slack is acknowledged first. Each
input (a file, the pasted text) becomes one reply; implicit jobs claim each input in the ledger
under its message first, so two events about one message still answer once.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from .._protocols import Diagnoser, ReplyHistory, ReplyRecorder
from ..detect import looks_like_log, mentions, strip_mention, unformat
from ..render import Reply, notices, render_diagnosis
from .._metrics import Metrics
from ..store import Claimed, EventLedger, JobQueue
from ._files import FileReader
from ._job import Job, SlackFile
from ._workers import JobWorkers
from ._problem import Problem
from ._ratelimit import ChannelPacer, Defer
from ._respond import Responder

if TYPE_CHECKING:
    from servetriage.classifier import Diagnosis, LogText

log = logging.getLogger(__name__)

MAX_FILES = 5                    # per message; Slack allows 10, a reply each would bury the thread
PLACEHOLDER_BYTES = 2 * 1024 * 1024  # files this big first get a "reading…" line, updated in place
EXCERPT_CHARS = 20_000
THREAD_SCAN = 50
SEEN_BEFORE = 3                  # earlier answers linked from a reply
MAX_DEPTH = 200                  # jobs waiting or running past which an asker is told theirs waits
COALESCE_S = 10 * 60             # a paste of a failure answered in the channel this recently gets a pointer


class Triage:
    """Owns the queue's workers, the pacer and the Web API side of answering; listeners only `submit`."""

    def __init__(self, *, diagnoser: Diagnoser, recorder: ReplyRecorder, client: WebClient, ledger: EventLedger,
                 queue: JobQueue, workers: int, pacer: ChannelPacer, reader: FileReader,
                 bot_user_id: Callable[[], str | None], history: ReplyHistory | None = None,
                 max_depth: int = MAX_DEPTH, metrics: Metrics | None = None) -> None:
        self.diagnoser = diagnoser
        self.recorder = recorder
        self.history = history
        self.ledger = ledger
        self.queue = queue
        self.max_depth = max_depth
        self.pacer = pacer
        self.reader = reader
        self.metrics = metrics or Metrics()
        self.metrics.watch_queue(queue.counts)
        self.responder = Responder(client, on_error=self.metrics.api_error)
        self._client = client
        self._bot_user_id = bot_user_id
        self.workers = JobWorkers(queue, self.work, workers)
        self._notices = ThreadPoolExecutor(max_workers=1, thread_name_prefix="servetriage-notice")

    def start(self) -> Triage:
        """Queue again what a killed process of this host left running, then start the workers."""
        resumed = self.queue.recover()
        if resumed:
            log.info("resuming %d job(s) a previous process left unanswered", resumed)
        self.workers.start()
        return self

    def close(self) -> None:
        """Answer what is ready, then stop the workers (queued jobs wait for the next start)."""
        self.workers.close()
        self._notices.shutdown(wait=True)

    def submit(self, job: Job, key: str) -> bool:
        """Record `job` under `key` (durable before the listener returns, so before Slack's ack); a key
        already recorded (a retry, a second event about one message) adds nothing. Past the queue's
        depth the job is still recorded and its asker told it waits."""
        got = self.queue.enqueue(key, job.to_payload(), job.target.channel)
        if not got.fresh:
            log.info("%s already recorded; not queued twice", key)
            return False
        if got.depth > self.max_depth:
            log.warning("queue depth %d over %d: %s job in %s waits", got.depth, self.max_depth, job.source,
                        job.target.channel)
            self._notices.submit(self.responder.notify, job.target, notices.queued(got.depth), private=job.explicit)
        self.workers.wake()
        return True

    def work(self, claimed: Claimed) -> None:
        """A worker's turn: run the job; done, deferred (the channel's pace) or failed (parked at last)."""
        job = Job.from_payload(claimed.payload, key=claimed.key, answered=claimed.answered, created=claimed.created)
        try:
            self._run(job)
        except Defer as later:
            log.info("%s job %s in %s waits %.1f s for the channel's pace", job.source, job.key, job.target.channel,
                     later.seconds)
            self.queue.defer(job.key, later.seconds)
            self.metrics.paced("deferred")
            return
        except Exception as exc:
            log.exception("%s job %s in %s failed (attempt %d)", job.source, job.key, job.target.channel,
                          claimed.attempts)
            if self.queue.failed(job.key, f"{type(exc).__name__}: {exc}"):
                self.metrics.answered("none", "parked")
                self.responder.notify(job.target, notices.parked(), private=job.explicit)
            return
        self.queue.done(job.key)

    # -- steps -------------------------------------------------------------------------------
    def _follow_share(self, job: Job) -> Job | None:
        """A `file_shared` event names only the file: find the message that shared it (`files.info`)."""
        channel, file_id = job.target.channel, job.shared_file or ""
        try:
            file = dict(self._client.files_info(file=file_id).get("file") or {})
        except (SlackApiError, SlackClientError, OSError) as exc:
            log.info("file_shared %s not followed (the message event may still answer): %s", file_id, exc)
            return None
        shares = file.get("shares") or {}
        found = [s for kind in ("public", "private") for s in (shares.get(kind) or {}).get(channel, ()) if s.get("ts")]
        if not found:
            return None
        share = max(found, key=lambda s: float(s["ts"]))
        ts = str(share["ts"])
        target = dataclasses.replace(job.target, thread_ts=share.get("thread_ts") or ts)
        return dataclasses.replace(job, target=target, files=(SlackFile.from_payload(file),), message_ts=ts,
                                   shared_file=None)

    def _claim(self, job: Job, part: str) -> bool:
        """May this job answer this input of its message? Only one job may (two events can describe one
        message); the job that claimed it may again (a resumed attempt), unless it already answered."""
        if part in job.answered:
            return False
        return not job.message_ts or self.ledger.claim(f"{part}:{job.target.channel}:{job.message_ts}", owner=job.key)

    def _mark(self, job: Job, part: str) -> None:
        """This input is answered: a resumed attempt of the job will not answer it again."""
        if job.key:
            self.queue.answered(job.key, part)

    def _run(self, job: Job) -> None:
        if job.shared_file:
            followed = self._follow_share(job)
            if followed is None:
                return
            job = followed
        text, files, where = job.text, job.files, "in this message"
        if job.from_thread_parent:
            try:
                text, files = self._thread_inputs(job)
            except Problem as problem:
                self.responder.deliver(job.target, problem.reply)
                return
            where = "in this thread's first message"
        answered = 0
        read: list[tuple[LogText, str | None]] = []  # (log, its "reading…" placeholder)
        for f in files[:MAX_FILES]:
            if not self._claim(job, f"file:{f.id}"):
                answered += int(f"file:{f.id}" in job.answered)
                continue
            said, got = self._file(job, f)
            answered += said
            if got is not None:
                read.append(got)
            else:
                self._mark(job, f"file:{f.id}")
        if read:
            answered += 1
            self._answer_files(job, read)
            for f in files[:MAX_FILES]:
                self._mark(job, f"file:{f.id}")
        pasted = text is not None and bool(text.strip()) and (not files or looks_like_log(text))
        if text is not None and pasted and self._claim(job, "text"):
            from servetriage.classifier import from_text  # noqa: PLC0415 (the engine's decoder, on use)
            pasted_log = from_text(text, "message")
            earlier = self._thread_log(job)
            self._pace(job)
            if earlier is not None:
                self._answer_together(job, [earlier, pasted_log], None)
            else:
                self._answer(job, pasted_log, label=None)
            self._mark(job, "text")
            answered += 1
        elif "text" in job.answered:
            answered += 1
        if not answered and job.explicit and "nothing" not in job.answered:
            self.responder.deliver(job.target, notices.nothing_to_diagnose(where))
            self._mark(job, "nothing")

    def _file(self, job: Job, f: SlackFile) -> tuple[int, tuple[LogText, str | None] | None]:
        """Read one attached file: (replies said about it, the log and its placeholder when it was read)."""
        try:
            f = self.reader.resolve(f)
            self.reader.check(f)
        except Problem as problem:
            if problem.quiet and not job.explicit:
                return 0, None
            self._pace(job)
            self.responder.deliver(job.target, problem.reply)
            return 1, None
        placeholder = None
        if f.size and f.size >= PLACEHOLDER_BYTES:
            placeholder = self.responder.deliver(job.target, notices.reading(f.name, f.size))
        try:
            return 0, (self.reader.read(f), placeholder)
        except Problem as problem:
            self._say(job, problem.reply, placeholder)
            return 1, None

    def _answer_files(self, job: Job, read: list[tuple[LogText, str | None]]) -> None:
        """One answer for what one message attached: several files (or an archive of rank logs, or a
        follow-up to an answer that asked for another log) are read together, on one timeline."""
        from servetriage.classifier import split_members  # noqa: PLC0415 (the engine's reader, on use)

        self._pace(job)
        logs = [member for log, _ in read for member in split_members(log)]
        placeholder = next((p for _, p in read if p), None)
        for _, other in read:
            if other and other != placeholder:
                self.responder.update(job.target.channel, other, notices.read_together())
        earlier = self._thread_log(job)
        if earlier is not None:
            logs.insert(0, earlier)
        if len(logs) == 1:
            self._answer(job, logs[0], label=read[0][0].name, placeholder=placeholder)
            return
        if sum(log.size for log in logs) > self.reader.limit:
            self._say(job, notices.too_large(" + ".join(log.name for log in logs), self.reader.limit), placeholder)
            return
        self._answer_together(job, logs, placeholder)

    def _answer_together(self, job: Job, logs: list[LogText], placeholder: str | None) -> None:
        from servetriage.classifier import merge, placed  # noqa: PLC0415 (the engine's merge, on use)

        t0 = time.perf_counter()
        merged = merge(logs)
        alone = [self.diagnoser.diagnose(log) for log in logs]
        diagnosis = placed(self.diagnoser.diagnose(merged.log), merged, alone)
        self.metrics.answered(diagnosis.category, "answered", time.perf_counter() - t0, diagnosis.model_version)
        self._reply(job, diagnosis, merged.log, f"{len(logs)} logs read together", placeholder)

    def _thread_log(self, job: Job) -> LogText | None:
        """In a thread whose earlier answer said what was missing (another rank's log, the kernel log),
        the log it answered, so the follow-up is read together with it."""
        t = job.target
        if self.history is None or not t.thread_ts or t.thread_ts == job.message_ts:
            return None
        try:
            first = self.history.asked_for_more(channel=t.channel, thread_ts=t.thread_ts)
        except Exception:
            log.exception("reading the thread's earlier answer failed")
            return None
        if first is None:
            return None
        from servetriage.classifier import from_text  # noqa: PLC0415

        return from_text(first, "earlier in this thread")

    def _answer(self, job: Job, text: LogText, label: str | None, placeholder: str | None = None) -> None:
        t0 = time.perf_counter()
        diagnosis = self.diagnoser.diagnose(text)
        engine_s = time.perf_counter() - t0
        same = self._same_as_recent(job, diagnosis)
        if same is not None:
            self.metrics.answered(diagnosis.category, "pointer", engine_s)
            if self._say(job, same, placeholder):
                self._replied(job)
            return
        self.metrics.answered(diagnosis.category, "answered", engine_s, diagnosis.model_version)
        self._reply(job, diagnosis, text, label, placeholder)

    def _reply(self, job: Job, diagnosis: Diagnosis, text: LogText, label: str | None,
               placeholder: str | None) -> None:
        """The full answer: linked to earlier ones, recorded for the buttons, posted, tied to its ts."""
        diagnosis = self._seen_before(job, diagnosis)
        diagnosis_id = self._record(job, diagnosis, text)
        ts = self._say(job, render_diagnosis(diagnosis, diagnosis_id, label), placeholder)
        if ts:
            self._replied(job)
            try:
                self.recorder.attach_reply(diagnosis_id, ts)
            except Exception:
                log.exception("recorder.attach_reply failed")

    def _seen_before(self, job: Job, d: Diagnosis) -> Diagnosis:
        """Earlier answers of this workspace to the same failure, linked (other threads only, and only
        where Slack still gives the bot a link: channels it is in)."""
        if self.history is None or d.is_unknown:
            return d
        from servetriage.classifier import SeenBefore  # noqa: PLC0415 (the engine's result types, on use)

        t = job.target
        try:
            earlier = self.history.earlier(team=t.team, category=d.category,
                                           incident=d.incident.id if d.incident else None, limit=SEEN_BEFORE + 2)
        except Exception:
            log.exception("reading earlier answers failed")
            return d
        seen = []
        for e in earlier:
            if e.channel == t.channel and e.thread_ts and e.thread_ts == t.thread_ts:
                continue  # this very thread
            link = self.responder.permalink(e.channel, e.message_ts)
            if link is None:
                continue
            seen.append(SeenBefore(when=e.created, place=e.channel, link=link, category=e.category, up=e.up,
                                   down=e.down, corrected_to=e.corrected_to))
            if len(seen) == SEEN_BEFORE:
                break
        return dataclasses.replace(d, seen_before=tuple(seen)) if seen else d

    def _same_as_recent(self, job: Job, d: Diagnosis) -> Reply | None:
        """In a storm, a paste of the failure this channel was answered about minutes ago gets a pointer
        to that answer instead of a copy (asked-for answers are always given in full)."""
        if self.history is None or d.is_unknown or job.explicit:
            return None
        t = job.target
        try:
            recent = self.history.earlier(team=t.team, category=d.category, incident=d.incident.id if d.incident else None,
                                          limit=2, channel=t.channel, since=time.time() - COALESCE_S)
        except Exception:
            log.exception("reading recent answers failed")
            return None
        first = next((e for e in recent if e.thread_ts != t.thread_ts and e.corrected_to is None), None)
        if first is None:
            return None
        link = self.responder.permalink(first.channel, first.message_ts)
        return notices.same_failure(link, first.category, first.up, first.down) if link else None

    def _say(self, job: Job, reply: Reply, placeholder: str | None) -> str | None:
        if placeholder and self.responder.update(job.target.channel, placeholder, reply):
            return placeholder
        return self.responder.deliver(job.target, reply)

    def _record(self, job: Job, diagnosis: Diagnosis, text: LogText) -> str:
        """The id for the buttons; a failing feedback store must not cost the user the answer."""
        t = job.target
        try:
            return self.recorder.record(diagnosis, excerpt(text.text, diagnosis), team=t.team, channel=t.channel,
                                        thread_ts=t.thread_ts or "", user=t.user, source=job.source)
        except Exception:
            log.exception("recorder.record failed; the buttons get an unrecorded id")
            return uuid.uuid4().hex

    def _pace(self, job: Job) -> None:
        """Wait for the channel's next reply slot (a short wait here; a long one defers the job)."""
        if self.pacer.wait(job.target.channel) > 0:
            self.metrics.paced("slept")

    def _replied(self, job: Job) -> None:
        if job.created:
            self.metrics.replied(time.time() - job.created)

    def _thread_inputs(self, job: Job) -> tuple[str | None, tuple[SlackFile, ...]]:
        """The thread's first message (text and files); if it holds no log, the latest message that does."""
        channel, thread_ts = job.target.channel, job.target.thread_ts
        if thread_ts is None:  # a top-level message is its own thread parent
            return job.text, job.files
        try:
            resp = self._client.conversations_replies(channel=channel, ts=thread_ts, limit=THREAD_SCAN, inclusive=True)
        except SlackApiError as exc:
            error = str(exc.response.get("error", "error"))
            log.warning("conversations.replies in %s failed: %s", channel, error)
            raise Problem(notices.notice(f"⚠️ I could not read this thread (Slack said `{error}`); "
                                         "am I in the channel, with the `channels:history` scope?")) from None
        except (SlackClientError, OSError) as exc:
            raise Problem(notices.notice(f"⚠️ I could not read this thread ({type(exc).__name__}).")) from None
        messages: list[dict[str, Any]] = list(resp.get("messages") or [])
        bot = self._bot_user_id()
        parent = next((m for m in messages if m.get("ts") == thread_ts), None)
        replies = [m for m in reversed(messages) if m is not parent and not m.get("bot_id")
                   and not mentions(m.get("text") or "", bot)]
        for m in ([parent] if parent else []) + replies:
            text, files = _inputs_of(m, bot)
            if files or looks_like_log(text):
                return text, files
        return _inputs_of(parent, bot) if parent else (None, ())


def _inputs_of(message: dict[str, Any], bot: str | None) -> tuple[str, tuple[SlackFile, ...]]:
    text = unformat(strip_mention(message.get("text") or "", bot))
    return text, tuple(SlackFile.from_payload(f) for f in message.get("files") or ())


def excerpt(text: str, d: Diagnosis, limit: int = EXCERPT_CHARS) -> str:
    """What the recorder keeps of the log: all of it when short, else the lines around the evidence; redacted."""
    from servetriage.classifier import redact  # noqa: PLC0415 (the engine's redactor, on use)

    if len(text) <= limit:
        return redact(text)
    lines = text.splitlines()
    wanted = sorted({e.line for e in d.evidence} | ({d.initiating.line} if d.initiating else set()))
    keep: list[str] = []
    last = 0
    for no in wanted:
        lo, hi = max(1, no - 10, last + 1), min(len(lines), no + 10)
        if lo > hi:
            continue
        if lo > last + 1:
            keep.append("…")
        keep.extend(lines[lo - 1:hi])
        last = hi
    body = "\n".join(keep) if keep else text[:limit]
    return redact(body[:limit])
