"""Building a projection of 10^5 calls without the cyclic GC re-scanning it.

The projection allocates millions of small objects and creates no reference cycles;
CPython's cyclic collector would still walk the growing heap dozens of times while it is
built (measured: a receipt check over 140k receipts 1.2 s with it, 0.5 s after a
freeze). Pause it while building, then freeze what was built so later collections skip
it. Plain reference counting still frees everything as usual.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def building() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        gc.freeze()
