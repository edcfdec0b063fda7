"""Projection states -> table rows. The one place ledger text enters a pane.

Every id, kind, key and time from a ledger or receipt goes through `cell()`
(`textsafe.visible`, one line) here and nowhere else; the widgets draw plain text
segments, never markup. Danger is marked with a glyph and words, never colour alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from codeai_tui.app.widgets.table import Column, Row
from codeai_tui.console.model import CaseSnapshot, Worst
from codeai_tui.ledger import Event, Receipt
from codeai_tui.textsafe import visible
from codeai_tui.workstate import (
    CallState,
    CompilationState,
    NextOperation,
    TaskState,
)

T = TypeVar("T")

WARN = "\u26a0"  # ⚠
DUP = "\u29c9"  # ⧉
EFFECT_UNKNOWN_TEXT = f"{WARN} effect unknown: duplicate risk"
DUPLICATE_TEXT = f"{DUP} duplicate effect"
UNCOVERED_TEXT = f"{WARN} uncovered effect"
RESUMABLE_TEXT = "\u25b6 resumable"  # ▶
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
    """'2026-09-13T12:00:09.123Z' -> '12:00:09' (the date is in the detail pane)."""
    text = cell(recorded_at, 40)
    if "T" in text:
        return text.split("T", 1)[1][:8]
    return text[:8]


# ---------------------------------------------------------------- cases

CASE_COLUMNS = [Column("case", 15), Column("worst state", 18), Column("events", 6)]


def case_rows(
    cases: Sequence[Path], summaries: dict[Path, tuple[Worst, int] | str], root: Path,
    active: Path | None = None,
) -> list[Row]:
    rows: list[Row] = []
    for case in cases:
        try:
            name = str(case.relative_to(root)) if case != root else case.name
        except ValueError:
            name = str(case)
        name = ("\u25b8 " if case == active else "  ") + name  # ▸ the case on screen
        summary = summaries.get(case)
        if summary is None:
            cells = (cell(name), "\u2026 projecting", "")
            tone = "dim"
        elif isinstance(summary, str):
            cells = (cell(name), f"{WARN} unreadable", "")
            tone = "error"
        else:
            worst, count = summary
            label = worst.label
            tone = ""
            if worst.severity >= 5:
                label = f"{WARN} {label}"
                tone = "error"
            elif worst.severity >= 3:
                tone = "warn"
            cells = (cell(name), label, f"{count:,}")
        rows.append(Row(str(case), cells, tone))
    return rows


# ---------------------------------------------------------------- tasks

TASK_COLUMNS = [
    Column("task", 10),
    Column("next operation", 17),
    Column("subject", 10),
    Column("title", 30),
]


def task_row(task: TaskState) -> Row:
    tone = "" if task.next_operation is NextOperation.NONE else "warn"
    return Row(
        task.task_id,
        (cell(task.task_id), task.next_operation.value, cell(task.subject_id or ""),
         cell(task.title or "")),
        tone,
    )


# ---------------------------------------------------------------- calls

CALL_COLUMNS = [
    Column("call", 12),
    Column("key", 9),
    Column("stage", 17),
    Column("duplicate risk", 32),
    Column("next operation", 16),
    Column("att", 3),
    Column("effect", 8),
    Column("superseded by / resumed from", 28),
]


def call_row(call: CallState) -> Row:
    if call.effect_unknown or call.duplicate_effect_risk:
        risk, tone = EFFECT_UNKNOWN_TEXT, "error"
    elif call.resumable:
        risk, tone = RESUMABLE_TEXT, "ok"
    elif call.anomalous:
        risk, tone = f"{WARN} anomaly", "warn"
    else:
        risk, tone = "", ""
    if call.superseded_by:
        link = f"\u2192 superseded by {cell(call.superseded_by)}"
        tone = tone or "dim"
    elif call.resumed_from:
        link = f"\u2190 resumed from {cell(call.resumed_from)}"
    else:
        link = ""
    return Row(
        call.call_id,
        (
            cell(call.call_id),
            cell(call.idempotency_key or ""),
            call.stage.value,
            risk,
            call.next_operation.value,
            str(call.attempts),
            call.provider_effect.value,
            link,
        ),
        tone,
    )


class LazySource(Generic[T]):
    """Projection items whose rows are built only when drawn (140,000 calls is fine)."""

    def __init__(self, items: Sequence[T], build: Callable[[T], Row],
                 key: Callable[[T], str], indices: list[int] | None = None,
                 index: dict[str, int] | None = None) -> None:
        self.items = items
        self.build = build
        self.key = key
        self.indices = indices
        self._cache: dict[int, Row] = {}
        self._index = index if indices is None else None

    def __len__(self) -> int:
        return len(self.indices) if self.indices is not None else len(self.items)

    def item_at(self, index: int) -> T | None:
        if not 0 <= index < len(self):
            return None
        return self.items[self.indices[index] if self.indices is not None else index]

    def row(self, index: int) -> Row | None:
        cached = self._cache.get(index)
        if cached is None:
            item = self.item_at(index)
            if item is None:
                return None
            if len(self._cache) > 4096:
                self._cache.clear()
            cached = self._cache[index] = self.build(item)
        return cached

    def index_of(self, key: str) -> int | None:
        if self._index is None:
            self._index = {self.key(self.item_at(i)): i for i in range(len(self))}  # type: ignore[arg-type]
        return self._index.get(key)

    def find(self, start: int, pred: Callable[[T], bool], step: int = 1) -> int | None:
        """Next index after `start` (wrapping) whose item matches."""
        n = len(self)
        for k in range(1, n + 1):
            i = (start + step * k) % n
            item = self.item_at(i)
            if item is not None and pred(item):
                return i
        return None


class CallSource(LazySource[CallState]):
    def __init__(self, snapshot: CaseSnapshot | None, indices: list[int] | None = None) -> None:
        super().__init__(snapshot.state.calls if snapshot else (), call_row,
                         lambda c: c.call_id, indices,
                         snapshot.call_index if snapshot else {})

    def call_at(self, index: int) -> CallState | None:
        return self.item_at(index)


def filtered(items: Sequence[T], build: Callable[[T], Row], needle: str) -> list[int]:
    return [i for i, item in enumerate(items) if needle in " ".join(build(item).cells).lower()]


def call_matches(call: CallState, needle: str) -> bool:
    hay = " ".join(
        (call.call_id, call.idempotency_key or "", call.stage.value, call.next_operation.value,
         call.provider_effect.value, call.task_id, call.superseded_by or "",
         call.resumed_from or "", "effect unknown duplicate risk" if call.effect_unknown else "")
    ).lower()
    return needle in hay


# ---------------------------------------------------------------- compilations

COMPILATION_COLUMNS = [
    Column("compilation", 11),
    Column("stage", 9),
    Column("next op", 10),
    Column("offered", 7),
    Column("missing required", 24),
]


def compilation_row(comp: CompilationState) -> Row:
    missing = ", ".join(cell(m, 40) for m in comp.missing_required)
    tone = "warn" if comp.missing_required or comp.next_operation is not NextOperation.NONE else ""
    return Row(
        comp.compilation_id,
        (cell(comp.compilation_id), comp.stage.value, comp.next_operation.value,
         str(len(comp.offered)), (f"{WARN} " + missing) if missing else ""),
        tone,
    )


# ---------------------------------------------------------------- receipts

RECEIPT_COLUMNS = [
    Column("receipt", 7),
    Column("mark", 11),
    Column("covered by", 9),
    Column("key", 8),
    Column("time", 8),
    Column("body", 8),
]


def receipt_builder(snapshot: CaseSnapshot) -> Callable[[Receipt], Row]:
    """Rows for the receipt log, built when drawn (a provider log can be long too)."""
    check = snapshot.state.receipts
    dup_ids = {rid for group in check.duplicates for rid in group}

    def build(r: Receipt) -> Row:
        return receipt_row(r, check.covered_by.get(r.receipt_id), r.receipt_id in dup_ids)

    return build


def receipt_key(r: Receipt) -> str:
    return f"{r.line_no}:{r.receipt_id}"


def receipt_row(r: Receipt, covered_by: str | None, duplicate: bool) -> Row:
    cover = cell(covered_by) if covered_by is not None else "\u2014 none"
    if duplicate:
        mark, tone = DUPLICATE_MARK, "error"
    elif covered_by is None:
        mark, tone = UNCOVERED_MARK, "error"
    else:
        mark, tone = "\u2714 covered", ""
    return Row(
        receipt_key(r),
        (cell(r.receipt_id), mark, cover, cell(r.idempotency_key), clock_part(r.received_at),
         short_hash(r.body_sha256, 7)),
        tone,
    )


# ---------------------------------------------------------------- timeline

TIMELINE_COLUMNS = [
    Column("seq", 7),
    Column("time", 8),
    Column("kind", 22),
    Column("subject", 12),
]


def event_row(ev: Event, *, after_as_of: bool, danger: bool, anomaly: bool) -> Row:
    kind = cell(ev.kind, 60)
    tone = ""
    if anomaly or ev.payload_error:
        kind = f"{WARN} {kind}"
        tone = "warn"
    if danger:
        tone = "error"
    if after_as_of:
        tone = "dim"
    return Row(str(ev.seq), (f"{ev.seq:>7}", clock_part(ev.recorded_at), kind, cell(ev.subject)),
               tone)


def gap_row(seq: int) -> Row:
    return Row(str(seq), (f"{seq:>7}", "", f"{WARN} seq {seq} missing (gap)", ""), "warn")
