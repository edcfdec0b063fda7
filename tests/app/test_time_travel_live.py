"""Time travel while the ledger grows: the timeline keeps growing, its cursor stays on the
as-of event.

Found in tmux on the 1M-event bench ledger with a writer running: `t` on the newest event
(where the timeline follows new ones) showed "as of seq 1,041,850", then `[` showed "as of
seq 1,044,854": the cursor had followed the events that arrived meanwhile, and the step
went back from the newest one instead of from the as-of event."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from apphelpers import SIZE, frozen_clock, make_case, ready, status_text, wait_for
from ledgerfactory import append_to_case

from codeai_tui.app import create_app


def append_task_events(case: Path, first_seq: int, n: int) -> None:
    """`n` new tasks, as another process writes them."""
    append_to_case(case, [{"seq": first_seq + i, "kind": "task.created",
                           "task_id": f"task-late-{first_seq + i}",
                           "payload": {"title": "late"}} for i in range(n)])


@asynccontextmanager
async def console_on_timeline(case: Path) -> AsyncIterator[tuple[Any, Any, Any, int]]:
    """(pilot, main screen, timeline, newest seq) of a console ready on `case`, its
    timeline focused and following (on the newest event; seqs are 1..n)."""
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        timeline = app.main.pane("timeline")
        newest = timeline.row_count
        assert timeline.seq_at_cursor() == newest
        timeline.focus()
        yield pilot, app.main, timeline, newest


async def test_time_travel_from_the_newest_event_stays_there_while_events_arrive(
        tmp_path: Path) -> None:
    case = make_case(tmp_path / "case", "completed_task")
    async with console_on_timeline(case) as (pilot, main, timeline, newest):
        await pilot.press("t")
        await wait_for(pilot, lambda: main.shown is not None and main.shown.as_of == newest,
                       what="the projection as of the newest event")

        append_task_events(case, newest + 1, 3)
        await wait_for(pilot, lambda: timeline.row_count == newest + 3,
                       what="the timeline grown by the new events")
        assert main.as_of == newest
        assert timeline.seq_at_cursor() == newest  # still on the as-of event
        assert main.shown.as_of == newest  # the panes hold still
        assert timeline.new_below == 3  # what arrived meanwhile is counted as new

        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: main.shown.as_of == newest - 1,
                       what="one event back from the as-of event")
        assert timeline.seq_at_cursor() == newest - 1

        await pilot.press("escape")
        await wait_for(pilot, lambda: main.as_of is None and main.shown is main.live,
                       what="back to live")
        assert timeline.new_below == 3  # "+3 new below · G follows"
        assert "+3 new below" in str(timeline.border_subtitle)
        await pilot.press("G")  # follow again: new events move the cursor
        append_task_events(case, newest + 4, 2)
        await wait_for(pilot, lambda: timeline.seq_at_cursor() == newest + 5,
                       what="the cursor following the newest event again")


async def test_the_header_counts_the_events_as_of_the_point_in_time(tmp_path: Path) -> None:
    """The banner says every pane and the header show the projection up to the as-of
    event: the header's event count too, not the live count when `t` was pressed (it
    read "1,036,203 events · as of seq 1,033,148" with a writer running)."""
    case = make_case(tmp_path / "case", "completed_task")
    async with console_on_timeline(case) as (pilot, main, timeline, newest):
        append_task_events(case, newest + 1, 4)
        await wait_for(pilot, lambda: timeline.row_count == newest + 4, what="4 new events")
        timeline.move_to(newest - 3)  # seq newest - 2, before the new events
        await pilot.press("t")
        await wait_for(pilot, lambda: main.shown is not None and main.shown.as_of == newest - 2,
                       what="the projection as of an earlier event")
        await pilot.pause()
        status = status_text(pilot.app)
        assert f"{newest - 2} events" in status, status
        assert f"as of seq {newest - 2} of {newest + 4}" in status, status
