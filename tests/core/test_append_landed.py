"""Every append checks that it landed: a trigger or a converting column that appears after
the writer opened the ledger (which a schema check at open cannot see) makes the append
roll back with one line, and nothing that needed it is done: above all no request whose
`attempt.started` is not in the ledger is sent.

Ledgers and schema changes are made with plain sqlite3, from a connection of their own.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from ledgerfactory import write_ledger

from codeai_tui.actions.resume import resume_call
from codeai_tui.lab.reliability.cases import make_advance_case
from codeai_tui.ledger import LedgerError, LedgerProblem, LedgerWriter, read_receipts
from codeai_tui.ledger.writer import NewEvent
from tests.core.cases import file_hashes, ledger_rows, make_case
from tests.support import cli

CLEAN = [
    {"seq": 1, "kind": "task.created", "task_id": "task-1", "payload": {"title": "t"}},
    {"seq": 2, "kind": "task.objective", "task_id": "task-1", "payload": {"objective": "o"}},
]

# What a trigger can do to an append, each caught by a different check.
TRIGGERS = {
    # the row never lands: the INSERT changed no row
    "swallowed": "CREATE TRIGGER t BEFORE INSERT ON events BEGIN SELECT RAISE(IGNORE); END",
    # the row lands, and an earlier one goes: two rows changed in all
    "deletes_another": "CREATE TRIGGER t AFTER INSERT ON events BEGIN "
                       "DELETE FROM events WHERE seq = 1; END",
    # the row lands, then is rewritten
    "rewrites_it": "CREATE TRIGGER t AFTER INSERT ON events BEGIN "
                   "UPDATE events SET payload = '{}' WHERE seq = NEW.seq; END",
    # the row lands, and a twin lands with it
    "adds_a_row": "CREATE TRIGGER t AFTER INSERT ON events WHEN NEW.seq < 100 BEGIN "
                  "INSERT INTO events VALUES (NEW.seq + 100, 'x' || NEW.event_id, "
                  "NEW.recorded_at, NEW.kind, NEW.task_id, NEW.call_id, NEW.attempt_id, "
                  "NEW.compilation_id, NEW.payload); END",
    # the schema refuses the row outright
    "raises": "CREATE TRIGGER t BEFORE INSERT ON events BEGIN SELECT RAISE(ABORT, 'no'); END",
}

def _execute(case: Path, *statements: str) -> None:
    """Another process's connection changes the ledger's schema."""
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("name", list(TRIGGERS))
def test_an_append_a_trigger_changes_is_rolled_back(tmp_path: Path, name: str) -> None:
    write_ledger(tmp_path, CLEAN)
    with LedgerWriter.open(tmp_path) as writer:
        _execute(tmp_path, TRIGGERS[name])  # after the open: only the append can see it
        before = ledger_rows(tmp_path)
        with pytest.raises(LedgerError) as err:
            writer.append("task.claimed", "task-1", {"worker": "w"})
        # the schema is checked again under the write lock, before the row is written:
        # the trigger is named there
        assert err.value.problem is LedgerProblem.UNSAFE_SCHEMA
        said = _one_line(err.value)
        assert "trigger 't' on 'events'" in said
        assert ledger_rows(tmp_path) == before  # nothing written, the trigger never ran
        _execute(tmp_path, "DROP TRIGGER t")
        writer.append("task.claimed", "task-1", {"worker": "w"})  # the writer goes on
    assert [r[0] for r in ledger_rows(tmp_path)] == [1, 2, 3]


def test_a_column_that_converts_what_it_is_given_is_seen_in_the_row_read_back(
        tmp_path: Path) -> None:
    """One row changed, no trigger: only reading the row back shows task_id stored as
    the integer 42 where the text '42' was written (NUMERIC affinity)."""
    write_ledger(tmp_path, CLEAN)
    with LedgerWriter.open(tmp_path) as writer:
        conn = sqlite3.connect(tmp_path / "ledger.sqlite3", isolation_level=None)
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        table_sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events'"
                                 ).fetchone()[0]
        conn.execute("PRAGMA writable_schema=ON")
        conn.execute("UPDATE sqlite_master SET sql = ? WHERE name = 'events'",
                     (table_sql.replace("task_id TEXT", "task_id NUMERIC"),))
        conn.execute(f"PRAGMA schema_version={version + 1}")
        conn.close()
        before = ledger_rows(tmp_path)
        with pytest.raises(LedgerError) as err:
            writer.append("task.created", "42", {"title": "numbered"})
    assert "differs in task_id" in _one_line(err.value)
    assert ledger_rows(tmp_path) == before


def test_an_append_that_does_not_land_takes_its_whole_transaction_back(
        tmp_path: Path) -> None:
    """A resume's three events commit together or not at all: the third not landing
    rolls back the two that did."""
    write_ledger(tmp_path, CLEAN)
    with LedgerWriter.open(tmp_path) as writer:
        _execute(tmp_path, "CREATE TRIGGER t BEFORE INSERT ON events WHEN NEW.kind = "
                           "'call.manifest' BEGIN SELECT RAISE(IGNORE); END")
        before = ledger_rows(tmp_path)
        with pytest.raises(LedgerError), writer.transaction() as txn:
            txn.append(NewEvent("call.requested", "task-1", {"idempotency_key": "k"},
                                call_id="call-1"))
            txn.append(NewEvent("task.claimed", "task-1", {"worker": "w"}))
            txn.append(NewEvent("call.manifest", "task-1", {"idempotency_key": "k"},
                                call_id="call-1"))
    assert ledger_rows(tmp_path) == before


def test_resume_sends_nothing_when_its_attempt_started_does_not_land(
        tmp_path: Path, provider: Any) -> None:
    """The trigger appears after the resume's own transaction committed, just before
    the runner claims the attempt: the request is never sent."""
    case = make_case(tmp_path / "c1", provider.base_url, recorded_at="2026-09-13T11:55:00.000Z")

    def progress(message: str) -> None:
        if message.startswith("sending"):
            _execute(case, "CREATE TRIGGER t BEFORE INSERT ON events WHEN NEW.kind = "
                           "'attempt.started' BEGIN SELECT RAISE(IGNORE); END")

    with pytest.raises(LedgerError) as err:
        resume_call(case, "call-1", progress=progress)
    said = _one_line(err.value)
    # the attempt's transaction checks the schema under its lock: the trigger is seen
    # before attempt.started is written, so the request never leaves
    assert err.value.problem is LedgerProblem.UNSAFE_SCHEMA
    assert "call-1 was resumed as" in said and "trigger 't' on 'events'" in said
    assert read_receipts(case).receipts == ()  # the provider received nothing
    kinds = [r[3] for r in ledger_rows(case)]
    assert "attempt.started" not in kinds and kinds[-3:] == [
        "call.resumed", "call.requested", "call.manifest"]  # the resume itself is recorded
    _execute(case, "DROP TRIGGER t")
    doc = json.loads(cli("inspect", str(case), "--json").stdout)
    new = next(c for c in doc["calls"] if c["resumed_from"] == "call-1")
    assert (new["stage"], new["provider_effect"]) == ("manifest_recorded", "none")


# ---- the command line: the trigger of the attack, present when the command starts.
# (A schema check at open may refuse such a ledger before any append: either way the
# command must end with exit 2 and one line, having written and sent nothing.)

HIDE = ("CREATE TRIGGER hide BEFORE INSERT ON events WHEN NEW.kind IN "
        "('call.resumed', 'attempt.started') BEGIN SELECT RAISE(IGNORE); END")
HIDE_ALL = "CREATE TRIGGER hide BEFORE INSERT ON events BEGIN SELECT RAISE(IGNORE); END"


def _refused_with_one_line(proc: Any) -> None:
    """Exit 2 and one error line, the last (beside the notes and the preview an action
    prints before it acts)."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    errors = [ln for ln in lines if ln.startswith("codeai-tui: ")
              and not ln.startswith("codeai-tui: note:")]
    assert len(errors) == 1 and errors[0] == lines[-1], proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr


