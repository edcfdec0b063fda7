"""Helpers for the app tests: real ledgers, a frozen clock, polling with a timeout."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from ledgerfactory import write_ledger  # noqa: E402

from codeai_tui.app.pilot import wait_until  # noqa: E402

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


async def wait_for(pilot: Any, predicate: Callable[[], bool], timeout: float = 10.0,
                   what: str = "condition") -> None:
    """Poll with a timeout (never a bare sleep as synchronisation)."""
    try:
        await wait_until(pilot, predicate, timeout=timeout, what=what)
    except TimeoutError as exc:
        raise AssertionError(str(exc)) from None


async def ready(pilot: Any) -> None:
    """The app has projected its case and drawn the panes."""
    app = pilot.app
    await wait_for(pilot, lambda: app.live is not None and app.progress is None,
                   what="first projection")
    await wait_for(pilot, lambda: app.table("timeline").row_count == 0
                   or app.timeline_source.is_loaded(app.table("timeline").cursor),
                   what="timeline page")
    await pilot.pause()
