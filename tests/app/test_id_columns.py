"""Ids are what tell rows apart: an id column grows to the ids it shows, and an id cut
anyway keeps its head and its tail, so no two rows of different calls look alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from apphelpers import frozen_clock, ready, wait_for
from ledgerfactory import write_ledger

from codeai_tui.app import create_app
from codeai_tui.app.widgets.table import fit

pytestmark = pytest.mark.timeout(90)


def _calls_case(root: Path, ids: list[str]) -> Path:
    events = [dict(seq=1, kind="task.created", task_id="t1", payload={"title": "ids"})]
    for n, call_id in enumerate(ids, start=2):
        events.append(dict(seq=n, kind="call.requested", task_id="t1", call_id=call_id,
                           payload={"idempotency_key": f"k-{call_id}", "purpose": "p"}))
    return write_ledger(root / "c", events).parent


def _shown_ids(app: object, count: int) -> list[str]:
    calls = app.main.pane("calls")  # type: ignore[attr-defined]
    return [calls.render_line(i + 1).text.split(" ")[0] for i in range(count)]


def test_a_cut_keeps_the_head_and_the_tail() -> None:
    assert fit("call-0049-00001", 12, middle=True) == "call-0\u202600001"
    assert fit("call-0049-00001", 12) == "call-0049-0\u2026"
    assert fit("short", 8, middle=True) == "short   "


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_ids_that_differ_at_their_end_show_whole(tmp_path: Path,
                                                       size: tuple[int, int]) -> None:
    ids = [f"call-0049-0000{i}" for i in range(1, 4)]
    app = create_app(_calls_case(tmp_path, ids), clock=frozen_clock)
    async with app.run_test(size=size) as pilot:
        await ready(pilot)
        await pilot.press("3")
        await wait_for(pilot, lambda: _shown_ids(app, 3) == ids, what="the ids whole")


async def test_ids_too_long_for_the_pane_are_cut_in_the_middle_and_stay_apart(
        tmp_path: Path) -> None:
    ids = [f"tenant-7/region-eu/worker-{'x' * 40}/call-{i:04d}" for i in range(1, 4)]
    app = create_app(_calls_case(tmp_path, ids), clock=frozen_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("3")
        await wait_for(pilot, lambda: "\u2026" in _shown_ids(app, 1)[0], what="a cut id")
        shown = _shown_ids(app, 3)
        assert len(set(shown)) == 3, shown
        assert all(s.startswith("tenant-7/") and s.endswith(f"call-{i:04d}")
                   for i, s in enumerate(shown, start=1)), shown
