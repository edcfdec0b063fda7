"""Ending a widget's workers without cutting an aiosqlite call in half."""

from __future__ import annotations

import asyncio
import contextlib

from textual.dom import DOMNode


async def finish_own_workers(node: DOMNode, groups: tuple[str, ...],
                             timeout: float = 2.0) -> None:
    """Wait (bounded) for `node`'s workers in `groups` to end on their own; cancel what is
    left. Used on unmount so no worker is cancelled in the middle of an aiosqlite call."""
    running = [w for w in node.workers if w.node is node and w.group in groups
               and not w.is_finished]
    if not running:
        return
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.gather(*(w.wait() for w in running),
                                              return_exceptions=True), timeout)
    for worker in running:
        if not worker.is_finished:
            worker.cancel()
