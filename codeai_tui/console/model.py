"""Read-only helpers the console runs in its workers (no Textual here).

Built only on LedgerReader and the projection: the console never opens SQLite itself.
Everything here is synchronous and meant for thread workers; nothing holds Event objects
for the whole ledger (the projector keeps small summaries, the timeline reads pages; a
follower keeps the last page of events it read, for the timeline's end).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path

from codeai_tui.console.severity import SEVERITY, Worst, worst_state
from codeai_tui.ledger import (
    Event,
    LedgerError,
    LedgerReader,
    ReceiptLog,
    find_cases,
    read_more_receipts,
    read_receipts,
)
from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.ledger.errors import INDEX_DISAGREES
from codeai_tui.ledger.evidence_sql import EvidenceSQL, FastPathUnfit
from codeai_tui.services.forked import HelperPlan, helper_plan
from codeai_tui.services.gather import Sharing, projector_from
from codeai_tui.services.heap import building, freeze_heap, release_frozen
from codeai_tui.services.projection import flag_index, gather
from codeai_tui.services.skeleton import Skeleton, SkeletonCall, build_skeleton
from codeai_tui.services.stage_reads import CALL_EVENT_KINDS, StageReads
from codeai_tui.services.time_travel import CallHistory, state_as_of
from codeai_tui.workstate import (
    CallState,
    Projector,
    WorkState,
    parse_time,
)
from codeai_tui.workstate.evidence import ledger_anomalies
from codeai_tui.workstate.receipts import by_key_of

__all__ = [  # the names the app imports from here (the console's model API)
    "PROJECT_PAGE", "SEVERITY", "TIMELINE_PAGE", "CallPositions", "CaseFollower",
    "CaseSnapshot", "FollowProjector", "PageReader", "Progress", "Skeleton",
    "SkeletonCall", "TimeMachine",
    "Worst",
    "discover_cases", "freeze_heap", "parse_time", "release_frozen",
    "worst_state",
]

# below this many events the event path is as quick as the fast path's dozen queries
FAST_START_MIN = 5000
PROJECT_PAGE = 2000  # events per projection page: ~2 MB in flight, ~1 ms per page read
TIMELINE_PAGE = 256
# a receipt log that grows is read on at most this often (seconds), not on every 100 ms
# poll: a new receipt shows within a second or two (the follower comes back for one it
# left: `receipts_pending`), parsed and checked once, not ten times
RECEIPTS_EVERY = 1.0

Progress = Callable[[int, int], None]

# the console waits this long at least for a helper process once its own part is done
# (services/forked.py: twice that part's time when longer); a helper forked from the
# console's thread that stops moving is given up sooner (services/watched_fork.py)
CONSOLE_HELPER_GRACE = 3.0


def console_plan() -> HelperPlan | None:
    """The console's helper processes: as `inspect`'s where a second core is ours."""
    plan = helper_plan()
    return replace(plan, grace=CONSOLE_HELPER_GRACE) if plan is not None else None


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
    unknown_ids: AbstractSet[str] = frozenset()
    # the newest events read, ending at max_seq (every seq from the first of them was
    # read): the timeline draws its end from them; empty when none were read one by one
    recent: tuple[Event, ...] = ()

    @property
    def worst(self) -> Worst:
        """The worst call stage (a pass over the calls: asked once per bundle case, never
        on a live snapshot)."""
        return worst_state(self.state)

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
    index = CallPositions(projector.position_of, len(state.calls))
    return CaseSnapshot(
        case_dir, state, event_count, max_seq, last_recorded_at, receipts, index, as_of,
        state.effect_unknown_set(),
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
    """call_id -> index in one snapshot's `calls`, read from the projector (a call's
    position never changes) instead of a dict per snapshot (140,000 entries at scale).
    Calls fed after the snapshot was taken lie past its end and are not found."""

    __slots__ = ("_limit", "_position_of")

    def __init__(self, position_of: Callable[[str], int | None], limit: int) -> None:
        self._position_of = position_of
        self._limit = limit

    def get(self, call_id: str, default: int | None = None) -> int | None:
        position = self._position_of(call_id)
        if position is None or not 0 <= position < self._limit:
            return default
        return position


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


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of a file: a ledger replaced under the console (a copy moved into
    place, a restore) has a new one, though its path and even its events may look alike."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


FileStamp = tuple[int, int, int]


def file_stamp(path: Path) -> FileStamp | None:
    """(inode, size, mtime) of a file, None when it is missing: a change means another
    process wrote (or replaced) it."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def receipts_stamp(case_dir: Path) -> FileStamp | None:
    """The receipt log's stamp: a change means new receipts to read."""
    return file_stamp(case_dir / RECEIPTS_RELPATH)


