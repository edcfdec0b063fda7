"""5 Timeline: every event by seq, paged from the ledger on demand.

Row i is seq i+1 (seqs are gap-free by contract; a missing one draws as a gap row, an
anomaly). Only a bounded number of pages is kept; a missing page is read by key in an
async worker through aiosqlite (`ledger/areader.py`): page reads are ~1 ms of SQLite in
aiosqlite's own thread, so the event loop only awaits them. The filter scan and `n`/`N`
(a call's events) use the same reader. The pane owns the reader and closes it when it
is unmounted or shows another case.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from textual.content import Content
from textual.message import Message
from textual.reactive import reactive

from codeai_tui.app import messages as m
from codeai_tui.app.widgets.cells import WARN, cell, clock_part
from codeai_tui.app.widgets.lifecycle import finish_own_workers
from codeai_tui.app.widgets.pane import Pane
from codeai_tui.app.widgets.table import Column, Row
from codeai_tui.console.filters import Needle, event_fields
from codeai_tui.console.model import PROJECT_PAGE, TIMELINE_PAGE, CaseSnapshot
from codeai_tui.ledger import Event, LedgerError
from codeai_tui.ledger.areader import AsyncLedgerReader
from codeai_tui.textsafe import visible

# 4 pages x 256 events: ~20 screens of scrollback; each event with its payload is ~1 KB,
# and a page read by key costs ~1 ms, so a larger cache buys little and costs memory.
# A console following 1,000 events/s fills the cache within a second with the newest
# events (`put_recent`): with 8 pages it held ~2,000 of them, ~2 MB, and grew 9.4 MB
# (median of 3 peaks) in its first 90 s of following against 8.0 MB with 4 pages (3
# runs each, alternating; 2 pages: 7.7 MB). The pages on screen are used last
# (`event_at`), so the newest pages push out those no row has drawn since.
MAX_PAGES = 4
FILTER_SCAN_LIMIT = 100_000

TIMELINE_COLUMNS = [Column("seq", 7), Column("time", 8), Column("kind", 22),
                    Column("subject", 12, ident=True)]


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
    return Row(str(ev.seq), (f"{ev.seq:>7}", clock_part(ev.recorded_at), kind,
                             cell(ev.subject)), tone)


def gap_row(seq: int) -> Row:
    return Row(str(seq), (f"{seq:>7}", "", f"{WARN} seq {seq} missing (gap)", ""), "warn")


class Decorator:
    """What the projection says about an event's row (danger, anomaly, after as-of)."""

    def __init__(self, snapshot: CaseSnapshot | None, as_of: int | None) -> None:
        self.snapshot = snapshot
        self.as_of = as_of
        self._anomaly_seqs: set[int] | None = None

    def anomaly_seqs(self) -> set[int]:
        if self._anomaly_seqs is None:
            self._anomaly_seqs = (
                {a.seq for a in self.snapshot.state.anomalies} if self.snapshot else set())
        return self._anomaly_seqs

    def row(self, ev: Event) -> Row:
        danger = False
        if self.snapshot is not None and ev.call_id:
            call = self.snapshot.call(ev.call_id)
            danger = bool(call and call.effect_unknown and ev.kind == "attempt.started")
        return event_row(ev, after_as_of=self.as_of is not None and ev.seq > self.as_of,
                         danger=danger, anomaly=ev.seq in self.anomaly_seqs())


