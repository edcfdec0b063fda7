"""The console's memory, told to glibc's malloc: fewer arenas, and free pages given back.

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
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


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
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]  # type: ignore[attr-defined]
    mallopt.restype = ctypes.c_int  # type: ignore[attr-defined]
    return mallopt(_M_ARENA_MAX, arenas) == 1


def release_free_memory() -> bool:
    """Give the whole pages malloc holds free back to the system (every arena); True
    when some were. A few milliseconds; elsewhere than glibc, nothing happens."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    trim.argtypes = [ctypes.c_size_t]  # type: ignore[attr-defined]
    trim.restype = ctypes.c_int  # type: ignore[attr-defined]
    return trim(0) == 1
