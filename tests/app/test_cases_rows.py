"""The Cases pane of a bundle never misleads: a drifted case says the drift in its
row, under time travel the open case's row is as-of while every
other row is marked live, and a case another process writes
while the bundle is open is summarised again."""

from __future__ import annotations

from pathlib import Path

import pytest
from apphelpers import SIZE, frozen_clock, make_case, ready, status_text, vector, wait_for
from ledgerfactory import append_to_case

from codeai_tui.app import create_app
from tests.core.cases import make_case as make_real_case

NOWHERE = "http://127.0.0.1:9/v1"  # the drift check reads; it never sends


def rows(app: object) -> dict[str, str]:
    cases = app.main.pane("cases")  # type: ignore[attr-defined]
    return {cases.source.row(i).key: cases.source.row(i).cells[1]
            for i in range(cases.row_count)}


async def test_a_drifted_case_row_says_the_drift_not_start_call(tmp_path: Path) -> None:
    """Demo case 03's shape: case.json names another model, so resume refuses."""
    make_real_case(tmp_path / "bundle" / "a-drift", NOWHERE, case_model="synthetic-large")
    make_real_case(tmp_path / "bundle" / "b-match", NOWHERE)
    app = create_app(tmp_path / "bundle", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.main.case.name == "a-drift"
        await wait_for(pilot, lambda: "drift: resume refuses" in rows(app)["a-drift"],
                       what="the drift in the Cases row")
        assert rows(app)["a-drift"] == "\u2716 drift: resume refuses (call call-1)"
        assert app.main.pane("cases").source.row(0).tone == "warn"
        # the other case was never opened, so never checked: it keeps the projection's word
        await wait_for(pilot, lambda: len(app.main.pane("cases").verdicts) == 2,
                       what="b-match summarised")
        assert rows(app)["b-match"].startswith("start_call (call call-1)")
        # a case that matches, once opened and checked, stays start_call
        await pilot.press("1", "end", "enter")
        await wait_for(pilot, lambda: app.main.case.name == "b-match"
                       and "call-1" in app.main.session.drift, what="b-match checked")
        assert rows(app)["b-match"].startswith("start_call (call call-1)")
        assert "drift" in rows(app)["a-drift"]  # the verdict found stays with its case


async def test_time_travel_in_a_bundle_marks_the_other_rows_live(tmp_path: Path) -> None:
    make_case(tmp_path / "bundle" / "a-resumed", "resumed_then_completed")
    make_case(tmp_path / "bundle" / "b-unknown", "killed_in_flight")
    app = create_app(tmp_path / "bundle", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        await wait_for(pilot, lambda: len(main.pane("cases").verdicts) == 2, what="summaries")
        assert not any("live" in label for label in rows(app).values())  # live: no marks
        timeline = main.pane("timeline")
        timeline.focus()
        timeline.move_to(6)  # seq 7
        await pilot.press("t")
        await wait_for(pilot, lambda: main.shown is not None and main.shown.as_of == 7,
                       what="as-of projection")
        await pilot.pause()
        labels = rows(app)
        assert labels["a-resumed"].startswith("\u23f2 seq 7: ")
        assert labels["b-unknown"].startswith("\u25cf live: ")
        assert "effect unknown" in labels["b-unknown"]
        title = str(main.pane("cases").border_title)
        assert "open case as of seq 7; others live" in title
        status = status_text(app)
        assert "as of seq 7" in status and "following" not in status
        assert "bundle (live): " in status
        await pilot.press("escape")
        await wait_for(pilot, lambda: main.as_of is None, what="back to live")
        await pilot.pause()
        assert not any(label.startswith(("\u23f2", "\u25cf")) for label in rows(app).values())
        assert "bundle: " in status_text(app) and "bundle (live)" not in status_text(app)
        assert "others live" not in str(main.pane("cases").border_title)


async def test_a_case_another_process_writes_is_summarised_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found in tmux on the demo bundle: an attempt.started appended to a case the
    console was not showing left its row at "start_call (call call-1)", while the
    header called the bundle live. The row now follows its files; the open case keeps
    its live verdict."""
    from codeai_tui.app.widgets import cases_pane

    monkeypatch.setattr(cases_pane, "RESTAT_S", 0.2)
    make_case(tmp_path / "bundle" / "a-completed", "completed_task")
    other = make_case(tmp_path / "bundle" / "b-manifest", "killed_after_manifest")
    manifest = vector("killed_after_manifest")["events"][-1]
    app = create_app(tmp_path / "bundle", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        await wait_for(pilot, lambda: len(main.pane("cases").verdicts) == 2, what="summaries")
        assert rows(app)["b-manifest"].startswith("start_call")
        opened = rows(app)["a-completed"]
        append_to_case(other, [{
            "seq": 8, "kind": "attempt.started", "task_id": "task-1",
            "call_id": manifest["call_id"], "attempt_id": f"{manifest['call_id']}-a1",
            "payload": {"attempt_no": 1,
                        "request_sha256": manifest["payload"]["request_sha256"]}}])
        await wait_for(pilot, lambda: "effect unknown" in rows(app)["b-manifest"],
                       what="the written case summarised again")
        assert main.pane("cases").verdicts[other].event_count == 8
        assert rows(app)["a-completed"] == opened
        await wait_for(pilot, lambda: "1 of 2 cases have effect-unknown calls"
                       in status_text(app), what="the bundle's counts")
