"""A ledger connection is never carried across a fork (SQLite forbids using one in a
child): a statement on it fails in a forked process, and a call's history, asked in a
forked child (a filter's scan of the Calls pane), opens a connection of its own there."""

from __future__ import annotations

from pathlib import Path

from ledgerfactory import write_ledger

from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.services.time_travel import CallHistory
from codeai_tui.services.watched_fork import WatchedFork


def _case(tmp_path: Path) -> Path:
    events = [{"seq": 1, "kind": "task.created", "task_id": "t", "payload": {"title": "x"}},
              {"seq": 2, "kind": "call.requested", "task_id": "t", "call_id": "c1",
               "payload": {"idempotency_key": "k1"}},
              {"seq": 3, "kind": "call.completed", "task_id": "t", "call_id": "c1",
               "payload": {"status": "failed"}}]
    write_ledger(tmp_path / "c", events)
    return tmp_path / "c"


def _in_child(work: object) -> object:
    fork = WatchedFork(lambda _beat: work())  # type: ignore[operator]
    try:
        return fork.result(30.0)
    finally:
        fork.close()


def test_a_connection_opened_before_a_fork_refuses_statements_in_the_child(
        tmp_path: Path) -> None:
    case = _case(tmp_path)
    with EvidenceSQL(case) as sql:
        assert sql.max_seq() == 3
        assert _in_child(sql.max_seq) is None  # (the child failed: nothing came back)
        assert _in_child(lambda: EvidenceSQL(case).max_seq()) == 3  # its own: read
        assert sql.max_seq() == 3  # the parent's is as it was


def test_a_calls_history_asked_in_a_child_reads_on_a_connection_of_its_own(
        tmp_path: Path) -> None:
    history = CallHistory(_case(tmp_path) / "ledger.sqlite3")
    try:
        here = history("c1", 3, 0)
        assert here is not None and here.idempotency_key == "k1"
        there = _in_child(lambda: history("c1", 3, 0))
        assert there == here
        assert history("c1", 3, 0) == here
    finally:
        history.close()
