"""The lanes model (services/lanes.py): what each call's lane holds, how lanes are laid out
by task, how seqs become times, and how a lane becomes cells. No Textual."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ledgerfactory import write_ledger

from codeai_tui.ledger import LedgerReader
from codeai_tui.read.inspection import project_case
from codeai_tui.services.lanes import (
    ATTEMPT,
    DUPLICATE,
    EXTENT,
    GLYPH,
    RECEIPT,
    SEQ,
    TIME,
    TOOL,
    TOOL_UNKNOWN,
    UNCOVERED,
    UNKNOWN,
    Axis,
    LaneIndex,
    SeqClock,
    as_of_column,
    call_lane,
    fit_axis,
    lane_cells,
    micros_at,
    read_clock,
    uncovered_lane,
)
from codeai_tui.workstate.calls_view import CallsView
from tests.core.test_unknown_positions import ROUND, _follow
from tests.support import CONFORMANCE, TESTS

sys.path.insert(0, str(TESTS / "app"))
from lanes_cases import lanes_case  # noqa: E402
from tool_cases import tool_case  # noqa: E402


def vector_case(tmp_path: Path, name: str) -> Path:
    data = json.loads((CONFORMANCE / f"{name}.json").read_text(encoding="utf-8"))
    return write_ledger(tmp_path / name, data["events"], receipts=data.get("receipts")).parent


def lane_of(case: Path, call_id: str, as_of: int | None = None) -> Any:
    state = project_case(case, as_of)
    with LedgerReader(case) as reader:
        clock = read_clock(reader, state.as_of_seq)
    call = state.call(call_id)
    assert call is not None
    return call_lane(call, state.as_of_seq, state.receipts.index, clock)


def test_an_attempt_in_flight_is_an_open_unknown_span_with_its_receipts(tmp_path: Path) -> None:
    """naive_restart_copy: attempt.started at seq 8 and nothing after; the provider logged
    the request twice (a duplicate effect): an open span from 8 to now, both receipts as
    duplicate marks on it."""
    lane = lane_of(vector_case(tmp_path, "naive_restart_copy"), "call-16")
    assert lane.effect_unknown
    unknown = [s for s in lane.spans if s.kind == UNKNOWN]
    assert [(s.start, s.end, s.open, s.label) for s in unknown] == [(8, 8, True, "att-1")]
    assert sorted(m.label for m in lane.marks) == ["r-1", "r-2"]
    assert {m.kind for m in lane.marks} == {DUPLICATE}
    assert all(8 <= m.seq <= 8 for m in lane.marks)
    extent = [s for s in lane.spans if s.kind == EXTENT]
    assert [(s.start, s.end) for s in extent] == [(6, 8)]


def test_attempts_are_spans_to_their_last_event_and_receipts_sit_on_them(tmp_path: Path) -> None:
    case = lanes_case(tmp_path)
    lane = lane_of(case, "call-b")
    attempts = [(s.kind, s.start, s.end, s.label) for s in lane.spans if s.kind != EXTENT]
    # a1: started at 12, retry decided and completed by 16; a2: started at 17, completed 20
    assert attempts == [(ATTEMPT, 12, 16, "call-b-a1"), (ATTEMPT, 17, 20, "call-b-a2")]
    assert not lane.effect_unknown
    marks = {m.label: m for m in lane.marks}
    assert set(marks) == {"r-call-b-a1", "r-call-b-a2"}
    assert {m.kind for m in marks.values()} == {RECEIPT}
    assert 12 <= marks["r-call-b-a1"].seq <= 16 and 17 <= marks["r-call-b-a2"].seq <= 20


def test_as_of_an_earlier_seq_the_open_span_ends_there(tmp_path: Path) -> None:
    """Time travel: the in-flight attempt's span runs to the as-of seq, not the live end;
    before the attempt existed the lane has no attempt at all."""
    case = lanes_case(tmp_path)
    live = lane_of(case, "call-c")
    (span,) = [s for s in live.spans if s.kind == UNKNOWN]
    assert span.open and (span.start, span.end) == (24, 25)
    assert live.effect_unknown
    (then,) = [s for s in lane_of(case, "call-c", 24).spans if s.kind == UNKNOWN]
    assert then.open and (then.start, then.end) == (24, 24)
    state = project_case(case, 23)  # requested and manifest: no attempt yet
    assert state.call("call-c") is not None
    early = call_lane(state.call("call-c"), 23)
    assert [s.kind for s in early.spans] == [EXTENT] and not early.effect_unknown


def test_uncovered_receipts_have_a_lane_of_their_own(tmp_path: Path) -> None:
    case = lanes_case(tmp_path)
    state = project_case(case)
    with LedgerReader(case) as reader:
        clock = read_clock(reader, state.as_of_seq)
    lane = uncovered_lane(state.receipts, state.as_of_seq, clock)
    assert lane is not None and lane.call_id is None
    assert [(m.kind, m.label) for m in lane.marks] == [(UNCOVERED, "r-stray")]
    assert lane.marks[0].seq == 9.0  # received at 12:00:09, when seq 9 was recorded
    clean = project_case(vector_case(tmp_path, "completed_task"))
    assert uncovered_lane(clean.receipts, clean.as_of_seq, clock) is None


def test_tool_operations_are_marks_and_one_without_outcome_runs_to_now(tmp_path: Path) -> None:
    case = tool_case(tmp_path, "tool_mixed_operations")
    state = project_case(case)
    (call,) = [c for c in state.calls if c.evidence.tools is not None]
    lane = call_lane(call, state.as_of_seq)
    tools = call.tools
    assert tools is not None
    done = [o for o in tools.operations if o.completed_seq is not None]
    open_ = [o for o in tools.operations if o.effect_unknown]
    assert done and open_
    kinds = sorted((m.kind, m.seq) for m in lane.marks)
    expected = sorted([(TOOL, float(o.admitted_seq)) for o in done]
                      + [(TOOL, float(o.completed_seq)) for o in done]
                      + [(TOOL_UNKNOWN, float(o.admitted_seq)) for o in open_])
    assert kinds == expected
    spans = [(s.start, s.end, s.open) for s in lane.spans if s.kind == UNKNOWN]
    assert spans == [(o.admitted_seq, state.as_of_seq, True) for o in open_]
    assert lane.effect_unknown


def _calls(tasks: list[str]) -> list[Any]:
    return [SimpleNamespace(call_id=f"c{i}", task_id=t) for i, t in enumerate(tasks)]


def test_lanes_are_grouped_by_task_in_order_of_first_call() -> None:
    index = LaneIndex()
    calls = _calls(["t2", "t1", "t2", "t3", "t1"])
    assert index.update(calls, uncovered=True)
    assert list(index) == [("uncovered", None), ("task", "t2"), ("call", 0), ("call", 2),
                           ("task", "t1"), ("call", 1), ("call", 4), ("task", "t3"),
                           ("call", 3)]
    assert index.row_of_call("t1", 4) == 6 and index.row_of_task("t3") == 7
    assert index.row_of_call("t1", 2) is None  # call 2 is not in t1
    assert index.call_count == 5


def test_an_index_extended_as_calls_arrive_equals_one_built_at_once() -> None:
    """A followed case: updates with the calls appended since give the same rows as an
    index of the whole list; a list that does not continue it is refused."""
    rng = random.Random(7)
    calls = _calls([f"t{rng.randrange(12)}" for _ in range(300)])
    grown = LaneIndex()
    for cut in [*sorted(rng.sample(range(1, 300), 8)), 300]:
        assert grown.update(calls[:cut], uncovered=cut % 2 == 0)
    whole = LaneIndex()
    whole.update(calls, uncovered=True)
    assert list(grown) == list(whole) and len(grown) == len(whole)
    assert not grown.update(calls[:10])  # an earlier as-of: a new index is built for it
    other = [SimpleNamespace(call_id=f"other-{i}", task_id="x") for i in range(301)]
    assert not grown.update(other)  # another case's calls


def test_the_clock_interpolates_and_never_runs_backwards() -> None:
    clock = SeqClock([(1, "2026-09-13T12:00:00Z"), (11, "2026-09-13T12:00:10Z"),
                      (21, "2026-09-13T12:00:05Z"),  # a clock set back: held, not folded
                      (31, "not a time"), (41, "2026-09-13T12:01:00Z")])
    base = micros_at("2026-09-13T12:00:00Z")
    assert base is not None
    assert clock.time_of(6) == base + 5e6
    assert clock.time_of(21) == base + 10e6
    assert clock.time_of(41) == base + 60e6
    assert clock.time_of(0) == base and clock.time_of(99) == base + 60e6
    assert clock.seq_of(base + 5e6) == 6.0
    times = [clock.time_of(s) for s in range(1, 42)]
    assert times == sorted(times)
    assert SeqClock().time_of(3) is None


def test_cells_show_the_most_telling_thing_in_each_column() -> None:
    """A mark over an effect-unknown span over an attempt over the call's extent; at
    least one cell for anything in the window; nothing outside it."""
    from codeai_tui.services.lanes import Lane, Mark, Span

    lane = Lane("call:x", "x", "x", "t", (
        Span(EXTENT, 1, 10), Span(ATTEMPT, 3, 4), Span(UNKNOWN, 6, 10, open=True)),
        (Mark(RECEIPT, 3.0, "r"), Mark(TOOL_UNKNOWN, 8.0, "op")))
    cells = lane_cells(lane, Axis(SEQ, 1.0, 11.0), 10, None)
    assert "".join(g or " " for g, _ in cells) == (
        GLYPH[EXTENT] * 2 + GLYPH[RECEIPT] + GLYPH[ATTEMPT] + GLYPH[EXTENT]
        + GLYPH[UNKNOWN] * 2 + GLYPH[TOOL_UNKNOWN] + GLYPH[UNKNOWN] * 2)
    zoomed = lane_cells(lane, Axis(SEQ, 20.0, 30.0), 10, None)
    assert zoomed == [("", "")] * 10
    assert as_of_column(Axis(SEQ, 1.0, 11.0), 5, 10, None) == 4


def test_the_time_axis_places_by_recorded_time(tmp_path: Path) -> None:
    """Seqs recorded close together take little room on the time axis: the lanes case
    records one event a second, so seq and time axes agree there; a clock whose second
    half is ten times slower moves the same seq to the left."""
    clock = SeqClock([(1, "2026-09-13T12:00:00Z"), (11, "2026-09-13T12:00:01Z"),
                      (21, "2026-09-13T12:00:11Z")])
    axis = fit_axis(TIME, 1, 21, clock)
    assert axis.kind == TIME
    assert as_of_column(axis, 11, 110, clock) == 10  # 1 s of 11 s
    assert as_of_column(fit_axis(SEQ, 1, 21, clock), 11, 110, clock) > 50
    assert fit_axis(TIME, 1, 21, None).kind == SEQ  # no clock: seqs


def test_an_index_of_calls_in_columns_equals_one_of_the_calls_made(tmp_path: Path) -> None:
    """A snapshot's calls in columns (and the few held as objects) give each call's task
    without a verdict made for it: the same rows as an index of the verdicts made."""
    projector, log = _follow(tmp_path / "case", 3 * ROUND)
    calls = projector.snapshot(log).calls
    assert isinstance(calls, CallsView)
    made = list(calls)
    in_columns, of_made = LaneIndex(), LaneIndex()
    assert in_columns.update(calls) and of_made.update(made)
    assert list(in_columns) == list(of_made) and len(in_columns) == len(made) + len(
        {c.task_id for c in made})
    assert not in_columns.update(made[:-1])  # (an earlier as-of: built anew)
