"""The fast path: evidence gathered in SQLite, verdicts from workstate's own ladder.

Per call, the (seq, kind, attempt) skeleton comes from the covering index in one grouped
row; payloads are read (and parsed) only for the kinds whose fields a verdict needs;
seq gaps, reused event ids, unknown kinds and payloads that are not JSON objects are
found by SQLite. Each call's events are folded in seq order by `fold_call_event`, the
fold the event-by-event oracle uses, and judged by `classify_call`, so the two paths
cannot drift apart (tests/core/test_fast_path.py checks they give the same document).

Calls come out in first-seq order as they are finished, so `inspect --json` can write
them without holding them all; `call_lines` lets a forked helper write the second half
of them meanwhile (services/forked.py), which the same tests check gives the same
document byte for byte (tests/core/test_helper_process.py).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from array import array
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import orjson

from codeai_tui.ledger.errors import INDEX_DISAGREES
from codeai_tui.ledger.evidence_sql import (
    EvidenceSQL,
    FastPathUnfit,
    SkeletonTotals,
    unpack,
    well_packed,
)
from codeai_tui.ledger.receipts import ReceiptLog
from codeai_tui.ledger.schema import (
    COMPILATION_KINDS,
    KNOWN_KINDS,
    TASK_KINDS,
    parse_payload,
)
from codeai_tui.ledger.table_check import Print, add_prints
from codeai_tui.services.forked import Helper, HelperPlan, LineWriter
from codeai_tui.services.stage_reads import CALL_EVENT_KINDS
from codeai_tui.services.watched_fork import Beat, WatchedFork
from codeai_tui.workstate import (
    Anomaly,
    CallEvidence,
    CallStage,
    CallState,
    CompilationEvidence,
    CompilationState,
    Projector,
    ReceiptCheck,
    TaskEvidence,
    TaskRollup,
    TaskState,
    WorkState,
    classify_call,
    classify_compilation,
    classify_task,
    fold_call_event,
    fold_compilation_event,
    fold_task_event,
    receipts_before,
)
from codeai_tui.workstate.columns import CallLoader, settles
from codeai_tui.workstate.evidence import ReceiptIndex, _intern, ledger_anomalies
from codeai_tui.workstate.projector import TakenCalls, duplicate_id_problem, seq_problem
from codeai_tui.workstate.receipts import (
    ByKey,
    Coverage,
    ReceiptCoverage,
    add_coverage,
    by_key_of,
    check_log,
    index_for,
    merge_coverage,
    share_receipt_strings,
)
from codeai_tui.workstate.verdicts import ToolCounts

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

ALL_SEQS = (1 << 63) - 1
# Kinds whose payload no verdict field needs, except the reason of a call whose last
# attempt stops there (such calls are re-read from their own events): skipping them
# keeps 2 of every 7 events of a typical call out of Python.
SKIPPED_PAYLOADS = frozenset({"attempt.interpreted", "attempt.completed"})
PAYLOAD_CALL_KINDS = tuple(k for k in CALL_EVENT_KINDS if k not in SKIPPED_PAYLOADS)
OTHER_KINDS = tuple(sorted(TASK_KINDS | COMPILATION_KINDS))
SCAN_KINDS = OTHER_KINDS + PAYLOAD_CALL_KINDS
_NEEDS_SKIPPED = (CallStage.INTERPRETED, CallStage.ATTEMPT_COMPLETED)

# anomaly order within one event, as the oracle records them
_SEQ, _DUP, _PAYLOAD, _FOLD = range(4)


@dataclass(slots=True)
class _Anomalies:
    items: list[tuple[int, int, int, Anomaly]] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)

    def add(self, seq: int, phase: int, problem: str, call_id: str | None = None,
            flag_call: bool = False) -> None:
        self.items.append((seq, phase, len(self.items),
                           Anomaly(seq, problem, call_id if flag_call and call_id else None)))
        if flag_call and call_id:
            self.calls.add(call_id)

    def ordered(self) -> tuple[Anomaly, ...]:
        return tuple(a for *_, a in sorted(self.items, key=lambda t: t[:3]))

    def reporter(self, seq: int, call_id: str | None, flag_call: bool) -> Callable[[str], None]:
        return lambda problem: self.add(seq, _FOLD, problem, call_id, flag_call)


def _payload(text: Any) -> dict[str, Any]:
    parsed, _problem = parse_payload(text)
    return parsed or {}


def _index_print(calls: tuple[int, int, int], extents: Sequence[tuple[Any, ...]]) -> Print:
    """The indexes' side of the print (table_check), from the grouped reads' sums: the
    call skeletons' (events_call, summed as read) and the task extents' (events_task)."""
    every = [sum(int(row[i]) for row in extents) for i in (3, 4)]
    return (calls[0], calls[1], calls[2], every[0], every[1])


@dataclass(slots=True)
class _Suspects:
    """What the suspect scan found: cells of the wrong type (`odd`), the first row whose
    id or time is not plain text, and (seq, kind, call_id, payload problem, known kind)
    per row SQLite flagged (payloads are parsed there, none is kept)."""

    odd: int = 0
    odd_text_seq: int | None = None
    rows: list[tuple[int, str, str | None, str | None, bool]] = field(default_factory=list)
    table: Print = (0, 0, 0, 0, 0)  # the table's print of the same seqs (table_check)


def _suspects_in(sql: EvidenceSQL, after: int | None, upto: int) -> _Suspects:
    """The suspect rows with a seq in (after, upto] (all up to `upto` when None), and
    the table's print of those seqs (one more scan, on the same connection)."""
    found = _Suspects(table=sql.table_print(upto, CALL_EVENT_KINDS, after))
    odd_text = sql.first_odd_text(upto, after)
    for seq, kind, call_id, text, known, odd_type in sql.suspect_rows(
            upto if odd_text is None else odd_text, sorted(KNOWN_KINDS), SCAN_KINDS,
            OTHER_KINDS, after):
        if odd_type:  # (rows come in seq order: this one is the first odd)
            odd_text = seq
            break
        if odd_text is None:  # (else the ledger is read event by event: no row matters)
            _parsed, problem = parse_payload(text)
            found.rows.append((seq, kind, call_id, problem, bool(known)))
    found.odd_text_seq = odd_text
    return found


