"""Building a projection of 10^5 calls without the cyclic GC re-scanning it.

The projection allocates millions of small objects and creates no reference cycles;
CPython's cyclic collector would still walk the growing heap dozens of times while it is
built (measured: a receipt check over 140k receipts 1.2 s with it, 0.5 s after a
freeze). Pause it while building. Freeze afterwards only what lives on (the console's
live projection, `freeze=True`) so later collections skip it: a frozen object is never
looked at again, so a transient build that was frozen (a time-travel snapshot, a bundle
case's summary) left its cycles, and whatever the screen held at that moment, for good
(measured headless on a demo case: ~1,700 objects and 0.19 MB kept per time-travel
step, 165 MB after 600 steps; 52 MB flat since). Plain reference counting still frees
everything as usual.

Only what this module froze is released, and only then is the whole heap collected: the
console's first open used to pay a full collection for nothing (0.1 s in a fresh
console; 0.2-0.4 s in a test process, 9.5 s of the 64 s of tests/app/test_pilot.py).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_frozen = False  # whether `freeze_heap` ran since the last `release_frozen`


@contextmanager
def building(*, freeze: bool = False) -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
        if freeze:
            freeze_heap()


def freeze_heap() -> None:
    """Move everything the collector tracks out of its reach until `release_frozen`."""
    global _frozen
    gc.freeze()
    _frozen = True


def release_frozen(*, collect: bool = True) -> None:
    """Give everything frozen back to the collector and collect: when the projection
    that was frozen is let go (another case opened, the ledger reopened). Frozen, the
    cycles among what the screen held when it was frozen were kept for good: between
    demo cases the console grew 0.28 MB a switch (66 to 89 MB over 80 switches; flat at
    51 MB with this). The collection walks what is left (up to 0.5-0.9 s when the
    1M-event ledger's projection is still being let go, once a switch). Nothing
    frozen: nothing to do. `collect=False` where the owner is going away (the console's
    exit): the collector gets the objects back and walks them when it next runs."""
    global _frozen
    if not _frozen:
        return
    _frozen = False
    gc.unfreeze()
    if collect:
        gc.collect()
