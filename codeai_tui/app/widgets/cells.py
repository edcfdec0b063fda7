"""The one place ledger text becomes a cell: `textsafe.visible`, one line.

Every id, kind, key and time from a ledger or receipt goes through `cell()` before a
pane draws it; the table draws plain segments, never markup. Danger is a glyph and
words, never colour alone.
"""

from __future__ import annotations

from typing import Any

from codeai_tui.textsafe import visible

WARN = "\u26a0"  # ⚠
DUP = "\u29c9"  # ⧉
EFFECT_UNKNOWN_TEXT = f"{WARN} effect unknown: duplicate risk"
DUPLICATE_TEXT = f"{DUP} duplicate effect"
UNCOVERED_TEXT = f"{WARN} uncovered effect"
DUPLICATE_MARK = f"{DUP} duplicate"
UNCOVERED_MARK = f"{WARN} uncovered"


def cell(value: Any, limit: int = 200) -> str:
    """Untrusted value -> one safe line (the single sanitising entry point for panes)."""
    return visible(value, one_line=True, limit=limit)


def short_hash(value: str | None, n: int = 12) -> str:
    if not value:
        return ""
    text = cell(value)
    return text if len(text) <= n else text[:n] + "\u2026"


def clock_part(recorded_at: str) -> str:
    """'2026-09-13T12:00:09.123Z' -> '12:00:09' (the date is in the detail view)."""
    text = cell(recorded_at, 40)
    if "T" in text:
        return text.split("T", 1)[1][:8]
    return text[:8]
