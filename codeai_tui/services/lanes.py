"""Lanes: a case's calls as a picture, one lane per call, grouped by task (no Textual).

The console's lanes pane and `codeai-tui report` draw from this one model:
- each started attempt is a span from its attempt.started to its last event;
- an attempt whose effect is unknown (started, no answer, no finding) is a span from its
  start to now (the live end, or the as-of seq when travelling in time), as is a tool
  operation admitted without an outcome;
- the receipts that match an attempt are marks on that attempt's span; receipts that no
  attempt covers get a lane of their own;
- a call's tool operations are marks on its lane.

Positions are seqs. A `SeqClock`, read from a sample of the ledger's recorded_at, turns
seqs into times and back: for the time axis, and to place a receipt (which has a time,
not a seq) on the span it matches.

What the lanes read of the projection is behind `call_lane` (a call's spans and marks)
and `LaneIndex` (which reads only each call's id and task): when the projection's
in-memory shape changes, those two change and nothing that draws.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.receipts import micros_of
from codeai_tui.workstate import CallState, ReceiptCheck, parse_time
from codeai_tui.workstate.calls_view import CallsView
from codeai_tui.workstate.evidence import ReceiptIndex, attempt_effect, attempt_receipts
from codeai_tui.workstate.receipts import duplicate_effect

# span kinds
EXTENT = "extent"  # the call's own first to last event
ATTEMPT = "attempt"
UNKNOWN = "unknown"  # effect unknown: an open one runs to now
# mark kinds
RECEIPT = "receipt"
DUPLICATE = "duplicate"  # a receipt of a duplicate effect
UNCOVERED = "uncovered"  # a receipt no attempt covers
TOOL = "tool"  # a tool operation admitted or completed
TOOL_UNKNOWN = "tool_unknown"  # admitted without an outcome

SEQ, TIME = "seq", "time"  # the axes
CLOCK_SAMPLES = 2048  # recorded_at samples a clock reads (a small ledger: every event)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
CLOCK_KEEP = 8192  # samples a followed clock keeps before it thins them


@dataclass(frozen=True, slots=True)
class Span:
    kind: str  # EXTENT | ATTEMPT | UNKNOWN
    start: int  # seq
    end: int  # seq (an open span: the seq of now)
    label: str = ""  # the attempt id, the tool operation
    open: bool = False  # runs to now: nothing has ended it


@dataclass(frozen=True, slots=True)
class Mark:
    kind: str  # RECEIPT | DUPLICATE | UNCOVERED | TOOL | TOOL_UNKNOWN
    seq: float  # where it sits on the seq axis
    label: str  # the receipt id, the tool operation
    at: str | None = None  # its own time, where it has one (a receipt's received_at)


@dataclass(frozen=True, slots=True)
class Lane:
    key: str  # "call:<id>" or UNCOVERED_KEY
    label: str
    call_id: str | None
    task_id: str | None
    spans: tuple[Span, ...]
    marks: tuple[Mark, ...]
    effect_unknown: bool = False  # an open span: something may have happened, unknown

    @property
    def attempts(self) -> tuple[Span, ...]:
        return tuple(s for s in self.spans if s.kind != EXTENT)


UNCOVERED_KEY = "receipts:uncovered"


def call_key(call_id: str) -> str:
    return f"call:{call_id}"


def task_key(task_id: str) -> str:
    return f"task:{task_id}"


# --------------------------------------------------------------------------- the clock


class SeqClock:
    """Seq -> time and back from (seq, recorded_at) samples, linear between them.

    Times are microseconds since 0001-01-01 UTC. A ledger's clock may step back (a host's
    clock was set back, or a hostile file): the samples' times are made non-decreasing,
    so the axis never folds over itself. Samples whose time cannot be read are left out."""

    __slots__ = ("seqs", "times")

    def __init__(self, samples: Iterable[tuple[int, str]] = ()) -> None:
        self.seqs = array("q")  # (8 bytes a sample: a followed clock keeps thousands)
        self.times = array("q")
        self.add(samples)

    def __len__(self) -> int:
        return len(self.seqs)

    def add(self, samples: Iterable[tuple[int, str]]) -> None:
        """Take samples after the last one (a followed ledger's newest events); past
        CLOCK_KEEP samples every other one goes (the first and the last stay)."""
        for seq, text in samples:
            if self.seqs and seq <= self.seqs[-1]:
                continue
            when = parse_time(text)
            if when is None:
                continue
            micros = micros_of(when)
            if self.times and micros < self.times[-1]:
                micros = self.times[-1]
            if not _INT64_MIN <= seq <= _INT64_MAX or not _INT64_MIN <= micros <= _INT64_MAX:
                continue  # (SQLite's integers fit: a seq past them is no ledger's)
            self.seqs.append(seq)
            self.times.append(micros)
        if len(self.seqs) > CLOCK_KEEP:
            last = (self.seqs[-1], self.times[-1])
            self.seqs, self.times = self.seqs[:-1:2], self.times[:-1:2]
            self.seqs.append(last[0])
            self.times.append(last[1])

    @property
    def last_seq(self) -> int:
        return self.seqs[-1] if self.seqs else 0

    def time_of(self, seq: float) -> float | None:
        """The time at `seq` (the nearest sample's beyond either end); None: no sample."""
        seqs, times = self.seqs, self.times
        if not seqs:
            return None
        i = bisect_left(seqs, seq)
        if i < len(seqs) and seqs[i] == seq:
            return float(times[i])
        if i == 0:
            return float(times[0])
        if i == len(seqs):
            return float(times[-1])
        s0, s1, t0, t1 = seqs[i - 1], seqs[i], times[i - 1], times[i]
        return t0 + (t1 - t0) * (seq - s0) / (s1 - s0)

    def seq_of(self, micros: float) -> float | None:
        """The seq at a time (where the ledger had got to then); None: no sample."""
        seqs, times = self.seqs, self.times
        if not seqs:
            return None
        i = bisect_left(times, micros)
        if i == 0:
            return float(seqs[0])
        if i == len(times):
            return float(seqs[-1])
        s0, s1, t0, t1 = seqs[i - 1], seqs[i], times[i - 1], times[i]
        return s0 + (s1 - s0) * (micros - t0) / (t1 - t0) if t1 > t0 else float(s0)


def read_clock(reader: LedgerReader, max_seq: int, samples: int = CLOCK_SAMPLES) -> SeqClock:
    """A clock for seqs 1..max_seq: every event's time in a small ledger, else `samples`
    evenly spaced (read by key: milliseconds at 10^6 events)."""
    if max_seq <= 0:
        return SeqClock()
    if max_seq <= 2 * samples:
        seqs: Sequence[int] = range(1, max_seq + 1)
    else:
        step = (max_seq - 1) / (samples - 1)
        seqs = sorted({1 + round(i * step) for i in range(samples)} | {max_seq})
    return SeqClock(reader.times_of(seqs))


def micros_at(text: str | None) -> float | None:
    """A recorded_at or received_at as microseconds (None if unreadable)."""
    when = parse_time(text) if text else None
    return float(micros_of(when)) if when is not None else None


_EPOCH = datetime(1, 1, 1, tzinfo=UTC)


def clock_text(micros: float, *, fraction: bool = False) -> str:
    """'12:00:09' (UTC, as the ledger records), with milliseconds if `fraction`."""
    try:
        when = _EPOCH + timedelta(microseconds=int(micros))
    except OverflowError:
        return "?"
    return when.strftime("%H:%M:%S.%f")[:12] if fraction else when.strftime("%H:%M:%S")


def duration_text(micros: float) -> str:
    """'850 ms', '14 s', '3 min 20 s', '2 h 5 min'."""
    seconds = micros / 1e6
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))} ms"
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, sec = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {sec} s" if sec else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


