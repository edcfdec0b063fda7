"""What a projection freezes (services/heap.py): only the console's live projection,
once. A frozen object is never looked at by the cyclic collector again, so a transient
build that froze kept its cycles, and whatever else was alive then, for good: each
time-travel step kept ~1,700 objects (0.19 MB) in the console."""

from __future__ import annotations

import gc
from pathlib import Path

from codeai_tui.console.fleet import summarize
from codeai_tui.console.model import FAST_START_MIN, PROJECT_PAGE, CaseFollower
from codeai_tui.lab.bench import write_ledger
from codeai_tui.services.heap import freeze_heap, release_frozen


def _big_case(root: Path) -> Path:
    """A case the first catch-up takes the fast path on (the build that freezes)."""
    case = root / "big"
    write_ledger(case, FAST_START_MIN + 1000)
    return case


def test_the_live_projection_is_frozen_once_and_time_travel_freezes_nothing(
        tmp_path: Path) -> None:
    case = _big_case(tmp_path)
    before = gc.get_freeze_count()
    live = CaseFollower(case)
    try:
        live.catch_up()
        live.snapshot()
        frozen = gc.get_freeze_count()
        assert frozen > before  # the live projection: long-lived, out of the GC's way
        for seq in (1, live.max_seq // 3, live.max_seq // 2, live.max_seq - 1, live.max_seq):
            assert live.as_of(seq).state.as_of_seq <= seq
        # (frozen objects freed by reference counting leave the count: it may shrink)
        assert gc.get_freeze_count() <= frozen
    finally:
        live.close()


def test_a_bundle_case_read_once_is_never_frozen(tmp_path: Path) -> None:
    case = _big_case(tmp_path)
    before = gc.get_freeze_count()
    once = CaseFollower(case, keep=False)
    try:
        once.catch_up()
        once.snapshot()
    finally:
        once.close()
    assert FAST_START_MIN >= PROJECT_PAGE  # (so the Cases pane reads it with a follower)
    summarize(case)  # the Cases pane's look, every 2 s while a bundle is live
    assert gc.get_freeze_count() <= before


def test_a_follower_let_go_is_freed_without_the_cyclic_collector(tmp_path: Path) -> None:
    """Its readers held `follower.stopped` (a bound method): the follower was a cycle, so
    dropping it freed nothing until a collection, and nothing ever once it was frozen:
    the console kept every case it had opened."""
    import weakref

    case = _big_case(tmp_path)
    follower = CaseFollower(case)
    follower.catch_up()
    follower.snapshot()
    gone = weakref.ref(follower)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        follower.close()
        del follower
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()


def _full_collections() -> list[int]:
    """A list that grows by one at the end of every full (generation 2) collection."""
    seen: list[int] = []

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            seen.append(1)

    gc.callbacks.append(callback)
    return seen


def test_release_collects_only_after_a_freeze_of_its_own() -> None:
    """The console's first open released "what was frozen" with a full collection when
    nothing was (0.1 s at startup; 9.5 s of tests/app/test_pilot.py); a freeze that is
    not the projection's (another library's) is not this module's to undo."""
    release_frozen(collect=False)
    gc.unfreeze()
    was_enabled = gc.isenabled()
    gc.disable()  # only the collections asked for are counted
    seen = _full_collections()
    try:
        release_frozen()
        assert seen == []
        gc.freeze()  # someone else's
        frozen = gc.get_freeze_count()
        assert frozen > 0
        release_frozen()
        assert seen == [] and gc.get_freeze_count() == frozen
        gc.unfreeze()

        freeze_heap()
        assert gc.get_freeze_count() > 0
        release_frozen(collect=False)  # the console's exit: give back, collect later
        assert gc.get_freeze_count() == 0 and seen == []
        freeze_heap()
        release_frozen()  # another case opens: give back and collect now
        assert gc.get_freeze_count() == 0 and seen == [1]
    finally:
        gc.callbacks.pop()
        gc.unfreeze()
        if was_enabled:
            gc.enable()
