"""A gathered start whose later half of the calls a forked helper puts into columns
(services/gather.py `projector_from` with a plan, services/watched_fork.py): at every
seq of random and hostile ledgers the projection equals the oracle and the projection
gathered in one process, follows on event by event the same, and a helper that fails,
dies, hangs or gathers a receipt key the earlier half covers too leaves its half to
the parent, with the same result."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledgerfactory import write_ledger

import codeai_tui.services.gather as gather_module
from codeai_tui.console.model import CaseFollower
from codeai_tui.lab.bench import write_ledger as write_bench_ledger
from codeai_tui.ledger import LedgerReader
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.services.forked import HelperPlan, helper_plan
from codeai_tui.services.gather import projector_from
from codeai_tui.services.projection import gather, project_case
from codeai_tui.services.time_travel import CallHistory
from codeai_tui.services.watched_fork import STALL_S
from codeai_tui.workstate import Projector, WorkState, project
from tests.core.test_call_columns import _calls_facts, lifecycles
from tests.core.test_fast_path import SHA, _write, ledgers
from tests.core.test_helper_process import calls_of_two_tasks, interleaved_in_fives
from tests.core.test_time_travel import assert_kept_sets_as_counted
from tests.support import examples

EVERY_CALL = HelperPlan(min_calls=2, grace=10.0)


def _facts(state: WorkState) -> tuple[object, ...]:
    return state.as_json("x"), _calls_facts(state)


@contextmanager
def _opened(case: Path) -> Iterator[tuple[EvidenceSQL, CallHistory]]:
    sql, history = EvidenceSQL(case), CallHistory(case / "ledger.sqlite3")
    try:
        yield sql, history
    finally:
        sql.close()
        history.close()


def _started(sql: EvidenceSQL, history: CallHistory, upto: int | None,
             plan: HelperPlan | None) -> Projector:
    got = gather(sql, upto, read_receipts(sql.path.parent))
    assert not isinstance(got, str), got
    return projector_from(got, history, plan)


def _helper_start_equals_the_oracle(case: Path) -> None:
    """At every cut: gathered with a helper = gathered alone = the oracle; then the rest
    followed event by event equals the oracle, and every call is found by id."""
    log = read_receipts(case)
    with LedgerReader(case) as reader:
        events = reader.events()
    with _opened(case) as (sql, history):
        for cut in range(1, len(events) + 1):
            helped = _started(sql, history, events[cut - 1].seq, EVERY_CALL)
            alone = _started(sql, history, events[cut - 1].seq, None)
            first = helped.snapshot(log)
            oracle = project(events[:cut], log)
            assert _facts(first) == _facts(alone.snapshot(log)) == _facts(oracle), cut
            assert first.effect_unknown_set() == oracle.effect_unknown_set(), cut
            assert_kept_sets_as_counted(first)
            for pos, call in enumerate(first.calls):
                assert helped.position_of(call.call_id) == pos, cut
            held = _facts(first)
            helped.feed(events[cut:])
            assert _facts(helped.snapshot(log)) == _facts(project(events, log)), cut
            assert _facts(first) == held, cut  # the snapshot handed out never moved


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(lifecycles(), ledgers()))
def test_a_helper_gathered_start_equals_the_oracle_at_every_seq(ledger: Any) -> None:
    """Lifecycles (most calls settle) and random ledgers (hostile shapes), with unique
    event ids as a gathered start needs (few examples: each cut forks a helper; the
    columns' own properties, in test_call_columns.py, draw more without forking)."""
    events, receipts = ledger
    with tempfile.TemporaryDirectory() as tmp:
        _helper_start_equals_the_oracle(_write(Path(tmp), events, receipts, True))


def _events(calls: int, shared: dict[int, tuple[str, str]] | None = None
            ) -> list[dict[str, Any]]:
    """Calls of two tasks, five at a time with their events interleaved
    (`calls_of_two_tasks`: unresolved calls in both halves). `shared`: call number ->
    (its key, its request hash) instead of its own."""
    def payload(i: int, call: str) -> dict[str, Any]:
        key, sha = (shared or {}).get(i, (f"k{i}", "ab" * 32))
        return {"idempotency_key": key, "status": "succeeded", "request_sha256": sha,
                "outcome": "success", "transport": {"status": 200}, "response_sha256": sha,
                "adopted_attempt_id": f"{call}-a1"}
    return interleaved_in_fives(calls_of_two_tasks(calls, payload))


def _case(root: Path, calls: int = 40, shared: dict[int, tuple[str, str]] | None = None,
          receipts: list[tuple[str, str]] = ()) -> Path:  # type: ignore[assignment]
    logged = [{"receipt_id": f"r{i}", "received_at": "2026-09-13T12:00:00Z",
               "idempotency_key": f"k{i}", "body_sha256": "ab" * 32, "bytes": 1}
              for i in range(0, calls, 3)]
    logged += [{"receipt_id": f"s{n}", "received_at": "2026-09-13T12:00:00Z",
                "idempotency_key": key, "body_sha256": sha, "bytes": 1}
               for n, (key, sha) in enumerate(receipts)]
    return write_ledger(root / "case", _events(calls, shared), receipts=logged).parent


@contextmanager
def _folds_seen(monkeypatch: pytest.MonkeyPatch, act: Callable[[], object] | None = None
                ) -> Iterator[Path]:
    """Every call event folded while gathering, as "pid call_id" lines in a file the
    helper writes too; `act` runs in place of a fold in any other process than this."""
    parent = os.getpid()
    fold = gather_module.fold_call_event
    with tempfile.TemporaryDirectory() as tmp, monkeypatch.context() as patch:
        seen = Path(tmp) / "folds"

        def watched(call: Any, *args: Any) -> None:
            if act is not None and os.getpid() != parent:
                act()
            with seen.open("a") as out:
                out.write(f"{os.getpid()} {call.call_id}\n")
            fold(call, *args)
        patch.setattr(gather_module, "fold_call_event", watched)
        yield seen


def _by_process(seen: Path) -> dict[int, set[str]]:
    folded: dict[int, set[str]] = {}
    for line in seen.read_text().splitlines():
        pid, call = line.split()
        folded.setdefault(int(pid), set()).add(call)
    return folded


def _whole(case: Path) -> tuple[object, ...]:
    with LedgerReader(case) as reader:
        return _facts(project(reader.events(), read_receipts(case)))


def test_the_helper_gathers_the_later_half_in_another_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    case = _case(tmp_path)
    with _opened(case) as (sql, history), _folds_seen(monkeypatch) as seen:
        projector = _started(sql, history, None, EVERY_CALL)
        folded = _by_process(seen)
    assert folded.pop(os.getpid()) == {f"c{i:03d}" for i in range(20)}
    assert list(folded.values()) == [{f"c{i:03d}" for i in range(20, 40)}]  # one helper
    state = projector.snapshot(read_receipts(case))
    assert _facts(state) == _whole(case)
    assert projector.settled_count == 35  # both halves' completed calls, in columns
    assert state.effect_unknown_set() == {"c003", "c036", "c037", "c038", "c039"}


def _fail() -> None:
    raise RuntimeError("the helper fails")


@pytest.mark.parametrize("act", [_fail, lambda: os.kill(os.getpid(), signal.SIGKILL),
                                 lambda: time.sleep(60)], ids=["fails", "dies", "hangs"])
def test_a_helper_that_fails_dies_or_hangs_leaves_its_half_to_the_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, act: Callable[[], object]) -> None:
    case = _case(tmp_path)
    started = time.monotonic()
    with _opened(case) as (sql, history), _folds_seen(monkeypatch, act) as seen:
        projector = _started(sql, history, None, EVERY_CALL)
        folded = _by_process(seen)
    assert time.monotonic() - started < 8  # a hung helper is given up within seconds
    assert folded[os.getpid()] == {f"c{i:03d}" for i in range(40)}
    assert _facts(projector.snapshot(read_receipts(case))) == _whole(case)