class TimelineSource:
    """All seqs 1..total; rows come from cached pages, missing pages are requested.

    A page read while the ledger grew says nothing of seqs beyond what existed when it
    was asked for: it keeps `known` (every seq up to it was committed before the read
    began, so an absent one is a real gap) and is read again when a later row is drawn.
    Its rows stay on screen meanwhile: a console following 1,000 events/s dropped the
    tail page at every snapshot and drew "loading" there nearly all the time, and a read
    that came back after the total grew drew its newer seqs as missing (gaps)."""

    def __init__(self, request: Callable[[int], None]) -> None:
        self.total = 0
        self.request = request
        # page number -> (last seq the read can vouch for, its events by seq)
        self.pages: OrderedDict[int, tuple[int, dict[int, Event]]] = OrderedDict()
        self.pending: dict[int, int] = {}  # page number -> the total when it was asked for
        self.decorator = Decorator(None, None)

    def __len__(self) -> int:
        return self.total

    def set_total(self, total: int) -> None:
        """More events exist now: the pages keep what they hold (the ledger only grows)."""
        self.total = total

    def put_page(self, page_no: int, events: Sequence[Event]) -> None:
        asked_at = self.pending.pop(page_no, 0)
        last_of_page = (page_no + 1) * TIMELINE_PAGE
        self._keep(page_no, min(asked_at, last_of_page), {ev.seq: ev for ev in events})

    def put_recent(self, events: Sequence[Event]) -> None:
        """The newest events as the follower read them: every seq from the first of them
        to the last was read, so the rows at the end are drawn with the count that grew,
        not a page read later (at 1,000 events/s that read came back after the next
        snapshot had moved the end again, and the end read "loading")."""
        if not events or events[0].seq < 1:
            return
        first, last = events[0].seq, events[-1].seq
        by_page: dict[int, dict[int, Event]] = {}
        for ev in events:
            if ev.seq >= 1:  # (a seq that is not an integer reads as -1: no row of its own)
                by_page.setdefault((ev.seq - 1) // TIMELINE_PAGE, {})[ev.seq] = ev
        for page_no, got in by_page.items():
            page_first = page_no * TIMELINE_PAGE + 1
            old = self.pages.get(page_no)
            # known to `last` when the newest events begin at or before this page, or
            # continue a cached page that was whole up to where they begin
            whole = first <= page_first or (old is not None and old[0] >= first - 1)
            known = min(last, page_first + TIMELINE_PAGE - 1) if whole else 0
            self._keep(page_no, known, got)

    def _keep(self, page_no: int, known: int, events: dict[int, Event]) -> None:
        """Cache a page's events, merged with what was cached (the ledger only grows:
        what either read vouched for still holds)."""
        old = self.pages.get(page_no)
        if old is not None:
            known = max(known, old[0])
            events = {**old[1], **events}
        self.pages[page_no] = (known, events)
        self.pages.move_to_end(page_no)
        while len(self.pages) > MAX_PAGES:
            self.pages.popitem(last=False)

    def forget_request(self, page_no: int) -> None:
        """A read that failed: the page may be asked for again."""
        self.pending.pop(page_no, None)

    def event_at(self, index: int) -> Event | None:
        if not 0 <= index < self.total:
            return None
        page_no = index // TIMELINE_PAGE
        page = self.pages.get(page_no)
        if page is not None:
            self.pages.move_to_end(page_no)  # (drawn: the last to be let go)
            known, events = page
            ev = events.get(index + 1)
            if ev is not None or index + 1 <= known:
                return ev  # (None: a gap in what the read saw whole)
        if page_no not in self.pending:
            self.pending[page_no] = self.total
            self.request(page_no)
        return None

    def is_loaded(self, index: int) -> bool:
        page = self.pages.get(index // TIMELINE_PAGE)
        return page is not None and (index + 1 <= page[0] or index + 1 in page[1])

    def row(self, index: int) -> Row | None:
        ev = self.event_at(index)
        if ev is None:
            if self.is_loaded(index) and 0 <= index < self.total:
                return gap_row(index + 1)
            return None
        return self.decorator.row(ev)

    def index_of(self, key: str) -> int | None:
        try:
            seq = int(key)
        except ValueError:
            return None
        return seq - 1 if 1 <= seq <= self.total else None

    def seq_at(self, index: int) -> int | None:
        return index + 1 if 0 <= index < self.total else None


class FilteredTimeline:
    """A filter's matches (held in memory, capped by the scan)."""

    def __init__(self, events: Sequence[Event], decorator: Decorator) -> None:
        self.events = list(events)
        self.decorator = decorator
        self._index = {str(ev.seq): i for i, ev in enumerate(self.events)}

    def __len__(self) -> int:
        return len(self.events)

    def event_at(self, index: int) -> Event | None:
        return self.events[index] if 0 <= index < len(self.events) else None

    def is_loaded(self, index: int) -> bool:
        return True

    def row(self, index: int) -> Row | None:
        ev = self.event_at(index)
        return None if ev is None else self.decorator.row(ev)

    def index_of(self, key: str) -> int | None:
        return self._index.get(key)

    def seq_at(self, index: int) -> int | None:
        ev = self.event_at(index)
        return ev.seq if ev else None


class TimelinePane(Pane):
    TITLE = "Timeline"
    KEY = "5"

    @dataclass
    class SeqChosen(Message):
        """`n`/`N` landed on an event (time travel follows it)."""

        seq: int

    case: reactive[Path | None] = reactive(None, init=False)
    total: reactive[int] = reactive(0, init=False, repaint=False)
    decoration: reactive[tuple[CaseSnapshot | None, int | None]] = reactive(
        (None, None), init=False, always_update=True, repaint=False)
    # the newest events the follower read (drawn at the end without a page read)
    recent: reactive[tuple[Event, ...]] = reactive((), init=False, repaint=False)

    def rows_known(self) -> bool:
        return True  # read from the ledger directory itself, not from the projection

    def __init__(self, **kwargs: object) -> None:
        super().__init__(TIMELINE_COLUMNS, empty_text="no events", follow_tail=True, **kwargs)  # type: ignore[arg-type]
        self.pages = TimelineSource(self._request_page)
        self.scanning: tuple[int, int] | None = None
        self._reader: AsyncLedgerReader | None = None
        self._reader_case: Path | None = None
        self._reader_lock = asyncio.Lock()
        self._matches: FilteredTimeline | None = None
        self._closing = False

    # ---- the reader this pane owns

    async def _open_reader(self, case: Path) -> AsyncLedgerReader:
        async with self._reader_lock:
            if self._reader is not None and self._reader_case != case:
                old, self._reader = self._reader, None
                await old.close()
            if self._reader is None:
                # a read in progress ends as the pane closes (its workers are awaited)
                self._reader = await AsyncLedgerReader(case, lambda: self._closing).open()
                self._reader_case = case
            return self._reader

    async def _drop_reader(self) -> None:
        async with self._reader_lock:
            if self._reader is not None:
                old, self._reader = self._reader, None
                await old.close()

    async def on_unmount(self) -> None:
        # let running reads end (a scan stops at its next page) rather than cancel them
        # inside an aiosqlite call, then close the connection while the loop runs
        self._closing = True
        await finish_own_workers(self, ("pages", "scan", "jump", "reader"))
        await self._drop_reader()

    # ---- attributes set from above

    def watch_case(self) -> None:
        self.workers.cancel_group(self, "pages")
        self.workers.cancel_group(self, "scan")
        self.pages = TimelineSource(self._request_page)
        self.pages.decorator = Decorator(*self.decoration)
        self._matches = None
        self.scanning = None
        self.run_worker(self._drop_reader(), group="reader", exit_on_error=False)
        self.paint()

    def reload(self) -> None:
        """Forget every page and the reader: the ledger file was replaced."""
        self.watch_case()

    def watch_recent(self, recent: tuple[Event, ...]) -> None:
        self.pages.put_recent(recent)

    def watch_total(self, total: int) -> None:
        self.pages.set_total(total)
        if self.needle is None:
            self.set_source(self.pages)
        self.paint_title()

    def watch_decoration(self) -> None:
        decorator = Decorator(*self.decoration)
        self.pages.decorator = decorator
        if self._matches is not None:
            self._matches.decorator = decorator
        self.redraw_changed()

    def watch_needle(self) -> None:
        self.workers.cancel_group(self, "scan")
        self._matches = None
        if self.needle is not None and self.case is not None:
            self.scanning = (0, self.total)
            self.run_worker(self._scan(self.case, self.needle), group="scan",
                            exclusive=True, exit_on_error=False)
        else:
            self.scanning = None
        self.paint()

    def paint(self) -> None:
        if self.needle is None:
            self.set_source(self.pages)
        elif self._matches is not None:
            self.set_source(self._matches)
        else:
            self.set_source(FilteredTimeline([], self.pages.decorator))
        super().paint()

    # ---- reads

    def _request_page(self, page_no: int) -> None:
        if self.case is not None:
            self.run_worker(self._load_page(self.case, page_no), group="pages",
                            exit_on_error=False)

    async def _load_page(self, case: Path, page_no: int) -> None:
        first = page_no * TIMELINE_PAGE + 1
        try:
            reader = await self._open_reader(case)
            events = await reader.read_range(first, first + TIMELINE_PAGE - 1)
        except LedgerError as exc:
            await self._drop_reader()
            self.pages.forget_request(page_no)
            self.post_message(m.LedgerTrouble(case, exc, True))
            return
        if case != self.case:
            return
        self.pages.put_page(page_no, events)
        if self.needle is None:
            self.refresh_rows()

    async def _scan(self, case: Path, needle: Needle) -> None:
        found: list[Event] = []
        last = 0
        truncated = False
        shown = 0.0
        try:
            reader = await self._open_reader(case)
            while not self._closing:
                events = await reader.read_after(last, PROJECT_PAGE)
                if not events:
                    break
                found.extend(ev for ev in events if needle.matches(event_fields(ev)))
                last = events[-1].seq
                if len(found) >= FILTER_SCAN_LIMIT:
                    found, truncated = found[:FILTER_SCAN_LIMIT], True
                    break
                if time.monotonic() - shown > 0.1:
                    shown = time.monotonic()
                    self.scanning = (last, max(self.total, last))
                    self.paint_title()
        except LedgerError as exc:
            await self._drop_reader()
            self.post_message(m.LedgerTrouble(case, exc, True))
        if case != self.case or needle != self.needle:
            return
        self.scanning = None
        self._matches = FilteredTimeline(found, self.pages.decorator)
        self.paint()
        if truncated:
            self.say(f"showing the first {FILTER_SCAN_LIMIT:,} matches")

    def say(self, text: str) -> None:
        """A note for the operator (a toast), in one line, shown literally."""
        self.notify(visible(text, one_line=True), markup=False)

    def step(self, delta: int) -> int | None:
        """Focus, move the cursor `delta` events, and return the seq it lands on."""
        self.focus()
        self.move_to(self.cursor + delta)
        return self.seq_at_cursor()

    def jump_to_call_event(self, call_id: str, direction: int) -> None:
        if self.case is not None:
            self.run_worker(self._jump(self.case, call_id, direction), group="jump",
                            exclusive=True, exit_on_error=False)

    async def _jump(self, case: Path, call_id: str, direction: int) -> None:
        try:
            reader = await self._open_reader(case)
            seqs = await reader.call_seqs(call_id)
        except LedgerError as exc:
            await self._drop_reader()
            self.post_message(m.LedgerTrouble(case, exc, True))
            return
        current = self.seq_at_cursor() or 0
        if direction > 0:
            target = next((s for s in seqs if s > current), None)
        else:
            target = next((s for s in reversed(seqs) if s < current), None)
        if target is None:
            later = "later" if direction > 0 else "earlier"
            self.say(f"no {later} event of call {cell(call_id, 80)}")
            return
        self.focus()
        if not self.select_key(str(target)):
            self.say(f"seq {target} is hidden by the timeline filter")
            return
        self.post_message(self.SeqChosen(target))

    # ---- what the cursor is on

    def seq_at_cursor(self) -> int | None:
        source = self.source
        if isinstance(source, TimelineSource | FilteredTimeline):
            return source.seq_at(self.cursor)
        return None

    def event_at_cursor(self) -> Event | None:
        source = self.source
        if isinstance(source, TimelineSource | FilteredTimeline):
            return source.event_at(self.cursor)
        return None

    def cursor_loaded(self) -> bool:
        source = self.source
        if isinstance(source, TimelineSource | FilteredTimeline):
            return self.row_count == 0 or source.is_loaded(self.cursor)
        return True

    def idle_subtitle(self) -> Content | None:
        if self.new_below:
            return Content.assemble((f"+{self.new_below:,} new below", "bold $warning"),
                                    " \u00b7 G follows")
        return None

    def filtering(self) -> bool:
        return self.scanning is not None

    def subtitle(self) -> Content | None:
        if self.scanning is not None:
            done, total = self.scanning
            return Content.assemble(("\u231b filtering ", "bold $warning"),
                                    f"{done:,}/{total:,} events")
        return super().subtitle()

    def on_table_view_cursor_moved(self) -> None:
        self.paint_title()  # "+N new below" goes when the cursor reaches the end
