"""Untrusted text made safe to show, and secrets made safe to show.

Ids and payloads come from ledgers nobody here wrote. `Content` and Rich `Text` strip
only BEL, BS, VT, FF and CR, so ESC and C1 controls would reach the terminal (OSC 52
clipboard writes, OSC 8 links, window titles), and bidi overrides reorder what is
shown (Trojan Source). `visible()` is the single entry point that turns every such
character into a visible placeholder before any widget or printer sees the text.
Markup is a separate concern: callers never pass untrusted text through a markup
parser (use `Content(text)` / `markup=False`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# C0 except TAB and LF, DEL, C1; bidi embeddings/overrides/isolates; zero-width joiners
# that can hide text; line/paragraph separators that break row layouts.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u2028\u2029"
_UNSAFE_RE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}{_INVISIBLE}]")
_UNSAFE_ONE_LINE_RE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}{_INVISIBLE}]")

_NAMES = {"\x1b": "ESC", "\x7f": "DEL", "\x00": "NUL", "\r": "CR", "\n": "LF", "\t": "TAB"}


def _placeholder(match: re.Match[str]) -> str:
    ch = match.group(0)
    name = _NAMES.get(ch)
    if name:
        return f"\u27e8{name}\u27e9"  # ⟨ESC⟩
    return f"\u27e8U+{ord(ch):04X}\u27e9"


def visible(text: Any, *, one_line: bool = False, limit: int | None = None) -> str:
    """Untrusted value -> text with every control/bidi character shown as ⟨NAME⟩.

    `one_line` also replaces LF and TAB (for table cells and headers). `limit` cuts the
    result to that many characters, ending in an ellipsis.
    """
    s = text if isinstance(text, str) else ("" if text is None else str(text))
    s = (_UNSAFE_ONE_LINE_RE if one_line else _UNSAFE_RE).sub(_placeholder, s)
    if limit is not None and len(s) > limit:
        s = s[: max(0, limit - 1)] + "\u2026"
    return s


# ---------------------------------------------------------------------------- secrets

REDACTED = "\u2039redacted\u203a"  # ‹redacted›

# An allowlist we own: httpx hides only authorization/proxy-authorization in reprs,
# provider SDKs hide less. Any key whose name contains one of these words is a secret.
SECRET_HEADER_NAMES = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie"}
)
_SECRET_NAME_RE = re.compile(
    r"(key|token|secret|passw(or)?d|credential|auth|cookie|session)", re.IGNORECASE
)
_NOT_SECRET_NAMES = frozenset({"idempotency_key", "idempotency-key", "api_key_env"})
# Values that look like credentials wherever they appear.
_SECRET_VALUE_RE = re.compile(
    r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-[A-Za-z0-9_-]{12,}"
    r"|\b(xox[abprs]|ghp|gho|github_pat|AKIA)[A-Za-z0-9_-]{10,}"
)


def is_secret_name(name: str) -> bool:
    low = name.lower()
    if low in _NOT_SECRET_NAMES:
        return False
    return low in SECRET_HEADER_NAMES or bool(_SECRET_NAME_RE.search(low))


def redact_text(text: str) -> str:
    return _SECRET_VALUE_RE.sub(REDACTED, text)


def redact(value: Any) -> Any:
    """A deep copy of a JSON-like value with secret-named keys and secret-looking
    values replaced by ‹redacted›."""
    if isinstance(value, Mapping):
        return {
            # only text can be a credential: `max_tokens: 5` stays visible
            k: (REDACTED if isinstance(k, str) and isinstance(v, str) and v and is_secret_name(k)
                else redact(v))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: (REDACTED if is_secret_name(k) else v) for k, v in headers.items()}