def test_resume_under_a_hiding_trigger_never_repeats_itself(tmp_path: Path,
                                                            provider: Any) -> None:
    """Three `resume --yes` printed "succeeded" and sent three POSTs with one key."""
    case = make_case(tmp_path / "c2", provider.base_url,
                     recorded_at="2026-09-13T11:55:00.000Z")
    _execute(case, HIDE)
    before = file_hashes(case), ledger_rows(case)
    for _ in range(3):
        proc = cli("resume", str(case), "call-1", "--yes")
        _refused_with_one_line(proc)
        assert proc.stdout == ""
    assert read_receipts(case).receipts == ()
    assert (file_hashes(case), ledger_rows(case)) == before


@pytest.mark.parametrize(("action", "upto", "extra"), [
    ("reconcile", "effect_unknown", ("--finding", "not_received")),
    ("reinterpret", "observed", ()),
    ("redecide", "interpreted", ()),
    ("finalize", "decided_stop", ()),
    ("next-attempt", "retry_decided", ()),
])
def test_every_write_action_under_a_swallowing_trigger_writes_and_sends_nothing(
        tmp_path: Path, provider: Any, action: str, upto: str, extra: tuple[str, ...]) -> None:
    case = tmp_path / f"case-{upto}"
    make_advance_case(case, provider.base_url, upto)
    _execute(case, HIDE_ALL)
    before = file_hashes(case), ledger_rows(case), len(read_receipts(case).receipts)
    proc = cli(action, str(case), "call-1", *extra, "--yes")
    _refused_with_one_line(proc)
    assert (file_hashes(case), ledger_rows(case), len(read_receipts(case).receipts)) == before


@pytest.mark.parametrize(("action", "kill_at"), [("replay", "call.completed"),
                                                 ("reconcile-tool", "tool-effect")])
def test_the_tool_actions_under_a_swallowing_trigger_run_and_write_nothing(
        tmp_path: Path, action: str, kill_at: str) -> None:
    from codeai_tui.tools import count_publications
    from tests.core.test_replay import _killed_run

    case, key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, key, kill_at)
    doc = json.loads(cli("inspect", str(case), "--json").stdout)  # before the trigger
    op = next(o for c in doc["calls"] if c.get("tools") for o in c["tools"]["operations"])
    _execute(case, HIDE_ALL)
    before = file_hashes(case), ledger_rows(case), count_publications(case)
    if action == "replay":
        proc = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(key), "--yes")
    else:
        proc = cli("reconcile-tool", str(case), op["operation_key"], "--finding", "executed",
                   "--yes")
    _refused_with_one_line(proc)
    assert "unsafe ledger schema: trigger 'hide' on 'events'" in proc.stderr
    assert (file_hashes(case), ledger_rows(case), count_publications(case)) == before
