"""Read-only helpers the console runs in its workers (no Textual here).

Built only on LedgerReader and the projection: the console never opens SQLite itself.
Everything here is synchronous and meant for thread workers; nothing holds Event objects
for the whole ledger (the projector keeps small summaries, the timeline reads pages).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from codeai_tui.console.severity import SEVERITY, Worst, worst_state
from codeai_tui.ledger import (
    Event,
    LedgerError,
    LedgerReader,
    ReceiptLog,
    find_cases,
    read_receipts,
)
from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.workstate import (
    CallEvidence,
    CallState,
    Projector,
    WorkState,
    parse_time,
    receipts_before,
)

__all__ = [  # the names the app imports from here (the console's model API)
    "PROJECT_PAGE", "SEVERITY", "TIMELINE_PAGE", "CallPositions", "CaseFollower",
    "CaseSnapshot", "FollowProjector", "PageReader", "Progress", "TimeMachine", "Worst",
    "discover_cases", "parse_time", "project_as_of", "summarize_case", "worst_state",
]

PROJECT_PAGE = 2000  # events per projection page: ~2 MB in flight, ~1 ms per page read
TIMELINE_PAGE = 256

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class CaseSnapshot:
    """One projection of one case, ready for the panes (built off the UI thread)."""

    case_dir: Path
    state: WorkState
    event_count: int
    max_seq: int
    last_recorded_at: str | None
    receipts: ReceiptLog
    call_index: CallPositions | dict[str, int] = field(default_factory=dict)
    as_of: int | None = None
    unknown_ids: frozenset[str] = frozenset()
    worst: Worst = Worst("no calls", 0)

    def call(self, call_id: str | None) -> CallState | None:
        if call_id is None:
            return None
        idx = self.call_index.get(call_id)
        if idx is None:
            return None
        return self.state.calls[idx]


def _snapshot(
    case_dir: Path,
    projector: Projector,
    receipts: ReceiptLog,
    *,
    event_count: int,
    max_seq: int,
    last_recorded_at: str | None,
    as_of: int | None = None,
) -> CaseSnapshot:
    state = projector.snapshot(receipts)
    index = CallPositions(projector.calls, len(state.calls))
    unknown = frozenset(c.call_id for c in state.calls if c.effect_unknown)
    return CaseSnapshot(
        case_dir, state, event_count, max_seq, last_recorded_at, receipts, index, as_of,
        unknown, worst_state(state),
    )


_SHARE_MAX = 160


def _share_strings(ev: Event, seen: dict[str, str]) -> None:
    """Make equal short strings one object before the projector keeps them.

    The projector retains per call the key (twice), model, purpose, the request hash
    (manifest, artifact name, attempt) and the task id, each a fresh object from
    json.loads. A per-page table (not `sys.intern`, whose table would keep every unique
    key forever) shares them; the event is a throwaway page row, so its payload is
    updated in place.
    """
    payload = ev.payload
    if payload:
        for key, value in payload.items():
            if type(value) is str and len(value) <= _SHARE_MAX:
                payload[key] = seen.setdefault(value, value)
    if ev.task_id:
        object.__setattr__(ev, "task_id", seen.setdefault(ev.task_id, ev.task_id))


class CallPositions:
    """call_id -> index in one snapshot's `calls`, read from the projector's evidence
    instead of a dict per snapshot (140,000 entries at scale). Calls fed after the
    snapshot was taken lie past its end and are not found."""

    __slots__ = ("_calls", "_limit")

    def __init__(self, calls: Mapping[str, CallEvidence], limit: int) -> None:
        self._calls = calls
        self._limit = limit

    def get(self, call_id: str, default: int | None = None) -> int | None:
        evidence = self._calls.get(call_id)
        if evidence is None or not 0 <= evidence.position < self._limit:
            return default
        return evidence.position


class FollowProjector(Projector):
    """The projector, feeding pages with their strings shared (see `_share_strings`)."""

    def feed(self, events: Iterable[Event]) -> None:
        seen: dict[str, str] = {}
        for ev in events:
            _share_strings(ev, seen)
            self.add(ev)


def discover_cases(path: str | os.PathLike[str]) -> list[Path]:
    """A case or a bundle -> its case directories (raises LedgerError)."""
    return find_cases(path)


def _receipts_stamp(case_dir: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(case_dir / RECEIPTS_RELPATH)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


class CaseFollower:
    """Projects one case in pages, then follows appends (one instance per worker)."""

    def __init__(self, case_dir: Path) -> None:
        self.case_dir = case_dir
        self.reader = LedgerReader(case_dir)
        self.projector = FollowProjector()
        self.receipts = read_receipts(case_dir)
        self._receipts_stamp = _receipts_stamp(case_dir)
        self.event_count, self.max_seq = self.reader.stats()
        self.last_recorded_at = self.reader.last_recorded_at()

    def close(self) -> None:
        self.reader.close()

    def catch_up(self, progress: Progress | None = None, stop: Callable[[], bool] | None = None,
                 page: int = PROJECT_PAGE) -> int:
        """Feed every event after the projector's last seq; returns how many were fed."""
        fed = 0
        while True:
            events = self.reader.read_after(self.projector.last_seq, page)
            if not events:
                return fed
            self.projector.feed(events)
            fed += len(events)
            if progress is not None:
                progress(self.projector.event_count, max(self.event_count, self.projector.event_count))
            if stop is not None and stop():
                return fed

    def snapshot(self) -> CaseSnapshot:
        return _snapshot(
            self.case_dir,
            self.projector,
            self.receipts,
            event_count=self.projector.event_count,
            max_seq=self.projector.last_seq,
            last_recorded_at=self.last_recorded_at,
        )

    def poll(self) -> CaseSnapshot | None:
        """A fresh snapshot if another process committed or the receipt log changed."""
        ledger_changed = self.reader.changed()
        stamp = _receipts_stamp(self.case_dir)
        receipts_changed = stamp != self._receipts_stamp
        if not ledger_changed and not receipts_changed:
            return None
        if receipts_changed:
            self._receipts_stamp = stamp
            self.receipts = read_receipts(self.case_dir)
        if ledger_changed:
            fed = self.catch_up()  # no count(*): it is O(events) on every commit
            self.event_count = self.projector.event_count
            self.max_seq = self.projector.last_seq
            if fed:
                self.last_recorded_at = self.reader.last_recorded_at()
            elif not receipts_changed:
                return None
        return self.snapshot()


