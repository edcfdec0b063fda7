"""What the console keeps while it follows a busy writer, beyond the projection: one
alert for the calls that enter effect_unknown together (not one toast and one log entry
a call), and a pane keeps its selection without indexing every row of each snapshot."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from apphelpers import SIZE, frozen_clock, log_texts, ready, stays, wait_for
from ledgerfactory import append_rows
from textual.app import App, ComposeResult

from codeai_tui.app import create_app
from codeai_tui.app.widgets.table import Column, ListSource, Row, TableView


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