class CaseFollower:
    """Projects one case, then follows appends (one instance per worker).

    The first catch-up takes the SQL fast path when the ledger allows it (grouped reads
    through the covering index, the same ladder); later appends are read by key after
    the last seq and folded event by event, so each poll costs what arrived. `lock` is
    held while the projector changes; time travel reads the projector under it.
    """

    def __init__(self, case_dir: Path, stop: Callable[[], bool] | None = None, *,
                 keep: bool = True) -> None:
        self.case_dir = case_dir
        # `keep`: the projection lives on (the console's live one): frozen once built
        # (services/heap.py). A follower read once and dropped (a bundle case's summary)
        # is not, or its leftovers could never be collected.
        self.keep = keep
        # `stop`: when it turns true (the console quits, the worker is cancelled) every
        # read in progress ends within a millisecond with a LedgerError ("interrupted"),
        # even deep inside the fast path's grouped reads; the caller may swap it later
        self.stop = stop
        # The readers ask through a weak reference: `self.stopped` itself, held by them,
        # made this follower a reference cycle, so that dropping it freed nothing until
        # the cyclic collector ran (its projection with it: 460,805 objects on the
        # 1M-event ledger), and never once frozen (services/heap.py).
        me = weakref.ref(self)

        def stopped() -> bool:
            follower = me()
            return follower is not None and follower.stopped()

        # given `stopped` when opened: a quit ends even the open's own reads (the schema
        # check, the format row)
        self.reader = LedgerReader(case_dir, stop=stopped)
        # which file this follower reads; the reader keeps reading it even if replaced
        self.identity = file_identity(self.reader.path)
        try:
            self.sql = EvidenceSQL(case_dir, stopped)
        except BaseException:
            self.reader.close()
            raise
        self.lock = threading.Lock()
        try:
            unique = self.sql.event_ids_unique()
        except FastPathUnfit:  # a schema whose text cannot be read: remember every id
            unique = False
        # a settled call's evidence, derived from its events when a pane asks for it
        self._history = CallHistory(self.reader.path, stopped)
        self.projector: Projector = FollowProjector(event_ids_unique=unique)
        self._settle_in_columns()
        # the schema's harmless oddities (an extra table), flagged before any event's
        self.projector.anomalies.extend(ledger_anomalies(self.reader.schema.notes))
        self.gathered = "events"  # how the first catch-up gathered its evidence
        # read on first use: the skeleton, painted first, needs no receipt (143,000
        # receipts take ~1 s to read)
        self._receipts: ReceiptLog | None = None
        self._receipts_stamp: tuple[int, int, int] | None = None
        self._receipts_read_at = 0.0  # (monotonic) when the log was last read on
        self._recent: tuple[Event, ...] = ()  # the last TIMELINE_PAGE events read
        self.event_count, self.max_seq = self.reader.stats()
        self.last_recorded_at = self.reader.last_recorded_at()

    def _settle_in_columns(self) -> None:
        """A live projection keeps its settled calls in columns (workstate/columns.py):
        following then grows by ~100 bytes a settled call, not ~1,300."""
        if self.keep:
            self.projector.settle_in_columns(self._history)

    def stopped(self) -> bool:
        stop = self.stop
        return stop is not None and stop()

    def close(self) -> None:
        self.reader.close()
        self.sql.close()
        self._history.close()

    @property
    def receipts(self) -> ReceiptLog:
        """The provider's receipt log as last read (read now if never read)."""
        if self._receipts is None:
            self._receipts_stamp = receipts_stamp(self.case_dir)
            self._receipts = read_receipts(self.case_dir)
        return self._receipts

    def skeleton(self, reads: StageReads | None = None) -> Skeleton | None:
        """Every call's stage from the covering index alone (services/skeleton.py):
        the effect-unknown set in about the time of one scan, before the projection.
        None where the fast path does not apply (the projection then answers).
        `reads`: the skeleton's reads begun before this follower was opened (the head
        start's), as of a seq no later than this follower's; whatever of them is not
        taken is let go here (children of a split read are killed)."""
        try:
            if self.projector.last_seq or self.max_seq < FAST_START_MIN:
                return None
            taken = reads if reads is not None and reads.limit <= self.max_seq else None
            # (a longer ledger's reads: the ledger was replaced meanwhile)
            try:  # (not kept here: the screen lets it go once the projection is on it)
                return build_skeleton(self.sql, self.max_seq, reads=taken)
            except FastPathUnfit:
                return None
        finally:
            if reads is not None:
                reads.close()

    def _fast_start(self) -> None:
        """The first catch-up through the fast path, when the ledger allows it. Either
        way an index that disagrees with the table is flagged (the event path reads the
        table alone, so the verdicts are the table's)."""
        if (self.projector.last_seq or not self.projector.event_ids_unique
                or self.max_seq < FAST_START_MIN):
            _ = self.receipts  # (before the events: see catch_up)
            try:
                disagrees = self.sql.index_disagrees(self.max_seq, CALL_EVENT_KINDS)
            except FastPathUnfit:  # (text that cannot be read: nothing to compare)
                disagrees = False
            if disagrees:
                self._flag_index()
            return
        # a live projection (read for long: worth a process) scans for suspect rows and
        # folds the later half of the calls in forked helpers where a second core is ours
        plan = console_plan() if self.keep else None
        # the receipt log is read while the scans run
        got = gather(self.sql, self.max_seq, None, plan=plan, load_receipts=lambda: self.receipts)
        if isinstance(got, str):
            self.gathered = f"events ({got})"
            if got == INDEX_DISAGREES:
                self._flag_index()
            return
        # the calls keep the receipt log's key and hash strings (the skeleton's ids are
        # joined texts: no object to share)
        got.share = Sharing(by_key_of(self.receipts))
        try:
            # a live projection's settled calls go into columns as they are gathered
            projector = projector_from(got, self._history if self.keep else None, plan,
                                       self.stopped)
        except FastPathUnfit as exc:
            self.gathered = f"events ({exc})"
            return
        with self.lock:
            self.projector = projector
            self._settle_in_columns()
        self.gathered = "sql"

    def _flag_index(self) -> None:
        """Show the ledger's index disagreeing with its table, first of its anomalies."""
        with self.lock:
            flag_index(self.projector.anomalies)

    def catch_up(self, progress: Progress | None = None, stop: Callable[[], bool] | None = None,
                 page: int = PROJECT_PAGE) -> int:
        """Feed every event after the projector's last seq; returns how many were fed."""
        before = self.projector.event_count
        if not before:
            # the first projection reads the receipt log before it folds any call (read
            # after the projection it left the heap 25 MB larger), so time travel and the
            # first snapshot never pay for it, and the fast path shares its strings; the
            # fast path reads it while its scans run
            with building(freeze=self.keep):
                self._fast_start()
            _ = self.receipts
        fed = self.projector.event_count - before
        if fed and progress is not None:
            progress(self.projector.event_count, max(self.event_count, self.projector.event_count))
        while True:
            last = self.projector.last_seq
            events = self.reader.read_after(last, page)
            if not events:
                return fed
            with self.lock:
                self.projector.feed(events)
            self._recent = (*self._recent, *events)[-TIMELINE_PAGE:]
            if max(e.seq for e in events) <= last:
                # only rows whose seq no cursor passes (the reader sends them once): paging
                # by key cannot move, so stop instead of reading them forever
                fed += len(events)
                return fed
            fed += len(events)
            if progress is not None:
                progress(self.projector.event_count, max(self.event_count, self.projector.event_count))
            if stop is not None and stop():
                return fed

    def snapshot(self) -> CaseSnapshot:
        with self.lock:
            snap = _snapshot(
                self.case_dir,
                self.projector,
                self.receipts,
                event_count=self.projector.event_count,
                max_seq=self.projector.last_seq,
                last_recorded_at=self.last_recorded_at,
            )
        recent = self._recent
        # only events that end where the projection does (a fast start reads none)
        return replace(snap, recent=recent) if recent and recent[-1].seq == snap.max_seq else snap

    def receipts_pending(self) -> bool:
        """True while the receipt log changed since it was last read on: a poll sooner
        than RECEIPTS_EVERY after that read leaves the change for a later poll."""
        return self._receipts is not None and \
            receipts_stamp(self.case_dir) != self._receipts_stamp

    def poll(self) -> CaseSnapshot | None:
        """A fresh snapshot if another process committed or the receipt log changed."""
        ledger_changed = self.reader.changed()
        stamp = receipts_stamp(self.case_dir)
        now = time.monotonic()
        receipts_changed = (self._receipts is not None and stamp != self._receipts_stamp
                            and now - self._receipts_read_at >= RECEIPTS_EVERY)
        if not ledger_changed and not receipts_changed:
            return None
        if receipts_changed:
            self._receipts_stamp, self._receipts_read_at = stamp, now
            # only what the provider appended is read, and checked (a re-read of 143,904
            # receipts took ~1 s a poll while the provider wrote)
            self._receipts = read_more_receipts(self.case_dir, self._receipts)
        if ledger_changed:
            fed = self.catch_up()  # no count(*): it is O(events) on every commit
            self.event_count = self.projector.event_count
            self.max_seq = self.projector.last_seq
            if fed:
                self.last_recorded_at = self.reader.last_recorded_at()
            elif not receipts_changed:
                return None
        return self.snapshot()

    def as_of(self, seq: int) -> CaseSnapshot:
        """The snapshot as of `seq` (<= what this follower has seen), re-deriving only
        the entities in flight at `seq` (see services.time_travel)."""
        with self.lock, building():
            # the receipts pane shows the log as of `seq` too (the projection's cut-off)
            state, receipts = state_as_of(self.projector, self.sql, seq, self.receipts)
            index = CallPositions(self.projector.position_of, len(state.calls))
            max_seq = self.projector.last_seq
        # the events as of `seq` (the header counts those, as every pane shows the past);
        # `max_seq` stays the live one: the timeline keeps every row
        return CaseSnapshot(
            self.case_dir, state, state.event_count, max_seq, self.sql.recorded_at_upto(seq),
            receipts, index, seq, state.effect_unknown_set(),
        )


