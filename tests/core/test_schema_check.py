"""The schema gate (ledger/schema_check.py) and the hardened connection (ledger/guard.py),
beyond what the hostile corpus runs through the CLI and the console: the writer's check
inside its transaction, the async reader, and what a LedgerConnection refuses to run."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from ledgerfactory import write_ledger

from codeai_tui.ledger import LedgerError, LedgerProblem, LedgerWriter
from codeai_tui.ledger.areader import AsyncLedgerReader
from codeai_tui.ledger.guard import StatementGuard, ledger_error, ledger_factory
from codeai_tui.read.inspection import project_case

EVENTS = [
    {"seq": 1, "kind": "task.created", "task_id": "task-1", "payload": {"title": "t"}},
    {"seq": 2, "kind": "call.requested", "task_id": "task-1", "call_id": "call-1",
     "payload": {"idempotency_key": "key-1", "purpose": "p", "model": "m"}},
]
HIDE = ("CREATE TRIGGER hide BEFORE INSERT ON events WHEN NEW.kind = 'call.resumed' "
        "BEGIN SELECT RAISE(IGNORE); END")
ENDLESS = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
           "SELECT count(*) FROM r")


def _plain(case: Path, *statements: str) -> int:
    """Run `statements` with plain sqlite3; the events' count after them."""
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    try:
        for st in statements:
            conn.execute(st)
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        conn.close()


def test_the_writer_sees_a_trigger_added_after_it_opened(tmp_path: Path) -> None:
    """Between the writer's open and its append, another process adds a trigger that
    swallows call.resumed: the append refuses, under its write lock, and writes nothing."""
    case = tmp_path / "case"
    write_ledger(case, EVENTS)
    with LedgerWriter.open(case) as writer:
        _plain(case, HIDE)
        with pytest.raises(LedgerError) as err:
            writer.append("call.resumed", "task-1", {"resumed_as": "call-2"}, call_id="call-1")
    assert err.value.problem is LedgerProblem.UNSAFE_SCHEMA
    assert "trigger 'hide' on 'events'" in str(err.value)
    assert _plain(case) == 2


def test_an_extra_table_is_flagged_and_left_writable(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, EVENTS)
    _plain(case, "CREATE TABLE notes (body TEXT)")
    problems = [(a.seq, a.problem) for a in project_case(case).anomalies]
    assert problems == [(0, "the ledger holds table 'notes', which ledger v1 does not "
                            "define (left unread)")]
    with LedgerWriter.open(case) as writer:
        writer.append("task.claimed", "task-1", {"worker": "w"})
    assert _plain(case) == 3


async def test_the_async_reader_refuses_a_trigger(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, EVENTS)
    _plain(case, HIDE)
    with pytest.raises(LedgerError) as err:
        await AsyncLedgerReader(case).open()
    assert err.value.problem is LedgerProblem.UNSAFE_SCHEMA


def _connect(guard: StatementGuard) -> sqlite3.Connection:
    return sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False,
                           factory=ledger_factory(guard))


def test_a_ledger_connection_runs_no_trigger_and_attaches_nothing() -> None:
    """What gets past the schema check still cannot run: a trigger makes its statement
    fail (trigger depth 0) instead of swallowing the row, and ATTACH is refused."""
    conn = _connect(StatementGuard(5.0))
    conn.execute("CREATE TABLE events (kind TEXT)")
    conn.execute(HIDE)
    with pytest.raises(sqlite3.OperationalError, match="trigger"):
        conn.execute("INSERT INTO events VALUES ('call.resumed')")
    with pytest.raises(sqlite3.OperationalError, match="attached"):
        conn.execute("ATTACH ':memory:' AS other")
    assert conn.execute("PRAGMA trusted_schema").fetchone() == (0,)


def test_a_statement_past_its_budget_ends_with_one_line() -> None:
    guard = StatementGuard(0.3)
    conn = _connect(guard)
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError) as err:
        conn.execute(ENDLESS).fetchall()
    assert time.monotonic() - started < 3.0
    problem = ledger_error("ledger.sqlite3", err.value, guard)
    assert problem.problem is LedgerProblem.OVER_BUDGET
    assert str(problem).startswith("ledger.sqlite3: a read of the ledger ran past its budget "
                                   "of 0.3 s and was stopped")


def test_a_stop_ends_a_statement_at_once_whatever_the_budget() -> None:
    running, stopping = threading.Event(), threading.Event()

    def stop() -> bool:  # asked only while a statement runs inside SQLite
        running.set()
        return stopping.is_set()

    guard = StatementGuard(3600.0, stop)
    conn = _connect(guard)
    failed: list[BaseException] = []

    def read() -> None:
        try:
            conn.execute(ENDLESS).fetchall()
        except sqlite3.Error as exc:
            failed.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    assert running.wait(5.0)
    stopping.set()
    stopped_at = time.monotonic()
    reader.join(timeout=5.0)
    assert not reader.is_alive() and time.monotonic() - stopped_at < 1.0
    assert ledger_error("x", failed[0], guard).problem is not LedgerProblem.OVER_BUDGET