# --------------------------------------------------------------------------- one lane


def _placed(clock: SeqClock | None, at: str, start: int, end: int) -> float:
    """Where a receipt received at `at` sits on the span [start, end] of the attempt it
    matches: by the ledger's clock where one is known, else at the span's start."""
    micros = micros_at(at) if clock is not None else None
    seq = clock.seq_of(micros) if clock is not None and micros is not None else None
    return float(start) if seq is None else min(max(seq, float(start)), float(end))


def call_lane(call: CallState, now_seq: int, receipts: ReceiptIndex | None = None,
              clock: SeqClock | None = None) -> Lane:
    """One call's lane, read from its verdict's evidence: the one place that reads the
    projection's per-call shape. `now_seq`: where an open span ends (the live end, or
    the as-of seq); `receipts`: the projection's receipt index (same cut-off).

    The receipts matching an attempt are those of one (key, body hash) pair: one
    duplicate group when they are two or more (`duplicate_effect`, the groups' own
    rule), so each line is marked by the pair it is in, not by its id (which a hostile
    log can repeat on a line in no group)."""
    ev = call.evidence
    first, last = ev.first_seq, max(ev.last_seq, ev.first_seq)
    spans = [Span(EXTENT, first, last, call.call_id)]
    marks: list[Mark] = []
    unknown = False
    for att in ev.started_attempts():
        start = att.started_seq or first
        ends = [s for s in (att.observed_seq, att.interpreted_seq, att.retry_decided_seq,
                            att.completed_seq, att.reconciled_seq) if s is not None]
        effect_unknown = attempt_effect(att) == "unknown"
        if effect_unknown and not ends:
            end = max(start, now_seq)
            spans.append(Span(UNKNOWN, start, end, att.attempt_id, open=True))
            unknown = True
        else:
            end = max(start, *ends)
            spans.append(Span(UNKNOWN if effect_unknown else ATTEMPT, start, end,
                              att.attempt_id))
        if receipts is not None:
            matching = attempt_receipts(ev, att, receipts)
            grouped = duplicate_effect(matching)
            for rid, at in matching:
                kind = DUPLICATE if grouped else RECEIPT
                marks.append(Mark(kind, _placed(clock, at, start, end), rid, at))
    tools = call.tools if ev.tools is not None else None
    for op in tools.operations if tools is not None else ():
        if op.admitted_seq is not None:
            if op.effect_unknown:
                spans.append(Span(UNKNOWN, op.admitted_seq, max(op.admitted_seq, now_seq),
                                  op.subject, open=True))
                marks.append(Mark(TOOL_UNKNOWN, float(op.admitted_seq), op.subject))
                unknown = True
            else:
                marks.append(Mark(TOOL, float(op.admitted_seq), op.subject))
        if op.completed_seq is not None:
            marks.append(Mark(TOOL, float(op.completed_seq), op.subject))
    return Lane(call_key(call.call_id), call.call_id, call.call_id, call.task_id,
                tuple(spans), tuple(marks), unknown)