def project_as_of(
    case_dir: Path,
    seq: int,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
) -> CaseSnapshot | None:
    """The same projection over the events with seq <= `seq` (time travel).
    Returns None when `stop()` turned true midway."""
    return TimeMachine(case_dir).to(seq, progress, stop)


class TimeMachine:
    """Projections as of a seq. Stepping forward feeds only the events in between (the
    projector is incremental); stepping back rebuilds from seq 1. One per time-travel
    session, released when the operator returns to live."""

    def __init__(self, case_dir: Path) -> None:
        self.case_dir = case_dir
        self._projector: Projector | None = None
        self._recorded: str | None = None
        self._stats: tuple[int, int] | None = None
        self._receipts: ReceiptLog | None = None
        self._lock = threading.Lock()

    def to(self, seq: int, progress: Progress | None = None,
           stop: Callable[[], bool] | None = None) -> CaseSnapshot | None:
        with self._lock, LedgerReader(self.case_dir) as reader:
            if self._stats is None:
                self._stats = reader.stats()  # count(*) is O(events): once per session
            count, max_seq = self._stats
            projector = self._projector
            if projector is None or projector.last_seq > seq:
                projector = FollowProjector()
                self._recorded = None
            self._projector = None  # a cancelled run leaves nothing half-fed behind
            last = projector.last_seq
            next_recorded: str | None = None
            while True:
                events = reader.read_after(last, PROJECT_PAGE)
                if not events:
                    break
                cut = [e for e in events if e.seq <= seq]
                projector.feed(cut)
                if cut:
                    self._recorded = cut[-1].recorded_at
                if len(cut) < len(events):
                    next_recorded = events[len(cut)].recorded_at
                    break
                last = events[-1].seq
                if progress is not None:
                    progress(projector.event_count, min(seq, max_seq))
                if stop is not None and stop():
                    return None
            receipts = receipts_before(read_receipts(self.case_dir), next_recorded)
            if self._receipts is not None and self._receipts.receipts == receipts.receipts:
                receipts = self._receipts  # same log object: the coverage check is reused
            self._receipts = receipts
            self._projector = projector
            return _snapshot(
                self.case_dir, projector, receipts,
                event_count=count, max_seq=max_seq, last_recorded_at=self._recorded, as_of=seq,
            )


def summarize_case(case_dir: Path) -> tuple[Worst, int]:
    """(worst state, event count) of one case of a bundle; raises LedgerError."""
    follower = CaseFollower(case_dir)
    try:
        follower.catch_up()
        snap = follower.snapshot()
    finally:
        follower.close()
    return snap.worst, snap.event_count


class PageReader:
    """Timeline pages by key (`seq BETWEEN`), never OFFSET; one connection, one lock."""

    def __init__(self, case_dir: Path) -> None:
        self.case_dir = case_dir
        self._reader: LedgerReader | None = None
        self._lock = threading.Lock()

    def _open(self) -> LedgerReader:
        if self._reader is None:
            self._reader = LedgerReader(self.case_dir)
        return self._reader

    def page(self, page_no: int, size: int = TIMELINE_PAGE) -> list[Event]:
        first = page_no * size + 1
        with self._lock:
            try:
                return self._open().read_range(first, first + size - 1)
            except LedgerError:
                self._close_locked()
                raise

    def call_seqs(self, call_id: str) -> list[int]:
        with self._lock:
            return self._open().call_seqs(call_id)

    def scan(self, match: Callable[[Event], bool], limit: int,
             stop: Callable[[], bool] | None = None,
             progress: Progress | None = None) -> tuple[list[Event], bool]:
        """Events that `match`, paged by key; (matches, truncated)."""
        found: list[Event] = []
        last = 0
        while True:
            if progress is not None:
                progress(last, 0)
            with self._lock:
                events = self._open().read_after(last, PROJECT_PAGE)
            if not events:
                return found, False
            for ev in events:
                if match(ev):
                    found.append(ev)
                    if len(found) >= limit:
                        return found, True
            last = events[-1].seq
            if stop is not None and stop():
                return found, False

    def _close_locked(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def close(self) -> None:
        with self._lock:
            self._close_locked()
