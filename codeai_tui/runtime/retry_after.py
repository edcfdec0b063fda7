"""What a provider's answer says about waiting, and which of its headers the ledger keeps.

Kept headers are an allow-list, never a deny-list: a provider may add any header (a
session cookie, an echo of the credential), and only names known to carry no secret
reach the ledger. Values are untrusted text: shortened and limited to printable ASCII.

`Retry-After` (RFC 9110 section 10.2.3) is delay-seconds or an HTTP-date;
`retry-after-ms` (sent by OpenAI and Anthropic, read first by their SDKs) is
milliseconds. An HTTP-date is measured against the answer's own `Date` header when it
has one, so a skewed local clock does not change the wait.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# Never "authorization", "cookie", "set-cookie", "proxy-authorization", "x-api-key"...
KEPT_HEADERS = ("retry-after", "retry-after-ms", "x-request-id", "request-id",
                "openai-processing-ms")
MAX_HEADER_VALUE = 200
# The default bound on one wait: longer than any provider's usual back-off hint, short
# enough that an operator watching a resume is not left guessing.
MAX_RETRY_WAIT_S = 30.0


def kept_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed headers of an answer (lower-case names), values made safe."""
    kept: dict[str, str] = {}
    lowered = {name.lower(): value for name, value in headers.items()}
    for name in KEPT_HEADERS:
        value = lowered.get(name)
        if value is None:
            continue
        safe = "".join(ch for ch in value if " " <= ch <= "~")[:MAX_HEADER_VALUE]
        kept[name] = safe
    return kept


@dataclass(frozen=True, slots=True)
class RetryAfter:
    """The wait an answer asks for: `seconds` is None when it asks none (or is unreadable)."""

    seconds: float | None
    source: str | None = None  # the header it came from
    problem: str | None = None  # why a header present was not usable


def _non_negative(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def parse_retry_after(headers: Mapping[str, str],
                      now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> RetryAfter:
    """The asked wait from `retry-after-ms`, else `Retry-After` (seconds or HTTP-date)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    problems: list[str] = []
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        value = _non_negative(ms)
        if value is not None:
            return RetryAfter(value / 1000.0, "retry-after-ms")
        problems.append("retry-after-ms unreadable")
    text = lowered.get("retry-after")
    if text is not None:
        seconds = _non_negative(text)
        if seconds is not None:
            return RetryAfter(seconds, "retry-after")
        at = _http_date(text)
        if at is not None:
            reference = _http_date(lowered.get("date", "")) or now()
            return RetryAfter(max(0.0, (at - reference).total_seconds()), "retry-after")
        problems.append("retry-after unreadable")
    return RetryAfter(None, problem="; ".join(problems) or None)


def _http_date(text: str) -> datetime | None:
    try:
        parsed = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if parsed.tzinfo is None:  # "-0000" or no zone: HTTP-dates are always GMT
        parsed = parsed.replace(tzinfo=UTC)
    return parsed
