"""What a projection freezes (services/heap.py): only the console's live projection,
once. A frozen object is never looked at by the cyclic collector again, so a transient
build that froze kept its cycles, and whatever else was alive then, for good: each
time-travel step kept ~1,700 objects (0.19 MB) in the console."""

from __future__ import annotations

import gc
from pathlib import Path

from codeai_tui.bench import write_ledger
from codeai_tui.console.fleet import summarize
from codeai_tui.console.model import FAST_START_MIN, PROJECT_PAGE, CaseFollower


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