def _find_suspects(sql: EvidenceSQL, limit: int, upto: int) -> _Suspects:
    """The odd cells of the whole ledger, then the suspect rows up to `upto` (another
    thread reads those after it)."""
    odd = sql.odd_cells(limit)
    if odd:
        return _Suspects(odd=odd)
    return _suspects_in(sql, None, upto)


def _joined(first: _Suspects, rest: _Suspects) -> _Suspects:
    """One scan's findings from its two parts, as if read in one pass (seq order)."""
    if first.odd or first.odd_text_seq is not None:
        return first
    return _Suspects(0, rest.odd_text_seq, first.rows + rest.rows,
                     add_prints(first.table, rest.table))


# the forked scan helpers' priority below their parent's: the parent's own reads (the
# receipt log, the extents, the skeletons) are what the start waits for, and with the
# two helpers beside it on two cores each got two thirds of a core. Niced, the 1M-event
# console was final in 9.30-9.51 s against 9.70-10.02 s (3 of 4 alternating pairs; the
# parent's reads 2.75 s instead of 3.23 s), `inspect --json` 7.16 s against 7.67 s
# (medians of 5 alternating pairs, no pair slower); the scans end before the parent's
# reads do either way
SCAN_NICENESS = 10


class _SuspectScan:
    """The suspect scan in two halves by seq, each on a connection of its own, while the
    caller reads the rest. In threads, or (`forked`: a process with no other thread, a
    plan that lets it fork) in two forked helpers (`SCAN_NICENESS`): two threads' SQLite
    reads barely run at once (SQLite's allocator, and the stop check that waits for the
    GIL), two processes do. A helper that fails, dies or hangs leaves its half to this
    process."""

    def __init__(self, sql: EvidenceSQL, limit: int, forked: HelperPlan | None) -> None:
        self.sql, self.limit = sql, limit
        self.mid = limit // 2 if limit > 0 else limit
        self._plan = forked
        self._started = time.monotonic()
        self._abandoned = threading.Event()
        self._helpers: list[Helper[_Suspects]] = []
        self._threads: list[Future[_Suspects]] = []
        self._pool: ThreadPoolExecutor | None = None
        self._connections: list[EvidenceSQL] = []
        if forked is not None:
            with contextlib.suppress(OSError):  # no process to be had: threads
                self._fork()
                return
        # (imported here: only a big ledger's scan runs in threads, and every command
        # that projects a small case would pay concurrent.futures' and logging's import)
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(2)
        for scan, connection in zip(self._halves(), (self._sibling(), self._sibling()),
                                    strict=True):
            self._threads.append(self._pool.submit(scan, connection))

    def _halves(self) -> tuple[Callable[[EvidenceSQL], _Suspects], ...]:
        limit, mid = self.limit, self.mid
        return (lambda sql: _find_suspects(sql, limit, mid),
                lambda sql: _suspects_in(sql, mid, limit))

    def _sibling(self) -> EvidenceSQL:
        connection = self.sql.sibling(self._abandoned.is_set)
        self._connections.append(connection)
        return connection

    def _fork(self) -> None:
        path, parent = self.sql.path, os.getpid()

        def connect() -> EvidenceSQL:
            os.nice(SCAN_NICENESS)
            sql = EvidenceSQL(path)  # (a connection must not be used across a fork)
            sql.abort_when(lambda: os.getppid() != parent)  # stop once the parent is gone
            return sql
        try:
            for scan in self._halves():
                self._helpers.append(Helper(lambda _lines, scan=scan: scan(connect())))
        except OSError:
            self.close()
            raise

    def result(self) -> _Suspects:
        """Both halves joined, as if read in one pass (raises what a half raised)."""
        if self._threads:
            head, tail = (future.result() for future in self._threads)
            return _joined(head, tail)
        assert self._plan is not None  # (helpers run only with one)
        grace = max(self._plan.grace, 2 * (time.monotonic() - self._started))
        halves = []
        for helper, scan in zip(self._helpers, self._halves(), strict=True):
            found = helper.summary() if helper.ended_well(grace) else None
            halves.append(found if isinstance(found, _Suspects) else scan(self.sql))
        return _joined(*halves)

    def close(self) -> None:
        """Stop what still runs (the caller failed, or is done)."""
        self._abandoned.set()
        for helper in self._helpers:
            helper.close()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        for connection in self._connections:
            connection.close()