def test_a_key_both_halves_cover_leaves_the_later_half_to_the_parent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls 5 and 30 share a key under two request hashes: which attempt covers each
    (key, hash) depends on both halves, so the helper's half is not taken as it is."""
    other = "cd" * 32
    shared = {5: ("kshared", "ab" * 32), 30: ("kshared", other)}
    case = _case(tmp_path, shared=shared, receipts=[("kshared", "ab" * 32),
                                                     ("kshared", other)])
    with _opened(case) as (sql, history), _folds_seen(monkeypatch) as seen:
        projector = _started(sql, history, None, EVERY_CALL)
        folded = _by_process(seen)
    assert folded.pop(os.getpid()) == {f"c{i:03d}" for i in range(40)}
    assert list(folded.values()) == [{f"c{i:03d}" for i in range(20, 40)}]  # its work unused
    state = projector.snapshot(read_receipts(case))
    assert _facts(state) == _whole(case)
    # both receipts of the shared key are covered (c005's and c030's attempts); only
    # call 30's own key, which it does not use, has a receipt nothing covers
    assert state.receipts.as_json()["uncovered"] == ["r30"]


def _children_while(act: Callable[[], object]) -> set[int]:
    """The pids of this process's children seen while `act` ran (Linux lists each
    thread's children under /proc)."""
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            for listing in Path("/proc/self/task").glob("*/children"):
                with contextlib.suppress(OSError):
                    seen.update(int(pid) for pid in listing.read_text().split())
            time.sleep(0.002)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        act()
    finally:
        done.set()
        watcher.join()
    return seen


