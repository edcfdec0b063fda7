"""The SQL fast path and the event-by-event oracle give the same document, on random
ledgers (hostile ones included) and at every as_of; the same rules hold on both."""

from __future__ import annotations

import json
import sqlite3
import tempfile
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledgerfactory import write_ledger

from codeai_tui.ledger import LedgerError, LedgerReader, read_receipts
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.ledger.schema import KNOWN_KINDS
from codeai_tui.services.projection import project_case
from codeai_tui.workstate import project
from tests.support import examples

SHA = "ab" * 32
KINDS = sorted(KNOWN_KINDS) + ["call.teleported", "task.created\x1b[31m"]
CALL_HEAVY = ["call.requested", "call.manifest", "attempt.started", "attempt.observed",
              "attempt.interpreted", "attempt.retry_decided", "attempt.completed",
              "call.completed", "call.resumed", "attempt.reconciled",
              "tool.admitted", "tool.completed", "tool.reconciled"]
# docs/tools.md payloads that make tool rungs reachable: a turn, a plan, operations
_PLAN = [{"tool_call_id": "tc1", "name": "publish", "arguments_sha256": SHA},
         {"tool_call_id": "tc2", "name": "publish", "arguments_sha256": SHA}]
TOOL_PAYLOADS = [json.dumps(p) for p in (
    {"idempotency_key": "k1", "turn": {"namespace": "ns", "thread": "th", "turn": "t"}},
    {"transport": {"status": 200}, "tool_plan": _PLAN},
    {"transport": {"status": 200}, "tool_plan": [_PLAN[0], {"name": 3}]},
    {"operation_key": "ns/th/t/tc1", "tool_call_id": "tc1", "tool": "publish",
     "arguments_sha256": SHA},
    {"operation_key": "ns/th/t/tc9", "tool_call_id": "tc9"},
    {"operation_key": "ns/th/t/tc1", "outcome": "succeeded", "receipt": "{}"},
    {"status": "succeeded", "adopted_attempt_id": "a1"},
    {"operation_key": "ns/th/t/tc1", "finding": "executed"},
    {"operation_key": "ns/th/t/tc1", "finding": "not_executed"},
    {"operation_key": "ns/th/t/tc1", "finding": "maybe"},
)]

payload_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6) | st.just(SHA)
    | st.just("../../etc/passwd"),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=5,
)
payload_texts = st.one_of(
    st.dictionaries(
        st.sampled_from(["idempotency_key", "decision", "status", "resumed_as", "outcome",
                         "acceptance_id", "offered", "required_ids", "missing_ids", "error",
                         "request_sha256", "request_artifact", "response_sha256",
                         "response_artifact", "rendered_sha256", "by", "transport",
                         "resumed_from", "adopted_attempt_id", "finding", "evidence",
                         "accept_duplicate", "tool_plan", "turn", "operation_key",
                         "receipt", "title", "objective", "worker"]),
        payload_values, max_size=5,
    ).map(json.dumps),
    st.sampled_from(["[]", "null", "42", "{", "\"text\"", "{\"decision\": \"retry\"}",
                     "{\"a\": NaN}", "{\"status\": \"succeeded\"}",
                     "{\"finding\": \"received\", \"evidence\": [\"r-1\"]}",
                     "{\"finding\": \"not_received\"}",
                     "{\"decision\": \"retry\", \"accept_duplicate\": true}"]),
    st.sampled_from(TOOL_PAYLOADS),
)


