"""3 Calls: every call's verdict; the list never promises what resume would refuse."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence

from textual.reactive import reactive

from codeai_tui.app.widgets.cells import EFFECT_UNKNOWN_TEXT, WARN, cell
from codeai_tui.app.widgets.pane import Pane, TitlePart
from codeai_tui.app.widgets.sources import LazySource
from codeai_tui.app.widgets.table import Column, Row
from codeai_tui.console.drift import DriftCheck, DriftStatus
from codeai_tui.console.evidence import short_phrase
from codeai_tui.console.filters import call_fields
from codeai_tui.console.model import CaseSnapshot, Skeleton, SkeletonCall
from codeai_tui.console.tools import summary as tool_summary
from codeai_tui.workstate import CallStage, CallState
from codeai_tui.workstate.positions import places_of

CALL_COLUMNS = [
    Column("call", 12, ident=True),
    Column("key", 9, ident=True),
    Column("stage", 17),
    Column("verdict", 34),
    Column("provider's log", 18),  # what the receipts say about the verdict's attempt
    Column("next operation", 16),
    Column("att", 3),
    Column("effect", 8),
    Column("superseded by / resumed from", 24),
]

HAPPENED_RISK_TEXT = f"{WARN} effect happened: duplicate risk"

RESUMABLE_TEXT = {
    DriftStatus.NOT_CHECKED: "\u25b7 start_call \u00b7 drift not checked yet",
    DriftStatus.MATCH: "\u25b6 resumable: request matches",
    DriftStatus.NO_CHECK_POSSIBLE: "\u25b6 resumable \u00b7 no drift check possible",
    DriftStatus.DRIFT: "\u2716 drift: resume refuses",
    DriftStatus.UNAVAILABLE: f"{WARN} start_call \u00b7 cannot plan",
}


def drift_status(call: CallState, checks: Mapping[str, DriftCheck]) -> DriftStatus:
    check = checks.get(call.call_id)
    if check is None or check.last_seq != call.last_seq:
        return DriftStatus.NOT_CHECKED
    return check.status


def needs_look(item: object) -> bool:
    """What `e` stops at (`CallState.needs_a_look`); a skeleton's call, before the
    projection: its effect unknown."""
    if isinstance(item, CallState):
        return item.needs_a_look
    return bool(getattr(item, "effect_unknown", False))


def call_row(call: CallState, checks: Mapping[str, DriftCheck],
             snap: CaseSnapshot | None = None) -> Row:
    if call.effect_unknown:
        risk, tone = EFFECT_UNKNOWN_TEXT, "error"
    elif call.duplicate_effect_risk:  # received (reconciled): the next send duplicates
        risk, tone = HAPPENED_RISK_TEXT, "error"
    elif call.resumable:
        status = drift_status(call, checks)
        risk = RESUMABLE_TEXT[status]
        tone = {DriftStatus.DRIFT: "warn", DriftStatus.UNAVAILABLE: "warn",
                DriftStatus.NOT_CHECKED: ""}.get(status, "ok")
    elif call.anomalous:
        risk, tone = f"{WARN} anomaly", "warn"
    elif call.has_tools and (pending := tool_summary(call.tools)):
        risk, tone = pending  # docs/tools.md: the call's tool operations
    else:
        risk, tone = "", ""
    if call.superseded_by:
        link = f"\u2192 superseded by {cell(call.superseded_by)}"
        tone = tone or "dim"
    elif call.resumed_from:
        link = f"\u2190 resumed from {cell(call.resumed_from)}"
    else:
        link = ""
    return Row(call.call_id, (cell(call.call_id), cell(call.idempotency_key or ""),
                              call.stage.value, risk, cell(short_phrase(call, snap)),
                              call.next_operation.value,
                              str(call.attempts), call.provider_effect.value, link), tone)


READING = "reading\u2026"
_MAY_RESUME = (CallStage.REQUESTED, CallStage.MANIFEST_RECORDED)


def skeleton_row(call: SkeletonCall) -> Row:
    """A call before the projection: what its kinds decide, and "reading…" for what a
    payload decides (key, links; resumable or not: an anomaly may forbid it)."""
    if call.stage is None:
        return Row(call.call_id, (cell(call.call_id), "", READING, READING,
                                  READING if call.attempts else "", READING,
                                  str(call.attempts), READING, ""), "dim")
    if call.effect_unknown:
        risk, tone = EFFECT_UNKNOWN_TEXT, "error"
    elif call.stage in _MAY_RESUME:
        risk, tone = READING, "dim"
    else:
        risk, tone = "", ""
    link = READING if call.stage is CallStage.SUPERSEDED else ""
    op, effect = call.next_operation, call.provider_effect
    log = READING if call.attempts else ""  # the receipt log is read with the projection
    return Row(call.call_id, (cell(call.call_id), "", call.stage.value, risk, log,
                              op.value if op is not None else READING, str(call.attempts),
                              effect.value if effect is not None else READING, link), tone)


def skeleton_fields(call: SkeletonCall) -> tuple[str, ...]:
    """What a skeleton row shows, for the filter (the same rule as every pane)."""
    return skeleton_row(call).cells + (
        "effect unknown duplicate risk" if call.effect_unknown else "",)


class CallsPane(Pane):
    TITLE = "Calls"
    KEY = "3"

    drift: reactive[dict[str, DriftCheck]] = reactive(dict, always_update=True, init=False,
                                                       repaint=False)
    # painted while `snapshot` is None: every call's stage before the projection
    skeleton: reactive[Skeleton | None] = reactive(None, always_update=True, init=False,
                                                   repaint=False)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(CALL_COLUMNS, empty_text="no calls", **kwargs)  # type: ignore[arg-type]

    def watch_drift(self) -> None:
        self.paint()

    def watch_skeleton(self) -> None:
        self.paint()

    def paint(self) -> None:
        snap = self.snapshot
        if snap is None and self.skeleton is not None:
            self._paint_skeleton(self.skeleton)
            return
        calls = snap.state.calls if snap else ()
        checks = dict(self.drift)
        build: Callable[[CallState], Row] = lambda c: call_row(c, checks, snap)  # noqa: E731
        needle = self.needle
        indices = self.filtered(
            calls, (lambda i: needle.matches(call_fields(calls[i]))) if needle is not None
            else bool, self.snapshot_scope())
        lookup = (lambda key: snap.call_index.get(key)) if snap is not None else None
        self.set_source(LazySource(calls, build, lambda c: c.call_id, indices, lookup))
        super().paint()

    def _paint_skeleton(self, skeleton: Skeleton) -> None:
        """The skeleton's rows; a filter matches what they show."""
        calls = skeleton.calls
        needle = self.needle
        indices = self.filtered(
            calls, (lambda i: needle.matches(skeleton_fields(calls[i]))) if needle is not None
            else bool, skeleton)
        self.set_source(LazySource(calls, skeleton_row, lambda c: c.call_id, indices))
        super().paint()

    def rows_known(self) -> bool:
        return self.snapshot is not None or self.skeleton is not None

    def title_marks(self) -> list[TitlePart]:
        snap = self.snapshot
        unknown = snap.unknown_ids if snap is not None else (
            self.skeleton.effect_unknown_ids if self.skeleton is not None else ())
        if unknown:
            return [(f" {WARN} {len(unknown)} effect unknown", "bold $error")]
        return []

    def call_at_cursor(self) -> CallState | None:
        """The verdict under the cursor (None on a skeleton row: nothing acts on those)."""
        source = self.source
        item = source.item_at(self.cursor) if isinstance(source, LazySource) else None
        return item if isinstance(item, CallState) else None

    def skeleton_call_at_cursor(self) -> SkeletonCall | None:
        """The skeleton's call under the cursor, before the projection: shown to the
        operator (the verdict line, the detail), never acted on."""
        source = self.source
        item = source.item_at(self.cursor) if isinstance(source, LazySource) else None
        return item if isinstance(item, SkeletonCall) else None

    def _rows_to_look(self) -> Sequence[int] | None:
        """The rows `e` stops at, rising, from the snapshot's positions of the calls to
        look at: with no filter a row is its call's position; under one, the rows whose
        positions are among them. None before the projection: look row by row (reading
        each call took 0.19 s a pass at 137,000 calls, ~2 s at 1.37M)."""
        snap, source = self.snapshot, self.source
        if snap is None or not isinstance(source, LazySource) \
                or source.items is not snap.state.calls:
            return None
        positions = snap.state.positions_to_look()
        if source.indices is None:
            return positions
        return places_of(positions, source.indices)

    def next_effect_unknown(self) -> bool:
        """Move to the next effect_unknown call (or call with a tool operation of unknown
        effect) after the cursor (wrapping), if any."""
        source = self.source
        if not isinstance(source, LazySource) or not len(source):
            return False
        rows = self._rows_to_look()
        if rows is None:
            index = source.find(self.cursor, needs_look)
        else:
            after = bisect_right(rows, self.cursor)
            index = rows[after] if after < len(rows) else (rows[0] if rows else None)
        if index is None:
            return False
        self.move_to(index)
        return True

    def first_effect_unknown(self) -> bool:
        source = self.source
        if not isinstance(source, LazySource):
            return False
        rows = self._rows_to_look()
        index = source.first(needs_look) if rows is None else (rows[0] if rows else None)
        if index is None:
            return False
        self.move_to(index)
        return True

    def is_last_effect_unknown(self) -> bool:
        """No effect_unknown call below the cursor: `e` moves on to the next case."""
        source = self.source
        if not isinstance(source, LazySource):
            return True
        rows = self._rows_to_look()
        if rows is not None:
            return bisect_right(rows, self.cursor) == len(rows)
        for i in range(self.cursor + 1, len(source)):
            item = source.item_at(i)
            if item is not None and needs_look(item):
                return False
        return True
