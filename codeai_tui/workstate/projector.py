"""The event-by-event projector: the oracle every other path is checked against.

Feed events in seq order; ask for a snapshot any time. Evidence is kept as small
per-entity summaries, never as the events themselves. Verdicts handed out are
snapshots: an event for a call whose verdict was handed out is folded into a copy of
its evidence (copy on write), so the cost is paid only for calls that change after a
snapshot, i.e. in proportion to what arrived.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from codeai_tui.ledger.blocks import appended, assigned, extended
from codeai_tui.ledger.receipts import ReceiptLog
from codeai_tui.ledger.schema import KNOWN_KINDS, Event
from codeai_tui.workstate.calls_view import CallIds, calls_of
from codeai_tui.workstate.columns import (
    LEND_LATER,
    CallLoader,
    SettledCalls,
    SettledCoverage,
    rests,
    settles,
)
from codeai_tui.workstate.evidence import (
    Anomaly,
    AttemptEvidence,
    Attempts,
    CallEvidence,
    CompilationEvidence,
    TaskEvidence,
    attempt_key,
    fold_call_event,
    fold_compilation_event,
    fold_task_event,
)
from codeai_tui.workstate.ladder import (
    Contribution,
    TaskRollup,
    Unresolved,
    classify_call,
    classify_compilation,
    classify_task,
    contribution,
    pending_order,
)
from codeai_tui.workstate.positions import SortedPositions
from codeai_tui.workstate.receipts import (
    Coverage,
    LiveReceiptCheck,
    Pair,
    add_started,
    check_log,
    check_receipts,
    coverage_pairs,
    receipts_before,
    repoint_coverage,
)
from codeai_tui.workstate.task_columns import RestingTasks, task_rests, tasks_of
from codeai_tui.workstate.verdicts import (
    CallState,
    CompilationState,
    ReceiptCheck,
    TaskState,
    WorkState,
)
from codeai_tui.workstate.vocab import CallStage, NextOperation

# Re-derive one entity's evidence from its own events with seq <= n (time travel); the
# services layer reads them through an index. Arguments: id, n, position (calls only).
CallBefore = Callable[[str, int, int], CallEvidence | None]
CompilationBefore = Callable[[str, int], CompilationEvidence | None]
TaskBefore = Callable[[str, int], TaskEvidence]

_COVERAGE_KINDS = frozenset({"call.requested", "call.manifest", "attempt.started"})
# calls settled in columns at most per snapshot (~12 µs each)
SETTLE_BATCH = 8192
# a call in flight whose last event is this many seqs behind the projection's is kept in
# columns while it stays quiet (`columns.rests`): ~20 s of a writer at 1,000 events/s,
# longer than most calls take, so few are taken back to objects by a later event
REST_AFTER = 20_000
# a task's tally of its calls (`_CallTally`) is kept only from this many calls on: a
# smaller task's calls are counted again when it is judged (~1.5 µs a call), where its
# tally cost ~240 bytes (a task in ten calls while following)
KEEP_TALLY_FROM = 32


def seq_problem(seq: int, last_seq: int) -> str | None:
    """The anomaly of an event at `seq` right after `last_seq`, if any."""
    expected = last_seq + 1
    if seq == expected:
        return None
    if seq <= last_seq:
        return f"seq {seq} is not after seq {last_seq}"
    missing = f"seq {expected}" if seq == expected + 1 else f"seqs {expected}-{seq - 1}"
    return f"seq gap: {missing} missing before seq {seq}"


def duplicate_id_problem(event_id: str, first_seq: int) -> str:
    return f"event_id {event_id[:70]!r} was already used by seq {first_seq}"


def column_cover(pairs: SettledCoverage | None, ev: CallEvidence, cols: SettledCalls
                 ) -> AttemptEvidence | None:
    """The attempt of this call's that covers its key in the receipt check, when the
    columns can keep it (None: it stays in the coverage dict): the earliest that started
    with the key, so a retried call's first attempt, not its last (kept as objects, the
    covers of one call in twenty cost ~680 bytes each, 47 MB at 10M events)."""
    key = ev.key
    if pairs is None or key is None:
        return None
    have = dict.get(pairs, key)
    if type(have) is not AttemptEvidence or not cols.can_cover(have):
        return None
    held = ev.held
    if held is have or (type(held) is Attempts and held.find(have.attempt_id) is have):
        return have
    return None


class _CallTally:
    """A task's calls' share of its rollup (ladder.TaskRollup), kept as their verdicts
    change so that judging the task costs what changed, not a pass over its calls (a
    long task's 86,000 calls cost 300 ms on every live snapshot): the unresolved calls by
    position, and the best (done seq, -position) that succeeded or whose tool
    operations are all done (its call's id read at `into`: kept here, the id of a call
    long settled in columns cost ~76 bytes a task while following). When the call
    holding a best loses it, the tally is `stale` and is counted again from every call
    of the task."""

    __slots__ = ("one", "one_pos", "pending", "stale", "succeeded", "tools_done")

    def __init__(self) -> None:
        # the unresolved calls: most tasks wait on one at a time, kept without a dict (a
        # dict a task cost ~180 bytes, a task in ten calls while following); a dict by
        # position once two or more are
        self.one: Unresolved | None = None
        self.one_pos = -1
        self.pending: dict[int, Unresolved] | None = None
        self.succeeded: tuple[int, int] | None = None
        self.tools_done: tuple[int, int] | None = None
        self.stale = False

    def update(self, pos: int, given: Contribution) -> None:
        pending, succeeded, tools_done = given
        if self.pending is not None:
            if pending is not None:
                self.pending[pos] = pending
            else:
                self.pending.pop(pos, None)
        elif pending is not None:
            if self.one is None or self.one_pos == pos:
                self.one, self.one_pos = pending, pos
            else:
                self.pending = {self.one_pos: self.one, pos: pending}
                self.one, self.one_pos = None, -1
        elif self.one_pos == pos:
            self.one, self.one_pos = None, -1
        self.succeeded = self._best(self.succeeded, pos, succeeded)
        self.tools_done = self._best(self.tools_done, pos, tools_done)

    def _best(self, best: tuple[int, int] | None, pos: int,
              new: tuple[int, str] | None) -> tuple[int, int] | None:
        mine = (new[0], -pos) if new is not None else None
        if best is not None and best[1] == -pos:  # this call held the best
            if mine is None or mine < best:
                self.stale = True  # another call may now be the best: count again
            return mine if mine is not None and mine >= best else best
        if mine is not None and (best is None or mine > best):
            return mine
        return best

    def into(self, rollup: TaskRollup, call_id_at: Callable[[int], str]) -> None:
        """Feed the calls' share to `rollup` after the task's compilations, as a pass
        over the calls in first-seq order would (the first fed wins a tie).
        `call_id_at`: the id of the call at a position."""
        if self.pending:
            first = min(self.pending.items(), key=lambda kv: (pending_order(kv[1]), kv[0]))
            rollup.take((first[1], None, None))
        elif self.one is not None:
            rollup.take((self.one, None, None))
        if self.succeeded is not None:
            done, pos = self.succeeded
            rollup.take((None, (done, call_id_at(-pos)), None))
        if self.tools_done is not None:
            done, pos = self.tools_done
            rollup.take((None, None, (done, call_id_at(-pos))))


@dataclass(slots=True)
class TakenCalls:
    """The calls one projector took (`Projector.taken_calls`), by position from 0: each
    position's first and last seq, slot in `settled` (-1: kept as objects), the
    positions of each task's calls and each task's last seq among them; the verdicts
    kept as objects (by position) and what receipt coverage their attempts and the
    settled calls' other attempts give (the settled calls' covers are in `settled`)."""

    firsts: array[int] | list[int]
    lasts: array[int] | list[int]
    slots: array[int]
    task_calls: dict[str, array[int]]
    extent: dict[str, int]
    settled: SettledCalls
    kept: list[tuple[int, CallState]]
    coverage: Coverage


_NO_CALLS = _CallTally()  # the share of a task with no call (never updated: not kept)


class Projector:
    """Incremental WORK_STATE_V1. Feed events in seq order; ask for states any time.

    `event_ids_unique`: the source guarantees distinct event ids (the ledger's UNIQUE
    index), so they need not be remembered; otherwise every id is kept to flag reuse.
    """

    def __init__(self, *, event_ids_unique: bool = False) -> None:
        # the calls kept as objects (every call unless `settle_in_columns` was asked)
        self.calls: dict[str, CallEvidence] = {}
        # settled calls kept in columns instead (`settle_in_columns`), by slot, and each
        # position's slot (-1: kept as objects); positions taken back never settle again
        self._settled: SettledCalls | None = None
        self._slot_of = array("i")  # (4 bytes: see columns.settles)
        self._to_settle: list[int] = []
        self._revived: set[int] = set()
        # calls judged not settled, with their last seq then: kept in columns at rest
        # once that is `rest_after` seqs behind and they have not changed since
        self._to_rest: deque[tuple[int, int]] = deque()
        self.rest_after = REST_AFTER
        self.compilations: dict[str, CompilationEvidence] = {}
        self.anomalies: list[Anomaly] = []
        self.unknown_kinds: dict[str, int] = {}
        self._unknown_seqs: list[tuple[int, str]] = []  # for unknown kinds as of a seq
        self.event_count = 0
        self.last_seq = 0
        self._event_ids: dict[str, int] | None = None if event_ids_unique else {}
        self._comp_cache: dict[str, CompilationState] = {}
        # kept as compilations change, so a snapshot and a task's verdict never pass over
        # every compilation (a task of 10^5: ~0.1 s a live poll): the verdicts in first
        # appearance order, each task's unresolved ones, and those to judge again
        self._comp_list: list[CompilationState | None] = []
        self._comp_pos: dict[str, int] = {}
        self._comp_pending: dict[str, dict[str, CompilationState]] = {}
        self._stale_comps: set[str] = set()
        self._dirty_tasks: set[str] = set()
        # tasks by position (first-appearance order: a snapshot's order), one index from
        # id to position for every per-task fact (a dict by task id each cost a task
        # ~50-190 bytes while following, an object or an array per task on top). A task
        # held as objects has its evidence and verdict here; a quiet one is kept in
        # columns instead (`_rest_tasks`) and taken back when an event names it
        self._task_pos: dict[str, int] = {}
        self._task_ids: list[str] = []
        self._task_ev: dict[int, TaskEvidence] = {}
        self._task_cache: dict[int, TaskState] = {}
        self._resting: RestingTasks | None = None
        self._task_slot = array("i")  # by position: its slot in `_resting` (-1: objects)
        self._tasks_woken: set[int] = set()  # taken back from columns: never rest again
        self._tasks_to_rest: deque[tuple[int, int]] = deque()  # (position, extent then)
        # call_id -> seqs of anomalies naming it (resume refuses such calls)
        self.call_anomalies: dict[str, list[int]] = {}
        # receipt coverage: (key, request hash) of started attempts, kept as calls change,
        # and a check per log object updated with the pairs that changed (a full check
        # costs 0.5-2 s at 140k receipts: never once per poll)
        self._pairs: Coverage = {}
        self._pairs_stale = False
        self._changed_pairs: list[Pair] = []
        self._live_check: LiveReceiptCheck | None = None
        # the calls held as objects, by position (first-seq order; `_firsts` has one
        # item per position): their ids, and their verdicts once judged, refreshed only
        # where a call changed. A call in columns has neither (a list slot a call was 8
        # bytes for each of 1.37M calls, and again in every snapshot), so a snapshot
        # copies only what objects hold
        self._ids: dict[int, str] = {}
        self._states: dict[int, CallState] = {}  # (absent: new, or in columns)
        # (4 bytes a seq while seqs fit, as they do below 2^31: `_append_seqs`)
        self._firsts: array[int] | list[int] = array("i")
        # each position's last seq, kept as events arrive: time travel finds the calls in
        # flight at n without asking 137,000 verdicts (~70 ms at the middle of 1M events)
        self._lasts: array[int] | list[int] = array("i")
        self._stale: set[int] = set()
        self._unknown = SortedPositions()  # positions of the effect-unknown calls
        # kept as verdicts change, so a snapshot never passes over every call for them
        # (the console asks on every live snapshot: 30-90 ms each at 10^5 calls)
        self._resumable: set[int] = set()  # positions of calls the projection lets resume
        # positions of calls with something to do: a next operation, or tool operations
        # (a sorted array: 4 bytes a call in flight, where a set of ints cost ~70)
        self._pending = SortedPositions()
        self._tool_unknown: dict[int, int] = {}  # position -> tool operations effect unknown
        self._keys_moved = False  # a call's key changed under started attempts (hostile)
        self.seq_dense = True  # seqs so far were 1, 2, 3 ... (then count as of n is n)
        # by task position, the last seq of any event of the task or of its calls and
        # compilations: a task whose extent ends by n has its live verdict as of n
        self._extent: array[int] | list[int] = array("i")
        # by task position, its calls (in first-seq order): positions start, start + 1,
        # ... (count of them) as most tasks' calls are, 8 bytes a task; the positions
        # of a task whose calls are not one run in `_scattered` instead (count -1)
        self._run_start = array("i")
        self._run_count = array("i")
        self._scattered: dict[int, array[int]] = {}
        # gathering only (`take_calls`, before `take_rest` gives the tasks' order):
        # task_id -> its calls' positions, and their last seq
        self._gathered_calls: dict[str, array[int]] = {}
        self._gathered_extent: dict[str, int] = {}
        # task_id -> its compilations, in first-seq order
        self._task_comps: dict[str, list[str]] = {}
        # task_id -> its calls' share of its verdict, made on first use, then kept for
        # a task of KEEP_TALLY_FROM calls or more while it is held as objects
        self._tallies: dict[str, _CallTally] = {}

    @property
    def event_ids_unique(self) -> bool:
        """True when the source guarantees distinct event ids (none are remembered)."""
        return self._event_ids is None

    @classmethod
    def from_evidence(
        cls,
        *,
        calls: Iterable[CallState],
        compilations: Iterable[CompilationEvidence],
        tasks: Iterable[TaskEvidence],
        anomalies: Iterable[Anomaly],
        unknown: Iterable[tuple[int, str]],
        event_count: int,
        last_seq: int,
        coverage: Coverage | None = None,
        task_states: Iterable[TaskState] = (),
        compilation_states: Iterable[CompilationState] = (),
    ) -> Projector:
        """A projector that continues from evidence gathered another way (the SQL fast
        path), as if it had been fed every event up to `last_seq`. Its later `add`s fold
        into copies of the evidence the given verdicts hold. Only for ledgers whose
        event ids SQLite keeps unique (the ids are not re-read). `coverage`: the calls'
        coverage when the gatherer built it already (it is kept, not copied).
        `task_states`, `compilation_states`: verdicts the gatherer judged already from
        the same evidence (not judged again: 10^6 tasks took seconds)."""
        p = cls.gathering()
        p.take_calls(calls)
        p.take_rest(compilations=compilations, tasks=tasks, anomalies=anomalies,
                    unknown=unknown, event_count=event_count, last_seq=last_seq,
                    coverage=coverage, task_states=task_states,
                    compilation_states=compilation_states)
        return p

    @classmethod
    def gathering(cls, load: CallLoader | None = None) -> Projector:
        """An empty projector to be handed a gathered projection: `take_calls` (in
        first-seq order, as they are produced), then `take_rest`. `load`: settled calls
        go into columns as they are taken (see `settle_in_columns`), so a ledger's calls
        are never all held as objects at once; `coverage` is then the one the gatherer
        must add to (it answers for the calls in columns)."""
        p = cls(event_ids_unique=True)
        if load is not None:
            p.settle_in_columns(load, share_tasks=False)
        return p

    @property
    def coverage(self) -> Coverage:
        """The receipt coverage this projector keeps (the gatherer adds to it)."""
        return self._pairs

    def take_calls(self, calls: Iterable[CallState], expected: int = 0) -> None:
        """Take gathered verdicts in first-seq order (see `gathering`); a call that
        settles goes straight into the columns, its covering attempt with it. Its
        coverage must be in `coverage` already (the gatherer adds it as it produces).
        `expected`: how many calls will come (the columns' index is sized once)."""
        cols, extent = self._settled, self._gathered_extent
        if cols is not None and expected:
            cols.reserve(expected)
        pairs = self._pairs if type(self._pairs) is SettledCoverage else None
        for st in calls:
            pos = len(self._firsts)
            task_id = st.task_id
            self._gathered_calls.setdefault(task_id, array("i")).append(pos)  # (as `add`)
            last = st.last_seq
            self._append_seqs(st.first_seq, last)
            if extent.get(task_id, 0) < last:
                extent[task_id] = last
            if cols is not None and settles(st, False):
                cover = column_cover(pairs, st.evidence, cols)
                self._slot_of.append(cols.add(st, pos, cover))
                if cover is not None:
                    del pairs[st.evidence.key]  # type: ignore[index, arg-type]
                continue
            self.calls[st.call_id] = st.evidence
            self._ids[pos] = st.call_id
            self._states[pos] = st
            self._slot_of.append(-1)
            self._track(pos, st)

    def taken_calls(self) -> TakenCalls:
        """What `take_calls` took, for the projector that took the calls before them
        (`take_half`): a helper process gathers the later half of a ledger's calls."""
        if self._settled is None or type(self._pairs) is not SettledCoverage:
            raise ValueError("only a projector settling in columns hands its calls over")
        kept = sorted(self._states.items())
        return TakenCalls(self._firsts, self._lasts, self._slot_of, self._gathered_calls,
                          self._gathered_extent, self._settled.to_extend(), kept,
                          dict(self._pairs))

    def take_half(self, half: TakenCalls) -> bool:
        """Take the calls that follow those taken so far, as another projector took them
        (`taken_calls`), as if `take_calls` had taken them here: their columns are
        appended, the few kept as objects are tracked. False (nothing taken) where that
        would not be the same: a receipt key both halves' attempts cover (which attempt
        covers it depends on both), or positions that do not follow on."""
        cols, pairs = self._settled, self._pairs
        if cols is None or type(pairs) is not SettledCoverage:
            return False
        base, count = len(self._firsts), len(half.slots)
        if any(st.evidence.position != base + pos for pos, st in half.kept) or not (
                len(half.firsts) == len(half.lasts) == count):
            return False
        covers = pairs.covers
        if any(map(covers, half.coverage)) or any(map(covers, half.settled.cover_keys())):
            return False
        slot_base = len(cols)
        self._lend_seqs(extended(self._firsts, half.firsts),
                        extended(self._lasts, half.lasts))
        cols.extend(half.settled, base)
        self._slot_of.extend(array("i", (s + slot_base if s >= 0 else -1 for s in half.slots)))
        task_calls, extent = self._gathered_calls, self._gathered_extent
        for task_id, positions in half.task_calls.items():
            task_calls.setdefault(task_id, array("i")).extend(
                array("i", (p + base for p in positions)))
        for task_id, last in half.extent.items():
            if extent.get(task_id, 0) < last:
                extent[task_id] = last
        for pos, st in half.kept:
            pos += base
            self.calls[st.call_id] = st.evidence
            self._ids[pos] = st.call_id
            self._states[pos] = st
            self._track(pos, st)
        dict.update(pairs, half.coverage)
        return True

    def take_rest(
        self,
        *,
        compilations: Iterable[CompilationEvidence],
        tasks: Iterable[TaskEvidence],
        anomalies: Iterable[Anomaly],
        unknown: Iterable[tuple[int, str]],
        event_count: int,
        last_seq: int,
        coverage: Coverage | None = None,
        task_states: Iterable[TaskState] = (),
        compilation_states: Iterable[CompilationState] = (),
    ) -> None:
        """The rest of a gathered projection, once its calls were taken (see
        `from_evidence`). An anomaly that names a call in columns takes it back."""
        for task in tasks:
            self._new_task(task)
        for task_id in self._gathered_calls.keys() - self._task_pos.keys():
            self._new_task(TaskEvidence(task_id, 0))  # (never: a call's task has evidence)
        self._take_gathered_calls()
        for comp in compilations:
            self._new_compilation(comp)
        task_pos = self._task_pos
        self._task_cache = {task_pos[t.task_id]: t for t in task_states}
        for cs in compilation_states:
            self._judged(cs)
        self._stale_comps = self.compilations.keys() - self._comp_cache.keys()
        self.anomalies = list(anomalies)
        for a in self.anomalies:
            if a.call_id:
                self.call_anomalies.setdefault(a.call_id, []).append(a.seq)
        for seq, kind in unknown:
            self.unknown_kinds[kind] = self.unknown_kinds.get(kind, 0) + 1
            self._unknown_seqs.append((seq, kind))
        self.event_count = event_count
        self.last_seq = last_seq
        self.seq_dense = not any(a.problem.startswith("seq ") for a in self.anomalies)
        for pos, task in self._task_ev.items():
            self._widen_extent(pos, task.last_seq)
        for comp in self.compilations.values():
            self._widen_extent(task_pos[comp.task_id], comp.last_seq)
        if self._settled is None:
            self._pairs = coverage if coverage is not None else coverage_pairs(
                self.calls.values())
        elif coverage is not None and coverage is not self._pairs:
            raise ValueError("a projector settling in columns keeps its own coverage: "
                             "the gatherer adds to `coverage`")
        if self._settled is not None:  # (every call's task has its position now)
            self._settled.share_tasks(self._task_ids, self._task_pos)
        for call_id in self.call_anomalies:
            self._live_call(call_id)  # (one in columns is taken back and judged again)

    # ---- tasks by position

    @property
    def tasks(self) -> Mapping[str, TaskEvidence]:
        """Each task's own evidence by id, in first-appearance order (a task kept in
        columns has it made again when read)."""
        return _TaskEvidence(self)

    def _task_evidence(self, pos: int) -> TaskEvidence:
        """The evidence of the task at `pos`, held as objects or in columns."""
        task = self._task_ev.get(pos)
        if task is None:  # (its slot is set before it leaves the objects: `_rest_tasks`)
            return self._resting.evidence(self._task_slot[pos])  # type: ignore[union-attr]
        return task

    def _new_task(self, task: TaskEvidence) -> int:
        """Give `task` the next position (or its own, when it has one); returns it."""
        pos = self._task_pos.get(task.task_id)
        if pos is not None:
            self._task_ev[pos] = task
            return pos
        pos = len(self._task_ids)
        self._task_ids.append(task.task_id)
        self._task_pos[task.task_id] = pos
        self._task_ev[pos] = task
        self._extent = appended(self._extent, 0)
        self._run_start.append(0)
        self._run_count.append(0)
        self._task_slot.append(-1)
        return pos

    def _wake_task(self, pos: int) -> TaskEvidence:
        """The task's evidence as objects: a task kept in columns that an event names
        again (or one of its calls) is taken back, judged again, and never rests again;
        its columns stay, so a snapshot that reads them is unchanged."""
        task = self._task_ev.get(pos)
        if task is not None:
            return task
        task = self._resting.evidence(self._task_slot[pos])  # type: ignore[union-attr]
        self._tasks_woken.add(pos)
        self._task_ev[pos] = task
        self._dirty_tasks.add(task.task_id)
        return task

    def _set_extent(self, pos: int, seq: int) -> None:
        try:
            self._extent[pos] = seq
        except OverflowError:  # (4 bytes while seqs fit: see `_append_seqs`)
            self._extent = assigned(self._extent, pos, seq)

    def _widen_extent(self, pos: int, seq: int) -> None:
        if self._extent[pos] < seq:
            self._set_extent(pos, seq)

    def _add_task_call(self, task: int, pos: int) -> None:
        """Count the call at `pos` (the latest) among the task at `task`'s calls."""
        count = self._run_count[task]
        if count == 0:
            self._run_start[task], self._run_count[task] = pos, 1
        elif count > 0 and self._run_start[task] + count == pos:
            self._run_count[task] = count + 1
        else:
            if count > 0:  # (the run ends: its positions listed from now on)
                start = self._run_start[task]
                self._scattered[task] = array("i", range(start, start + count))
                self._run_count[task] = -1
            self._scattered[task].append(pos)

    def _calls_of_task(self, task: int) -> Sequence[int]:
        """The positions of the calls of the task at `task`, in first-seq order."""
        count = self._run_count[task]
        if count < 0:
            return self._scattered[task]
        start = self._run_start[task]
        return range(start, start + count)

    def _take_gathered_calls(self) -> None:
        """Give each task (now that they have positions) the calls `take_calls` took."""
        task_pos = self._task_pos
        for task_id, positions in self._gathered_calls.items():
            task = task_pos[task_id]
            if positions[-1] - positions[0] + 1 == len(positions):  # (positions rise)
                self._run_start[task], self._run_count[task] = positions[0], len(positions)
            else:
                self._run_count[task] = -1
                self._scattered[task] = positions
        for task_id, last in self._gathered_extent.items():
            self._widen_extent(task_pos[task_id], last)
        self._gathered_calls, self._gathered_extent = {}, {}

    # ---- feeding

    def feed(self, events: Iterable[Event]) -> None:
        for ev in events:
            self.add(ev)

    def _anomaly(self, ev: Event, problem: str, *, call: bool = True) -> None:
        self.anomalies.append(
            Anomaly(ev.seq, problem, ev.call_id if call else None, ev.compilation_id)
        )
        if call and ev.call_id:
            self.call_anomalies.setdefault(ev.call_id, []).append(ev.seq)
            known = self._live_call(ev.call_id)
            if known is not None:
                self._stale.add(known.position)

    def add(self, ev: Event) -> None:
        problem = seq_problem(ev.seq, self.last_seq)
        if problem is not None:
            self._anomaly(ev, problem, call=False)
            self.seq_dense = False
        self.last_seq = max(self.last_seq, ev.seq)
        self.event_count += 1
        if self._event_ids is not None:
            first = self._event_ids.setdefault(ev.event_id, ev.seq)
            if first != ev.seq:
                self._anomaly(ev, duplicate_id_problem(ev.event_id, first))
        pos = self._task_pos.get(ev.task_id)
        if pos is None:
            pos = self._new_task(TaskEvidence(ev.task_id, ev.seq))
        task = self._task_ev.get(pos) or self._wake_task(pos)
        task.last_seq = ev.seq
        # (the task's id is one object wherever it is kept: its evidence's, not each
        # event's, and not interned either: an interned table's entry cost ~100 bytes
        # a task while following)
        self._set_extent(pos, ev.seq)
        self._dirty_tasks.add(task.task_id)
        if ev.payload is None:
            # Shown and flagged; the event still counts as evidence of its kind (an
            # attempt.started with a broken payload still means an attempt started).
            self._anomaly(ev, f"{ev.kind or 'event'}: {ev.payload_error}")
        kind = ev.kind
        if kind not in KNOWN_KINDS:
            self.unknown_kinds[kind] = self.unknown_kinds.get(kind, 0) + 1
            self._unknown_seqs.append((ev.seq, kind))
            return
        payload = ev.payload or {}
        if kind.startswith("task."):
            fold_task_event(task, kind, ev.seq, payload,
                            lambda problem: self._anomaly(ev, problem, call=False))
        elif kind.startswith("context."):
            self._add_compilation(ev, payload)
        else:
            self._add_call(ev, payload)

    def _add_compilation(self, ev: Event, p: dict[str, Any]) -> None:
        cid = ev.compilation_id
        if not cid:
            self._anomaly(ev, f"{ev.kind} without compilation_id", call=False)
            return
        comp = self.compilations.get(cid)
        is_new = comp is None
        if comp is None:
            comp = self._new_compilation(CompilationEvidence(cid, ev.task_id, ev.seq))
        self._comp_cache.pop(cid, None)  # CompilationState copies what it shows
        self._stale_comps.add(cid)
        self._dirty_tasks.add(comp.task_id)
        self._set_extent(self._task_pos[comp.task_id], ev.seq)
        fold_compilation_event(comp, is_new, ev.kind, ev.seq, p,
                               lambda problem: self._anomaly(ev, problem, call=False))

    def _add_call(self, ev: Event, p: dict[str, Any]) -> None:
        cid = ev.call_id
        if not cid:
            self._anomaly(ev, f"{ev.kind} without call_id", call=False)
            return
        call = self._live_call(cid)
        is_new = call is None
        if call is None:
            pos, task = len(self._firsts), self._task_pos[ev.task_id]
            call = self.calls[cid] = CallEvidence(cid, self._task_ids[task], ev.seq, pos)
            self._add_task_call(task, pos)
            self._ids[pos] = cid
            self._slot_of.append(-1)
            self._append_seqs(ev.seq, ev.seq)
        else:
            handed = self._states.get(call.position)
            if handed is not None and handed.evidence is call:
                # a verdict holding this evidence was handed out: fold into a copy
                before, call = call, call.clone()
                self.calls[cid] = call
                repoint_coverage(self._pairs, before, call)
        self._stale.add(call.position)
        self._dirty_tasks.add(call.task_id)
        self._set_extent(self._task_pos[call.task_id], ev.seq)
        key_before = call.key
        fold_call_event(call, is_new, ev.kind, ev.seq, ev.attempt_id, p,
                        lambda problem: self._anomaly(ev, problem))
        try:
            self._lasts[call.position] = call.last_seq
        except OverflowError:  # (see `_append_seqs`)
            self._lend_seqs(self._firsts, assigned(self._lasts, call.position, call.last_seq))
        if ev.kind in _COVERAGE_KINDS and not self._pairs_stale:
            if call.key != key_before and any(a.started_seq is not None for a in call.attempts):
                self._pairs_stale = self._keys_moved = True  # rebuild (hostile ledger)
            elif ev.kind == "attempt.started":  # (under an unchanged key nothing else can)
                self._changed_pairs += add_started(
                    self._pairs, call, call.attempt(attempt_key(ev.attempt_id, ev.seq)))

    def _append_seqs(self, first: int, last: int) -> None:
        """Append a new position's first and last seq: 4 bytes each while they fit (a
        ledger's seqs stay below 2^31 for 2 billion events; 8 bytes a call less, 11 MB
        at 1.37M calls), a column widened where one does not (`blocks.appended`)."""
        try:
            self._firsts.append(first)
        except OverflowError:
            self._lend_seqs(appended(self._firsts, first), self._lasts)
        try:
            self._lasts.append(last)
        except OverflowError:
            self._lend_seqs(self._firsts, appended(self._lasts, last))

    def _lend_seqs(self, firsts: array[int] | list[int], lasts: array[int] | list[int]
                   ) -> None:
        """Keep these as the seq columns: where one was widened (a new object), the
        settled columns that read them by position are lent the wider one."""
        if firsts is self._firsts and lasts is self._lasts:
            return
        self._firsts, self._lasts = firsts, lasts
        if self._settled is not None:
            self._settled.share_seqs(firsts, lasts)

    # ---- settled calls in columns

    def settle_in_columns(self, load: CallLoader, *, share_tasks: bool = True) -> None:
        """Keep each call judged from now on that settles (see `columns.settles`) in
        columns instead of objects, from the next snapshot on; `load` derives its
        evidence from its own events when its reason or evidence is asked for (the same
        function time travel uses). A call not settled whose last event is
        `rest_after` seqs behind is kept there too while it stays quiet (`_rest`).
        The calls judged already (a fast start's) stay objects: moving them costs the
        first snapshot ~12 µs a call, and the memory they free stays with the process,
        so the columns would only add to it. `share_tasks`: the columns code each call's
        task by its position here (False while gathering: tasks are given positions
        by `take_rest`, which lends them then)."""
        if self._settled is None:
            self._settled = SettledCalls(load)
            self._settled.share_seqs(self._firsts, self._lasts)
            if share_tasks:
                self._settled.share_tasks(self._task_ids, self._task_pos)
            self._resting = RestingTasks(self._task_ids, self._settled, self._slot_of)
            if not self._pairs_stale:
                self._pairs = SettledCoverage(self._pairs, self._settled)

    @property
    def settled_count(self) -> int:
        """How many calls are kept in columns."""
        return len(self._settled) if self._settled is not None else 0

    def _settle(self) -> None:
        """Move the calls that settled since the last snapshot into the columns (their
        verdicts are current: see `snapshot`), at most SETTLE_BATCH a snapshot: the
        first snapshot of 137,000 calls would otherwise wait ~1.5 s for all of them; the
        rest follow with the next snapshots."""
        cols = self._settled
        if cols is None or not self._to_settle:
            return
        batch = self._to_settle[:SETTLE_BATCH]
        self._to_settle = self._to_settle[SETTLE_BATCH:]
        states, slots, flagged = self._states, self._slot_of, self.call_anomalies
        for pos in batch:
            st = states.get(pos)
            if st is None or slots[pos] != -1 or pos in self._revived or pos in self._stale:
                continue
            if not settles(st, st.call_id in flagged):
                continue
            self._into_columns(cols, pos, st, False)

    def _rest(self) -> None:
        """Keep in columns the calls not settled whose last event is `rest_after` seqs
        behind (and judged since: see `call_state`), at most SETTLE_BATCH a snapshot; a
        call whose next event comes is taken back (`_live_call`). Its task is judged
        again, so that no verdict kept holds the call's objects."""
        cols, queue = self._settled, self._to_rest
        if cols is None or not queue:
            return
        horizon = self.last_seq - self.rest_after
        states, slots, lasts, flagged = self._states, self._slot_of, self._lasts, \
            self.call_anomalies
        moved = 0
        while queue and queue[0][1] <= horizon and moved < SETTLE_BATCH:
            pos, last = queue.popleft()
            st = states.get(pos)
            if (st is None or lasts[pos] != last or slots[pos] != -1 or pos in self._stale
                    or pos in self._revived or not rests(st, st.call_id in flagged)):
                continue  # (changed since, kept already, or what columns cannot hold)
            moved += 1
            slot = self._into_columns(cols, pos, st, True)
            task_id = st.task_id
            tally = self._tallies.get(task_id)
            if tally is not None and not tally.stale:
                tally.update(pos, contribution(cols.state(slot)))
            self._dirty_tasks.add(task_id)

    def _into_columns(self, cols: SettledCalls, pos: int, st: CallState, resting: bool
                      ) -> int:
        """Move the call at `pos` (current verdict `st`) from objects into the columns;
        its attempt's receipt coverage goes with it, when it is the one covering its key
        (it never changes once started). Returns its slot."""
        pairs = self._pairs if type(self._pairs) is SettledCoverage else None
        cover = column_cover(pairs, st.evidence, cols)
        live = self._live_check
        lent: object = None
        if cover is not None and live is not None and live.log is not None:
            lent = live.hash_place(st.evidence.key, cover.request_sha256) or LEND_LATER  # type: ignore[arg-type]
        slot = self._slot_of[pos] = cols.add(st, pos, cover, resting, lent)  # type: ignore[arg-type]
        if cover is not None:
            del pairs[st.evidence.key]  # type: ignore[index, arg-type]
        del self._states[pos], self._ids[pos]
        del self.calls[st.call_id]
        return slot

    def _rest_tasks(self) -> None:
        """Keep in columns the tasks whose last event (their calls' too) is `rest_after`
        seqs behind, judged since, that the columns can hold (`_task_can_rest`), at most
        SETTLE_BATCH a snapshot: their evidence, verdict and tally let go. A task an
        event names again is taken back (`_wake_task`)."""
        resting, queue = self._resting, self._tasks_to_rest
        if resting is None or not queue:
            return
        horizon = self.last_seq - self.rest_after
        evs, cache, extent = self._task_ev, self._task_cache, self._extent
        moved = 0
        while queue and queue[0][1] <= horizon and moved < SETTLE_BATCH:
            pos, last = queue.popleft()
            task, st = evs.get(pos), cache.get(pos)
            if (task is None or st is None or extent[pos] != last
                    or task.task_id in self._dirty_tasks or not self._task_can_rest(pos, task)):
                continue  # (changed since, kept already, or what columns cannot hold)
            moved += 1
            count = self._run_count[pos]
            # (the slot first: a reader on another thread finds the task in one or both)
            self._task_slot[pos] = resting.add(pos, task, st.next_operation,
                                               self._run_start[pos] if count else 0, count)
            del cache[pos], evs[pos]
            self._tallies.pop(task.task_id, None)

    def _may_rest(self, pos: int, task: TaskEvidence) -> bool:
        """True when the columns can hold what the task at `pos` is judged from, but
        for its calls: its own evidence (`task_rests`), no compilation, its calls one
        run of positions, never taken back (only such tasks wait in the queue: one
        entry a poll for each task judged cost ~11 bytes a call where tasks interleave)."""
        return (pos not in self._tasks_woken and self._run_count[pos] >= 0
                and task_rests(task) and task.task_id not in self._task_comps)

    def _task_can_rest(self, pos: int, task: TaskEvidence) -> bool:
        """True when the columns hold all the task at `pos` is judged from (`_may_rest`)
        and its calls are all kept in columns (settled or at rest), so its verdict read
        from them is the one judged from objects."""
        if not self._may_rest(pos, task):
            return False
        count = self._run_count[pos]
        slots, states, start = self._slot_of, self._states, self._run_start[pos]
        return all(slots[p] >= 0 and p not in states for p in range(start, start + count))

    def _state_at(self, pos: int) -> CallState:
        """The verdict at `pos` (current), from the objects or the columns."""
        st = self._states.get(pos)
        if st is None and self._settled is not None and self._slot_of[pos] >= 0:
            return self._settled.state(self._slot_of[pos])
        if st is None or pos in self._stale:
            return self.call_state(self._ids[pos])  # type: ignore[arg-type]  # (live)
        return st

    def _call_id_at(self, pos: int) -> str:
        """The id of the call at `pos`, held as objects or in columns."""
        call_id = self._ids.get(pos)
        if call_id is None:
            return self._settled.ids[self._slot_of[pos]]  # type: ignore[union-attr]
        return call_id

    def position_of(self, call_id: str) -> int | None:
        """The call's position (its index in a snapshot's calls), None if unknown."""
        ev = self.calls.get(call_id)
        if ev is not None:
            return ev.position
        if self._settled is not None:
            slot = self._settled.find(call_id)
            if slot is not None:
                return self._settled.positions[slot]
        return None

    def _live_call(self, call_id: str) -> CallEvidence | None:
        """The call's evidence as objects: a call settled in columns that an event or an
        anomaly names again is taken back (derived from its events; hostile or rare),
        and never settles again."""
        ev = self.calls.get(call_id)
        cols = self._settled
        if ev is not None or cols is None:
            return ev
        slot = cols.find(call_id)
        if slot is None:
            return None
        ev = cols.load(slot)
        pos = ev.position
        task = self._task_pos.get(ev.task_id)
        if task is not None:
            self._wake_task(task)  # (its verdict reads this call: judged again)
        cols.forget(slot)
        self._revived.add(pos)
        self.calls[call_id] = ev
        self._ids[pos] = call_id
        # (the verdict handed out holds this evidence: the next fold copies it)
        self._states[pos] = classify_call(ev, anomalous=call_id in self.call_anomalies)
        self._stale.add(pos)
        return ev

    def _all_evidence(self) -> Iterator[CallEvidence]:
        """Every call's evidence, those in columns derived again (a hostile ledger's
        coverage rebuild only)."""
        yield from self.calls.values()
        cols = self._settled
        if cols is not None:
            for pos, slot in enumerate(self._slot_of):
                if slot >= 0 and pos not in self._states:
                    yield cols.load(slot)

    # ---- verdicts

    def call_state(self, call_id: str) -> CallState:
        evidence = self.calls.get(call_id)
        if evidence is None:
            pos = self.position_of(call_id)
            if pos is None:
                raise KeyError(call_id)
            return self._state_at(pos)
        pos = evidence.position
        st = self._states.get(pos)
        if st is None or pos in self._stale:
            st = classify_call(evidence, anomalous=call_id in self.call_anomalies)
            self._track(pos, st)
            self._states[pos] = st
            self._stale.discard(pos)
            if self._settled is not None and not st.settled and pos not in self._revived:
                self._to_rest.append((pos, self._lasts[pos]))
        return st

    def _track(self, pos: int, st: CallState) -> None:
        """Keep what snapshots read without a pass over the calls as the call at `pos`
        gets verdict `st`: the effect-unknown, resumable and unsettled calls, the tool
        operations whose effect is unknown (tools are judged for tool calls only), and
        its task's tally where one is kept (tools judged once for both)."""
        if st.effect_unknown:
            self._unknown.add(pos)
        else:
            self._unknown.discard(pos)
        if st.resumable:
            self._resumable.add(pos)
        else:
            self._resumable.discard(pos)
        if st.settled:
            self._pending.discard(pos)
        else:
            self._pending.add(pos)
        tools = st.tools
        if tools is not None and tools.effect_unknown_count:
            self._tool_unknown[pos] = tools.effect_unknown_count
        else:
            self._tool_unknown.pop(pos, None)
        if self._settled is not None and st.settled and st.stage is CallStage.COMPLETED:
            self._to_settle.append(pos)
        tally = self._tallies.get(st.task_id)
        if tally is not None and not tally.stale:
            tally.update(pos, contribution(st, tools))

    def _new_compilation(self, comp: CompilationEvidence) -> CompilationEvidence:
        cid = comp.compilation_id
        self.compilations[cid] = comp
        self._task_comps.setdefault(comp.task_id, []).append(cid)
        self._comp_pos[cid] = len(self._comp_list)
        self._comp_list.append(None)
        return comp

    def compilation_state(self, compilation_id: str) -> CompilationState:
        cached = self._comp_cache.get(compilation_id)
        if cached is None:
            cached = classify_compilation(self.compilations[compilation_id])
            self._judged(cached)
        return cached

    def _judged(self, cs: CompilationState) -> None:
        """Keep a compilation's verdict where snapshots and its task's verdict read it."""
        cid = cs.compilation_id
        self._comp_cache[cid] = cs
        self._comp_list[self._comp_pos[cid]] = cs
        pending = self._comp_pending.get(cs.task_id)
        if cs.next_operation is not NextOperation.NONE:
            if pending is None:
                pending = self._comp_pending[cs.task_id] = {}
            pending[cid] = cs
        elif pending is not None:
            pending.pop(cid, None)

    def task_state(self, task_id: str) -> TaskState:
        pos = self._task_pos[task_id]
        if pos not in self._task_ev:  # kept in columns: made when read
            return self._resting.state(self._task_slot[pos])  # type: ignore[union-attr]
        if task_id in self._dirty_tasks or pos not in self._task_cache:
            self._refresh_tasks()
        return self._task_cache[pos]

    def _refresh_tasks(self) -> None:
        self._refresh_states()  # every call's verdict, so every tally, is current
        for cid in self._stale_comps:  # and every compilation's
            self.compilation_state(cid)
        self._stale_comps.clear()
        task_pos, evs, cache = self._task_pos, self._task_ev, self._task_cache
        dirty = {task_pos[t] for t in self._dirty_tasks}
        dirty.update(evs.keys() - cache.keys())
        queue = self._tasks_to_rest if self._resting is not None else None
        horizon = self.last_seq - self.rest_after
        for pos in dirty:
            task = evs.get(pos) or self._wake_task(pos)
            task_id = task.task_id
            pending = self._comp_pending.get(task_id)
            tally = self._tally(task_id, pos)
            rollup = None  # (nothing unresolved, no call: nothing to roll up)
            if pending or tally is not _NO_CALLS:
                rollup = TaskRollup()
                if pending:  # (a compilation gives its task only what is unresolved)
                    rollup.take((min(pending.values(), key=pending_order), None, None))
                tally.into(rollup, self._call_id_at)
            cache[pos] = classify_task(task, rollup)
            if queue is not None and self._may_rest(pos, task):
                entry = (pos, self._extent[pos])
                if entry[1] <= horizon:  # (quiet already: judged again as its last call
                    queue.appendleft(entry)  # came to rest; not behind newer tasks)
                elif queue and queue[-1][0] == pos:  # (a task judged on every poll)
                    queue[-1] = entry
                else:
                    queue.append(entry)
        self._dirty_tasks.clear()

    def _tally(self, task_id: str, task: int) -> _CallTally:
        """The task's (at position `task`) calls' share of its verdict, counted from
        every call where it is missing or stale (the verdicts are current: see
        _refresh_tasks). A task with no call has none kept (10^6 such tasks: as many
        objects for nothing), nor one of fewer than KEEP_TALLY_FROM calls, nor one kept
        in columns (`_rest_tasks`)."""
        tally = self._tallies.get(task_id)
        if tally is None or tally.stale:
            calls = self._calls_of_task(task)
            if not calls:
                return _NO_CALLS
            tally = _CallTally()
            for pos in calls:
                tally.update(pos, contribution(self._state_at(pos)))
            if len(calls) >= KEEP_TALLY_FROM:
                self._tallies[task_id] = tally
            else:
                self._tallies.pop(task_id, None)  # (a stale one: counted afresh each time)
        return tally

    def _refresh_pairs(self) -> None:
        """Build the coverage anew where a key moved under started attempts (hostile)."""
        if self._pairs_stale:
            self._pairs = coverage_pairs(self._all_evidence())
            self._pairs_stale = False
            self._drop_live_check()

    def _drop_live_check(self) -> None:
        """Let the live check go; the columns then keep the request hashes they read in
        its log (the next check's log may be another: `SettledCalls.own_digests`)."""
        if self._live_check is not None and self._settled is not None:
            self._settled.own_digests()
        self._live_check = None

    def _read_receipts_on(self, receipt_log: ReceiptLog | None) -> None:
        """Index the receipts the log gained before calls settle: a settled call's
        cover then reads its request hash in the log's column (`SettledCalls.add`'s
        `lent_at`) where its receipt came in the same poll, as a provider's does."""
        self._refresh_pairs()
        live = self._live_check
        if live is not None and receipt_log is not None and live.log is not receipt_log \
                and live.extended_by(receipt_log):
            live.read_on(receipt_log)

    def receipt_check(self, receipt_log: ReceiptLog | None) -> ReceiptCheck:
        """Section 5's check of `receipt_log` against the attempts fed so far; the same
        log object again costs only the pairs that changed since."""
        self._refresh_pairs()
        live = self._live_check
        if live is not None and live.log is not receipt_log and live.extended_by(receipt_log):
            live.grow(receipt_log, self._pairs)  # type: ignore[arg-type]  # (not None)
            if self._settled is not None:
                self._settled.read_on(receipt_log.receipts.shas)  # type: ignore[union-attr]
        if live is None or live.log is not receipt_log:
            self._drop_live_check()
            live = self._live_check = LiveReceiptCheck(receipt_log, self._pairs)
        else:
            live.update(self._pairs, self._changed_pairs)
        self._changed_pairs = []
        return live.check()

    def snapshot(self, receipt_log: ReceiptLog | None = None,
                 next_recorded_at: str | None = None) -> WorkState:
        """The verdicts now. `next_recorded_at`: the recorded_at of the first event after
        the ones fed (time travel), so only receipts received before it count."""
        if receipt_log is not None and next_recorded_at is not None:
            receipt_log = receipts_before(receipt_log, next_recorded_at)
        self._refresh_tasks()  # (every call's verdict first)
        self._read_receipts_on(receipt_log)
        self._settle()
        self._rest()
        self._rest_tasks()
        calls = calls_of(self._states, len(self._firsts), self._settled,
                         self._slot_of)  # (all fresh)
        unknown = self._unknown.copy()
        return WorkState(
            as_of_seq=self.last_seq,
            event_count=self.event_count,
            anomalies=tuple(self.anomalies),
            unknown_kinds=dict(self.unknown_kinds),
            tasks=tasks_of(self._task_cache, len(self._task_ids), self._resting,
                           self._task_slot),
            calls=calls,
            compilations=tuple(self._comp_list),  # type: ignore[arg-type]  # all fresh
            receipts=self.receipt_check(receipt_log),
            effect_unknown_ids=CallIds(unknown, calls, self.position_of),
            resumable_positions=tuple(sorted(self._resumable)),
            pending_positions=self._pending.copy(),
            tool_effect_unknown_tally=sum(self._tool_unknown.values()),
            look_positions=_looked_at(unknown, self._tool_unknown),
        )

    def _refresh_states(self) -> None:
        for pos in list(self._stale):
            self.call_state(self._ids[pos])

    def snapshot_as_of(
        self,
        n: int,
        *,
        event_count: int,
        as_of_seq: int,
        call_before: CallBefore,
        compilation_before: CompilationBefore,
        task_before: TaskBefore,
        receipt_log: ReceiptLog | None = None,
    ) -> WorkState:
        """The projection as of seq `n`, from this (later) one, in proportion to what was
        in flight: an entity whose events all lie at or before `n` has its live verdict;
        one whose first event is after `n` does not exist yet; only entities straddling
        `n` are re-derived from their own events (`*_before`). `receipt_log`: the log as
        of `n`, cut by the caller (who shows that same cut). Equals projecting the
        prefix (tests/core/test_time_travel.py). Anomalies and unknown kinds are kept
        with their seqs, so their prefix is a filter."""
        self._refresh_states()
        k = bisect_right(self._firsts, n)  # calls begun by n: a prefix (first-seq order)
        # the verdicts held as objects, by position; the others are in columns, read
        # through `at` where needed
        calls = {pos: st for pos, st in self._states.items() if pos < k}
        at = self._state_at
        flags = {cid: any(s <= n for s in seqs) for cid, seqs in self.call_anomalies.items()}
        lasts = self._lasts
        in_flight = [i for i in range(k) if lasts[i] > n]
        for i in in_flight:  # re-derived from their own events
            st = calls.get(i) or at(i)
            before = call_before(st.call_id, n, i)
            if before is not None:  # (never None: its first call event is at or before n)
                calls[i] = classify_call(before, anomalous=flags.get(st.call_id, False))
        # the others keep their live verdict; only a call some anomaly names can have
        # been flagged later than n
        redone = set(in_flight)
        for cid, flagged in flags.items():
            known = self.position_of(cid)
            pos = known if known is not None else k
            if pos < k and pos not in redone and (calls.get(pos) or at(pos)).anomalous != flagged:
                calls[pos] = (calls.get(pos) or at(pos)).with_anomalous(flagged)
                redone.add(pos)
        comps: list[CompilationState] = []
        for comp_id, comp in self.compilations.items():
            if comp.first_seq > n:
                continue
            if comp.last_seq <= n:
                comps.append(self.compilation_state(comp_id))
            elif (cb := compilation_before(comp_id, n)) is not None:
                comps.append(classify_compilation(cb))
        # a task whose events and whose calls' and compilations' events all lie by n has
        # its live verdict; the others are judged from their entities as of n
        self._refresh_tasks()
        late = [t for t, last in enumerate(self._extent) if last > n]  # (by position)
        rollups: dict[int, TaskRollup] = {t: TaskRollup() for t in late}
        task_pos = self._task_pos
        for cs in comps:
            t = task_pos.get(cs.task_id)
            if t in rollups:
                rollups[t].add(cs)  # type: ignore[index]
        cols, slot_of = self._settled, self._slot_of
        for t in late:
            rollup, settled = rollups[t], []
            for pos in self._calls_of_task(t):  # (first-seq order: positions rise)
                if pos >= k:
                    break  # begun after n, as are the rest (all calls, as of an early n)
                st = calls.get(pos)
                if st is None and slot_of[pos] >= 0 and cols.settled(slot_of[pos]):  # type: ignore[union-attr]
                    settled.append(slot_of[pos])  # (its live verdict, read in columns)
                else:
                    rollup.add(st or at(pos))
            if settled:
                rollup.take(cols.contribution(settled))  # type: ignore[union-attr]
        tasks: list[TaskState] = []
        cache, resting, task_slot = self._task_cache, self._resting, self._task_slot
        for t in range(len(self._task_ids)):
            if t not in rollups:  # (its live verdict, held as objects or in columns)
                ts = cache.get(t) or resting.state(task_slot[t])  # type: ignore[union-attr]
                if ts.first_seq <= n:
                    tasks.append(ts)
                continue
            task = self._task_evidence(t)
            if task.first_seq > n:
                continue
            evidence = task if task.last_seq <= n else task_before(task.task_id, n)
            tasks.append(classify_task(evidence, rollups[t]))
        if self._keys_moved:  # keys as of n may differ from now: check from as-of evidence
            check = check_receipts(
                receipt_log.receipts if receipt_log else (),
                ((calls.get(i) or at(i)).evidence for i in range(k)),
                problems=receipt_log.problems if receipt_log else (),
                log_present=bool(receipt_log and receipt_log.exists))
        else:
            check = self.receipt_check_as_of(receipt_log, n)
        unknown: dict[str, int] = {}
        for seq, kind in self._unknown_seqs:
            if seq <= n:
                unknown[kind] = unknown.get(kind, 0) + 1
        state = WorkState(
            as_of_seq=as_of_seq,
            event_count=event_count,
            anomalies=tuple(a for a in self.anomalies if a.seq <= n),
            unknown_kinds=unknown,
            tasks=tuple(tasks),
            calls=calls_of(calls, k, self._settled, self._slot_of),
            compilations=tuple(comps),
            receipts=check,
        )
        if len(state.calls) != k:  # (never: see above) positions moved, count on demand
            return state
        ids, resumable, pending, tools_unknown, look = self._kept_as_of(state.calls, redone)
        return replace(state, effect_unknown_ids=ids, resumable_positions=resumable,
                       pending_positions=pending, tool_effect_unknown_tally=tools_unknown,
                       look_positions=look)

    def receipt_check_as_of(self, cut: ReceiptLog | None, n: int) -> ReceiptCheck:
        """Section 5's check of `cut` (the log as of `n`: `receipts_before`) as of seq n: a
        pair covers when its earliest attempt started by n. (A ledger whose keys moved
        under started attempts is checked from its calls as of n: `snapshot_as_of`.)
        When `cut` is cut from the log of the live check (the console's time travel),
        it answers from that check's columns in a pass over the cut, instead of a
        look-up per receipt (0.2-0.3 s at 10^5 receipts, most of a step)."""
        self._refresh_pairs()
        live = self._live_check
        if live is not None and cut is not None:
            if self._changed_pairs:  # attempts started since the last snapshot
                live.update(self._pairs, self._changed_pairs)
                self._changed_pairs = []
            check = live.as_of(cut, n)
            if check is not None:
                return check
        return check_log(cut, self._pairs, upto=n)

    def _kept_as_of(self, calls: Sequence[CallState], redone: set[int]
                    ) -> tuple[CallIds, tuple[int, ...], tuple[int, ...], int, array[int]]:
        """What a live snapshot keeps (effect-unknown ids, resumable and pending positions,
        the tool tally) as of the seq `calls` were judged at, from the live sets: a call
        not `redone` has its live verdict. Without them each pane and count would pass
        over every call of the as-of snapshot (~40 ms each at 70,000 calls)."""
        k = len(calls)
        def live(positions: Iterable[int]) -> list[int]:
            return [p for p in positions if p < k and p not in redone]

        unknown = array("i", sorted(live(self._unknown) + [
            p for p in redone if calls[p].effect_unknown]))
        tools = {p: v for p, v in self._tool_unknown.items() if p < k and p not in redone}
        for p in redone:
            judged = calls[p].tools
            if judged is not None and judged.effect_unknown_count:
                tools[p] = judged.effect_unknown_count
        return (CallIds(unknown, calls, self.position_of),
                tuple(sorted(live(self._resumable) + [p for p in redone if calls[p].resumable])),
                tuple(sorted(live(self._pending) + [p for p in redone if not calls[p].settled])),
                sum(tools.values()), _looked_at(unknown, tools))


def _looked_at(unknown: array[int], tools: Mapping[int, int]) -> array[int]:
    """The positions `e` stops at (rising): the effect-unknown calls' (`unknown`, rising)
    and those holding tool operations of unknown effect (`tools`: few, or none)."""
    if not tools:
        return unknown  # (the snapshot's own copy, shared with its CallIds)
    return array("i", sorted({*unknown, *tools}))


class _TaskEvidence(Mapping[str, TaskEvidence]):
    """A projector's tasks' own evidence by id (`Projector.tasks`), read when asked."""

    __slots__ = ("_projector",)

    def __init__(self, projector: Projector) -> None:
        self._projector = projector

    def __getitem__(self, task_id: str) -> TaskEvidence:
        p = self._projector
        return p._task_evidence(p._task_pos[task_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._projector._task_ids)

    def __len__(self) -> int:
        return len(self._projector._task_ids)


def project(
    events: Iterable[Event],
    receipt_log: ReceiptLog | None = None,
    as_of: int | None = None,
) -> WorkState:
    """Project events (seq order) as of `as_of` (all when None), receipts included: as
    of a seq, only receipts received before the next event was recorded count."""
    projector = Projector()
    next_recorded_at: str | None = None
    for ev in events:
        if as_of is not None and ev.seq > as_of:
            next_recorded_at = ev.recorded_at
            break
        projector.add(ev)
    return projector.snapshot(receipt_log, next_recorded_at)


def project_call(events: Iterable[Event], call_id: str) -> CallState | None:
    """One call's verdict from its own events (None when none of them names it): what a
    write action re-derives inside its transaction before it appends."""
    projector = Projector()
    projector.feed(events)
    return projector.call_state(call_id) if call_id in projector.calls else None
