"""Time travel from the live projection equals projecting the prefix, at every seq, on
random (hostile) ledgers; following appends keeps verdicts already handed out intact."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledgerfactory import append_rows

from codeai_tui.console import model
from codeai_tui.console.model import CaseFollower, TimeMachine
from codeai_tui.console.severity import case_verdict
from codeai_tui.ledger import LedgerReader
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.workstate import WorkState, project
from codeai_tui.workstate.receipts import LiveReceiptCheck, index_for
from tests.core.test_fast_path import SHA, _ev, _oracle, _write, drawn_case, ledgers
from tests.support import examples


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.booleans())
def test_time_travel_equals_projecting_the_prefix(ledger: Any, unique_ids: bool) -> None:
    with drawn_case(ledger, unique_ids) as (case, as_ofs):
        follower = CaseFollower(case)
        try:
            with patch.object(model, "FAST_START_MIN", 0):  # the fast path at any size
                follower.catch_up()
            assert follower.gathered == ("sql" if unique_ids else "events")
            assert follower.snapshot().state.as_json(str(case)) == _oracle(case, None)
            for n in as_ofs[1:-1]:  # (from 0 to the last seq: what the follower has seen)
                snap = follower.as_of(n)
                assert snap.as_of == n
                assert snap.state.as_json(str(case)) == _oracle(case, n), n
                # (what the document leaves out too: a task's title, its seqs)
                assert snap.state.tasks == _oracle_state(case, n).tasks, n
                assert_kept_sets_as_counted(snap.state)
                for i, call in enumerate(snap.state.calls):  # the panes find rows by id
                    # (a call settled in columns is read anew each time: equal, not the same)
                    assert snap.call(call.call_id) == call
                    assert snap.call_index.get(call.call_id) == i
        finally:
            follower.close()


def _oracle_state(case: Path, as_of: int | None) -> WorkState:
    with LedgerReader(case) as reader:
        events = reader.events()
    return project(events, read_receipts(case), as_of)


def assert_kept_sets_as_counted(state: WorkState) -> None:
    """What the projector keeps for a snapshot (from its live sets, as of a seq too)
    equals what a pass over the snapshot's calls finds."""
    counted = replace(state, effect_unknown_ids=None, resumable_positions=None,
                      pending_positions=None, tool_effect_unknown_tally=None,
                      look_positions=None)
    assert state.effect_unknown_ids == frozenset(
        c.call_id for c in counted.calls if c.effect_unknown)
    assert list(state.resumable_calls()) == list(counted.resumable_calls())
    assert list(state.pending_calls()) == list(counted.pending_calls())
    assert state.tool_effect_unknown_count == counted.tool_effect_unknown_count
    assert list(state.positions_to_look()) == list(counted.positions_to_look())


def test_time_machine_uses_the_live_follower_and_sees_later_appends(tmp_path: Path) -> None:
    events = [_ev(1, "call.requested", payload={"idempotency_key": "k"}),
              _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
              _ev(3, "attempt.started", attempt="a1", payload={"request_sha256": SHA})]
    case = _write(tmp_path, events, [], unique_ids=True)
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        handed_out = follower.snapshot().state.call("c1")
        assert handed_out is not None and handed_out.stage.value == "effect_unknown"
        more = [_ev(4, "attempt.observed", attempt="a1",
                    payload={"transport": {"status": 200}, "response_sha256": SHA}),
                _ev(5, "call.completed", payload={"status": "succeeded"})]
        conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        append_rows(conn, [dict(e, payload=json.loads(e["payload"])) for e in more])
        conn.close()
        snap = follower.poll()
        assert snap is not None and snap.state.call("c1").stage.value == "completed"  # type: ignore[union-attr]
        # the verdict handed out before is a snapshot: neither its stage nor its reason moved
        assert handed_out.stage.value == "effect_unknown"
        assert handed_out.reason.startswith("attempt a1 started at seq 3; nothing recorded")
        machine = TimeMachine(case, lambda: follower)
        for n in range(0, 6):
            got = machine.to(n)
            assert got is not None and got.state.as_json("x") == _oracle(case, n) | {"case": "x"}
        machine.close()
    finally:
        follower.close()


