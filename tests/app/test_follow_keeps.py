"""What the console keeps while it follows a busy writer, beyond the projection: one
alert for the calls that enter effect_unknown together (not one toast and one log entry
a call), a pane keeps its selection without indexing every row of each snapshot, and
the calls a writer passes through start_call are not drift checked (a scan each)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from apphelpers import SIZE, frozen_clock, log_texts, ready, stays, wait_for
from ledgerfactory import append_rows
from textual.app import App, ComposeResult

from codeai_tui.app import create_app
from codeai_tui.app.widgets.table import Column, ListSource, Row, TableView
from codeai_tui.console.session import DRIFT_AFTER_S
from tests.core.cases import make_case as make_real_case

NOWHERE = "http://127.0.0.1:9/v1"  # the drift check reads; it never sends


def in_flight(seq: int, call_id: str) -> list[dict[str, Any]]:
    """A call requested and its attempt started, then nothing: effect unknown."""
    return [
        {"seq": seq, "kind": "call.requested", "task_id": "task-1", "call_id": call_id,
         "payload": {"idempotency_key": call_id}},
        {"seq": seq + 1, "kind": "attempt.started", "task_id": "task-1",
         "call_id": call_id, "attempt_id": f"{call_id}-a1",
         "payload": {"attempt_no": 1, "request_sha256": "cd"}},
    ]


async def test_calls_entering_effect_unknown_together_make_one_alert(
        case_factory) -> None:  # noqa: ANN001
    case = case_factory("killed_after_manifest")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        count = main.live.max_seq
        before = len(app.action_log.entries)
        writer = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        try:
            append_rows(writer, [ev for i, name in enumerate(("late-1", "late-2", "late-3"))
                                 for ev in in_flight(count + 1 + 2 * i, name)])
        finally:
            writer.close()
        await wait_for(pilot, lambda: len(app.action_log.entries) > before, what="an alert")
        await stays(pilot, lambda: len(app.action_log.entries) == before + 1, seconds=1.0,
                    what="one alert")
        text = log_texts(app)[-1]
        assert "3 calls entered effect_unknown" in text, text
        assert all(name in text for name in ("late-1", "late-2", "late-3")), text


class _CountingSource(ListSource):
    """Rows whose search for a key is counted (a search builds an index of every row)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        super().__init__(rows)
        self.searches = 0

    def index_of(self, key: str) -> int | None:
        self.searches += 1
        return super().index_of(key)


class _OneTable(App[None]):
    def compose(self) -> ComposeResult:
        yield TableView([Column("id", 8)])


def _rows(*keys: str) -> list[Row]:
    return [Row(k, (k,)) for k in keys]


async def test_a_new_source_keeps_the_selection_where_it_sits_without_a_search() -> None:
    app = _OneTable()
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(TableView)
        table.set_source(ListSource(_rows("a", "b", "c", "d")))
        table.move_to(2)
        await pilot.pause()
        grown = _CountingSource(_rows("a", "b", "c", "d", "e"))  # the case grew below
        table.set_source(grown)
        assert (table.cursor, table.current_row().key, grown.searches) == (2, "c", 0)
        moved = _CountingSource(_rows("x", "a", "b", "c", "d", "e"))  # a row came above
        table.set_source(moved)
        assert (table.cursor, table.current_row().key, moved.searches) == (3, "c", 1)


def _as_another_call(case: Path, call_id: str) -> list[dict[str, Any]]:
    """call-1's request and manifest again, as `call_id`'s (plain sqlite3)."""
    conn = sqlite3.connect(case / "ledger.sqlite3")
    try:
        rows = conn.execute("SELECT kind, task_id, payload FROM events NOT INDEXED WHERE "
                            "call_id = 'call-1' AND kind IN ('call.requested', "
                            "'call.manifest') ORDER BY seq").fetchall()
        seq = conn.execute("SELECT max(seq) FROM events").fetchone()[0]
    finally:
        conn.close()
    return [{"seq": seq + i, "kind": kind, "task_id": task, "call_id": call_id,
             "payload": payload.replace("key-1", f"key-{call_id}")}
            for i, (kind, task, payload) in enumerate(rows, 1)]


async def test_a_call_turning_resumable_while_followed_is_checked_once_it_stays(
        tmp_path: Path) -> None:
    """A drift check reads the call's events from the table alone (a scan of the
    ledger), and a followed writer's calls are resumable for the moment between their
    manifest and their attempt: the call resumable when the case opens is checked at
    once, one that turns resumable later once it stayed so DRIFT_AFTER_S, by the
    watch's timer when no later commit comes."""
    case = make_real_case(tmp_path / "c1", NOWHERE)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        await wait_for(pilot, lambda: "call-1" in main.session.drift, what="call-1 checked")
        writer = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        try:
            append_rows(writer, _as_another_call(case, "call-2"))
        finally:
            writer.close()
        await wait_for(pilot, lambda: main.live.call("call-2") is not None,
                       what="call-2 followed")
        seen = time.monotonic()
        assert "call-2" not in main.session.drift
        assert main.live.call("call-2").next_operation == "start_call"
        await wait_for(pilot, lambda: "call-2" in main.session.drift, what="call-2 checked")
        assert time.monotonic() - seen >= DRIFT_AFTER_S / 2
