"""6 Receipts: the provider's log, each line covered, uncovered or duplicated; the
receipts matching the selected call are marked ◆ (`linked`, set from above)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence

from textual.reactive import reactive

from codeai_tui.app.widgets.cells import (
    DUPLICATE_MARK,
    DUPLICATE_TEXT,
    UNCOVERED_MARK,
    UNCOVERED_TEXT,
    cell,
    clock_part,
    short_hash,
)
from codeai_tui.app.widgets.pane import Pane, TitlePart
from codeai_tui.app.widgets.sources import LazySource
from codeai_tui.app.widgets.table import Column, Row
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.ledger import Receipt
from codeai_tui.workstate.receipts import duplicate_group

LINK_MARK = "\u25c6"
RECEIPT_COLUMNS = [Column(LINK_MARK, 1), Column("receipt", 7), Column("mark", 11),
                   Column("covered by", 9), Column("key", 8), Column("time", 8), Column("body", 8)]


def receipt_key(r: Receipt) -> str:
    return f"{r.line_no}:{r.receipt_id}"


def receipt_row(r: Receipt, covered_by: str | None, duplicate: bool,
                linked: bool = False) -> Row:
    cover = cell(covered_by) if covered_by is not None else "\u2014 none"
    if duplicate:
        mark, tone = DUPLICATE_MARK, "error"
    elif covered_by is None:
        mark, tone = UNCOVERED_MARK, "error"
    else:
        mark, tone = "\u2714 covered", ""
    return Row(receipt_key(r), (LINK_MARK if linked else "", cell(r.receipt_id), mark, cover,
                                cell(r.idempotency_key), clock_part(r.received_at),
                                short_hash(r.body_sha256, 7)), tone)


def receipt_lookup(receipts: Sequence[Receipt]) -> Callable[[str], int | None]:
    """A receipt row's position from its key, by bisecting on the line number (a log's
    receipts are in line order): no key -> position dict of 140,000 strings (17 MB)."""

    def lookup(key: str) -> int | None:
        line, _, rid = key.partition(":")
        if not line.isdigit():
            return None
        at = bisect_left(receipts, int(line), key=lambda r: r.line_no)
        if at < len(receipts) and receipt_key(receipts[at]) == key:
            return at
        return None

    return lookup


def receipt_builder(snapshot: CaseSnapshot, linked: frozenset[str] = frozenset()
                    ) -> Callable[[Receipt], Row]:
    """A receipt's row; a line is marked a duplicate when it is in a duplicate group (by
    its place in the log, found once for its cover and its group: asked per row drawn,
    not gathered for every group per paint)."""
    log = snapshot.state.receipts.covered_by.receipts
    row_at = receipt_row_at(snapshot, linked)

    def build(r: Receipt) -> Row:
        at = log.position_of(r)
        if at is None:  # (not a line of the check's log)
            return receipt_row(r, None, False, r.receipt_id in linked)
        return row_at(at)

    return build


def receipt_row_at(snapshot: CaseSnapshot, linked: frozenset[str] = frozenset()
                   ) -> Callable[[int], Row]:
    """The row of the check's log's receipt at a position: what a filter's scan of every
    row asks (finding each receipt's place again cost half the scan)."""
    check = snapshot.state.receipts
    covers, duplicates = check.covered_by, check.duplicates
    log = covers.receipts

    def row_at(at: int) -> Row:
        r = log[at]
        return receipt_row(r, covers.attempts[at],
                           duplicate_group(duplicates, r, (log, at)) is not None,
                           r.receipt_id in linked)

    return row_at


class ReceiptsPane(Pane):
    TITLE = "Receipts"
    KEY = "6"

    # the receipts matching the selected call (and which call), marked in the rows
    linked: reactive[tuple[str | None, frozenset[str]]] = reactive(
        (None, frozenset()), init=False)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(RECEIPT_COLUMNS, empty_text="no provider receipts", **kwargs)  # type: ignore[arg-type]

    def watch_linked(self) -> None:
        self.paint()

    def paint(self) -> None:
        snap = self.snapshot
        if snap is None:
            self.set_source(LazySource((), lambda r: Row("", ()), receipt_key))
        else:
            build = receipt_builder(snap, self.linked[1])
            items = snap.receipts.receipts
            if items is snap.state.receipts.covered_by.receipts:  # (the check's own log)
                shown = self.filtered(items, self.row_matcher(
                    receipt_row_at(snap, self.linked[1])), self.snapshot_scope())
            else:
                shown = self.rows_filtered(items, build)
            self.set_source(LazySource(items, build, receipt_key, shown,
                                       receipt_lookup(items)))
        super().paint()

    def title_marks(self) -> list[TitlePart]:
        if self.snapshot is None:
            return []
        check = self.snapshot.state.receipts
        marks: list[TitlePart] = []
        if check.duplicates:
            marks.append((f" {DUPLICATE_TEXT} \u00d7{len(check.duplicates)}", "bold $error"))
        if check.uncovered:
            marks.append((f" {UNCOVERED_TEXT} \u00d7{len(check.uncovered)}", "bold $error"))
        call_id, linked = self.linked
        if call_id is not None and linked:
            marks.append((f" {LINK_MARK} {len(linked)} match {cell(call_id, 16)}", "bold"))
        return marks

    def receipt_at_cursor(self) -> Receipt | None:
        source = self.source
        return source.item_at(self.cursor) if isinstance(source, LazySource) else None
