"""The follow is a widget's (LiveFollow): its workers end with it, and a bug in one still
reaches the header and the action log, though a widget's worker news does not bubble."""

from __future__ import annotations

from pathlib import Path

import pytest
from apphelpers import SIZE, banner_text, frozen_clock, log_texts, make_case, ready, wait_for
from ledgerfactory import append_to_case

from codeai_tui.app import create_app
from codeai_tui.app.widgets.live_follow import LiveFollow
from codeai_tui.console.model import CaseFollower


async def test_a_bug_in_the_follow_stops_it_and_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = make_case(tmp_path / "case", "completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main

        def poll(self: CaseFollower) -> None:
            raise RuntimeError("a bug in the poll")

        monkeypatch.setattr(CaseFollower, "poll", poll)
        newest = main.live.max_seq
        append_to_case(case, [{"seq": newest + 1, "kind": "task.created",
                               "task_id": "task-late", "payload": {"title": "late"}}])
        await wait_for(pilot, lambda: main.session.state == "stopped", timeout=15,
                       what="the follow stopped")
        assert "internal error" in banner_text(app)
        assert any("internal error in follow: RuntimeError: a bug in the poll" in line
                   for line in log_texts(app))


async def test_the_follow_widget_hands_each_opened_case_its_own_machine(
        tmp_path: Path) -> None:
    """Opening another case hands the session a machine for that case; the one it had
    (bound to the last case's follower) is not reused."""
    first = make_case(tmp_path / "bundle" / "a", "completed_task")
    second = make_case(tmp_path / "bundle" / "b", "killed_in_flight")
    app = create_app(tmp_path / "bundle", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        machine = main.session.machine
        assert machine is not None and machine.case_dir == first
        assert main.query_one(LiveFollow).case == first
        main.open_case(second)
        await wait_for(pilot, lambda: main.live is not None and main.case == second,
                       what="the second case")
        assert main.session.machine is not machine
        assert main.session.machine.case_dir == second