@st.composite
def ledgers(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    n = draw(st.integers(0, 28))
    events: list[dict[str, Any]] = []
    seq = 0
    for i in range(n):
        seq += draw(st.sampled_from([1, 1, 1, 1, 1, 2]))
        kind = draw(st.sampled_from(CALL_HEAVY + CALL_HEAVY + KINDS))
        events.append({
            "seq": seq,
            "event_id": draw(st.sampled_from([f"e{i}", f"e{i}", "dup"])),
            "recorded_at": f"2026-09-13T12:00:{seq % 60:02d}Z",
            "kind": kind,
            "task_id": draw(st.sampled_from(["t1", "t2"])),
            "call_id": draw(st.sampled_from(["c1", "c2", "c3", None, ""])),
            "attempt_id": draw(st.sampled_from(["a1", "a2", None])),
            "compilation_id": draw(st.sampled_from(["k1", None])),
            "payload": draw(payload_texts),
        })
    receipts = [
        {"receipt_id": f"r{j}", "received_at": f"2026-09-13T12:00:{draw(st.integers(0, 40)):02d}Z",
         "idempotency_key": draw(st.sampled_from(["k1", "k2"])),
         "body_sha256": draw(st.sampled_from([SHA, "cd" * 32])), "bytes": 1}
        for j in range(draw(st.integers(0, 3)))
    ]
    return events, receipts


def _write(root: Path, events: list[dict[str, Any]], receipts: list[dict[str, Any]],
           unique_ids: bool, index: bool = True) -> Path:
    case = root / "case"
    write_ledger(case, [], receipts=receipts)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    if not unique_ids or not index:  # rebuild the table the way another writer might
        conn.executescript("""
            DROP TABLE events;
            CREATE TABLE events (seq INTEGER PRIMARY KEY, event_id TEXT NOT NULL,
              recorded_at TEXT NOT NULL, kind TEXT NOT NULL, task_id TEXT NOT NULL,
              call_id TEXT, attempt_id TEXT, compilation_id TEXT, payload TEXT NOT NULL);""")
        if index:
            conn.execute("CREATE INDEX events_call ON events(call_id, attempt_id, kind, seq)")
    for ev in events:
        conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", (
            ev["seq"], ev["event_id"] if not unique_ids else f"u{ev['seq']}", ev["recorded_at"],
            ev["kind"], ev["task_id"], ev["call_id"], ev["attempt_id"], ev["compilation_id"],
            ev["payload"]))
    conn.close()
    return case


def _oracle(case: Path, as_of: int | None) -> dict[str, Any]:
    with LedgerReader(case) as reader:
        events = reader.events()
    return project(events, read_receipts(case), as_of).as_json(str(case))


@contextmanager
def drawn_case(ledger: tuple[list[dict[str, Any]], list[dict[str, Any]]], unique_ids: bool
               ) -> Iterator[tuple[Path, list[int | None]]]:
    """A drawn ledger written as a case in a temporary directory, with every as_of worth
    asking of it (None, 0, each seq and one past the last)."""
    events, receipts = ledger
    with tempfile.TemporaryDirectory() as tmp:
        case = _write(Path(tmp), events, receipts, unique_ids)
        last = events[-1]["seq"] if events else 0
        yield case, [None, *range(0, last + 2)]


@settings(max_examples=examples(35), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.booleans())
def test_fast_path_equals_oracle_at_every_as_of(ledger: Any, unique_ids: bool) -> None:
    with drawn_case(ledger, unique_ids) as (case, as_ofs):
        for as_of in as_ofs:
            fast = project_case(case, as_of)
            assert fast.gathered == "sql"
            assert fast.as_json(str(case)) == _oracle(case, as_of), as_of


def test_without_the_covering_index_the_event_path_is_taken_and_says_so(tmp_path: Path) -> None:
    events = [{"seq": 1, "event_id": "e1", "recorded_at": "2026-09-13T12:00:01Z",
               "kind": "call.requested", "task_id": "t1", "call_id": "c1", "attempt_id": None,
               "compilation_id": None, "payload": json.dumps({"idempotency_key": "k"})}]
    case = _write(tmp_path, events, [], unique_ids=True, index=False)
    state = project_case(case)
    assert state.gathered.startswith("events (no covering index")
    assert state.as_json("x") == _oracle(case, None) | {"case": "x"}


# ---------------------------------------------------------------- rules, both paths


def _ev(seq: int, kind: str, call: str | None = "c1", attempt: str | None = None,
        payload: dict[str, Any] | None = None, event_id: str | None = None,
        minute: int = 0) -> dict[str, Any]:
    return {"seq": seq, "event_id": event_id or f"e{seq}",
            "recorded_at": f"2026-09-13T12:{minute:02d}:{seq:02d}Z", "kind": kind,
            "task_id": "t1", "call_id": call, "attempt_id": attempt, "compilation_id": None,
            "payload": json.dumps(payload or {})}


def _both(case: Path, as_of: int | None = None) -> list[dict[str, Any]]:
    fast = project_case(case, as_of).as_json("x")
    slow = project_case(case, as_of, fast=False).as_json("x")
    assert fast == slow
    return [fast, slow]


