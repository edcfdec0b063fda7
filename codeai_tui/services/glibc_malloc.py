"""A long projection's memory, told to glibc's malloc: fewer arenas, big blocks mapped on
their own, and (the console) free pages given back. The console and `inspect` set the
first two before their first thread; the figures below are the console's. `inspect
--json` on a 10M-event ledger peaked at 276.5 MB (its helper 253.6 MB) without them,
251.9 MB (245.7 MB) with them.

glibc gives threads malloc arenas of their own (up to 8 per core), and memory a thread
frees stays in its arena for that thread to reuse. The console's work moves between
threads (the head start, the follower, Textual's thread workers for time travel), so
what one thread freed was not reused by the next: on the 1M-event ledger, `codeai-tui
CASE` in tmux peaked at 244.5-246.1 MB once the projection was in and at 260.6 MB
after time travel to the end. With at most two arenas: 239.3-241.1 MB and 251.8-256.5 MB, and
no slower (the answer on screen and the full projection within the runs' spread; one
arena, 237-241 MB and 248.6 MB, looked slower). Set before the console starts its first
thread; a MALLOC_ARENA_MAX the operator set is left alone.

Building a projection frees much of what it allocated (the rows read, the skeleton,
the folds' temporaries), in chunks scattered among the ones kept: glibc keeps those
pages, and time travel then grew the process past them. `release_free_memory` (glibc's
malloc_trim) hands whole free pages back once a projection or a time travel is built:
in tmux, 247.0-248.9 MB after time travel to the end instead of 255.9-256.6 MB
(3 launches against 2; each trim took 0.2-17.5 ms).

A trim has a price: the pages it hands back are the ones the next allocations would have
reused, and each one touched again is faulted back in. Following a writer at 1,000
events/s after building the 1M-event projection, the console took back 14.8 of the
21 MB the trim had returned within 30 s and went on refaulting (+17.7 MB in 90 s,
against +3.3 MB untrimmed). So `release_free_memory` trims only when malloc holds at
least `TRIM_MIN_FREE` free (mallinfo2): at 10M events the build leaves ~300 MB free, far
more than following will reuse; at 1M, 22 MB, which following takes back anyway.

glibc also raises its mmap threshold each time it frees a mapped block bigger than it
(up to 32 MB): a projection's big lists and dict tables are mapped the first time, and
once they are freed the next ones come from the heap, where they stay as free holes
among what is kept. Reopening the 1M-event ledger after a small case (headless, a
bundle of the two) peaked at 257 MB against 234 MB the first time, glibc holding 53 MB
free. With the threshold fixed at 1 MiB (`fix_mmap_threshold`) those blocks are always
mapped and handed back when freed: 235 MB first, 244 and 245 MB on two reopens (13-15 MB
held free). In tmux, 3 launches each alternating with the code before: 234.2-235.0 MB
first and 245.3-247.5 MB on the reopen, against 234.3-238.1 MB and 259.4-264.9 MB. The
answer and the full projection were within the runs' spread (6 alternating headless
pairs: answer medians 2.70 s and 2.73 s). glibc's own 128 KiB, fixed, gave the same
peaks but looked slower to the answer (medians 2.57 s against 2.48 s over 8 rounds).
Following a writer at 1,000 events/s, where the projection's lists and tables keep
growing (a table that grows is copied and the old one freed), the whole console's RSS
grew 81.1-81.6 MB in ten minutes instead of 115.4-117.2 MB (two runs each, headless).

Once a projection is built and followed, what grows is its columns: arrays CPython
enlarges a sixteenth at a time, each step a larger block and the old one freed. Blocks
under the 1 MiB threshold come from the heap, where each old copy stays a hole the next,
larger copy does not fit. Following 1,000 events/s of new calls for ten minutes after
building the 1M-event projection, the heap grew 14.7 MB (39.1 to 53.8 MB), 4.9 MB of it
free. So once its projection is built the console maps blocks from 256 KiB on
(`FOLLOW_MMAP_THRESHOLD`; a reopen builds with 1 MiB again): a grown column's old copy
is unmapped whole. In the same ten minutes the heap kept its size (42.4 MB), and the
whole console's RSS grew 1.2-3.5 MB less in like runs: 21.2 MB run alone (24.7 MB before),
19.6-20.9 MB launched first of two run side by side (22.8 MB), 16.6-16.9 MB second (18.0).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

ARENAS = 2
MMAP_THRESHOLD = 1 << 20  # blocks of 1 MiB and more: a projection's big tables and lists
FOLLOW_MMAP_THRESHOLD = 256 << 10  # once it is built and followed: its growing columns
TRIM_MIN_FREE = 64 << 20  # below, following reuses what a trim would hand back
_M_ARENA_MAX = -8  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3


def _libc_function(name: str) -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function: Callable[..., int] = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    return function


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Ask glibc for at most `arenas` malloc arenas; True when it agreed. Elsewhere (not
    Linux, a libc without mallopt) nothing changes."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    return _mallopt(_M_ARENA_MAX, arenas)


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Map every block of `threshold` bytes or more on its own, for good (a fixed value
    stops glibc raising it); True when glibc agreed. A threshold the operator set
    (MALLOC_MMAP_THRESHOLD_, or through GLIBC_TUNABLES) is left alone."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or \
            "mmap_threshold" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    return _mallopt(_M_MMAP_THRESHOLD, threshold)


def _mallopt(param: int, value: int) -> bool:
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]  # type: ignore[attr-defined]
    mallopt.restype = ctypes.c_int  # type: ignore[attr-defined]
    return mallopt(param, value) == 1


class _MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (malloc.h, glibc 2.33 and later): totals over every arena."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def malloc_free_bytes() -> int | None:
    """The bytes malloc holds free in its arenas (not mapped blocks), or None where glibc
    cannot tell (no mallinfo2)."""
    info = _libc_function("mallinfo2")
    if info is None:
        return None
    info.restype = _MallInfo2  # type: ignore[attr-defined]
    return int(info().fordblks)


def release_free_memory(at_least: int = TRIM_MIN_FREE) -> bool:
    """Give the whole pages malloc holds free back to the system (every arena), when it
    holds at least `at_least` bytes free (where that cannot be told, it trims); True when
    some were given back. A few milliseconds; elsewhere than glibc, nothing happens."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    free = malloc_free_bytes() if at_least > 0 else None
    if free is not None and free < at_least:
        return False
    trim.argtypes = [ctypes.c_size_t]  # type: ignore[attr-defined]
    trim.restype = ctypes.c_int  # type: ignore[attr-defined]
    return trim(0) == 1
