"""Driving the console headlessly (screenshots, tests): wait for a state, never sleep."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any


async def wait_until(pilot: Any, predicate: Callable[[], bool], *, timeout: float = 10.0,
                     what: str = "the expected state") -> None:
    """Let the app process messages until `predicate()` holds; TimeoutError after
    `timeout` seconds naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause()
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(f"timed out waiting for {what}")
