"""What the bot is doing, in Prometheus's text format at `/metrics` (`prometheus-client`).

One `Metrics` per bot, with its own registry (two bots in one process, as in the tests, never mix
their counts). The names, in one place:

    servetriage_diagnoses_total{category, outcome}   answered | pointer (a repeat in a storm) | parked
    servetriage_diagnosis_seconds                    the engine's time per answer
    servetriage_event_to_reply_seconds               from the delivery's record to the posted reply
    servetriage_queue_jobs{state}                    the job queue: queued, running, done, parked
    servetriage_web_api_errors_total{method, error}  Slack refusing or failing a call
    servetriage_pace_waits_total{how}                waits for Slack's pace: slept | deferred | retry_after
    servetriage_votes_total{kind}                    up | down | correction | new_incident
    servetriage_retrains_total{result}               promoted | rejected | skipped
    servetriage_model_info{version}                  the model answering now
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram, Info, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DIAGNOSIS_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
REPLY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)


class _QueueCollector(Collector):
    """The queue's counts read at scrape time (one small query)."""

    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily("servetriage_queue_jobs", "Jobs in the durable queue by state", labels=["state"])
        try:
            counts = self._counts()
        except Exception:  # noqa: BLE001 — a scrape must not fail because the database is away for a moment
            counts = {}
        for state, n in sorted(counts.items()):
            family.add_metric([state], n)
        yield family


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self._diagnoses = Counter("servetriage_diagnoses", "Answers by category and outcome",
                                  ["category", "outcome"], registry=r)
        self._diagnosis_s = Histogram("servetriage_diagnosis_seconds", "Engine time per answer",
                                      buckets=DIAGNOSIS_BUCKETS, registry=r)
        self._reply_s = Histogram("servetriage_event_to_reply_seconds", "From the recorded delivery to the reply",
                                  buckets=REPLY_BUCKETS, registry=r)
        self._api_errors = Counter("servetriage_web_api_errors", "Web API calls that failed", ["method", "error"],
                                   registry=r)
        self._pace = Counter("servetriage_pace_waits", "Replies that waited for their channel's pace", ["how"],
                             registry=r)
        self._votes = Counter("servetriage_votes", "Feedback by kind", ["kind"], registry=r)
        self._retrains = Counter("servetriage_retrains", "Retrains by result", ["result"], registry=r)
        self._model = Info("servetriage_model", "The model answering now", registry=r)
        self._queue_collector: _QueueCollector | None = None

    def watch_queue(self, counts: Callable[[], dict[str, int]]) -> None:
        if self._queue_collector is None:
            self._queue_collector = _QueueCollector(counts)
            self.registry.register(self._queue_collector)

    # -- what happens ------------------------------------------------------------------------------
    def answered(self, category: str, outcome: str, seconds: float | None = None,
                 model_version: str | None = None) -> None:
        self._diagnoses.labels(category, outcome).inc()
        if seconds is not None:
            self._diagnosis_s.observe(seconds)
        if model_version:
            self._model.info({"version": model_version})

    def replied(self, seconds: float) -> None:
        self._reply_s.observe(max(0.0, seconds))

    def api_error(self, method: str, error: str) -> None:
        self._api_errors.labels(method, error or "error").inc()

    def paced(self, how: str) -> None:
        self._pace.labels(how).inc()

    def voted(self, kind: str) -> None:
        self._votes.labels(kind).inc()

    def retrained(self, result: str) -> None:
        self._retrains.labels(result).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