def uncovered_lane(check: ReceiptCheck, now_seq: int, clock: SeqClock | None) -> Lane | None:
    """The receipts no attempt covers, as marks on a lane of their own (placed by their
    time on the ledger's clock; at now where no clock can place them). None if none."""
    if not check.uncovered:
        return None
    covers = check.covered_by
    rs = covers.receipts
    marks = []
    for i, attempt in enumerate(covers.attempts):
        if attempt is not None:
            continue
        at = rs.received_at(i)
        micros = micros_at(at)
        seq = clock.seq_of(micros) if clock is not None and micros is not None else None
        marks.append(Mark(UNCOVERED, float(now_seq) if seq is None else seq, rs.ids[i], at))
    return Lane(UNCOVERED_KEY, "uncovered receipts", None, None, (), tuple(marks), True)


# --------------------------------------------------------------------------- rows


RowItem = tuple[str, "str | int | None"]  # ("uncovered", None) | ("task", id) | ("call", pos)


def _call_id_at(calls: Sequence[CallState], view: CallsView | None, pos: int) -> str:
    return view.call_id_at(pos) if view is not None else calls[pos].call_id


class LaneIndex:
    """Which lane is on which row: the uncovered receipts' lane first (when there are
    any), then each task in the order its first call appeared, as a header row followed
    by its calls in order. `update` takes only the calls appended since (a followed
    case), so following costs what arrived, not a pass over every call; rows are found
    by bisection, so only the rows on screen are ever looked at."""

    def __init__(self, keep: Callable[[CallState], bool] | None = None) -> None:
        self._keep = keep
        self._tasks: list[str] = []
        self._group_of: dict[str, int] = {}
        self._groups: list[array[int]] = []
        self._starts: list[int] = []  # the header row of each task
        self._seen = 0
        self._last_id: str | None = None
        self._rows = 0
        self._calls = 0
        self.uncovered = False

    def start_from(self, calls: Sequence[CallState], matched: Sequence[int], upto: int,
                   uncovered: bool = False) -> None:
        """A new index whose first `upto` calls are those `matched` (rising: a filter's
        scan of them, done elsewhere), each call's task read without a verdict made;
        the calls after them as `update` takes them."""
        view = calls if isinstance(calls, CallsView) else None
        task_at = view.task_id_at if view is not None else (lambda p: calls[p].task_id)
        for pos in matched:
            if pos >= upto:
                break
            self._add(pos, task_at(pos))
        if upto:
            self._last_id = _call_id_at(calls, view, upto - 1)
        self._seen = upto
        self.uncovered = uncovered
        self._lay_out(0)
        self.update(calls, uncovered)

    def _add(self, pos: int, task: str) -> int:
        """Put the call at `pos` in its task's group; the group's number."""
        g = self._group_of.get(task)
        if g is None:
            g = self._group_of[task] = len(self._tasks)
            self._tasks.append(task)
            self._groups.append(array("q"))
        self._groups[g].append(pos)
        self._calls += 1
        return g

    def update(self, calls: Sequence[CallState], uncovered: bool = False) -> bool:
        """Index the calls appended since the last update. False, changing nothing,
        when `calls` does not continue what was indexed (another case, an earlier
        as-of): build a new index for it. The rows are laid out again from the first
        task that grew (a followed case's newest tasks are its last: little to do)."""
        n, seen = len(calls), self._seen
        # a snapshot's calls in columns give their ids without a verdict made for each
        # (the unfiltered index of 137,000 calls: 163 ms made, 53 ms from the columns)
        view = calls if isinstance(calls, CallsView) else None
        if n < seen or (seen and _call_id_at(calls, view, seen - 1) != self._last_id):
            return False
        keep = self._keep
        task_at = view.task_id_at if view is not None and keep is None else None
        first_grown = len(self._groups)
        for pos in range(seen, n):
            if task_at is not None:
                task = task_at(pos)
            else:
                call = calls[pos]
                if keep is not None and not keep(call):
                    continue
                task = call.task_id
            first_grown = min(first_grown, self._add(pos, task))
        if n:
            self._last_id = _call_id_at(calls, view, n - 1)
        self._seen = n
        if uncovered != self.uncovered:
            self.uncovered, first_grown = uncovered, 0
        self._lay_out(first_grown)
        return True

    def _lay_out(self, first: int) -> None:
        """The header rows of the tasks from `first` on."""
        starts = self._starts
        del starts[first:]
        row = (starts[-1] + 1 + len(self._groups[first - 1]) if first
               else (1 if self.uncovered else 0))
        for group in self._groups[first:]:
            starts.append(row)
            row += 1 + len(group)
        self._rows = (starts[-1] + 1 + len(self._groups[-1]) if starts
                      else (1 if self.uncovered else 0))

    def __len__(self) -> int:
        return self._rows

    @property
    def call_count(self) -> int:
        return self._calls

    def at(self, row: int) -> RowItem | None:
        if not 0 <= row < self._rows:
            return None
        if self.uncovered and row == 0:
            return ("uncovered", None)
        g = bisect_right(self._starts, row) - 1
        if g < 0:
            return None
        offset = row - self._starts[g]
        if offset == 0:
            return ("task", self._tasks[g])
        return ("call", self._groups[g][offset - 1])

    def row_of_call(self, task_id: str, position: int) -> int | None:
        g = self._group_of.get(task_id)
        if g is None:
            return None
        group = self._groups[g]
        i = bisect_left(group, position)
        return self._starts[g] + 1 + i if i < len(group) and group[i] == position else None

    def row_of_task(self, task_id: str) -> int | None:
        g = self._group_of.get(task_id)
        return None if g is None else self._starts[g]

    def __iter__(self) -> Iterator[RowItem]:
        for row in range(self._rows):
            item = self.at(row)
            if item is not None:
                yield item


