"""What a live projection keeps per task while it follows a writer (one task every ten
calls, as the bench's writer makes them): each cut here is a number of bytes a task
that ten minutes of following at 1,000 events/s (~9,000 new tasks) multiplies."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from codeai_tui.ledger.schema import Event
from codeai_tui.services.time_travel import CallHistory
from codeai_tui.workstate.columns import CallLoader
from codeai_tui.workstate.projector import Projector, project
from tests.core.test_call_columns import _LIFE, SHA
from tests.core.test_fast_path import _write
from tests.core.test_live_memory import _task_events
from tests.support import held_by

_PER_TASK = 1 + 9 * len(_LIFE) + 3  # (events of `_task_events(t, 10, ...)`)


def _followed(tasks: int, rest_after: int,
              load: CallLoader = lambda call_id, n, position: None) -> Projector:
    """A projector settling in columns fed `tasks` tasks of ten calls (the last left in
    flight) as they follow, a snapshot every 64 tasks, then four more."""
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(load)
    projector.rest_after = rest_after
    for first in range(0, tasks, 64):
        for t in range(first, min(first + 64, tasks)):
            projector.feed(_task_events(t, 10, 1 + t * _PER_TASK))
        projector.snapshot()
    for _ in range(4):
        projector.snapshot()
    return projector


def _history(tmp_path: Path, events: list[Event]) -> CallHistory:
    """A ledger of `events` and what reads a call's evidence from it (close it)."""
    case = _write(tmp_path, [{"seq": e.seq, "event_id": e.event_id, "recorded_at": e.recorded_at,
                              "kind": e.kind, "task_id": e.task_id, "call_id": e.call_id,
                              "attempt_id": e.attempt_id, "compilation_id": None,
                              "payload": json.dumps(e.payload)} for e in events], [], True)
    return CallHistory(case / "ledger.sqlite3")


@cache  # (measured once for the tests that read it)
def _bytes_a_task(rest_after: int) -> float:
    """What 1,280 tasks (of ten calls) cost more than 256, a task: the fixed costs
    (the last tasks not at rest yet, tables sized once) cancel out."""
    few = held_by(lambda: _followed(256, rest_after))[1]
    more = held_by(lambda: _followed(1280, rest_after))[1]
    return (more - few) / 1024


def test_a_quiet_task_is_kept_in_columns_its_verdict_made_when_read(tmp_path: Path) -> None:
    """A task whose calls all rest in columns and which has been quiet for `rest_after`
    seqs keeps its seqs, title, calls' run and next operation in columns: its evidence,
    verdict and tally as objects cost ~760 bytes a task more (~2,280 a task of ten
    calls in all before, ~1,520 now). Its verdict read from the columns is the one the
    ladder gives from its events; a snapshot handed out before an event takes the task
    back still shows what it showed."""
    kept = _bytes_a_task(64 * _PER_TASK)
    assert kept < 1800, kept
    events = [e for t in range(128) for e in _task_events(t, 10, 1 + t * _PER_TASK)]
    history = _history(tmp_path, events)
    try:
        _check_held_while_a_task_wakes(_followed(128, 0, history), events)
    finally:
        history.close()


def _check_held_while_a_task_wakes(projector: Projector, events: list[Event]) -> None:
    """Every task at rest equals the oracle's; an event for one's call in flight takes
    it back, judged anew, while the snapshot held before shows what it showed."""
    held = projector.snapshot()
    doc = held.as_json("x")
    oracle = project(events)
    assert held.tasks == oracle.tasks and doc == oracle.as_json("x")
    seq = events[-1].seq + 1  # the call in flight of task 3 observed: the task wakes
    call = "live-task-000003-c9"
    later = Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", "attempt.observed",
                  "live-task-000003", call, f"{call}-a1",
                  payload={"transport": {"status": 200}, "response_sha256": SHA})
    projector.add(later)
    now = projector.snapshot()
    assert now.tasks == project([*events, later]).tasks
    assert now.tasks[3] != held.tasks[3]
    assert held.as_json("x") == doc and held.tasks == oracle.tasks
    assert projector.task_state("live-task-000003") == now.tasks[3]


def test_a_task_waiting_to_rest_keeps_no_tally_no_array_and_no_dicts_of_its_own() -> None:
    """A task not (yet) at rest: its calls are a run of positions (start, count), its
    last seq an array item, its id indexed once for every per-task fact, the settled
    columns' included, and a task of ten calls keeps no tally (counted again when
    judged): ~300 bytes a task fewer than an array, a tally and four dicts by task id
    (~3,410 a task of ten calls before, ~3,110 now)."""
    kept = _bytes_a_task(1 << 40)  # (never at rest)
    assert kept < 3260, kept


def test_a_call_in_flight_is_kept_among_those_with_something_to_do_in_4_bytes(
        tmp_path: Path) -> None:
    """The positions of the calls with something to do (a call in flight, one in ten
    while following, for as long as it waits) are one sorted array: a set of int
    objects cost ~70 bytes a call in flight and more as it grew (a task of ten calls
    ~1,520 bytes at rest, ~1,360 now). A snapshot keeps its own copy: the pending calls
    it lists stay those it was taken with."""
    kept = _bytes_a_task(64 * _PER_TASK)
    assert kept < 1440, kept
    events = [e for t in range(64) for e in _task_events(t, 10, 1 + t * _PER_TASK)]
    seq, call = 64 * _PER_TASK + 1, "live-task-000000-c9"  # (its attempt completes)
    later = [Event(seq + i, f"e{seq + i}", "2026-09-13T12:00:00Z", kind, "live-task-000000",
                   call, f"{call}-a1" if a else None,
                   payload={k: f"{call}-a1" if v == "A" else v for k, v in p.items()})
             for i, (kind, a, p) in enumerate(_LIFE[3:])]
    history = _history(tmp_path, events + later)
    try:
        projector = _followed(64, 0, history)
        held = projector.snapshot()
        listed = [c.call_id for c in held.pending_calls()]
        assert listed == [f"live-task-{t:06d}-c9" for t in range(64)]
        projector.feed(later)
        assert [c.call_id for c in projector.snapshot().pending_calls()] == listed[1:]
        assert [c.call_id for c in held.pending_calls()] == listed
    finally:
        history.close()
