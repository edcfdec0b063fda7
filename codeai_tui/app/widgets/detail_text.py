"""The detail pane's text: redacted, sanitised, pygments-highlighted JSON.

Order matters: secrets are redacted on the object, hashes are shortened (the full value
is one key away: `h`), the JSON text then goes through `textsafe.visible` before it is
tokenised, and the result is a Rich `Text` (never markup). Sizes and times get a
humanized comment at the end of their line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import humanize
from pygments.lexers.data import JsonLexer
from pygments.token import Keyword, Name, Number, Punctuation, String, Token
from rich.style import Style
from rich.text import Text

from codeai_tui.console.model import parse_time
from codeai_tui.textsafe import redact, visible

_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")
_SIZE_LINE = re.compile(r'^\s*"(size|bytes|[a-z_]*_bytes)": (\d+),?$')
_TIME_LINE = re.compile(r'^\s*"([a-z_]*_at)": "([^"]+)",?$')
_LEXER = JsonLexer()
MAX_DETAIL_CHARS = 60_000


def shorten_hashes(value: Any) -> Any:
    """Every 64-hex string -> its first 12 characters and an ellipsis."""
    if isinstance(value, dict):
        return {k: shorten_hashes(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [shorten_hashes(v) for v in value]
    if isinstance(value, str) and _HEX64.match(value):
        return value[:12] + "\u2026"
    return value


def ago(text: str | None, now: datetime) -> str:
    dt = parse_time(text) if text else None
    if dt is None:
        return "unknown"
    delta = now - dt
    if delta.total_seconds() < 0:
        return "in the future (" + humanize.naturaldelta(-delta) + ")"
    return humanize.naturaltime(delta)


def _token_styles(palette: dict[str, str]) -> Callable[[Any], Style]:
    styles = {
        Name.Tag: Style.parse(palette.get("key", "bold")),
        String: Style.parse(palette.get("string", "")),
        Number: Style.parse(palette.get("number", "")),
        Keyword: Style.parse(palette.get("literal", "")),
        Punctuation: Style.parse(palette.get("punct", "dim")),
    }

    def lookup(token: Any) -> Style:
        while token is not Token:
            style = styles.get(token)
            if style is not None:
                return style
            token = token.parent
        return Style()

    return lookup


def highlight_json(obj: Any, *, palette: dict[str, str], now: datetime,
                   full_hashes: bool = False) -> Text:
    safe_obj = redact(obj)
    if not full_hashes:
        safe_obj = shorten_hashes(safe_obj)
    raw = json.dumps(safe_obj, indent=2, ensure_ascii=False, default=str)
    if len(raw) > MAX_DETAIL_CHARS:  # a 10 MB payload must not freeze the pane
        cut = len(raw) - MAX_DETAIL_CHARS
        raw = raw[:MAX_DETAIL_CHARS] + f"\n\u2026 {cut:,} more characters not shown"
    notes: dict[int, str] = {}
    for n, line in enumerate(raw.split("\n")):
        m = _SIZE_LINE.match(line)
        if m:
            notes[n] = humanize.naturalsize(int(m.group(2)), binary=True)
            continue
        m = _TIME_LINE.match(line)
        if m and parse_time(m.group(2)):
            notes[n] = ago(m.group(2), now)
    text = visible(raw)
    style_of = _token_styles(palette)
    out = Text()
    for token, value in _LEXER.get_tokens(text):
        out.append(value, style_of(token))
    if notes:
        lines = out.split("\n", allow_blank=True)
        out = Text()
        note_style = Style.parse(palette.get("note", "dim italic"))
        for n, line in enumerate(lines):
            if n:
                out.append("\n")
            out.append_text(line)
            if n in notes:
                out.append(f"   # {notes[n]}", note_style)
    out.rstrip()
    return out


def detail_text(
    title: str,
    lines: Sequence[tuple[str, str]],
    obj: Any,
    *,
    palette: dict[str, str],
    now: datetime,
    full_hashes: bool,
) -> Text:
    """A title, labelled summary lines (already sanitised), then the JSON."""
    out = Text()
    out.append(visible(title, one_line=True), Style(bold=True))
    out.append("\n")
    for label, value in lines:
        out.append(f"{label}: ", Style(bold=True))
        style = Style.parse(palette["danger"]) if label.startswith("\u26a0") else Style()
        out.append(visible(value, one_line=True), style)
        out.append("\n")
    out.append("\n")
    out.append_text(highlight_json(obj, palette=palette, now=now, full_hashes=full_hashes))
    hint = "h: shorten hashes" if full_hashes else "h: show full hashes"
    out.append("\n\n" + hint, Style(dim=True))
    return out