def test_a_settled_call_named_by_a_later_anomaly_is_not_flagged_before_it(
        tmp_path: Path) -> None:
    """A call whose own events all lie at or before n keeps its live verdict, except the
    anomaly flag: an event after n that names the call (here a task event reusing an
    event id) flags it live, and must not flag it as of n (resume refuses flagged
    calls)."""
    events = [_ev(1, "call.requested", payload={"idempotency_key": "k"}),
              _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
              _ev(3, "task.created", call=None),
              _ev(4, "task.created", call="c1", event_id="e1")]  # e1 again, naming c1
    case = _write(tmp_path, events, [], unique_ids=False)
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        live = follower.snapshot().state.call("c1")
        assert live is not None and live.anomalous and not live.resumable
        for n, flagged in ((2, False), (3, False), (4, True)):
            as_of = follower.as_of(n).state.call("c1")
            assert as_of is not None and as_of.anomalous is flagged, n
            assert as_of.resumable is not flagged, n
    finally:
        follower.close()


def test_a_tool_operation_in_flight_at_n_counts_as_of_n(tmp_path: Path) -> None:
    """The tool tally as of a seq where an admitted operation has no outcome yet (the
    call in flight) counts it; live, completed, it is gone."""
    plan = [{"tool_call_id": "tc1", "name": "publish", "arguments_sha256": SHA}]
    op = "ns/th/t/tc1"
    events = [
        _ev(1, "call.requested", payload={
            "idempotency_key": "k", "turn": {"namespace": "ns", "thread": "th", "turn": "t"}}),
        _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
        _ev(3, "attempt.started", attempt="a1", payload={"request_sha256": SHA}),
        _ev(4, "attempt.observed", attempt="a1",
            payload={"transport": {"status": 200}, "tool_plan": plan}),
        _ev(5, "call.completed", payload={"status": "succeeded", "adopted_attempt_id": "a1"}),
        _ev(6, "tool.admitted", attempt="a1", payload={
            "operation_key": op, "tool_call_id": "tc1", "tool": "publish",
            "arguments_sha256": SHA}),
        _ev(7, "tool.completed", attempt="a1",
            payload={"operation_key": op, "outcome": "succeeded", "receipt": "{}"}),
    ]
    case = _write(tmp_path, events, [], unique_ids=True)
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        assert follower.snapshot().state.tool_effect_unknown_count == 0
        tallies = []
        for n in range(1, 8):
            state = follower.as_of(n).state
            assert_kept_sets_as_counted(state)
            tallies.append(state.tool_effect_unknown_count)
        assert tallies == [0, 0, 0, 0, 0, 1, 0]
    finally:
        follower.close()


def _started_call(root: Path, receipt: str, received_at: str, *, observed: bool = False
                  ) -> Path:
    """A case of one call whose attempt a1 started at 12:05 (and was observed at 12:06),
    and the provider's receipt `receipt` for it."""
    events = [_ev(1, "call.requested", payload={"idempotency_key": "k"}),
              _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
              _ev(3, "attempt.started", attempt="a1", payload={"request_sha256": SHA}, minute=5)]
    if observed:
        events.append(_ev(4, "attempt.observed", attempt="a1",
                          payload={"response_sha256": SHA}, minute=6))
    receipts = [{"receipt_id": receipt, "received_at": received_at,
                 "idempotency_key": "k", "body_sha256": SHA, "bytes": 1}]
    return _write(root, events, receipts, unique_ids=True)


def test_the_snapshot_as_of_shows_the_receipt_log_as_of_that_seq(tmp_path: Path) -> None:
    case = _started_call(tmp_path, "r-late", "2026-09-13T12:06:00Z")
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        early, last = follower.as_of(2), follower.as_of(3)
        assert early.receipts.receipts == () and early.state.receipts.count == 0
        assert [r.receipt_id for r in last.receipts.receipts] == ["r-late"]
    finally:
        follower.close()