@dataclass(frozen=True, slots=True)
class Sharing:
    """What a long-lived projection keeps instead of equal copies: the receipt log's key
    and hash strings. (The skeleton painted first keeps its call ids as joined texts:
    there is no id object to share.)"""

    receipts: ByKey


def _skipped_any(call: CallEvidence) -> bool:
    """Whether an attempt of `call` holds an event whose payload the fast path skipped."""
    return any(a.interpreted_off is not None or a.completed_off is not None
               for a in call.attempts)


def fold_call_rows(call_id: str, rows: list[tuple[int, str, str, str | None, str | None, str]],
                   position: int, report: Callable[[int], Callable[[str], None]] | None = None,
                   ) -> CallEvidence | None:
    """One call's evidence from its own rows (seq, kind, task_id, attempt_id, event_id,
    payload), folded like the oracle folds them: re-deriving costs its own events."""
    call: CallEvidence | None = None
    for seq, kind, task_id, attempt_id, _eid, text in rows:
        if kind not in CALL_EVENT_KINDS:
            continue
        is_new = call is None
        if call is None:
            call = CallEvidence(call_id, _intern(task_id), seq, position)
        fold_call_event(call, is_new, kind, seq, attempt_id, _payload(text),
                        report(seq) if report else _ignore)
    return call


def _ignore(_problem: str) -> None:
    return None


_PayloadRow = tuple[int, str | None, str | None, str | None, str | None, bytes]


@dataclass(slots=True)
class _HalfSummary:
    """What the helper's calls add to the rest (anomalies in the order found, the calls
    they flag, task rollups, receipt coverage, tool counts): pickled back to the parent."""

    anomalies: list[tuple[int, int, Anomaly]]
    flagged: set[str]
    rollups: dict[str, TaskRollup]
    coverage: Coverage | ReceiptCoverage
    tool_counts: ToolCounts


_SkeletonRow = tuple[int, str, int | None, str, int]  # (first seq, call id, ready, packed, count)

_SPOOL_BATCH = 4096  # skeleton rows pickled at once into a spool (see `_Spool`)


def _checked(row: _SkeletonRow) -> _SkeletonRow:
    """A skeleton row whose packed events split as its count says (raises FastPathUnfit:
    the totals' check before any call is produced makes this a second look)."""
    if not well_packed(row[3], row[4]):
        raise FastPathUnfit(f"an id of call {row[1][:40]!r} holds a control character")
    return row


class _Skeletons:
    """The calls' skeletons from position `lo` on, in first-seq order, read one at a time
    (`take`): SQLite groups and sorts them (EvidenceSQL.call_skeletons), so only the
    calls begun and not yet folded are held, where holding every call's skeleton took
    ~130 bytes a call (180 MB at 1.37 million calls). `calls`: how many there are,
    `ready`: how many of them wait for the payload of an event."""

    __slots__ = ("_rows", "_source", "calls", "lo", "ready")

    def __init__(self, rows: Iterator[_SkeletonRow], calls: int, ready: int,
                 lo: int = 0, *, checked: bool = False) -> None:
        """`checked`: the rows passed `_checked` already (a spool's, read back)."""
        self._source = rows
        self._rows = rows if checked else map(_checked, rows)
        self.calls, self.ready, self.lo = calls, ready, lo

    def take(self) -> _SkeletonRow | None:
        """The next call's row (None: no more)."""
        return next(self._rows, None)

    def close(self) -> None:
        close = getattr(self._source, "close", None)
        if close is not None:
            close()


