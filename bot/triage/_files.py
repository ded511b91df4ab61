"""Slack files to `LogText`: check the type and size, then stream the download under the limit.

The download uses the bot token (Slack's `url_private_download` needs it) and is decoded by the
classifier's `from_stream` while it arrives, so a 200 MB file never sits twice in memory and an
oversized one is dropped as soon as it crosses the limit. Every way this can fail becomes a
`Problem` whose reply is said in the thread.
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from typing import TYPE_CHECKING

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from servetriage._errors import InputError, InputTooLarge

from ..render import notices
from ._job import SlackFile
from ._problem import Problem

if TYPE_CHECKING:
    from servetriage.classifier import LogText

log = logging.getLogger(__name__)

TEXT_SUFFIXES = frozenset({".log", ".txt", ".text", ".out", ".err", ".gz", ".zip", ".jsonl", ".json", ".trace"})
TEXT_FILETYPES = frozenset({"text", "gzip", "zip", "log", "plain"})
ARCHIVE_MIMETYPES = frozenset({"application/gzip", "application/x-gzip", "application/zip",
                               "application/x-zip-compressed", "application/json", "application/x-ndjson"})
MEDIA_PREFIXES = ("image/", "video/", "audio/")
DOWNLOAD_TIMEOUT_S = 30
SIZE_MARGIN = 1 << 20  # Slack's `size` is the stored (maybe gzip) size: refuse early only well past the limit


def is_media(f: SlackFile) -> bool:
    return f.mimetype.startswith(MEDIA_PREFIXES)


def is_text_like(f: SlackFile) -> bool:
    return (f.suffix in TEXT_SUFFIXES or f.filetype in TEXT_FILETYPES or f.mimetype.startswith("text/")
            or f.mimetype in ARCHIVE_MIMETYPES)


class FileReader:
    """Reads one Slack file into a `LogText`, or raises `Problem`."""

    def __init__(self, client: WebClient, token: str, limit: int) -> None:
        self._client = client
        self._token = token
        self.limit = limit

    def resolve(self, f: SlackFile) -> SlackFile:
        """Fill a partial file object (no download URL, `check_file_info`) with `files.info`."""
        if not f.partial:
            return f
        try:
            resp = self._client.files_info(file=f.id)
        except SlackApiError as exc:
            error = str(exc.response.get("error", ""))
            why = "it is no longer available (deleted, or not shared with me)" if error == "file_not_found" \
                else f"Slack said `{error or 'error'}` when I asked about it"
            raise Problem(notices.download_failed(f.name, why)) from None
        except (SlackClientError, OSError) as exc:
            raise Problem(notices.download_failed(f.name, f"Slack could not be reached ({type(exc).__name__})")) from None
        full = SlackFile.from_payload(resp.get("file") or {})
        return full if full.url else SlackFile(f.id, f.name, f.mimetype, f.filetype, f.size, f.url, partial=False)

    def check(self, f: SlackFile) -> None:
        if not is_text_like(f):
            kind = f"a {f.filetype or f.mimetype or 'binary'} file"
            raise Problem(notices.unsupported(f.name, kind), quiet=is_media(f))
        if f.size is not None and f.size > self.limit + SIZE_MARGIN:
            raise Problem(notices.too_large(f.name, self.limit))
        if not f.url:
            raise Problem(notices.download_failed(f.name, "Slack gave no download link for it"))

    def read(self, f: SlackFile) -> LogText:
        """Download a resolved, checked file and decode it; `from_stream` enforces the limit while reading."""
        from servetriage.classifier import from_stream  # noqa: PLC0415 (the decoder lives with the engine)

        request = urllib.request.Request(f.url or "", headers={"Authorization": f"Bearer {self._token}"})
        try:
            with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as resp:
                ctype = resp.headers.get("Content-Type", "")
                if ctype.startswith("text/html"):
                    raise Problem(notices.download_failed(
                        f.name, "Slack answered with a login page; the app needs the `files:read` scope."))
                length = resp.headers.get("Content-Length")
                if length and length.isdigit() and int(length) > self.limit + SIZE_MARGIN:
                    raise Problem(notices.too_large(f.name, self.limit))
                return from_stream(resp, f.name, self.limit)
        except InputTooLarge:
            raise Problem(notices.too_large(f.name, self.limit)) from None
        except InputError as exc:
            raise Problem(notices.download_failed(f.name, _after_name(str(exc), f.name))) from None
        except urllib.error.HTTPError as exc:
            why = {401: "Slack refused the bot token (HTTP 401).",
                   403: "Slack refused the download (HTTP 403); the app needs `files:read` and to be in the channel.",
                   404: "the file is gone (HTTP 404)."}.get(exc.code, f"the download failed (HTTP {exc.code}).")
            raise Problem(notices.download_failed(f.name, why)) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            log.warning("download of %s failed: %s", f.name, reason)
            raise Problem(notices.download_failed(f.name, f"the download failed ({_short(reason)}).")) from None


def _after_name(message: str, name: str) -> str:
    prefix = f"{name}: "
    return message[len(prefix):] if message.startswith(prefix) else message


def _short(reason: object) -> str:
    text = str(reason) or type(reason).__name__
    return text.splitlines()[0][:120]
