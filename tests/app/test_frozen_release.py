"""What the console froze with a case's projection goes back to the collector when
another case opens (services/heap.py): a frozen object is never collected, so each
switch between cases kept what the last one left for good (0.28 MB a switch between
demo cases; 460,805 objects switching away from the 1M-event ledger)."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref
from pathlib import Path

from apphelpers import SIZE, frozen_clock, make_case, ready, wait_for

from codeai_tui.app import create_app


class _Leftover:
    """A cycle: only the cyclic collector can free it."""

    def __init__(self) -> None:
        self.me = self


async def test_what_was_frozen_with_a_case_is_collected_once_another_opens(
        tmp_path: Path) -> None:
    make_case(tmp_path / "bundle" / "a", "killed_in_flight")
    make_case(tmp_path / "bundle" / "b", "completed_task")
    gc.unfreeze()  # (so the count below is what this console froze)
    leftover = _Leftover()
    gone = weakref.ref(leftover)
    app = create_app(tmp_path / "bundle", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: gc.get_freeze_count() > 0,
                       what="the first projection frozen")
        del leftover  # garbage now, but frozen with case a's projection
        gc.collect()
        assert gone() is not None  # (what the fix is for: the collector skips it)
        await pilot.press("1", "down", "enter")
        await wait_for(pilot, lambda: app.main.case.name == "b" and app.main.live is not None,
                       what="case b open")
        assert gone() is None


async def test_the_console_leaves_nothing_frozen_when_it_exits(tmp_path: Path) -> None:
    """A process that opens another console (the tests do) does not inherit this one's
    freeze, and the next console's first open runs no full collection for it."""
    make_case(tmp_path / "case", "killed_in_flight")
    gc.unfreeze()
    app = create_app(tmp_path / "case", clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: gc.get_freeze_count() > 0,
                       what="the projection frozen")
        await pilot.press("q")
    deadline = time.monotonic() + 10  # (the follower thread may still be on its way out)
    while gc.get_freeze_count() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert gc.get_freeze_count() == 0
