"""Helpers for the app tests: real ledgers, a frozen clock, polling with a timeout."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from ledgerfactory import write_ledger  # noqa: E402

CONFORMANCE = TESTS / "conformance"
FROZEN_NOW = datetime(2026, 9, 13, 12, 5, 0, tzinfo=UTC)
SIZE = (160, 48)


def frozen_clock() -> datetime:
    return FROZEN_NOW


def vector(name: str) -> dict[str, Any]:
    return json.loads((CONFORMANCE / f"{name}.json").read_text(encoding="utf-8"))


def make_case(directory: Path, name: str) -> Path:
    data = vector(name)
    write_ledger(directory, data["events"], receipts=data.get("receipts"))
    return directory


def ledger_digest(case: Path) -> dict[str, str | None]:
    """Hashes of the ledger, its -wal and the receipts: did anything write?

    An absent -wal and an empty one are the same content (SQLite creates an empty -wal
    when any reader, even `mode=ro`, opens a WAL database whose writer has gone)."""
    out: dict[str, str | None] = {}
    for suffix in ("", "-wal"):
        p = case / f"ledger.sqlite3{suffix}"
        data = p.read_bytes() if p.exists() else b""
        out[suffix or "db"] = hashlib.sha256(data).hexdigest() if data else None
    receipts = case / "provider" / "receipts.jsonl"
    out["receipts"] = hashlib.sha256(receipts.read_bytes()).hexdigest() \
        if receipts.exists() else None
    return out


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


async def wait_for(pilot: Any, predicate: Callable[[], bool], timeout: float = 10.0,
                   what: str = "condition") -> None:
    """Poll with a timeout (never a bare sleep as synchronisation)."""
    try:
        await wait_until(pilot, predicate, timeout=timeout, what=what)
    except TimeoutError as exc:
        raise AssertionError(str(exc)) from None


async def stays(pilot: Any, predicate: Callable[[], bool], seconds: float = 1.0,
                what: str = "condition") -> None:
    """A negative: `predicate()` holds for `seconds` of processing, not one pause."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        await pilot.pause()
        assert predicate(), f"{what} stopped holding"
        await asyncio.sleep(0.05)


async def ready(pilot: Any) -> None:
    """The app has projected its case and drawn the panes."""
    main = pilot.app.main
    await wait_for(pilot, lambda: main.live is not None and main.session.progress is None,
                   what="first projection")
    await wait_for(pilot, main.pane("timeline").cursor_loaded, what="timeline page")
    await pilot.pause()


def status_text(app: Any) -> str:
    from codeai_tui.app.widgets.status_bar import StatusBar

    return str(app.main.query_one(StatusBar).render())


def banner_text(app: Any) -> str:
    from codeai_tui.app.widgets.banner import Banner

    return str(app.main.query_one(Banner).render())


def verdict_text(app: Any) -> str:
    from codeai_tui.app.widgets.verdict_line import VerdictLine

    return str(app.main.query_one(VerdictLine).render())


def detail_text(app: Any) -> str:
    return app.main.query_one("#detail-box").text()


def log_texts(app: Any) -> list[str]:
    """The action log (kept, unlike toasts): every refusal, resume and alert."""
    return [f"{e.outcome.value}: {e.text}" for e in app.action_log.entries]


def toast_text(app: Any) -> str:
    """What the toasts on screen say (the operator's view of `notify`)."""
    return "\n".join(str(toast.render()) for toast in app.screen.query("Toast"))


def gate_scans(monkeypatch: Any) -> threading.Event:
    """Every filter a scan (the threshold set to 0), whose matching, off the screen's
    thread, waits for the event returned: what the screen does meanwhile can be seen."""
    from codeai_tui.app.widgets import filter_scan
    from codeai_tui.console.filters import Needle

    monkeypatch.setattr(filter_scan, "IN_THREAD_FROM", 0)
    gate = threading.Event()
    plain = Needle.matches

    def gated(self: Needle, fields: Iterable[str]) -> bool:
        if threading.current_thread() is not threading.main_thread():
            gate.wait(10)
        return plain(self, fields)

    monkeypatch.setattr(Needle, "matches", gated)
    return gate