# --------------------------------------------------------------------------- the axis


@dataclass(frozen=True, slots=True)
class Axis:
    """A window of the seq axis ([lo, hi): seq s is the interval [s, s+1)) or of the
    time axis ([lo, hi] in microseconds), `width` cells or pixels wide."""

    kind: str  # SEQ | TIME
    lo: float
    hi: float

    def value(self, seq: float, clock: SeqClock | None) -> float | None:
        """Where a seq sits on this axis (None: a time axis without a clock)."""
        if self.kind == SEQ:
            return seq
        return clock.time_of(seq) if clock is not None else None

    def frac(self, value: float) -> float:
        return (value - self.lo) / (self.hi - self.lo) if self.hi > self.lo else 0.0

    def span_values(self, span: Span, clock: SeqClock | None) -> tuple[float, float] | None:
        a = self.value(span.start, clock)
        b = self.value(span.end + 1 if self.kind == SEQ else span.end, clock)
        return None if a is None or b is None else (a, b)

    def mark_value(self, mark: Mark, clock: SeqClock | None) -> float | None:
        if self.kind == TIME and mark.at is not None:
            micros = micros_at(mark.at)
            if micros is not None:
                return micros
        return self.value(mark.seq, clock)


def fit_axis(kind: str, first_seq: int, last_seq: int, clock: SeqClock | None) -> Axis:
    """The whole case on one axis: seqs first..last, or their times."""
    last_seq = max(last_seq, first_seq)
    if kind == TIME and clock is not None and len(clock):
        lo, hi = clock.time_of(first_seq), clock.time_of(last_seq)
        if lo is not None and hi is not None:
            return Axis(TIME, lo, hi if hi > lo else lo + 1e6)
    return Axis(SEQ, float(first_seq), float(last_seq + 1))


