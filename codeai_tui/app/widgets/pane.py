"""A pane: a TableView that owns what it shows (snapshot, filter) and its title."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ClassVar, TypeVar

from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
from textual.worker import get_current_worker

from codeai_tui.app.widgets import filter_scan
from codeai_tui.app.widgets.cells import cell
from codeai_tui.app.widgets.filter_scan import FilterScans, Scanned, ScanRequest
from codeai_tui.app.widgets.table import Row, TableView
from codeai_tui.console.filters import Needle
from codeai_tui.console.model import CaseSnapshot

T = TypeVar("T")

TitlePart = str | tuple[str, str]

# what an empty pane says before its case is projected: "no calls" under a header that
# counts 400,000 events would read as a verdict (and the ledger may be unreadable, so
# not "reading…" either)
NOT_PROJECTED = "not projected yet"


class Pane(TableView):
    """Set `snapshot` and `needle` from above; the pane repaints itself."""

    TITLE: ClassVar[str] = ""
    KEY: ClassVar[str] = ""

    snapshot: reactive[CaseSnapshot | None] = reactive(None, always_update=True, init=False,
                                                        repaint=False)
    needle: reactive[Needle | None] = reactive(None, init=False, repaint=False)

    _title_parts: list[TitlePart] | None = None
    _subtitle: Content | None = None
    _known_drawn: bool | None = None  # `rows_known()` when last painted
    _scans: FilterScans | None = None  # a filter over many rows (app/widgets/filter_scan.py)
    _scan_timer: Timer | None = None

    def on_mount(self) -> None:
        self.paint()

    def watch_snapshot(self) -> None:
        self.paint()

    def watch_needle(self) -> None:
        self.paint()

    def paint(self) -> None:
        """Rebuild the source from `snapshot` and `needle`; subclasses fill rows."""
        known = self.rows_known()
        if known != self._known_drawn:  # an empty pane's message changes with it
            self._known_drawn = known
            self.refresh()
        self.paint_title()

    # ---- the filter

    def filtered(self, items: Sequence[Any], match_at: Callable[[int], bool], scope: object
                 ) -> list[int] | None:
        """The positions of `items` the filter keeps (`match_at(i)`; None: no filter). A
        few items are matched at once; many are scanned in a thread, the last scan of
        this filter and `scope` (the case, and as-of, the items are of) shown meanwhile."""
        needle = self.needle
        if needle is None or len(items) < filter_scan.IN_THREAD_FROM:
            self.drop_scans()
            return None if needle is None else [i for i in range(len(items)) if match_at(i)]
        if self._scans is None:
            self._scans = FilterScans()
        shown, start = self._scans.indices(ScanRequest(needle, scope, items, match_at,
                                                         len(items)))
        if start:
            self._schedule_scan()
        return shown

    def drop_scans(self) -> None:
        """No scan wanted (no filter, or few rows): one running stops, none is kept."""
        if self._scans is not None:
            self._scans.drop()

    def last_scan(self) -> Scanned | None:
        """The last finished scan of this filter and the snapshot's case and as-of."""
        done = self._scans.done if self._scans is not None else None
        if done is None or done.needle != self.needle or done.scope != self.snapshot_scope():
            return None
        return done

    def settle_scans(self) -> None:
        """The last finished scan is taken as it is (the pane matches later rows itself):
        no newer scan of this filter is wanted."""
        if self._scans is not None:
            self._scans.settle()

    def rows_filtered(self, items: Sequence[T], build: Callable[[T], Row]) -> list[int] | None:
        """`filtered` by the one filter rule, the needle's words in the cells the row
        shows, of the snapshot's items."""
        return self.filtered(items, self.row_matcher(lambda i: build(items[i])),
                             self.snapshot_scope())

    def row_matcher(self, row_at: Callable[[int], Row]) -> Callable[[int], bool]:
        """Whether the row at a position shows the needle's words (the one filter rule)."""
        needle = self.needle
        if needle is None:
            return bool
        return lambda i: needle.matches(row_at(i).cells)

    def snapshot_scope(self) -> object:
        """What the snapshot's items are of: its case and as-of."""
        snap = self.snapshot
        return None if snap is None else (snap.case_dir, snap.as_of)

    def filtering(self) -> bool:
        """Whether the rows shown wait for the first scan of this filter (the subtitle
        says so; later scans, of a followed case's newer snapshots, are not announced).
        A pane that scans its own way (the timeline's ledger scan) says so itself."""
        return self._scans is not None and self._scans.waiting()

    def _schedule_scan(self) -> None:
        if self._scans is None:
            return
        delay = self._scans.delay()
        if self._scan_timer is not None:
            if delay > 0:
                return  # (the scan about to begin takes the newest request)
            # a filter just typed does not wait out a newer snapshot's delay
            self._scan_timer.stop()
            self._scan_timer = None
        if delay > 0:
            self._scan_timer = self.set_timer(delay, self._begin_scan)
        else:
            self._begin_scan()

    def _begin_scan(self) -> None:
        self._scan_timer = None
        scans = self._scans
        if scans is None or scans.running or scans.wanted is None:
            return
        scans.running = True
        self.run_worker(partial(self._run_scan, scans, scans.wanted, scans.generation),
                        thread=True, group="filter-scan", exit_on_error=False)

    def _run_scan(self, scans: FilterScans, request: ScanRequest, generation: int) -> None:
        """In the worker thread: the scan, its end (or its error, in one line) handed to
        the screen's thread."""
        started, found, problem = time.monotonic(), None, None
        worker = get_current_worker()  # (cancelled when the pane or the app goes)
        try:
            found = scans.scan(request, generation, lambda: worker.is_cancelled)
        except Exception as exc:  # noqa: BLE001 - shown on the pane, never a traceback
            problem = filter_scan.one_line(exc)
        finally:  # (whatever happened: the pane's next scan waits for this one's end)
            with contextlib.suppress(RuntimeError):  # (the app is closing)
                self.app.call_from_thread(self._scan_ended, scans, request, generation,
                                          found, time.monotonic() - started, problem)

    def _scan_ended(self, scans: FilterScans, request: ScanRequest, generation: int,
                    found: list[int] | None, took: float, problem: str | None) -> None:
        if scans.ended(request, generation, found, took, problem):
            self._schedule_scan()
        self.paint()

    def filter_failure(self) -> str | None:
        """Why this filter's last scan of the snapshot's items failed, if it did."""
        if self._scans is None:
            return None
        return self._scans.failure(self.needle, self.snapshot_scope())

    def empty_message(self) -> str:
        if not self.rows_known():
            return NOT_PROJECTED
        if self.needle is not None:  # ("no receipts" under a filter would read as a fact)
            problem = self.filter_failure()
            if problem is not None:
                return f"the filter failed: {problem}"
            return "filtering\u2026" if self.filtering() else "no row matches the filter"
        return self.empty_text

    def rows_known(self) -> bool:
        """Whether the rows shown are the case's (else an empty pane says so)."""
        return self.snapshot is not None

    def title_count(self) -> int:
        """The count in the border title: the rows (a pane whose rows are not all
        items, such as Lanes with its task headers, counts its items)."""
        return self.row_count

    def title_marks(self) -> list[TitlePart]:
        """Warnings after the count in the border title."""
        return []

    def paint_title(self) -> None:
        """Set the border's title and subtitle where they changed: Textual redraws the
        whole pane on every set, which a live snapshot would otherwise cause in every
        pane."""
        count = f"{self.title_count():,}" if self.rows_known() else "\u2026"  # not 0: not known
        parts: list[TitlePart] = [f"{self.KEY} {self.TITLE}", f" ({count})"]
        parts += self.title_marks()
        if parts != self._title_parts:
            self._title_parts = parts
            self.border_title = Content.assemble(*parts)
        subtitle = self.subtitle()
        if not _same_content(subtitle, self._subtitle):
            self._subtitle = subtitle
            self.border_subtitle = subtitle

    def subtitle(self) -> Content | None:
        """The border's subtitle: the filter when one is set, else `idle_subtitle`."""
        if self.needle is not None:
            problem = self.filter_failure()
            busy: list[Any] = (
                [" \u00b7 ", ("filter failed", "bold $error")] if problem is not None
                else [" \u00b7 ", ("filtering\u2026", "bold")] if self.filtering() else [])
            return Content.assemble(("filter: ", "bold $warning"), cell(self.needle.text, 30),
                                    *busy, " \u00b7 esc clears")
        return self.idle_subtitle()

    def idle_subtitle(self) -> Content | None:
        return None


def _same_content(a: Content | None, b: Content | None) -> bool:
    """Same text and same spans (Content's own equality compares the text alone)."""
    if a is None or b is None:
        return a is b
    return a.plain == b.plain and list(a.spans) == list(b.spans)
