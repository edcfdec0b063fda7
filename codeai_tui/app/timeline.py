"""Timeline rows paged from the ledger on demand (row i is seq i+1; seqs are gap-free by
contract, and a missing one shows as a gap row, which is itself an anomaly).

Only a bounded number of pages is kept; a missing page is requested from a worker and
the row draws as "loading" until it arrives.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

from codeai_tui.app.rows import event_row, gap_row
from codeai_tui.app.widgets.table import Row
from codeai_tui.console.model import TIMELINE_PAGE, CaseSnapshot
from codeai_tui.ledger import Event

# 8 pages x 256 events: ~50 screens of scrollback; each event with its payload is ~1 KB,
# and a page read by key costs ~1 ms, so a larger cache buys little and costs memory
MAX_PAGES = 8


class Decorator:
    """What the projection says about an event's row (danger, anomaly, after as-of)."""

    def __init__(self, snapshot: CaseSnapshot | None, as_of: int | None) -> None:
        self.snapshot = snapshot
        self.as_of = as_of
        self._anomaly_seqs: set[int] | None = None

    def anomaly_seqs(self) -> set[int]:
        if self._anomaly_seqs is None:
            self._anomaly_seqs = (
                {a.seq for a in self.snapshot.state.anomalies} if self.snapshot else set()
            )
        return self._anomaly_seqs

    def row(self, ev: Event) -> Row:
        danger = False
        if self.snapshot is not None and ev.call_id:
            call = self.snapshot.call(ev.call_id)
            danger = bool(call and call.effect_unknown and ev.kind == "attempt.started")
        return event_row(
            ev,
            after_as_of=self.as_of is not None and ev.seq > self.as_of,
            danger=danger,
            anomaly=ev.seq in self.anomaly_seqs(),
        )


class TimelineSource:
    def __init__(self, request: Callable[[int], None]) -> None:
        self.total = 0
        self.request = request
        self.pages: OrderedDict[int, dict[int, Event]] = OrderedDict()
        self.pending: set[int] = set()
        self.decorator = Decorator(None, None)

    def __len__(self) -> int:
        return self.total

    def set_total(self, total: int) -> None:
        """More events exist now: forget the page that held the old end (it was partial)."""
        if total != self.total:
            first_stale = max(0, (min(total, self.total) - 1) // TIMELINE_PAGE)
            for page in [p for p in self.pages if p >= first_stale]:
                del self.pages[page]
            self.total = total

    def put_page(self, page_no: int, events: Sequence[Event]) -> None:
        self.pending.discard(page_no)
        self.pages[page_no] = {ev.seq: ev for ev in events}
        self.pages.move_to_end(page_no)
        while len(self.pages) > MAX_PAGES:
            self.pages.popitem(last=False)

    def clear(self) -> None:
        self.pages.clear()
        self.pending.clear()

    def event_at(self, index: int) -> Event | None:
        if not 0 <= index < self.total:
            return None
        page_no = index // TIMELINE_PAGE
        page = self.pages.get(page_no)
        if page is None:
            if page_no not in self.pending:
                self.pending.add(page_no)
                self.request(page_no)
            return None
        return page.get(index + 1)

    def is_loaded(self, index: int) -> bool:
        return (index // TIMELINE_PAGE) in self.pages

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

    def row(self, index: int) -> Row | None:
        ev = self.event_at(index)
        return None if ev is None else self.decorator.row(ev)

    def index_of(self, key: str) -> int | None:
        return self._index.get(key)

    def seq_at(self, index: int) -> int | None:
        ev = self.event_at(index)
        return ev.seq if ev else None