class _Spool:
    """Skeleton rows in first-seq order, pickled a batch at a time into an unlinked
    temporary file, so a forked helper and its parent each read their part (`part`)
    without either holding the rows: the page cache keeps them, not the processes.
    `mid`: the position the parts split at (`mid_first`: the first seq of that call,
    None when there are not that many). Each part reads by offset (`os.pread`): the two
    processes share one file offset. Where no file can be had or written (no temporary
    directory, a full disk), the batches left are held here, pickled (~50 bytes a call)."""

    def __init__(self, rows: Iterator[_SkeletonRow], mid: int) -> None:
        """`rows`: checked already (a `_Skeletons`' `take`)."""
        import pickle  # (here: only a big ledger's document spools)
        import tempfile

        self._file: IO[bytes] | None = None
        with contextlib.suppress(OSError):
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by `close`
        self._offsets = array("q", [0])  # where each batch begins in the file, and the end
        self._held: list[bytes] = []  # the batches past the file's, when it failed
        self.count = 0
        self.mid, self.mid_first = mid, None
        self._ready = [0, 0]  # rows waiting for a payload, before `mid` and from it
        batch: list[_SkeletonRow] = []
        try:
            for row in rows:
                batch.append(row)
                if self.count == mid:
                    self.mid_first = row[0]
                if row[2] is not None:
                    self._ready[self.count >= mid] += 1
                self.count += 1
                if len(batch) == _SPOOL_BATCH:
                    self._keep(pickle.dumps(batch, pickle.HIGHEST_PROTOCOL))
                    batch = []
            if batch:
                self._keep(pickle.dumps(batch, pickle.HIGHEST_PROTOCOL))
        except BaseException:
            self.close()
            raise

    def _keep(self, data: bytes) -> None:
        if self._file is not None and not self._held:
            try:
                self._write(self._file.fileno(), data)
                return
            except OSError:  # (a full disk): this batch and the rest are held here
                pass
        self._held.append(data)

    def _write(self, fd: int, data: bytes) -> None:
        at = self._offsets[-1]
        view = memoryview(data)
        while view:
            view = view[os.pwrite(fd, view, at + len(data) - len(view)):]
        self._offsets.append(at + len(data))

    def part(self, second: bool) -> _Skeletons:
        """The rows before `mid`, or (`second`) from it."""
        lo, hi = (self.mid, self.count) if second else (0, min(self.mid, self.count))
        return _Skeletons(self._read(lo, hi), hi - lo, self._ready[second], lo, checked=True)

    def _batch(self, b: int) -> bytes:
        offsets = self._offsets
        if b >= len(offsets) - 1:
            return self._held[b - (len(offsets) - 1)]
        assert self._file is not None  # (a batch in the file)
        return os.pread(self._file.fileno(), offsets[b + 1] - offsets[b], offsets[b])

    def _read(self, lo: int, hi: int) -> Iterator[_SkeletonRow]:
        import pickle

        for b in range(lo // _SPOOL_BATCH, (hi + _SPOOL_BATCH - 1) // _SPOOL_BATCH):
            batch: list[_SkeletonRow] = pickle.loads(self._batch(b))
            base = b * _SPOOL_BATCH
            yield from batch[max(lo - base, 0):min(hi - base, len(batch))]

    def after(self, limit: int) -> int:
        """A seq every event of the second part's calls is past (`limit`: the last)."""
        return self.mid_first - 1 if self.mid_first is not None else limit

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._held = []


class Gathered:
    """One projection gathered in SQL. Iterate `calls()` once (first-seq order), then
    ask `finish()` for the rest; or call `work_state()` for everything at once."""

    def __init__(self, sql: EvidenceSQL, as_of: int | None = None,
                 receipt_log: ReceiptLog | None = None, *, share: Sharing | None = None,
                 plan: HelperPlan | None = None,
                 load_receipts: Callable[[], ReceiptLog] | None = None) -> None:
        """Raises FastPathUnfit (before anything was produced) when the ledger must be
        read event by event. `share`: objects a long-lived projection keeps instead of
        equal copies (the console's). `plan`: this process may fork helpers (it runs no
        other thread): from `plan.min_events` events, the suspect scan runs in two.
        `load_receipts`: reads the receipt log (instead of `receipt_log`) while the
        scans run."""
        self.sql = sql
        self._plan = plan
        self._load_receipts = load_receipts
        self.share = share
        # pinned at the start: every grouped read sees the same prefix of a live ledger
        self.limit = sql.max_seq() if as_of is None else as_of
        self.receipt_log = receipt_log
        self.anomalies = _Anomalies()
        self.unknown_kinds: dict[str, int] = {}
        self.unknown_seqs: list[tuple[int, str]] = []
        self.tasks: dict[str, TaskEvidence] = {}
        self.compilations: dict[str, CompilationEvidence] = {}
        self.rollups: dict[str, TaskRollup] = {}
        # a dict while calls come from `calls()` (a projector goes on from it); the
        # receipt log's columns while `call_lines` writes a document (only the check
        # reads it then)
        self.coverage: Coverage | ReceiptCoverage = {}
        self.tool_counts = ToolCounts()  # the document's counts, kept by `call_lines`
        # a projector follows on from these calls (`projector_from` with a loader), its
        # settled calls in columns (their own copies of the strings, shared by none); a
        # call it keeps as an object must carry the skipped payloads a later event may word
        self.followed = False
        self.event_count = 0
        self.as_of_seq = 0
        self._skeletons: _Skeletons | None = None
        self._cut: tuple[ReceiptLog | None, ReceiptIndex] | None = None
        self._prepare()

    def _prepare(self) -> None:
        sql, limit = self.sql, self.limit
        # the longest reads run at once: the suspect scan (every cell of every row) in
        # two halves (_SuspectScan); the receipt log, extents and skeletons here
        forked = self._plan if self._plan is not None and limit >= self._plan.min_events \
            else None
        scan = _SuspectScan(sql, limit, forked)
        skeletons: _Skeletons | None = None
        try:
            try:
                load, self._load_receipts = self._load_receipts, None  # (holds the bytes)
                if load is not None:
                    self.receipt_log = load()
                extents = sql.task_extents(limit)
                totals, rows = sql.call_skeletons(limit, CALL_EVENT_KINDS, PAYLOAD_CALL_KINDS)
                skeletons = _Skeletons(rows, totals.calls, totals.ready)
                suspects = scan.result()
            finally:
                scan.close()  # (on a failure, the other half and the scans stop at once)
            self._check(suspects, extents, totals)
        except BaseException:
            if skeletons is not None:  # (its statement is reset)
                skeletons.close()
            raise
        self._skeletons = skeletons

    def _check(self, suspects: _Suspects, extents: list[tuple[str, int, int, int, int]],
               totals: SkeletonTotals) -> None:
        """What the scans found, before any call is produced: FastPathUnfit where the
        ledger must be read event by event, else the anomalies and extents they give."""
        sql, limit, an = self.sql, self.limit, self.anomalies
        if suspects.odd:
            raise FastPathUnfit(f"{suspects.odd} id or kind cell(s) of types the ledger schema "
                                "does not give them")
        if suspects.odd_text_seq is not None:
            raise FastPathUnfit(f"seq {suspects.odd_text_seq} holds an id or time that is "
                                "not plain text")
        if _index_print(totals.index_print, extents) != suspects.table:
            # verdicts from what the index says would be no verdicts: the event path
            # reads the table, and the projection flags the ledger (services/projection)
            raise FastPathUnfit(INDEX_DISAGREES)
        for seq, kind, call_id, problem, known in suspects.rows:
            if problem is not None:
                an.add(seq, _PAYLOAD, f"{kind or 'event'}: {problem}", call_id, True)
            if not known:
                self.unknown_kinds[kind] = self.unknown_kinds.get(kind, 0) + 1
                self.unknown_seqs.append((seq, kind))
        lo, hi = ALL_SEQS, 0
        for task_id, first, last, n, _seqs in extents:
            self.tasks[task_id] = TaskEvidence(task_id, int(first), int(last))
            self.event_count += int(n)
            lo, hi = min(lo, int(first)), max(hi, int(last))
        self.as_of_seq = max(0, hi)
        if self.event_count and (lo != 1 or hi - lo + 1 != self.event_count):
            for seq, prev in sql.seq_breaks(limit):
                problem = seq_problem(seq, max(0, prev))
                if problem is not None:
                    an.add(seq, _SEQ, problem)
        if not sql.event_ids_unique():
            for seq, event_id, call_id, first in sql.duplicate_event_ids(limit):
                an.add(seq, _DUP, duplicate_id_problem(event_id, first), call_id, True)
        for seq, kind in sql.call_events_without_id(limit, CALL_EVENT_KINDS):
            an.add(seq, _FOLD, f"{kind} without call_id")
        # the skeletons' totals are read before anything is produced: ids that cannot
        # be decoded send the ledger down the event path while that is still possible
        if totals.unpacked is not None:
            raise FastPathUnfit(f"an id of call {totals.unpacked[:40]!r} holds a control "
                                "character")

    # ---- calls, in first-seq order

    @property
    def call_count(self) -> int:
        """How many calls `calls()` (or `call_lines`) will produce, until it begins."""
        return self._skeletons.calls if self._skeletons is not None else 0

    def _take_skeletons(self) -> _Skeletons:
        """The skeletons' rows, for the one pass over the calls (none after it)."""
        skeletons, self._skeletons = self._skeletons, None
        return skeletons if skeletons is not None else _Skeletons(iter(()), 0, 0)

    def _spool_skeletons(self, plan: HelperPlan) -> _Spool:
        """The skeletons' rows in a spool split where `plan` splits them: a forked
        helper and this process each read their part (neither holds the rows)."""
        skeletons = self._take_skeletons()
        try:
            return _Spool(iter(skeletons.take, None), plan.split(skeletons.calls))
        finally:
            skeletons.close()

    def calls(self) -> Iterator[CallState]:
        skeletons = self._take_skeletons()  # (on the first `next`)
        try:
            yield from self._calls_between(skeletons, 0, others=True)
        finally:
            skeletons.close()

    def call_lines(self, render: Callable[[CallState], str],
                   plan: HelperPlan | None = None) -> Iterator[str]:
        """`render(call)` for every call in first-seq order (instead of `calls()`), the
        document's `tool_counts` kept meanwhile. With a plan and enough calls, a forked
        helper renders the later calls meanwhile (`plan.share` of them, a little over
        half: services/forked.py); what its calls add to the rest is merged before
        `finish`."""
        self.coverage = self._receipt_coverage()

        def line(state: CallState) -> str:
            self.tool_counts.add(state)
            return render(state)

        if plan is None or self.call_count < max(2, plan.min_calls):
            skeletons = self._take_skeletons()
            try:
                for state in self._calls_between(skeletons, 0, others=True):
                    yield line(state)
            finally:
                skeletons.close()
            return
        spool = self._spool_skeletons(plan)
        try:
            yield from self._lines_in_halves(spool, line, plan)
        finally:
            spool.close()

    def _lines_in_halves(self, spool: _Spool, line: Callable[[CallState], str],
                         plan: HelperPlan) -> Iterator[str]:
        """The calls' lines, the second half rendered by a forked helper meanwhile."""
        after = spool.after(self.limit)
        helper: Helper[_HalfSummary] | None = None
        with contextlib.suppress(OSError):  # no process to be had: all here
            helper = Helper(lambda lines: self._helper_half(spool.part(True), after,
                                                            line, lines))
        if helper is None:
            for part, others in ((spool.part(False), True), (spool.part(True), False)):
                for state in self._calls_between(part, after if not others else 0,
                                                 others=others):
                    yield line(state)
            return
        try:
            started = time.monotonic()
            for state in self._calls_between(spool.part(False), 0, others=True):
                yield line(state)
            grace = max(plan.grace, 2 * (time.monotonic() - started))
            summary = helper.summary() if helper.ended_well(grace) else None
            if summary is None:  # the helper failed: its half is done here
                for state in self._calls_between(spool.part(True), after, others=False):
                    yield line(state)
                return
            self._merge(summary)
            yield from helper.lines()
        finally:
            helper.close()

    def _helper_half(self, skeletons: _Skeletons, after: int,
                     line: Callable[[CallState], str], lines: LineWriter) -> _HalfSummary:
        """In the forked helper: the calls of `skeletons` rendered (and counted) on a
        connection of its own (an SQLite connection must not be used across a fork),
        and what they add."""
        self.sql = EvidenceSQL(self.sql.path)
        an = self.anomalies
        an.items, an.calls = [], set()
        self.rollups, self.coverage, self.tool_counts = {}, self._receipt_coverage(), \
            ToolCounts()
        for state in self._calls_between(skeletons, after, others=False):
            lines.write(line(state))
        return _HalfSummary([(seq, phase, a) for seq, phase, _n, a in an.items], an.calls,
                            self.rollups, self.coverage, self.tool_counts)

    def _merge(self, half: _HalfSummary) -> None:
        """What the helper's calls add, as if they had been produced here in turn."""
        an = self.anomalies
        for seq, phase, anomaly in half.anomalies:
            an.items.append((seq, phase, len(an.items), anomaly))
        an.calls |= half.flagged
        for task_id, rollup in half.rollups.items():
            self.rollups.setdefault(task_id, TaskRollup()).take(
                (rollup.first_unresolved, rollup.succeeded, rollup.tools_done))
        merge_coverage(self.coverage, half.coverage)
        self.tool_counts.merge(half.tool_counts)

    def _calls_between(self, skeletons: _Skeletons, after: int, *,
                       others: bool) -> Iterator[CallState]:
        """The calls of `skeletons` (positions from `skeletons.lo`), from the payload
        rows past `after`. `others`: also fold the task and compilation events and report
        events naming no call (the whole ledger's, so exactly one caller does)."""
        sql, limit, an = self.sql, self.limit, self.anomalies
        done: dict[int, CallState] = {}
        waiting = skeletons.ready  # calls waiting for the payload of their ready seq
        payloads: dict[int, dict[int, Any]] = {}  # position -> payloads read (seq order)
        # call id -> (position, skeleton) of the waiting calls begun by the row read (rows
        # come in seq order, calls in first-seq order: the calls in flight, not all)
        begun: dict[str, tuple[int, _SkeletonRow]] = {}
        upcoming = skeletons.take()  # the next call not begun
        next_in = next_out = skeletons.lo

        def begin_upto(seq: int) -> None:
            """Begin every call whose first seq is at or below `seq`."""
            nonlocal upcoming, next_in
            while upcoming is not None and upcoming[0] <= seq:
                if upcoming[2] is None:  # no payload to wait for
                    done[next_in] = self._assemble(next_in, upcoming, {}, None)
                else:
                    begun[upcoming[1]] = (next_in, upcoming)
                next_in += 1
                upcoming = skeletons.take()

        tasks: dict[int, str] = {}  # position -> task_id of its call.requested
        loads, dict_ = orjson.loads, dict
        rows: Generator[_PayloadRow, None, None] | None = None
        if others:
            rows = sql.payload_rows(limit, PAYLOAD_CALL_KINDS, OTHER_KINDS, after,
                                    orphans_only=not waiting)
        elif waiting:
            rows = sql.payload_rows(limit, PAYLOAD_CALL_KINDS, (), after)
        while rows is not None:
            source, rows = rows, None
            for seq, call_id, kind, task_id, comp_id, raw in source:
                if upcoming is not None and upcoming[0] <= seq:
                    begin_upto(seq)
                    while next_out in done:
                        yield self._emit(done.pop(next_out))
                        next_out += 1
                got = begun.get(call_id) if kind is None and call_id else None
                mine = got is not None
                if not mine and kind is None and (call_id or not others):
                    continue  # another half's call, or naming none (`others` reports it)
                try:  # the common case without parse_payload's wrapping (same parser)
                    payload = loads(raw)
                    problem = None if type(payload) is dict_ else "retry"
                except (orjson.JSONDecodeError, TypeError):
                    problem = "retry"
                if problem is not None:
                    payload, problem = parse_payload(raw)
                if kind is not None:  # a task or compilation event
                    if problem is not None and not call_id:  # else reported by suspect_rows
                        an.add(seq, _PAYLOAD, f"{kind or 'event'}: {problem}", call_id, True)
                    if kind in TASK_KINDS:
                        fold_task_event(self.tasks[task_id], kind, seq, payload or {},  # type: ignore[index]
                                        an.reporter(seq, call_id, False))
                    else:
                        self._compilation(seq, kind, task_id or "", call_id, comp_id,
                                          payload or {})
                    continue
                if problem is not None:
                    an.add(seq, _PAYLOAD, f"{self._kind_at(seq, call_id)}: {problem}",
                           call_id, True)
                if not mine:
                    continue  # "without call_id" was reported from the index
                pos, skeleton = got  # type: ignore[misc]  # (mine: a position)
                if task_id is not None and pos not in tasks:
                    tasks[pos] = task_id
                got_payloads = payloads.get(pos)
                if got_payloads is None:
                    got_payloads = payloads[pos] = {}
                got_payloads[seq] = payload or {}
                if seq == skeleton[2]:
                    waiting -= 1
                    del begun[call_id]  # type: ignore[arg-type]
                    done[pos] = self._assemble(pos, skeleton, payloads.pop(pos),
                                               tasks.pop(pos, None))
                    while next_out in done:
                        yield self._emit(done.pop(next_out))
                        next_out += 1
                    if not waiting:  # every call here is out: the rest is not theirs
                        begin_upto(ALL_SEQS)  # (those left wait for nothing)
                        while next_out in done:
                            yield self._emit(done.pop(next_out))
                            next_out += 1
                        if others:
                            rows = sql.payload_rows(limit, PAYLOAD_CALL_KINDS, OTHER_KINDS,
                                                    seq, orphans_only=True)
                        break
            source.close()  # (a statement left behind by `break` is reset now)
        begin_upto(ALL_SEQS)  # (calls that wait for nothing, past the last row read)
        while next_out in done:
            yield self._emit(done.pop(next_out))
            next_out += 1

    def _kind_at(self, seq: int, _call_id: str | None) -> str:
        """The kind of a call event whose payload is broken (rare: read it back)."""
        return self.sql.kind_of(seq) or "event"

    def _compilation(self, seq: int, kind: str, task_id: str, call_id: str | None,
                     comp_id: str | None, payload: dict[str, Any]) -> None:
        report = self.anomalies.reporter(seq, call_id, False)
        if not comp_id:
            report(f"{kind} without compilation_id")
            return
        comp = self.compilations.get(comp_id)
        is_new = comp is None
        if comp is None:
            comp = self.compilations[comp_id] = CompilationEvidence(comp_id, task_id, seq)
        fold_compilation_event(comp, is_new, kind, seq, payload, report)

    def _assemble(self, pos: int, skeleton: _SkeletonRow,
                  payloads: dict[int, dict[str, Any]], task_id: str | None) -> CallState:
        first, cid, _ready, packed, _count = skeleton
        events = unpack(packed, cid, CALL_EVENT_KINDS)
        if task_id is None or events[0][1] != "call.requested":
            task_id = self.sql.task_of(first)  # the call did not start with call.requested
        call = CallEvidence(cid, _intern(task_id), first, pos)
        an = self.anomalies
        empty: dict[str, Any] = {}
        at = first

        def report(problem: str) -> None:
            an.add(at, _FOLD, problem, cid, True)

        is_new = True
        for at, kind, attempt_id in events:
            fold_call_event(call, is_new, kind, at, attempt_id, payloads.get(at, empty), report)
            is_new = False
        state = classify_call(call, anomalous=cid in an.calls)
        in_columns = self.followed and settles(state, False)
        if state.stage in _NEEDS_SKIPPED or (
                self.followed and not in_columns and _skipped_any(call)):
            # the reason words the skipped payload (outcome, status), or may once the
            # followed call moves on: re-read this call
            full = fold_call_rows(cid, self.sql.call_rows(cid, self.limit), pos)
            if full is not None:
                call = full
                state = classify_call(full, anomalous=cid in an.calls)
                in_columns = self.followed and settles(state, False)
        share = self.share
        if share is not None and not in_columns:
            # the verdict reads its key from the evidence: shared too
            share_receipt_strings(call, share.receipts)
        return state

    def _emit(self, state: CallState) -> CallState:
        rollups, task_id = self.rollups, state.evidence.task_id
        rollup = rollups.get(task_id)
        if rollup is None:  # (a rollup made only for a task's first call)
            rollup = rollups[task_id] = TaskRollup()
        rollup.add(state)
        add_coverage(self.coverage, state.evidence)
        return state

    # ---- the rest, once the calls are out

    def finish(self) -> tuple[tuple[Anomaly, ...], tuple[TaskState, ...],
                              tuple[CompilationState, ...], ReceiptCheck]:
        comps = tuple(classify_compilation(c) for c in self.compilations.values())
        for cs in comps:
            self.rollups.setdefault(cs.task_id, TaskRollup()).add(cs)
        tasks = tuple(classify_task(t, self.rollups.get(t.task_id)) for t in self.tasks.values())
        log, index = self._cut_receipts()
        anomalies = ledger_anomalies(self.sql.schema.notes) + self.anomalies.ordered()
        # a document's coverage (`call_lines`) is done once its calls are: read in place
        settled = isinstance(self.coverage, ReceiptCoverage)
        return anomalies, tasks, comps, check_log(log, self.coverage, index, settled=settled)

    def receipt_index(self) -> ReceiptIndex:
        """The receipts as of this projection's cut-off, indexed: known before any call
        is produced, so streamed calls name their receipts too."""
        return self._cut_receipts()[1]

    def _cut_receipts(self) -> tuple[ReceiptLog | None, ReceiptIndex]:
        if self._cut is None:
            log = self.receipt_log
            if log is not None:
                log = receipts_before(log, self.sql.next_recorded_at(self.limit))
            # (one ByKey table for the index, the coverage and a console's live check)
            self._cut = (log, index_for(log, by_key_of(log) if log is not None else None))
        return self._cut

    def _receipt_coverage(self) -> ReceiptCoverage:
        """An empty coverage of the cut receipt log, in its columns."""
        log, _index = self._cut_receipts()
        return ReceiptCoverage(by_key_of(log) if log is not None else ByKey(()))

    def work_state(self) -> WorkState:
        calls = tuple(self.calls())
        anomalies, tasks, comps, receipts = self.finish()
        return WorkState(self.as_of_seq, self.event_count, anomalies, dict(self.unknown_kinds),
                         tasks, calls, comps, receipts, gathered="sql")


def projector_from(g: Gathered, load: CallLoader | None = None,
                   plan: HelperPlan | None = None,
                   stop: Callable[[], bool] | None = None) -> Projector:
    """The gathered projection as an incremental projector (the console follows appends
    from there, event by event). `load`: settled calls go into columns as they are
    produced (workstate/columns.py), each derived again from its events by `load` when
    asked; the ledger's calls are then never all held as objects at once. `plan` (with
    `load`): from `plan.min_calls` calls on, a forked helper gathers the later half of
    the calls into columns meanwhile (`_take_calls_in_halves`); `stop`: when it turns
    true, waiting for that helper ends at once (the reads stop on their own)."""
    if load is None:
        calls = list(g.calls())
        anomalies, tasks, comps, _receipts = g.finish()
        return Projector.from_evidence(
            calls=calls, compilations=g.compilations.values(), tasks=g.tasks.values(),
            anomalies=anomalies, unknown=g.unknown_seqs, event_count=g.event_count,
            last_seq=g.as_of_seq, coverage=g.coverage, task_states=tasks,
            compilation_states=comps)
    p = Projector.gathering(load)
    g.coverage = p.coverage  # (the columns answer for the calls they keep)
    g.followed = True
    if plan is not None and g.call_count >= max(2, plan.min_calls):
        _take_calls_in_halves(p, g, plan, stop)
    else:
        p.take_calls(g.calls(), expected=g.call_count)
    # (the projector checks the receipts against its own coverage when asked: a check
    # here would be thrown away)
    g.receipt_log = None
    anomalies, tasks, comps, _receipts = g.finish()
    p.take_rest(compilations=g.compilations.values(), tasks=g.tasks.values(),
                anomalies=anomalies, unknown=g.unknown_seqs, event_count=g.event_count,
                last_seq=g.as_of_seq, task_states=tasks, compilation_states=comps)
    return p


@dataclass(slots=True)
class _ColumnsHalf:
    """What a helper's half of the calls adds: the calls as its projector took them,
    and (as `_HalfSummary`) the anomalies it found, the calls they flag, task rollups."""

    calls: TakenCalls
    anomalies: list[tuple[int, int, Anomaly]]
    flagged: set[str]
    rollups: dict[str, TaskRollup]


def _take_calls_in_halves(p: Projector, g: Gathered, plan: HelperPlan,
                          stop: Callable[[], bool] | None) -> None:
    """`p.take_calls(g.calls())`, the later calls (`plan.share` of them) gathered into
    columns by a forked child meanwhile (WatchedFork: the console forks from a thread of
    its own). A child that fails, dies, hangs or gathers what cannot be taken as it is
    (a receipt key covered in both halves) leaves its half to this process. The
    skeletons go to a spool both processes read their part from (`call_lines`')."""
    n = g.call_count
    spool = g._spool_skeletons(plan)
    after = spool.after(g.limit)
    helper: WatchedFork[_ColumnsHalf] | None = None
    try:
        with contextlib.suppress(OSError):  # no process to be had: all here
            helper = WatchedFork(lambda beat: _columns_half(g, spool.part(True), after, beat))
        started = time.monotonic()
        p.take_calls(g._calls_between(spool.part(False), 0, others=True), expected=n)
        if helper is not None:
            half = helper.result(max(plan.grace, 2 * (time.monotonic() - started)), stop=stop)
            if isinstance(half, _ColumnsHalf) and p.take_half(half.calls):
                g._merge(_HalfSummary(half.anomalies, half.flagged, half.rollups, {},
                                      ToolCounts()))
                return
        p.take_calls(g._calls_between(spool.part(True), after, others=False))
    finally:
        if helper is not None:
            helper.close()
        spool.close()


def _columns_half(g: Gathered, skeletons: _Skeletons, after: int,
                  beat: Beat) -> _ColumnsHalf:
    """In the forked child: the calls of `skeletons` into a projector's columns, on a
    connection of its own (an SQLite connection must not be used across a fork),
    stopped once the parent is gone; what they add besides."""
    parent = os.getppid()
    g.sql = EvidenceSQL(g.sql.path)
    g.sql.abort_when(lambda: os.getppid() != parent)
    an = g.anomalies
    flagged_before = set(an.calls)
    an.items = []
    g.rollups = {}
    taker = Projector.gathering(_not_in_helper)
    g.coverage = taker.coverage

    def counted() -> Iterator[CallState]:
        for done, state in enumerate(g._calls_between(skeletons, after, others=False)):
            if not done & 255:
                beat(done)
            yield state
    taker.take_calls(counted(), expected=skeletons.calls)
    return _ColumnsHalf(taker.taken_calls(), [(seq, phase, a) for seq, phase, _n, a in an.items],
                        an.calls - flagged_before, g.rollups)


def _not_in_helper(call_id: str, _upto: int, _position: int) -> CallEvidence | None:
    """A helper's columns derive no call (the parent that takes them has its own)."""
    raise LookupError(f"call {call_id[:70]!r} is not derived in a helper process")
