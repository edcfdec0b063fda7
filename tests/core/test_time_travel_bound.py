"""Time travel goes through the machine a console is handed with its case, bound to that
case's live follower: never a follower found by path in a process-wide registry."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

from codeai_tui.console.model import CaseFollower, TimeMachine
from tests.core.test_fast_path import SHA, _ev, _oracle, _write

# case A: one call that ends completed; case B: two calls, the second left in flight
EVENTS_A = [_ev(1, "call.requested", payload={"idempotency_key": "k"}),
            _ev(2, "call.manifest", payload={"idempotency_key": "k", "request_sha256": SHA}),
            _ev(3, "attempt.started", attempt="a1", payload={"request_sha256": SHA}),
            _ev(4, "attempt.observed", attempt="a1",
                payload={"transport": {"status": 200}, "response_sha256": SHA}),
            _ev(5, "call.completed", payload={"status": "succeeded"})]
EVENTS_B = [_ev(1, "call.requested", call="b1", payload={"idempotency_key": "kb1"}),
            _ev(2, "call.requested", call="b2", payload={"idempotency_key": "kb2"}),
            _ev(3, "call.manifest", call="b2",
                payload={"idempotency_key": "kb2", "request_sha256": SHA}),
            _ev(4, "attempt.started", call="b2", attempt="x1",
                payload={"request_sha256": SHA})]


def test_two_cases_followed_in_one_process_travel_independently(tmp_path: Path) -> None:
    """Two live followers of two cases, each with the machine bound to it: each travels
    in its own case, from its own live projection (no machine projects anew), even
    after a third follower of case A (a bundle summary's, read once and dropped) was
    opened and closed in the same process."""
    case_a = _write(tmp_path / "a", EVENTS_A, [], unique_ids=True)
    case_b = _write(tmp_path / "b", EVENTS_B, [], unique_ids=True)
    live_a, live_b = CaseFollower(case_a), CaseFollower(case_b)
    try:
        live_a.catch_up()
        live_b.catch_up()
        machine_a = TimeMachine(case_a, lambda: live_a)
        machine_b = TimeMachine(case_b, lambda: live_b)
        summary = CaseFollower(case_a, keep=False)
        summary.catch_up()
        summary.close()
        with patch.object(live_a, "as_of", wraps=live_a.as_of) as from_a, \
                patch.object(live_b, "as_of", wraps=live_b.as_of) as from_b:
            for n in (4, 1, 3):
                got_b = machine_b.to(n)
                got_a = machine_a.to(n + 1)
                assert got_a is not None and got_b is not None
                assert got_a.state.as_json("x") == _oracle(case_a, n + 1) | {"case": "x"}
                assert got_b.state.as_json("x") == _oracle(case_b, n) | {"case": "x"}
                assert got_a.case_dir == case_a and got_b.case_dir == case_b
            # every travel was answered by the live follower of its own case
            assert [c.args for c in from_a.call_args_list] == [(5,), (2,), (4,)]
            assert [c.args for c in from_b.call_args_list] == [(4,), (1,), (3,)]
    finally:
        live_a.close()
        live_b.close()


def test_a_machine_travels_in_the_file_its_follower_reads_not_the_newest_at_the_path(
        tmp_path: Path) -> None:
    """A follower keeps reading the file it opened even when another file is put at the
    case's path; a second follower of the same path reads the new file. Each machine
    travels in its own follower's file (looked up by path, the newest follower would
    answer for both)."""
    case = _write(tmp_path / "old", EVENTS_A, [], unique_ids=True)
    first = CaseFollower(case)
    try:
        first.catch_up()
        old_answer = first.as_of(5).state.as_json("x")
        replacement = _write(tmp_path / "new", EVENTS_B, [], unique_ids=True)
        (case / "ledger.sqlite3").unlink()
        (replacement / "ledger.sqlite3").rename(case / "ledger.sqlite3")
        second = CaseFollower(case)
        try:
            second.catch_up()
            assert second.identity != first.identity
            old = TimeMachine(case, lambda: first).to(4)
            new = TimeMachine(case, lambda: second).to(4)
            assert old is not None and new is not None
            assert old.state.as_json("x") != new.state.as_json("x")
            assert [c.call_id for c in old.state.calls] == ["c1"]
            assert [c.call_id for c in new.state.calls] == ["b1", "b2"]
            assert first.as_of(5).state.as_json("x") == old_answer
        finally:
            second.close()
    finally:
        first.close()


def test_a_machine_whose_follower_is_closed_projects_on_its_own(tmp_path: Path) -> None:
    """Between a trouble and the reopen the console's follower is closed: the machine
    (asked through its binding, which then answers None) still travels."""
    case = _write(tmp_path / "a", EVENTS_A, [], unique_ids=True)
    machine = TimeMachine(case, lambda: None)
    try:
        for n in (5, 2):
            got = machine.to(n)
            assert got is not None
            assert got.state.as_json("x") == _oracle(case, n) | {"case": "x"}
        fresh = machine.fresh()
        assert fresh.live is machine.live and fresh.case_dir == case
    finally:
        machine.close()
