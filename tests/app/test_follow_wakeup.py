"""A commit made while the console's watcher was not yet (or no longer) watching is
still followed: the watcher wakes the follower once each time it opens its reader.

Its `PRAGMA data_version` counts commits from the moment it opened; the follower, which
opened earlier, skips its fallback poll while the watcher is watching. A commit between
the two openings was never shown (found in CI: a finding recorded by another process
did not reach the reconcile dialog)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from apphelpers import SIZE, frozen_clock, make_case, ready, wait_for
from ledgerfactory import append_to_case

from codeai_tui.app import create_app
from codeai_tui.ledger.areader import AsyncLedgerReader


async def test_a_commit_before_the_watcher_opens_is_followed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = make_case(tmp_path / "case", "completed_task")
    app = create_app(case, clock=frozen_clock)
    opened = AsyncLedgerReader.open
    committed: list[int] = []

    async def open_after_a_commit(reader: AsyncLedgerReader) -> Any:
        if not committed:  # the follower has projected; another process commits now
            while app.main.live is None:
                await asyncio.sleep(0.01)
            newest = app.main.live.max_seq
            append_to_case(case, [{"seq": newest + 1, "kind": "task.created",
                                   "task_id": "task-late", "payload": {"title": "late"}}])
            committed.append(newest + 1)
        return await opened(reader)

    monkeypatch.setattr(AsyncLedgerReader, "open", open_after_a_commit)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: bool(committed), what="the commit")
        await wait_for(pilot, lambda: app.main.live.max_seq == committed[0],
                       what="the event committed before the watcher opened, followed")


async def test_a_receipt_appended_soon_after_the_last_read_is_shown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The receipt log is read on at most every RECEIPTS_EVERY seconds. A receipt that
    arrives sooner wakes the follower, which leaves it for later; the watcher has taken
    the log's new size by then and wakes nobody again, so the follower must come back
    for it by itself (else a quiet provider's last receipt was never shown)."""
    import json

    from codeai_tui.console import model

    monkeypatch.setattr(model, "RECEIPTS_EVERY", 2.0)  # (one second in the console)
    case = make_case(tmp_path / "case", "killed_in_flight")
    app = create_app(case, clock=frozen_clock)
    log = case / "provider" / "receipts.jsonl"
    first = json.loads(log.read_text().splitlines()[0])

    def append(receipt_id: str) -> None:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(dict(first, receipt_id=receipt_id)) + "\n")

    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        receipts = app.main.pane("receipts")
        append("r-second")
        await wait_for(pilot, lambda: receipts.row_count == 2, what="the second receipt")
        append("r-third")  # within RECEIPTS_EVERY of that read
        await wait_for(pilot, lambda: receipts.row_count == 3, what="the third receipt")