@pytest.mark.skipif(helper_plan() is None, reason="needs fork and two cores")
def test_a_live_followers_big_start_gathers_half_in_a_helper_as_the_events_say(
        tmp_path: Path) -> None:
    """From 10,000 calls on, where two cores are ours, the console's follower (a thread
    of a process with other threads) folds the later half of the calls in a helper: its
    snapshot is the projection of the events one by one."""
    case = tmp_path / "big"
    write_bench_ledger(case, 80_000, writers=20, tasks=40)
    follower = CaseFollower(case)
    try:
        children = _children_while(follower.catch_up)
        state = follower.snapshot().state
    finally:
        follower.close()
    assert follower.gathered == "sql" and len(children) == 1
    assert len(state.calls) > 10_000
    assert state.as_json("x") == project_case(case, fast=False).as_json("x")


def test_a_stop_ends_the_wait_for_a_hung_helper_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A console told to stop (it quits) does not wait for its helper to be taken for
    hung: the wait ends at the first look, sooner than a stall is noticed."""
    case = _case(tmp_path)
    with _opened(case) as (sql, history), _folds_seen(monkeypatch, lambda: time.sleep(60)):
        got = gather(sql, None, read_receipts(case))
        assert not isinstance(got, str), got
        started = time.monotonic()
        projector = projector_from(got, history, EVERY_CALL, lambda: True)
        assert time.monotonic() - started < STALL_S
    assert _facts(projector.snapshot(read_receipts(case))) == _whole(case)


def _life(call: str) -> list[tuple[str, str, str | None, dict[str, Any]]]:
    attempt = f"{call}-a"
    return [("call.requested", call, None, {"idempotency_key": "K"}),
            ("call.manifest", call, None, {"idempotency_key": "K", "request_sha256": SHA}),
            ("attempt.started", call, attempt, {"request_sha256": SHA}),
            ("attempt.observed", call, attempt,
             {"transport": {"status": 200}, "response_sha256": SHA}),
            ("attempt.interpreted", call, attempt, {"outcome": "success"}),
            ("attempt.completed", call, attempt, {"status": "succeeded"}),
            ("call.completed", call, None, {"status": "succeeded", "adopted_attempt_id": attempt})]


@pytest.mark.parametrize("plan", [None, EVERY_CALL], ids=["alone", "helped"])
def test_the_key_of_two_settled_calls_is_covered_by_the_attempt_that_started_first(
        tmp_path: Path, plan: HelperPlan | None) -> None:
    """Two calls with one key and request hash, both settled: c0 began first but c1's
    attempt started first, so c1's covers the key's receipt, in columns as in the
    oracle (the columns kept both covers and answered with the first settled)."""
    first, second = _life("c0"), _life("c1")
    order = [*first[:2], *second[:3], *first[2:], *second[3:]]
    rows = [{"seq": seq, "event_id": f"e{seq}", "recorded_at": f"2026-09-13T12:00:{seq:02d}Z",
             "kind": kind, "task_id": "t1", "call_id": call, "attempt_id": attempt,
             "compilation_id": None, "payload": json.dumps(payload)}
            for seq, (kind, call, attempt, payload) in enumerate(order, 1)]
    receipts = [{"receipt_id": "r1", "received_at": "2026-09-13T12:00:59Z",
                 "idempotency_key": "K", "body_sha256": SHA, "bytes": 1}]
    case = _write(tmp_path, rows, receipts, True)
    log = read_receipts(case)
    with _opened(case) as (sql, history):
        projector = _started(sql, history, None, plan)
        assert projector.settled_count == 2
        state = projector.snapshot(log)
    assert list(state.receipts.covered_by.attempts) == ["c1-a"]
    assert _facts(state) == _whole(case)
