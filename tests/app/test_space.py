"""Space goes where the rows are: the top row of panes as tall as the Cases list, the
header cut (never wrapped) to its width, the footer's essential keys whole at 80x24."""

from __future__ import annotations

from pathlib import Path

import pytest
from apphelpers import frozen_clock, make_case, ready, wait_for

from codeai_tui.app import create_app
from codeai_tui.app.widgets.status_bar import StatusBar, StatusFacts

pytestmark = pytest.mark.timeout(90)


async def test_a_bundle_of_seventeen_shows_every_case_at_160x48(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    for n in range(17):
        make_case(bundle / f"case_{n:02d}", "completed_task")
    app = create_app(bundle, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        cases = app.main.pane("cases")
        await wait_for(pilot, lambda: len(cases.source) == 17, what="17 cases")
        # border, header line and a scrollbar's row around 17 rows
        await wait_for(pilot, lambda: cases.region.height >= 17 + 3, what="every row shown")
        calls, timeline = app.main.pane("calls"), app.main.pane("timeline")
        assert calls.region.height >= 6 and timeline.region.height >= 8


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (160, 48)])
async def test_a_long_note_never_wraps_the_header(tmp_path: Path, size: tuple[int, int]
                                                  ) -> None:
    case = make_case(tmp_path / "c", "killed_after_manifest")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        bar = app.main.query_one(StatusBar)
        before = bar.region.height
        bar.facts = StatusFacts(str(case), event_count=7, state="following",
                                note="resumed call-1 as call-2: " + "outcome " * 60)
        await pilot.pause()
        assert bar.region.height == before
        assert all(len(line) <= size[0] for line in str(bar.render()).splitlines())
        assert "\u2026" in str(bar.render())


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_the_footers_essential_keys_are_whole(tmp_path: Path,
                                                    size: tuple[int, int]) -> None:
    case = make_case(tmp_path / "c", "killed_in_flight")  # x is the next step
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await pilot.pause()
        keys = {key.key: key for key in app.main.query("FooterKey")}
        for essential in ("x", "e", "question_mark", "q"):
            assert essential in keys, sorted(keys)
            region = keys[essential].region
            assert region.width > 0 and region.right <= size[0], (essential, region)
            label = f"{keys[essential].key_display} {keys[essential].description}"
            assert region.width >= len(label), (essential, region, label)