class TimeMachine:
    """Projections as of a seq, from the case's live projection (the console's
    follower, which the machine is bound to when made): only what was in flight at that
    seq is re-derived, from its own events, and no second projection is held. While the
    bound follower is closed or has not yet seen the seq (or with none bound: a script,
    a test), the machine keeps a follower of its own for the session."""

    def __init__(self, case_dir: Path,
                 live: Callable[[], CaseFollower | None] | None = None) -> None:
        self.case_dir = case_dir
        # the live follower of this case, asked at each travel (None while it is closed)
        self.live = live
        self._own: CaseFollower | None = None
        self._lock = threading.Lock()

    def fresh(self) -> TimeMachine:
        """A machine bound to the same live follower, holding no projection of its own
        (this one's is let go with it, never waited for)."""
        return TimeMachine(self.case_dir, self.live)

    def close(self) -> None:
        with self._lock:
            if self._own is not None:
                self._own.close()
                self._own = None

    def to(self, seq: int, progress: Progress | None = None,
           stop: Callable[[], bool] | None = None) -> CaseSnapshot | None:
        """The snapshot as of `seq`; None when `stop()` turned true midway."""
        with self._lock:
            follower = self.live() if self.live is not None else None
            if follower is not None and follower.projector.last_seq >= seq:
                return follower.as_of(seq)
            if self._own is None:
                own = CaseFollower(self.case_dir, stop)
                try:
                    own.catch_up(progress, stop)
                except BaseException:
                    own.close()
                    raise
                if stop is not None and stop():
                    own.close()
                    return None
                self._own = own
            else:
                self._own.stop = stop  # this call's worker, not the one that opened it
                self._own.catch_up()
            return self._own.as_of(seq)


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