def _scanned(state: Any) -> tuple[list[str], int]:
    """The resumable calls and the tool operations of unknown effect, by a pass over
    every call (what the projector keeps as verdicts change)."""
    tools = sum(t.effect_unknown_count for c in state.calls if (t := c.tools) is not None)
    return [c.call_id for c in state.calls if c.resumable], tools


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.integers(0, 30), st.booleans())
def test_what_the_projector_keeps_while_following_equals_projecting_anew(
        ledger: Any, split: int, unique_ids: bool) -> None:
    """Started from the fast path (or event by event) on a prefix, then following
    appends one commit at a time: after each, the snapshot's resumable calls and tool
    count (kept by the projector, read by the console on every snapshot) equal what a
    pass over every call finds, and its document (tasks judged from their kept tallies)
    equals the oracle's."""
    events, receipts = ledger
    head, tail = events[:split], events[split:]
    with tempfile.TemporaryDirectory() as tmp:
        case = _write(Path(tmp), head, receipts, unique_ids)
        follower = CaseFollower(case)
        try:
            with patch.object(model, "FAST_START_MIN", 0):
                follower.catch_up()
            conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
            try:
                for ev in [None, *tail]:
                    if ev is not None:
                        _insert(conn, [ev], unique_ids)
                        follower.poll()
                    state = follower.snapshot().state
                    assert state.resumable_positions is not None
                    assert state.tool_effect_unknown_tally is not None
                    kept = ([c.call_id for c in state.resumable_calls()],
                            state.tool_effect_unknown_count)
                    assert kept == _scanned(state), ev
                    # the case's worst next operation, read from the calls with something
                    # to do, equals the verdict from a pass over every call
                    unkept = replace(state, pending_positions=None)
                    assert [c.call_id for c in state.pending_calls()] == [
                        c.call_id for c in unkept.pending_calls()]
                    assert case_verdict(state, 0) == case_verdict(unkept, 0), ev
                    # and the document, the tasks' verdicts (kept per task) included
                    assert state.as_json(str(case)) == _oracle(case, None), ev
            finally:
                conn.close()
        finally:
            follower.close()


def _insert(conn: sqlite3.Connection, events: list[dict[str, Any]], unique_ids: bool) -> None:
    for ev in events:
        conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", (
            ev["seq"], ev["event_id"] if not unique_ids else f"u{ev['seq']}",
            ev["recorded_at"], ev["kind"], ev["task_id"], ev["call_id"], ev["attempt_id"],
            ev["compilation_id"], ev["payload"]))


def _spy() -> tuple[list[bool], Any]:
    """LiveReceiptCheck.as_of, recording what it answered (False: the cut was not its
    log's, and the check was made anew)."""
    answers: list[bool] = []
    original = LiveReceiptCheck.as_of

    def as_of(check: LiveReceiptCheck, log: Any, n: int) -> Any:
        got = original(check, log, n)
        answers.append(got is not None)
        return got

    return answers, as_of


def _receipts_as_projected(case: Path, n: int) -> tuple[Any, list[str | None]]:
    with LedgerReader(case) as reader:
        events = reader.events()
    check = project(events, read_receipts(case), n).receipts
    return check.as_json(), list(check.covered_by.attempts)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.integers(0, 30), st.booleans())