def test_orphan_attempt_evidence_never_stands_in_for_the_started_attempt(tmp_path: Path) -> None:
    events = [
        _ev(1, "call.requested", payload={"idempotency_key": "k"}),
        _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
        _ev(3, "attempt.started", attempt="a1", payload={"request_sha256": SHA}),
        _ev(4, "attempt.observed", attempt="a9", payload={"transport": {"status": 200}}),
        _ev(5, "attempt.interpreted", attempt="a9", payload={"outcome": "success"}),
        _ev(6, "attempt.completed", attempt="a9", payload={"status": "succeeded"}),
    ]
    case = _write(tmp_path, events, [], unique_ids=True)
    for doc in _both(case):
        (call,) = doc["calls"]
        assert (call["stage"], call["next_operation"], call["provider_effect"]) == (
            "effect_unknown", "reconcile_effect", "unknown")
        assert call["duplicate_effect_risk"] is True
        assert "attempt a1 started at seq 3" in call["reason"]
        assert [a["seq"] for a in doc["anomalies"]] == [4]


def test_receipts_as_of_are_those_received_before_the_next_event(tmp_path: Path) -> None:
    events = [
        _ev(1, "call.requested", payload={"idempotency_key": "k"}),
        _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
        _ev(3, "attempt.started", attempt="a1", payload={"request_sha256": SHA}, minute=5),
    ]
    # received after seq 2 was recorded but before seq 3 was: as of 2 it exists and is
    # not covered yet (the attempt.started comes at seq 3); a later one is not there yet
    receipts = [
        {"receipt_id": "r-early", "received_at": "2026-09-13T12:03:00Z",
         "idempotency_key": "k", "body_sha256": SHA, "bytes": 1},
        {"receipt_id": "r-late", "received_at": "2026-09-13T12:06:00Z",
         "idempotency_key": "k", "body_sha256": SHA, "bytes": 1},
    ]
    case = _write(tmp_path, events, receipts, unique_ids=True)
    for doc in _both(case, as_of=2):
        assert doc["receipts"] == {"count": 1, "uncovered": ["r-early"], "duplicates": []}
    for doc in _both(case, as_of=3):  # the last seq: every receipt, as live
        assert doc["receipts"]["count"] == 2 and doc["receipts"]["uncovered"] == []
        assert doc["receipts"]["duplicates"] == [["r-early", "r-late"]]


def test_two_events_sharing_an_event_id_are_an_anomaly(tmp_path: Path) -> None:
    events = [
        _ev(1, "call.requested", payload={"idempotency_key": "k"}, event_id="same"),
        _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA},
            event_id="same"),
    ]
    case = _write(tmp_path, events, [], unique_ids=False)
    for doc in _both(case):
        assert doc["anomalies"] == [
            {"seq": 2, "problem": "event_id 'same' was already used by seq 1"}]


@pytest.mark.parametrize(("kind", "attempt", "field"), [
    ("call.manifest", None, "request_artifact"),
    ("call.manifest", None, "request_sha256"),
    ("attempt.observed", "a1", "response_artifact"),
    ("attempt.observed", "a1", "response_sha256"),
    ("call.manifest", None, "rendered_context_sha256"),
])
def test_artifact_references_that_leave_the_store_are_anomalies(
        tmp_path: Path, kind: str, attempt: str | None, field: str) -> None:
    from codeai_tui.actions.gate import ActionRefused
    from codeai_tui.actions.resume import check_resumable
    from codeai_tui.workstate import Projector

    manifest = {"idempotency_key": "k", "request_sha256": SHA, "request_artifact": SHA}
    events = [_ev(1, "call.requested", payload={"idempotency_key": "k"}),
              _ev(2, "call.manifest", payload=manifest)]
    if kind == "attempt.observed":
        events += [_ev(3, "attempt.started", attempt="a1", payload={"request_sha256": SHA}),
                   _ev(4, kind, attempt=attempt, payload={field: "../../../etc/passwd"})]
    else:
        events[1]["payload"] = json.dumps(manifest | {field: "../../../etc/passwd"})
    case = _write(tmp_path, events, [], unique_ids=True)
    bad_seq = events[-1]["seq"]
    for doc in _both(case):
        (anomaly,) = doc["anomalies"]
        assert anomaly["seq"] == bad_seq and field in anomaly["problem"]
    with LedgerReader(case) as reader:
        projector = Projector()
        projector.feed(reader.events())
    state = projector.call_state("c1")
    assert state.anomalous
    if kind == "call.manifest":  # rung 5, but resume refuses an anomalous call
        with pytest.raises(ActionRefused, match="anomaly"):
            check_resumable(state, "c1")


