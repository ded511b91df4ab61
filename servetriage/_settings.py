"""Configuration in one place: every knob is an environment variable read into one frozen object.

Nothing is read at import time; `Settings.from_env()` is called by the entry points (CLI, bot) and
the object is passed down, so tests build their own with `Settings(...)` or `dataclasses.replace`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from ._errors import ConfigError

MB = 1024 * 1024


def _default_data_dir(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "servetriage"


@dataclasses.dataclass(frozen=True)
class Settings:
    """Typed settings; field docs name the environment variable that sets each one."""

    #: SERVETRIAGE_MAX_INPUT_MB — the most one input may hold once decompressed.
    max_input_bytes: int = 200 * MB
    #: SERVETRIAGE_DATA_DIR — where the database, trained models and the index live.
    data_dir: Path = dataclasses.field(default_factory=lambda: _default_data_dir(os.environ))
    #: SERVETRIAGE_DATABASE_URL — `postgresql://…` to share votes, the dedupe ledger and the active
    #: model between replicas; unset, one SQLite file in the data directory (embedded, the default).
    database_url: str | None = None
    #: SERVETRIAGE_CORPUS_DIRS — extra directories of incident YAML files (os.pathsep separated).
    extra_corpus_dirs: tuple[Path, ...] = ()
    #: SERVETRIAGE_PUBLIC_URL — the address people reach the bot at, e.g. its https URL behind a proxy;
    #: unset, http://HOST:PORT (a wildcard host such as 0.0.0.0 reads as localhost). See `public_base_url`.
    public_url: str | None = None
    #: SERVETRIAGE_MANUAL_URL — base URL of the incident manual (what `servetriage manual build` writes);
    #: unset, the bot's own `/manual/` under the public URL. See `manual_base_url`: replies link an
    #: incident as `<base>/<category>.html#incident-<id>`.
    manual_url: str | None = None
    #: SERVETRIAGE_MIN_CONFIDENCE — below this the answer is `unknown` with the nearest candidates;
    #: unset, the threshold fitted with the model on held-out corpus folds is used.
    min_confidence: float | None = None
    #: SERVETRIAGE_EMBEDDINGS — "on" to use the sentence-transformer passes, "off" for rules and TF-IDF only.
    embeddings: bool = True
    #: SERVETRIAGE_MODEL_DIR — a sentence-transformers model directory replacing the packaged one.
    embedder_path: Path | None = None
    #: SERVETRIAGE_THREADS — torch threads per embedding call. One: a query is a few short lines, and
    #: more threads spin against each other (and the bot's worker pool) when the cores are busy.
    threads: int = 1

    # Slack side.
    #: SLACK_BOT_TOKEN
    slack_bot_token: str | None = None
    #: SLACK_APP_TOKEN — set it to use Socket Mode (no public URL).
    slack_app_token: str | None = None
    #: SLACK_SIGNING_SECRET — needed in HTTP mode.
    slack_signing_secret: str | None = None
    #: SLACK_API_URL — the Web API base URL (a local stand-in in tests).
    slack_api_url: str = "https://slack.com/api/"
    #: SERVETRIAGE_HOST / SERVETRIAGE_PORT — HTTP mode's listening address.
    host: str = "127.0.0.1"
    port: int = 3000
    #: SERVETRIAGE_CHANNELS — channel ids to watch for pasted logs (empty: every channel the bot is in).
    channels: tuple[str, ...] = ()
    #: SERVETRIAGE_WORKERS — the threads that take jobs from the durable queue and answer them.
    workers: int = 4
    #: SERVETRIAGE_QUEUE_DEPTH — jobs waiting or running past which an asker is told theirs waits
    #: (it is still recorded and answered).
    queue_depth: int = 200
    #: SERVETRIAGE_CHANNEL_RATE — replies per channel per minute, evenly paced (Slack allows about one
    #: message per second per channel); a storm is answered in turn, never dropped. 0: no pacing.
    channel_rate_per_minute: int = 60
    #: SERVETRIAGE_LOG_FORMAT — "text" (the default) or "json": one JSON object per log line.
    log_format: str = "text"
    #: SERVETRIAGE_TRAINERS — Slack user ids whose votes train the model (empty: everyone).
    trainer_allowlist: tuple[str, ...] = ()

    @property
    def db_path(self) -> Path:
        return self.data_dir / "servetriage.sqlite"

    @property
    def model_dir(self) -> Path:
        return self.data_dir / "models"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"

    @property
    def public_base_url(self) -> str:
        """SERVETRIAGE_PUBLIC_URL without its trailing slash, else the HTTP mode's own address."""
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "localhost" if self.host in ("", "0.0.0.0", "::", "[::]") else self.host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"  # an IPv6 address
        return f"http://{host}:{self.port}"

    @property
    def manual_base_url(self) -> str:
        """Where the incident manual is served: SERVETRIAGE_MANUAL_URL, else `<public URL>/manual/`."""
        return self.manual_url or f"{self.public_base_url}/manual/"

    @property
    def slack_enabled(self) -> bool:
        return bool(self.slack_bot_token and (self.slack_app_token or self.slack_signing_secret))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        kw: dict[str, object] = {"data_dir": Path(env["SERVETRIAGE_DATA_DIR"]) if env.get("SERVETRIAGE_DATA_DIR")
                                 else _default_data_dir(env)}
        if env.get("SERVETRIAGE_DATABASE_URL"):
            kw["database_url"] = env["SERVETRIAGE_DATABASE_URL"]
        if env.get("SERVETRIAGE_MAX_INPUT_MB"):
            kw["max_input_bytes"] = int(_number(env, "SERVETRIAGE_MAX_INPUT_MB", float) * MB)
        if env.get("SERVETRIAGE_CORPUS_DIRS"):
            kw["extra_corpus_dirs"] = tuple(Path(p) for p in env["SERVETRIAGE_CORPUS_DIRS"].split(os.pathsep) if p)
        if env.get("SERVETRIAGE_PUBLIC_URL"):
            kw["public_url"] = env["SERVETRIAGE_PUBLIC_URL"].strip()
        if env.get("SERVETRIAGE_MANUAL_URL"):
            kw["manual_url"] = env["SERVETRIAGE_MANUAL_URL"].strip()
        if env.get("SERVETRIAGE_MIN_CONFIDENCE"):
            kw["min_confidence"] = _number(env, "SERVETRIAGE_MIN_CONFIDENCE", float)
        if env.get("SERVETRIAGE_EMBEDDINGS"):
            kw["embeddings"] = _flag(env, "SERVETRIAGE_EMBEDDINGS")
        if env.get("SERVETRIAGE_MODEL_DIR"):
            kw["embedder_path"] = Path(env["SERVETRIAGE_MODEL_DIR"])
        if env.get("SERVETRIAGE_THREADS"):
            kw["threads"] = int(_number(env, "SERVETRIAGE_THREADS", int))
        for field, var in (("slack_bot_token", "SLACK_BOT_TOKEN"), ("slack_app_token", "SLACK_APP_TOKEN"),
                           ("slack_signing_secret", "SLACK_SIGNING_SECRET")):
            if env.get(var):
                kw[field] = env[var]
        if env.get("SLACK_API_URL"):
            url = env["SLACK_API_URL"]
            kw["slack_api_url"] = url if url.endswith("/") else url + "/"
        if env.get("SERVETRIAGE_HOST"):
            kw["host"] = env["SERVETRIAGE_HOST"]
        if env.get("SERVETRIAGE_PORT"):
            kw["port"] = int(_number(env, "SERVETRIAGE_PORT", int))
        if env.get("SERVETRIAGE_CHANNELS"):
            kw["channels"] = tuple(c.strip() for c in env["SERVETRIAGE_CHANNELS"].split(",") if c.strip())
        if env.get("SERVETRIAGE_WORKERS"):
            kw["workers"] = int(_number(env, "SERVETRIAGE_WORKERS", int))
        if env.get("SERVETRIAGE_LOG_FORMAT"):
            kw["log_format"] = env["SERVETRIAGE_LOG_FORMAT"].strip().lower()
        if env.get("SERVETRIAGE_QUEUE_DEPTH"):
            kw["queue_depth"] = int(_number(env, "SERVETRIAGE_QUEUE_DEPTH", int))
        if env.get("SERVETRIAGE_CHANNEL_RATE"):
            kw["channel_rate_per_minute"] = int(_number(env, "SERVETRIAGE_CHANNEL_RATE", int))
        if env.get("SERVETRIAGE_TRAINERS"):
            kw["trainer_allowlist"] = tuple(u.strip() for u in env["SERVETRIAGE_TRAINERS"].split(",") if u.strip())
        settings = cls(**kw)  # type: ignore[arg-type]
        settings.validate()
        return settings

    def validate(self) -> None:
        if self.max_input_bytes <= 0:
            raise ConfigError("SERVETRIAGE_MAX_INPUT_MB must be positive")
        if self.min_confidence is not None and not 0.0 <= self.min_confidence <= 1.0:
            raise ConfigError("SERVETRIAGE_MIN_CONFIDENCE must be between 0 and 1")
        if not 0 < self.port < 65536:
            raise ConfigError("SERVETRIAGE_PORT must be a TCP port (1-65535)")
        if self.database_url is not None and not self.database_url.startswith(("postgresql://", "postgres://")):
            raise ConfigError("SERVETRIAGE_DATABASE_URL must be a postgresql:// URL (unset it for SQLite)")
        if self.workers < 1 or self.threads < 1:
            raise ConfigError("SERVETRIAGE_WORKERS and SERVETRIAGE_THREADS must be at least 1")
        if self.log_format not in ("text", "json"):
            raise ConfigError("SERVETRIAGE_LOG_FORMAT must be text or json")
        if self.queue_depth < 1:
            raise ConfigError("SERVETRIAGE_QUEUE_DEPTH must be at least 1")
        for name, url, schemes in (("SERVETRIAGE_PUBLIC_URL", self.public_url, ("http", "https")),
                                    ("SERVETRIAGE_MANUAL_URL", self.manual_url, ("http", "https", "file"))):
            scheme, sep, rest = (url or "").partition("://")
            if url is not None and (scheme not in schemes or not sep or not rest or any(ch.isspace() for ch in url)):
                raise ConfigError(f"{name} must be an {' or '.join(s + '://' for s in schemes)} URL, got {url!r}")


def _number(env: Mapping[str, str], name: str, kind: Callable[[str], float]) -> float:
    try:
        return kind(env[name])
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {env[name]!r}") from None


def _flag(env: Mapping[str, str], name: str) -> bool:
    value = env[name].strip().lower()
    if value in {"1", "on", "true", "yes"}:
        return True
    if value in {"0", "off", "false", "no"}:
        return False
    raise ConfigError(f"{name} must be on or off, got {env[name]!r}")
