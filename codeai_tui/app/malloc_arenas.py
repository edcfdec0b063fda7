"""Fewer malloc arenas for the console's process (glibc).

glibc gives threads malloc arenas of their own (up to 8 per core), and memory a thread
frees stays in its arena for that thread to reuse. The console's work moves between
threads (the head start, the follower, Textual's thread workers for time travel), so
what one thread freed was not reused by the next: on the 1M-event ledger, `codeai-tui
CASE` in tmux peaked at 244.5-246.1 MB once the projection was in and at 260.6 MB
after time travel to the end. With at most two arenas: 239.3-241.1 MB and 251.8-256.5 MB, and
no slower (the answer on screen and the full projection within the runs' spread; one
arena, 237-241 MB and 248.6 MB, looked slower). Set before the console starts its first
thread; a MALLOC_ARENA_MAX the operator set is left alone.
"""

from __future__ import annotations

import ctypes
import os
import sys

ARENAS = 2
_M_ARENA_MAX = -8  # glibc's malloc.h


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Ask glibc for at most `arenas` malloc arenas; True when it agreed. Elsewhere (not
    Linux, a libc without mallopt) nothing changes."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt(_M_ARENA_MAX, arenas) == 1