def test_time_travel_reads_receipts_from_the_live_check_as_projecting_does(
        ledger: Any, split: int, unique_ids: bool) -> None:
    """As of every seq, the receipt check time travel derives from the live one (each
    receipt's cover and when it started) equals the prefix's projection: the attempt
    covering each receipt, the uncovered, the duplicates. Also after appends folded in
    since the last live snapshot (attempts started that the live check has not seen)."""
    events, receipts = ledger
    head, tail = events[:split], events[split:]
    answers, spy = _spy()
    with tempfile.TemporaryDirectory() as tmp, patch.object(LiveReceiptCheck, "as_of", spy):
        case = _write(Path(tmp), head, receipts, unique_ids)
        follower = CaseFollower(case)
        try:
            with patch.object(model, "FAST_START_MIN", 0):
                follower.catch_up()
            follower.snapshot()  # the live check, as of the head
            conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
            try:
                _insert(conn, tail, unique_ids)
            finally:
                conn.close()
            follower.catch_up()  # folded in, no snapshot since
            last = events[-1]["seq"] if events else 0
            for n in range(0, last + 1):
                got = follower.as_of(n).state.receipts
                assert (got.as_json(), list(got.covered_by.attempts)) == \
                    _receipts_as_projected(case, n), n
        finally:
            follower.close()
    # taken whenever it was asked (a hostile ledger whose keys moved is checked anew)
    assert all(answers)


def test_time_travel_with_receipts_out_of_order_takes_the_live_check(tmp_path: Path) -> None:
    """A log whose receipts arrived out of time order is cut as of a seq into a subset,
    not a prefix: the live check still answers, receipt by receipt, as projecting does,
    with the attempts started since the live snapshot."""
    events = [_ev(1, "call.requested", payload={"idempotency_key": "k"}),
              _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
              _ev(3, "attempt.started", attempt="a1", payload={"request_sha256": SHA},
                  minute=5),
              _ev(4, "call.requested", call="c2", payload={"idempotency_key": "k2"}, minute=7),
              _ev(5, "call.manifest", call="c2",
                  payload={"idempotency_key": "k2", "request_sha256": SHA}, minute=8),
              _ev(6, "attempt.started", call="c2", attempt="b1",
                  payload={"request_sha256": SHA}, minute=9)]
    receipts = [
        {"receipt_id": "r-late", "received_at": "2026-09-13T12:10:00Z",
         "idempotency_key": "k2", "body_sha256": SHA, "bytes": 1},
        {"receipt_id": "r-a1", "received_at": "2026-09-13T12:05:30Z",
         "idempotency_key": "k", "body_sha256": SHA, "bytes": 1},
        {"receipt_id": "r-a1-again", "received_at": "2026-09-13T12:06:00Z",
         "idempotency_key": "k", "body_sha256": SHA, "bytes": 1},
        {"receipt_id": "r-none", "received_at": "2026-09-13T12:05:45Z",
         "idempotency_key": "nobody", "body_sha256": SHA, "bytes": 1},
    ]
    case = _write(tmp_path, events[:3], receipts, unique_ids=True)
    answers, spy = _spy()
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        follower.snapshot()  # the live check: b1 has not started
        conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        try:
            _insert(conn, events[3:], unique_ids=True)
        finally:
            conn.close()
        follower.catch_up()  # b1 started since the live snapshot
        with patch.object(LiveReceiptCheck, "as_of", spy):
            at_4 = follower.as_of(4)
            at_6 = follower.as_of(6)
        assert answers == [True, True]
        # as of 4 (c2 requested at 12:07): the three receipts before it, a1's twice
        assert [r.receipt_id for r in at_4.receipts.receipts] == ["r-a1", "r-a1-again", "r-none"]
        check = at_4.state.receipts
        assert list(check.covered_by.attempts) == ["a1", "a1", None]
        assert check.uncovered == ("r-none",)
        assert check.duplicates == (("r-a1", "r-a1-again"),)
        assert (check.as_json(), list(check.covered_by.attempts)) == \
            _receipts_as_projected(case, 4)
        # as of the last seq: every receipt, r-late covered by b1
        assert list(at_6.state.receipts.covered_by.attempts) == ["b1", "a1", "a1", None]
        assert (at_6.state.receipts.as_json(), list(at_6.state.receipts.covered_by.attempts)) \
            == _receipts_as_projected(case, 6)
    finally:
        follower.close()


