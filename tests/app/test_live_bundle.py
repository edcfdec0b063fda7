"""A bundle is watched as a directory: a case directory that appears (a live producer's),
goes, or is replaced shows in the Cases pane and the bundle's counts within seconds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from apphelpers import frozen_clock, make_case, ready, status_text, wait_for

from codeai_tui.app import create_app

pytestmark = pytest.mark.timeout(90)


def _rows(app: object) -> list[str]:
    pane = app.main.pane("cases")  # type: ignore[attr-defined]
    return [pane.source.row(i).key for i in range(len(pane.source))]


async def test_a_case_that_appears_or_goes_shows_in_the_list_and_the_counts(
        tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    make_case(bundle / "a_done", "completed_task")
    make_case(bundle / "b_resumable", "killed_after_manifest")
    app = create_app(bundle, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: _rows(app) == ["a_done", "b_resumable"], what="2 cases")
        await wait_for(pilot, lambda: "0 of 2 cases have effect-unknown calls"
                       in status_text(app), what="the counts of two cases")
        make_case(bundle / "live" / "c_in_flight", "killed_in_flight")  # a producer's case
        await wait_for(pilot, lambda: "live/c_in_flight" in _rows(app), timeout=10,
                       what="the new case listed")
        await wait_for(pilot, lambda: "1 of 3 cases have effect-unknown calls"
                       in status_text(app), timeout=10, what="the bundle counts it")
        shutil.rmtree(bundle / "live")
        await wait_for(pilot, lambda: _rows(app) == ["a_done", "b_resumable"], timeout=10,
                       what="the removed case gone")
        await wait_for(pilot, lambda: "0 of 2 cases have effect-unknown calls"
                       in status_text(app), timeout=10, what="the counts without it")