# --------------------------------------------------------------------------- cells

GLYPH = {EXTENT: "\u2500", ATTEMPT: "\u2588", UNKNOWN: "\u2592", RECEIPT: "\u25cf",
         DUPLICATE: "\u25c9", UNCOVERED: "\u25cf", TOOL: "\u25c6", TOOL_UNKNOWN: "\u25c7"}
_PRIORITY = {EXTENT: 1, ATTEMPT: 2, UNKNOWN: 3, TOOL: 4, RECEIPT: 5, TOOL_UNKNOWN: 6,
             DUPLICATE: 6, UNCOVERED: 6}

Cell = tuple[str, str]  # (glyph, kind); ("", "") is empty


def _columns(axis: Axis, a: float, b: float, width: int) -> tuple[int, int] | None:
    """The cells [c0, c1] a value range covers (at least one), None when outside."""
    if b < axis.lo or a > axis.hi or (axis.kind == SEQ and a >= axis.hi):
        return None
    c0 = math.floor(axis.frac(a) * width)
    c1 = math.ceil(axis.frac(b) * width) - 1
    c0 = min(max(c0, 0), width - 1)
    return c0, min(max(c1, c0), width - 1)


def column_of(axis: Axis, value: float, width: int) -> int | None:
    """The cell a value falls in, None outside the window."""
    if value < axis.lo or value > axis.hi or width <= 0:
        return None
    return min(math.floor(axis.frac(value) * width), width - 1)


def lane_cells(lane: Lane, axis: Axis, width: int, clock: SeqClock | None) -> list[Cell]:
    """The lane as `width` cells: for each, the glyph and the kind it shows (the
    highest-priority thing in it: a mark over an effect-unknown span over an attempt
    over the call's extent). Empty cells are ("", "")."""
    cells: list[Cell] = [("", "")] * width
    rank = [0] * width
    if width <= 0:
        return cells

    def put(col: int, kind: str) -> None:
        p = _PRIORITY[kind]
        if p >= rank[col]:
            cells[col] = (GLYPH[kind], kind)
            rank[col] = p

    for span in lane.spans:
        values = axis.span_values(span, clock)
        cols = _columns(axis, *values, width) if values is not None else None
        if cols is not None:
            for col in range(cols[0], cols[1] + 1):
                put(col, span.kind)
    for mark in lane.marks:
        value = axis.mark_value(mark, clock)
        col = column_of(axis, value, width) if value is not None else None
        if col is not None:
            put(col, mark.kind)
    return cells


def as_of_column(axis: Axis, as_of: int, width: int, clock: SeqClock | None) -> int | None:
    """The cell of the as-of line: the last cell of the as-of event."""
    if axis.kind == SEQ:
        cols = _columns(axis, as_of, as_of + 1, width)
        return cols[1] if cols is not None else None
    value = axis.value(as_of, clock)
    return column_of(axis, value, width) if value is not None else None


def axis_label(axis: Axis, value: float) -> str:
    if axis.kind == SEQ:
        return f"{math.floor(value):,}"
    fraction = axis.hi - axis.lo < 10e6
    return clock_text(value, fraction=fraction)


def axis_line(axis: Axis, width: int) -> str:
    """The axis under its title: the window's first and last value at its ends, the
    middle one centred where there is room."""
    if width <= 0:
        return ""
    last = axis.hi - 1 if axis.kind == SEQ else axis.hi
    left, right = axis_label(axis, axis.lo), axis_label(axis, max(last, axis.lo))
    line = [" "] * width
    for i, ch in enumerate(left[:width]):
        line[i] = ch
    if len(left) + len(right) + 1 <= width:
        for i, ch in enumerate(right):
            line[width - len(right) + i] = ch
    mid = axis_label(axis, (axis.lo + last) / 2)
    room = width - len(left) - len(right)
    if room >= len(mid) + 6:
        at = (width - len(mid)) // 2
        for i, ch in enumerate(mid):
            line[at + i] = ch
    return "".join(line)
