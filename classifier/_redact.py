"""Masking secrets before a line is shown, stored or embedded.

detect-secrets' own detectors supply the patterns it maintains (Slack, AWS, GitHub, JWT, Stripe,
basic-auth URLs, …); we add the tokens LLM-serving logs leak most (Hugging Face, OpenAI-style keys,
bearer headers, `--api-key` flags) and whole private-key blocks.
"""

from __future__ import annotations

import functools
import re
from re import Pattern

MASK = "[REDACTED]"

_OWN_PATTERNS = (
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    r"\bxox[abposr]-[A-Za-z0-9-]{8,}",
    r"\bxapp-\d-[A-Za-z0-9-]{8,}",
    r"\bhf_[A-Za-z0-9]{20,}",
    r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{20,}",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{22,}",
    r"\bglpat-[A-Za-z0-9_-]{20,}",
    r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
    r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{12,}",
    r"(?<=://)[^\s:/@]+:[^\s@/]+(?=@)",
)
# `key: value` and `--flag value` forms: keep the name so the reader knows what was there.
_ASSIGNMENT = re.compile(
    r"(?i)((?:api[_-]?key|access[_-]?key|secret(?:[_-]?key)?|auth[_-]?token|access[_-]?token|password|passwd|"
    r"hf[_-]?token|hugging_face_hub_token|openai_api_key|signing[_-]?secret|aws_secret_access_key)"
    r"[\"']?\s*(?:[:=]|\s)\s*[\"']?)([^\s\"',;]{6,})"
)


@functools.lru_cache(maxsize=1)
def _patterns() -> tuple[Pattern[str], ...]:
    """Compiled once per process (an explicit cache, filled on first use)."""
    found: list[Pattern[str]] = [re.compile(p) for p in _OWN_PATTERNS]
    for pattern in _detect_secrets_denylists():
        if pattern.pattern not in {p.pattern for p in found}:
            found.append(pattern)
    return tuple(found)


def _detect_secrets_denylists() -> list[Pattern[str]]:
    try:
        from detect_secrets.plugins import aws, basic_auth, github_token, jwt, slack, stripe  # noqa: PLC0415
    except ImportError:  # pragma: no cover - the dependency is declared; keep working without it
        return []
    out: list[Pattern[str]] = []
    for cls in (slack.SlackDetector, aws.AWSKeyDetector, github_token.GitHubTokenDetector,
                jwt.JwtTokenDetector, stripe.StripeDetector, basic_auth.BasicAuthDetector):
        out.extend(p for p in cls().denylist if isinstance(p, re.Pattern))
    return out


def _mask_group(match: re.Match[str]) -> str:
    if match.re.groups:
        # Patterns with a group (detect-secrets' basic-auth and AWS) mark the secret part only.
        start, end = match.span(match.re.groups)
        if start >= 0:
            whole = match.group(0)
            s, e = start - match.start(), end - match.start()
            return whole[:s] + MASK + whole[e:]
    return MASK


def redact(text: str) -> str:
    """Return `text` with every secret we recognise replaced by `[REDACTED]`."""
    if not text:
        return text
    for pattern in _patterns():
        text = pattern.sub(_mask_group, text)
    return _ASSIGNMENT.sub(lambda m: m.group(1) + MASK if m.group(2) != MASK else m.group(0), text)