@pytest.mark.parametrize(("column", "value", "fast"), [
    ("payload", 42, True),            # parsed the oracle's way on the fast path
    ("payload", b'{"idempotency_key": "k"}', True),
    ("call_id", b"c1", False),        # id cells of other types: event by event, and said
    ("kind", b"call.requested", False),
    ("attempt_id", "a\x1fcall.completed\x1fx", False),  # smuggles the skeleton's separator
])
def test_cells_of_other_types_give_the_oracle_document(
        tmp_path: Path, column: str, value: object, fast: bool) -> None:
    events = [_ev(1, "call.requested", payload={"idempotency_key": "k"}),
              _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
              _ev(3, "attempt.started", attempt="a1", payload={"request_sha256": SHA})]
    case = _write(tmp_path, events, [], unique_ids=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute(f"UPDATE events SET {column} = ? WHERE seq = 3", (value,))
    conn.close()
    state = project_case(case)
    assert (state.gathered == "sql") is fast, state.gathered
    assert state.as_json("x") == _oracle(case, None) | {"case": "x"}


@pytest.mark.parametrize(("call_id", "attempt_id"), [
    ("c1", "c1"), ("c1", "c1-a1"), ("c1", "x-c1"), ("çall-ä", "çall-ä-a1"), ("c\x00d", "c\x00d-1"),
    ("c1", "\x1ccall"), ("c1", "\x1bx"), ("c1", "\x1e"),
])
def test_attempt_ids_survive_the_packed_skeleton(tmp_path: Path, call_id: str, attempt_id: str) -> None:
    events = [_ev(1, "call.requested", call=call_id, payload={"idempotency_key": "k"}),
              _ev(2, "call.manifest", call=call_id,
                  payload={"idempotency_key": "k", "request_sha256": SHA}),
              _ev(3, "attempt.started", call=call_id, attempt=attempt_id,
                  payload={"request_sha256": SHA}),
              _ev(4, "attempt.observed", call=call_id, attempt=attempt_id, payload={})]
    case = _write(tmp_path, events, [], unique_ids=True)
    fast = project_case(case)
    # ids that are not printable ASCII (a NUL too) take the event path, which flags
    # what needs it
    plain = all(" " <= ch <= "~" for ch in call_id + attempt_id)
    assert (fast.gathered == "sql") is plain
    assert fast.as_json("x") == _oracle(case, None) | {"case": "x"}
    assert attempt_id in fast.calls[0].reason


def test_the_first_cell_that_is_not_plain_text_sends_the_ledger_down_the_event_path(
        tmp_path: Path) -> None:
    """Any byte outside printable ASCII in an id or time cell, in any of those columns,
    past the first page the check joins: the fast path gives way and names the first
    such seq, where an earlier cell that is not text at all wins."""
    n = 9_000  # (more rows than one page of the check)
    events = [_ev(s, "task.created", call=None) for s in range(1, n + 1)]
    case = _write(tmp_path, events, [], unique_ids=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute("UPDATE events SET compilation_id = 'k1', call_id = 'c', attempt_id = 'a'")
    columns = ("event_id", "recorded_at", "compilation_id", "call_id", "attempt_id", "task_id")
    bad = [b"x\x01y", b"x\x7fy", b"\xffy", b"x\x00y", "caf\u00e9".encode(), b"tab\tx"]
    got = {}
    for column in columns:
        for value in bad:
            held = conn.execute(f"SELECT {column} FROM events WHERE seq = 8500").fetchone()[0]
            conn.execute(f"UPDATE events SET {column} = CAST(? AS TEXT) WHERE seq = 8500",
                         (value,))
            got[column, value] = project_case(case).gathered
            conn.execute(f"UPDATE events SET {column} = ? WHERE seq = 8500", (held,))
    # (the task ids are read as text while the check runs: one that is not UTF-8 stops
    # that read first)
    assert got == {(column, value): "events (text that is not UTF-8)"
                   if (column, value) == ("task_id", b"\xffy") else
                   "events (seq 8500 holds an id or time that is not plain text)"
                   for column in columns for value in bad}
    assert project_case(case).gathered == "sql"
    conn.execute("UPDATE events SET recorded_at = CAST(? AS TEXT) WHERE seq = 8700", (b"\x01",))
    conn.execute("UPDATE events SET event_id = X'38363030' WHERE seq = 8600")  # a BLOB
    assert project_case(case).gathered == \
        "events (seq 8600 holds an id or time that is not plain text)"
    conn.close()
    # the check reads page after page: a stop ends it between two as within one
    stopped: list[bool] = []
    with EvidenceSQL(case) as sql:
        sql.abort_when(lambda: bool(stopped))
        assert sql.first_odd_text(n) == 8700  # (the BLOB at 8600 is plain bytes)
        stopped.append(True)
        with pytest.raises(LedgerError, match="interrupted"):
            sql.first_odd_text(n)


def test_the_smallest_seq_is_checked_for_text_too(tmp_path: Path) -> None:
    """A first seq of -2^63 (the least a seq can be): its id is checked like any other."""
    low = -(1 << 63)
    events = [_ev(s, "task.created", call=None) for s in (low, 1, 2)]
    case = _write(tmp_path, events, [], unique_ids=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute("UPDATE events SET event_id = 'e' || char(1) WHERE seq = ?", (low,))
    conn.close()
    with EvidenceSQL(case) as sql:
        assert sql.first_odd_text(2) == low
    assert project_case(case).gathered == \
        f"events (seq {low} holds an id or time that is not plain text)"


def test_long_id_cells_are_checked_a_few_rows_at_a_time(tmp_path: Path) -> None:
    """Ids of 64 KiB (a hostile ledger's): the check joins few of them at once, so the
    bytes it holds stay a few MiB where 600 rows' worth are 38 MiB, and it still finds
    the one byte that is not plain text near the end of a cell."""
    n, size = 600, 64 << 10
    events = [_ev(s, "task.created", call=None) for s in range(1, n + 1)]
    case = _write(tmp_path, events, [], unique_ids=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute("UPDATE events SET event_id = printf('%.*c', ?, 'e') || seq", (size,))
    conn.execute("UPDATE events SET event_id = event_id || char(1) WHERE seq = 590")
    conn.close()
    with EvidenceSQL(case) as sql:
        tracemalloc.start()
        try:
            found = sql.first_odd_text(n)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert found == 590
    assert peak < 12 << 20, peak


def test_seqs_that_are_not_integers_never_hang_a_reader(tmp_path: Path) -> None:
    """A table whose seq is not the INTEGER PRIMARY KEY may hold REAL or TEXT seqs: such a
    ledger goes down the event path (and says so), which returns; the console follower
    does not re-read rows its cursor cannot pass."""
    from codeai_tui.console.model import CaseFollower
    from tests.support import cli

    case = tmp_path / "case"
    write_ledger(case, [])
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.executescript("""DROP TABLE events;
        CREATE TABLE events (seq, event_id, recorded_at, kind, task_id, call_id, attempt_id,
                             compilation_id, payload);""")
    rows = [(1, "e1", "t", "call.requested", "t1", "c1", None, None, '{"idempotency_key":"k"}'),
            (2.5, "e2", "t", "call.manifest", "t1", "c1", None, None, "{}"),
            ("x", "e3", "t", "call.completed", "t1", "c1", None, None, "{}")]
    conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", rows)
    conn.close()
    state = project_case(case)
    assert state.gathered.startswith("events (seq is not the table's INTEGER PRIMARY KEY")
    proc = cli("inspect", str(case), "--json", timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert cli("inspect", str(case), timeout=30).stdout.count("read event by event") == 1
    assert json.loads(proc.stdout)["calls"][0]["call_id"] == "c1"
    follower = CaseFollower(case)
    try:
        follower.catch_up()  # returns: the same rows are not fed again and again
        fed = follower.projector.event_count
        follower.catch_up()
        assert follower.projector.event_count == fed
    finally:
        follower.close()
