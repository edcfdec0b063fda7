"""The console tunes glibc's malloc: fewer arenas (unless the operator chose a number),
and free pages handed back once a projection or a time travel is built."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from codeai_tui.services.glibc_malloc import (
    limit_malloc_arenas,
    malloc_free_bytes,
    release_free_memory,
)

GLIBC = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc")


@GLIBC
def test_glibc_takes_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    assert limit_malloc_arenas() is True


def test_an_arena_count_the_operator_set_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "8")
    assert limit_malloc_arenas() is False


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _scattered_free_chunks() -> list[bytes]:
    """48 MB of 1 KB chunks (malloc's, not Python's small-object pools); one in sixteen
    kept, so the pages freed between them stay with malloc until trimmed."""
    release_free_memory(at_least=0)
    chunks = [bytes(1000) for _ in range(48_000)]
    kept = chunks[::16]
    del chunks
    return kept


@GLIBC
def test_free_pages_among_kept_chunks_go_back() -> None:
    kept = _scattered_free_chunks()
    before = _rss_kb()
    assert release_free_memory(at_least=0) is True
    assert before - _rss_kb() > 20_000  # of the ~45 MB freed, most was whole pages
    assert len(kept) == 3000


@GLIBC
def test_a_trim_waits_until_malloc_holds_enough_free() -> None:
    """Pages handed back are faulted in again as soon as malloc reuses them: below the
    threshold they stay, and the trim gives nothing back."""
    kept = _scattered_free_chunks()
    free = malloc_free_bytes()
    assert free is not None and free > 40_000_000
    before = _rss_kb()
    assert release_free_memory(at_least=free + (1 << 30)) is False
    assert abs(before - _rss_kb()) < 4_000
    assert release_free_memory(at_least=free // 2) is True
    assert before - _rss_kb() > 20_000
    assert len(kept) == 3000


async def test_the_console_gives_free_pages_back_once_a_projection_is_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once after the live projection, and before and after each time travel (the free
    pages of the screen's painting, then of the travel's own reads)."""
    from apphelpers import SIZE, frozen_clock, make_case, ready, wait_for

    from codeai_tui.app import create_app
    from codeai_tui.app.widgets import live_follow

    released: list[str] = []
    monkeypatch.setattr(live_follow, "release_free_memory",
                        lambda: released.append("released") is None)
    case = make_case(tmp_path / "case", "completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert len(released) == 1
        timeline = app.main.pane("timeline")
        timeline.focus()
        await pilot.press("t")
        await wait_for(pilot, lambda: app.main.shown is not None
                       and app.main.shown.as_of == timeline.row_count,
                       what="the projection as of the newest event")
        assert len(released) == 3


# A fresh interpreter (the threshold is the process's for good): a big block mapped and
# freed, then 64 MB of 2 MB blocks, each followed by a 100 KB block that stays (below any
# threshold: from the heap), freed. Prints how many MB the frees gave back to the system.
_BIG_BLOCKS = """
import sys
from pathlib import Path
from codeai_tui.services.glibc_malloc import fix_mmap_threshold
def rss_kb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
if sys.argv[1] == "fixed":
    assert fix_mmap_threshold() is True
big = b"x" * (8 << 20)  # (filled: a zeroed block's pages may never be touched)
del big  # glibc raises its threshold to 8 MB here, unless fixed
blocks, kept = [], []
for _ in range(32):
    blocks.append(b"x" * (2 << 20))
    kept.append(b"k" * (100 << 10))
before = rss_kb()
del blocks
print((before - rss_kb()) // 1024, len(kept))
"""


def _given_back_mb(mode: str) -> int:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _BIG_BLOCKS, mode], capture_output=True,
                         text=True, check=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    return int(out.stdout.split()[0])


@GLIBC
def test_big_blocks_freed_go_back_once_the_threshold_is_fixed() -> None:
    # without the fixed threshold the same frees leave the 64 MB with malloc, in holes
    # among the kept blocks (so the scenario does raise glibc's threshold); with it each
    # block was mapped on its own and is unmapped when freed
    assert _given_back_mb("default") < 16
    assert _given_back_mb("fixed") > 56


def test_a_threshold_the_operator_set_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    from codeai_tui.services.glibc_malloc import fix_mmap_threshold

    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert fix_mmap_threshold() is False
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_")
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536")
    assert fix_mmap_threshold() is False


# A fresh interpreter: eight columns built to 320 KB each under the build threshold (from
# the heap), then grown to 960 KB a sixteenth at a time as a followed projection's are,
# between small blocks that stay. Prints how many MB the RSS grew and malloc then held free.
_GROWING_COLUMNS = """
import sys
from array import array
from pathlib import Path
from codeai_tui.services.glibc_malloc import (
    FOLLOW_MMAP_THRESHOLD, fix_mmap_threshold, malloc_free_bytes)
def rss_kb():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
assert fix_mmap_threshold() is True
columns = [array("q", range(40_000)) for _ in range(8)]
kept = [bytes(600) for _ in range(1000)]
if sys.argv[1] == "following":
    assert fix_mmap_threshold(FOLLOW_MMAP_THRESHOLD) is True
before = rss_kb()
for i in range(80_000):
    for column in columns:
        column.append(i)
    if i % 50 == 0:
        kept.append(bytes(600))
print((rss_kb() - before) // 1024, (malloc_free_bytes() or 0) >> 20)
"""


def _grown_and_free_mb(mode: str) -> tuple[int, int]:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _GROWING_COLUMNS, mode], capture_output=True,
                         text=True, check=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    grown, free = out.stdout.split()
    return int(grown), int(free)


@GLIBC
def test_a_followed_columns_old_copies_go_back() -> None:
    # 5 MB added to the columns: under the build threshold each step's old copy stays a
    # hole in the heap (RSS ~12 MB, ~6 MB of it free); once following, mapped and unmapped
    building_grown, building_free = _grown_and_free_mb("building")
    following_grown, following_free = _grown_and_free_mb("following")
    assert building_free >= 4
    assert following_free <= 2
    assert following_grown + 3 <= building_grown


async def test_the_console_maps_growing_columns_once_its_projection_is_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build threshold while a projection is built, the following one after."""
    from apphelpers import SIZE, frozen_clock, make_case, ready

    from codeai_tui.app import create_app
    from codeai_tui.app.widgets import live_follow
    from codeai_tui.services.glibc_malloc import FOLLOW_MMAP_THRESHOLD, MMAP_THRESHOLD

    thresholds: list[int] = []
    monkeypatch.setattr(live_follow, "fix_mmap_threshold",
                        lambda threshold=MMAP_THRESHOLD: thresholds.append(threshold) is None)
    case = make_case(tmp_path / "case", "completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert thresholds == [MMAP_THRESHOLD, FOLLOW_MMAP_THRESHOLD]