def test_time_travel_past_the_last_receipt_reads_the_live_index(tmp_path: Path) -> None:
    """Nothing cut (every receipt arrived before the seq's next event): the check as of
    the seq names receipts from the live check's own index, not a second table of every
    receipt's key (+7-10 MB at the 1M-event ledger's end); it finds what a fresh index of
    the log finds."""
    case = _started_call(tmp_path, "r-a1", "2026-09-13T12:05:30Z", observed=True)
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        live = follower.snapshot().state.receipts.index
        past = follower.as_of(3).state.receipts.index  # (r-a1 came before seq 4: all kept)
        before = follower.as_of(2).state.receipts.index  # (r-a1 came after seq 3: cut)
        assert past is live
        assert before is not live
        fresh = index_for(read_receipts(case))
        assert dict(past.by_pair) == dict(fresh.by_pair) == {("k", SHA): (
            ("r-a1", "2026-09-13T12:05:30Z"),)}
        assert past.complete_up_to == fresh.complete_up_to
        assert dict(before.by_pair) == {}
    finally:
        follower.close()


def test_an_attempt_started_at_seq_zero_covers_as_of_zero(tmp_path: Path) -> None:
    """Seqs of 0 and below (a hostile ledger, flagged) still order the evidence: a receipt
    whose attempt started at seq 0 is covered as of 0, from the live check as anew."""
    events = [_ev(-2, "call.requested", payload={"idempotency_key": "k"}),
              _ev(-1, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
              _ev(0, "attempt.started", attempt="a1", payload={"request_sha256": SHA}),
              _ev(1, "attempt.observed", attempt="a1", payload={"transport": {"status": 200}},
                  minute=9)]
    receipts = [{"receipt_id": "r-a1", "received_at": "2026-09-13T12:05:00Z",
                 "idempotency_key": "k", "body_sha256": SHA, "bytes": 1}]
    case = _write(tmp_path, events, receipts, unique_ids=True)
    answers, spy = _spy()
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        follower.snapshot()
        with patch.object(LiveReceiptCheck, "as_of", spy):
            at_0 = follower.as_of(0).state.receipts
        assert answers == [True]
        assert list(at_0.covered_by.attempts) == ["a1"] and at_0.uncovered == ()
        assert (at_0.as_json(), list(at_0.covered_by.attempts)) == \
            _receipts_as_projected(case, 0)
    finally:
        follower.close()


def test_a_task_in_flight_as_of_a_seq_has_the_facts_written_by_then(tmp_path: Path) -> None:
    """Time travel takes a task's own facts as of n from its live evidence where each was
    written once (no read of its events), and reads its events where one was written
    twice: either way the title, acceptances and seqs are those of projecting the prefix."""
    events = [_ev(1, "task.created", call=None, payload={"title": "first"}),
              _ev(2, "call.requested", payload={"idempotency_key": "k"}),
              _ev(3, "task.claimed", call=None, payload={"worker": "w1"}),
              _ev(4, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
              _ev(5, "task.created", call="c9", payload={"title": "second"}),
              _ev(6, "task.accepted", call=None, payload={"acceptance_id": "a1"}),
              _ev(7, "call.requested", call="c2", payload={"idempotency_key": "k2"})]
    for rewritten in (True, False):
        root = tmp_path / str(rewritten)
        root.mkdir()
        rows = events if rewritten else [events[1], *events[2:4], events[4], *events[5:]]
        case = _write(root, rows, [], unique_ids=True)
        follower = CaseFollower(case)
        try:
            follower.catch_up()
            follower.snapshot()
            for n in range(1, 8):
                got = follower.as_of(n).state.tasks
                assert got == _oracle_state(case, n).tasks, (rewritten, n)
            titles = [t.title for n in (2, 4, 5) for t in follower.as_of(n).state.tasks]
            assert titles == (["first", "first", "second"] if rewritten
                              else [None, None, "second"])
        finally:
            follower.close()
