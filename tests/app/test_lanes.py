"""The lanes view in the console: `l` and its tab, one selection with every pane, the
as-of line under time travel, live follow, the two axes; and the incident report the
action log writes (`w`)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from apphelpers import (
    SIZE,
    detail_text,
    frozen_clock,
    gate_scans,
    ledger_digest,
    ready,
    stays,
    verdict_text,
    wait_for,
)
from lanes_cases import call_events, lanes_case
from ledgerfactory import append_to_case, write_ledger

from codeai_tui.app import create_app
from codeai_tui.app.widgets.filter_scan import FilterScans
from codeai_tui.app.widgets.lanes_pane import LanesPane
from codeai_tui.app.widgets.pane_grid import PaneTabs
from codeai_tui.services.lanes import SEQ as SEQ_AXIS

NARROW = (80, 24)


def lanes_of(app: Any) -> LanesPane:
    return app.main.query_one(LanesPane)


def lines(lanes: LanesPane) -> list[str]:
    """What the pane draws, line by line (line 0 is the axis)."""
    return [lanes.render_line(y).text for y in range(lanes.size.height)]


def line_of(lanes: LanesPane, label: str) -> str:
    return next(text for text in lines(lanes) if text.startswith(label))


async def open_lanes(pilot: Any) -> LanesPane:
    await pilot.press("l")
    lanes = lanes_of(pilot.app)
    await wait_for(pilot, lambda: pilot.app.focused is lanes and lanes.row_count > 0
                   and lanes.clock is not None, what="lanes drawn")
    await pilot.pause()
    return lanes


async def test_l_opens_the_lanes_and_they_have_a_tab(tmp_path: Path) -> None:
    app = create_app(lanes_case(tmp_path), clock=frozen_clock)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        lanes = await open_lanes(pilot)
        tabs = app.main.query_one(PaneTabs)
        assert tabs.active == "lanes" and "l Lanes" in str(tabs.render())
        drawn = lines(lanes)
        assert drawn[0].startswith("seq \u25b8")
        # the in-flight call: its duplicated receipt and its open effect-unknown span
        assert "\u25c9" in line_of(lanes, "call-c") and "\u2592" in line_of(lanes, "call-c")
        assert "\u2588" in line_of(lanes, "call-a") and "\u25cf" in line_of(lanes, "call-a")
        assert "\u25cf" in line_of(lanes, "\u26a0 uncovered")
        assert any(text.startswith("\u25be task task-2 \u00b7 summarise") for text in drawn)
        await pilot.press("tab")  # the last tab: round to the first
        await wait_for(pilot, lambda: app.focused is app.main.pane("cases"), what="cases")
        await pilot.press("6", "tab")
        await wait_for(pilot, lambda: app.focused is lanes, what="tab reaches lanes")
        assert tabs.active == "lanes"


async def test_a_lane_selects_its_call_everywhere(tmp_path: Path) -> None:
    app = create_app(lanes_case(tmp_path), clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        assert main.selected_call_id == "call-a"
        lanes = await open_lanes(pilot)
        assert lanes.call_at_cursor().call_id == "call-a"  # the lane of the selected call
        await pilot.press("j", "j", "j")  # call-c, the header of task-2, call-b
        await wait_for(pilot, lambda: main.selected_call_id == "call-b", what="call-b")
        assert main.calls.call_at_cursor().call_id == "call-b"
        assert "call-b" in verdict_text(app) and "call call-b" in detail_text(app)
        await pilot.press("k")  # a task's header selects no call: the detail shows the task
        await wait_for(pilot, lambda: "task task-2" in detail_text(app), what="task")
        assert main.selected_call_id == "call-b"
        await pilot.press("3", "k")  # Calls: call-a, call-b, call-c in order
        await wait_for(pilot, lambda: main.selected_call_id == "call-a", what="call-a")
        assert lanes.call_at_cursor().call_id == "call-a"
        await pilot.press("G")
        await wait_for(pilot, lambda: main.selected_call_id == "call-c", what="call-c")
        assert lanes.call_at_cursor().call_id == "call-c"


def _as_of_column(lanes: LanesPane) -> int | None:
    axis = lanes.render_line(0).text
    return axis.index("\u25bc") if "\u25bc" in axis else None


async def test_the_as_of_line_moves_with_time_travel(tmp_path: Path) -> None:
    app = create_app(lanes_case(tmp_path), clock=frozen_clock)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        main = app.main
        lanes = await open_lanes(pilot)
        assert _as_of_column(lanes) is None  # live: no line
        await pilot.press("5")
        main.pane("timeline").move_to(11)  # seq 12
        await pilot.press("t")
        await wait_for(pilot, lambda: main.shown.as_of == 12 and main.session.progress is None,
                       what="as of 12")
        await open_lanes(pilot)
        first = _as_of_column(lanes)
        assert first is not None
        assert line_of(lanes, "\u26a0 uncovered")[first] == "\u2502"  # the line crosses lanes
        assert not any(text.startswith("call-c") for text in lines(lanes))  # not yet begun
        await pilot.press("right_square_bracket", "right_square_bracket")
        await wait_for(pilot, lambda: main.shown.as_of == 14 and main.session.progress is None,
                       what="as of 14")
        await open_lanes(pilot)
        later = _as_of_column(lanes)
        assert later is not None and later > first
        await pilot.press("t")  # back to live
        await wait_for(pilot, lambda: main.shown.as_of is None, what="live")
        await pilot.pause()
        assert _as_of_column(lanes) is None
        assert any(text.startswith("call-c") for text in lines(lanes))


async def test_lanes_follow_what_another_process_appends(tmp_path: Path) -> None:
    case = lanes_case(tmp_path)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        lanes = await open_lanes(pilot)
        rows = lanes.row_count
        before = lines(lanes)[0]
        assert before.rstrip().endswith("25")  # the axis ends at the last seq
        late = call_events("task-3", "call-d", "key-4", 27, ["inflight"], finish=False)
        append_to_case(case, [
            {"seq": 26, "kind": "task.created", "task_id": "task-3",
             "payload": {"title": "late"}, "event_id": "ev-0026"},
            *[dict(e, event_id=f"ev-{e['seq']:04d}") for e in late]])
        await wait_for(pilot, lambda: lanes.row_count == rows + 2, what="the new lane")
        await wait_for(pilot, lambda: lines(lanes)[0].rstrip().endswith("29"),
                       what="the axis grown")
        assert "\u2592" in line_of(lanes, "call-d")
        assert lanes.title_count() == 4


async def test_the_time_axis_and_zoom(tmp_path: Path) -> None:
    app = create_app(lanes_case(tmp_path), clock=frozen_clock)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        lanes = await open_lanes(pilot)
        seq_line = line_of(lanes, "call-a")
        await pilot.press("s")
        await wait_for(pilot, lambda: lines(lanes)[0].startswith("time \u25b8"), what="time")
        assert "12:00:01" in lines(lanes)[0] and "12:00:25" in lines(lanes)[0]
        assert "time axis" in str(lanes.border_subtitle)
        await pilot.press("plus")
        await wait_for(pilot, lambda: lanes.window is not None, what="zoomed")
        assert "zoomed" in str(lanes.border_subtitle)
        assert line_of(lanes, "call-a") != seq_line
        await pilot.press("0", "s")
        await wait_for(pilot, lambda: lines(lanes)[0].startswith("seq \u25b8"), what="seq")
        assert lanes.window is None and line_of(lanes, "call-a") == seq_line


async def test_a_lane_shows_a_hostile_call_id_literally(tmp_path: Path) -> None:
    evil = "e\x1b[31m[b]x"
    events = [{"seq": 1, "kind": "task.created", "task_id": "t", "payload": {}},
              {"seq": 2, "kind": "call.requested", "task_id": "t", "call_id": evil,
               "payload": {"idempotency_key": "k"}}]
    write_ledger(tmp_path / "case", events)
    app = create_app(tmp_path / "case", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        lanes = await open_lanes(pilot)
        text = "\n".join(lines(lanes))
        assert "e\u27e8ESC\u27e9[31m[b]x" in text and "\x1b" not in text


async def test_the_action_log_writes_the_report_outside_the_case(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = tmp_path / "temp"  # the report's temporary directory goes here, not to /tmp
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    case = lanes_case(tmp_path)
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await pilot.press("a")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ActionLogScreen",
                       what="action log")
        await pilot.press("w")
        note = app.screen.query_one("#report-note")
        await wait_for(pilot, lambda: "written to" in str(note.render()), timeout=20,
                       what="the report written")
        found = re.search(r"written to (\S+\.html)", str(note.render()))
    assert found is not None
    report = Path(found.group(1))
    assert report.is_file() and report.parent.parent == temp
    assert not report.resolve().is_relative_to(case.resolve())
    text = report.read_text(encoding="utf-8")
    assert "Incident report" in text and "call-c" in text and "<svg" in text
    assert ledger_digest(case) == before
    assert not [p for p in case.rglob("*") if "report" in p.name or p.suffix == ".html"]


async def test_a_filter_over_many_lanes_is_matched_off_the_screens_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Lanes filter is a scan here (the threshold set to 0): the matching waits for
    a gate on the scan's thread, so the pane says "filtering…" and the screen answers a
    key meanwhile; then the same lanes as matched at once, and the calls that arrive
    after are matched as they come, with no scan of them begun (the pane settles on its
    scan: a rescan of every call while following would be wasted)."""
    gate = gate_scans(monkeypatch)
    begun: list[int] = []
    scan = FilterScans.scan

    def counted(self: FilterScans, *args: Any, **kwargs: Any) -> list[int] | None:
        begun.append(len(args[0].items))
        return scan(self, *args, **kwargs)

    monkeypatch.setattr(FilterScans, "scan", counted)
    case = lanes_case(tmp_path)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        lanes = await open_lanes(pilot)
        await pilot.press("slash", *"call", "minus", "b", "enter")
        await wait_for(pilot, lambda: "filtering" in str(lanes.border_subtitle),
                       what="the pane says it is filtering")
        assert lanes.row_count == 0
        await pilot.press("s")  # the screen answers a key while the scan waits
        await wait_for(pilot, lambda: lanes.axis_kind != SEQ_AXIS, what="s answered")
        # a call arrives while the scan of the calls before it runs: matched as it came
        calls = len(lanes.snapshot.state.calls)  # type: ignore[union-attr]
        late = call_events("task-3", "call-bb", "key-4", 27, ["inflight"], finish=False)
        append_to_case(case, [
            {"seq": 26, "kind": "task.created", "task_id": "task-3",
             "payload": {"title": "late"}, "event_id": "ev-0026"},
            *[dict(e, event_id=f"ev-{e['seq']:04d}") for e in late]])
        await wait_for(pilot, lambda: len(lanes.snapshot.state.calls) == calls + 1,  # type: ignore[union-attr]
                       what="the late call in the snapshot")
        assert lanes.row_count == 0 and "filtering" in str(lanes.border_subtitle)
        gate.set()
        await wait_for(pilot, lambda: lanes.row_count == 5
                       and "filtering" not in str(lanes.border_subtitle), what="scanned")
        drawn = lines(lanes)
        assert drawn[1].startswith("\u26a0 uncovered") and drawn[3].startswith("call-b")
        assert drawn[5].startswith("call-bb")
        assert begun == [calls]  # (the scan of the calls before the late one, only)
        await stays(pilot, lambda: len(begun) == 1 and lanes.row_count == 5, seconds=3.0,
                    what="one scan, the late call's lane kept")


async def test_a_filter_keeps_the_lanes_of_the_calls_it_matches(tmp_path: Path) -> None:
    """`/` in Lanes: the calls whose Calls row matches, under their tasks; the uncovered
    receipts' lane stays (it belongs to no call); escape brings every lane back."""
    app = create_app(lanes_case(tmp_path), clock=frozen_clock)
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        lanes = await open_lanes(pilot)
        await pilot.press("slash", *"call", "minus", "b", "enter")
        await wait_for(pilot, lambda: lanes.row_count == 3, what="filtered")
        drawn = lines(lanes)
        assert drawn[1].startswith("\u26a0 uncovered") and drawn[3].startswith("call-b")
        assert drawn[2].startswith("\u25be task task-2") and lanes.title_count() == 1
        await pilot.press("escape")
        await wait_for(pilot, lambda: lanes.row_count == 6, what="every lane again")
