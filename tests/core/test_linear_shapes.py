"""Projection cost follows the number of events, not their shape: one call holding many
attempts, or many receipts of one key, costs about what as many ordinary events cost,
and following such a call costs a poll what arrived, not the call's size.

Costs are CPU seconds in this process, each judged against a reference measured in the
same test (the machines are noisy; the bounds are generous). The ledgers are written with
plain sqlite3 (the bench's shape writers), never with the project's writer.
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from codeai_tui.console.model import CaseFollower
from codeai_tui.lab.bench import (
    Event,
    bulk_ledger,
    compilations_events,
    interleaved_rows,
    numbered,
    one_call_events,
)
from codeai_tui.read.inspection import write_json
from codeai_tui.services.projection import project_case
from tests.core.cases import followed_snapshot

ATTEMPTS = 6_000  # 18,001 events: the quadratic paths made this 5-40x an ordinary ledger
BOUND = 3.0  # times the ordinary ledger's cost (linear paths measure 0.9-1.5x)


def _cpu(run: Callable[[], object]) -> float:
    """The lower of two runs' CPU seconds (all this process's threads)."""
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def _inspect_json(case: Path) -> None:
    write_json(str(case), None, io.StringIO(), None)


def _event_path(case: Path) -> None:
    project_case(case, fast=False)


def _console_model(case: Path) -> None:
    followed_snapshot(case)


def _own_hashes(events: Iterator[Event]) -> Iterator[Event]:
    """Each attempt with a request hash of its own (its receipt then matches it alone)."""
    for kind, task, call, attempt, comp, payload in events:
        if kind == "attempt.started":
            payload = {**payload, "request_sha256": f"{payload['attempt_no']:064x}"}
        yield kind, task, call, attempt, comp, payload


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("shapes")
    count = bulk_ledger(root / "attempts", numbered(one_call_events(ATTEMPTS)))
    assert bulk_ledger(root / "ordinary", interleaved_rows(count)) == count
    bulk_ledger(root / "hashes", numbered(_own_hashes(one_call_events(ATTEMPTS))))
    shutil.copytree(root / "hashes", root / "receipts")
    (root / "receipts" / "provider").mkdir()
    (root / "receipts" / "provider" / "receipts.jsonl").write_text("".join(
        json.dumps({"receipt_id": f"r-{n}", "received_at": "2026-11-29T00:00:00.000Z",
                    "idempotency_key": "key-1", "body_sha256": f"{n:064x}",
                    "bytes": 100}) + "\n" for n in range(1, ATTEMPTS + 1)))
    return {"root": root, "attempts": root / "attempts", "ordinary": root / "ordinary",
            "hashes": root / "hashes", "receipts": root / "receipts"}


@pytest.mark.parametrize("path", [_inspect_json, _event_path, _console_model],
                         ids=["inspect --json", "event path", "console model"])
def test_one_call_with_many_attempts_costs_what_as_many_ordinary_events_cost(
        ledgers: dict[str, Path], path: Callable[[Path], None]) -> None:
    ordinary = _cpu(lambda: path(ledgers["ordinary"]))
    shaped = _cpu(lambda: path(ledgers["attempts"]))
    assert shaped < BOUND * ordinary, (
        f"{ATTEMPTS:,} attempts on one call: {shaped:.2f} s CPU, an ordinary ledger of as "
        f"many events {ordinary:.2f} s ({shaped / ordinary:.1f}x)")


def test_many_receipts_of_one_key_cost_about_what_their_lines_cost(
        ledgers: dict[str, Path]) -> None:
    """Every attempt of the call has a receipt of the call's key (each its own body
    hash): matching each attempt to its receipt must not pass over all of them."""
    without = _cpu(lambda: _inspect_json(ledgers["hashes"]))
    with_log = _cpu(lambda: _inspect_json(ledgers["receipts"]))
    assert with_log < BOUND * without, (
        f"{ATTEMPTS:,} receipts of one key: {with_log:.2f} s CPU, the same ledger without "
        f"its receipt log {without:.2f} s ({with_log / without:.1f}x)")


def _append_attempt(db: Path, n: int) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        seq = conn.execute("SELECT max(seq) FROM events").fetchone()[0] + 1
        conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", (
            seq, f"live-{seq}", "2026-11-30T00:00:00.000Z", "attempt.started", "task-0001",
            "call-0001", f"call-0001-live{n}", None,
            json.dumps({"attempt_no": ATTEMPTS + n, "request_sha256": "ab" * 32})))
    finally:
        conn.close()


def test_following_a_call_of_many_attempts_costs_a_poll_what_arrived(
        ledgers: dict[str, Path]) -> None:
    """A verdict handed out keeps its evidence (copy on write), and the next event for
    the call is folded without copying every attempt: a poll costs a small share of
    projecting an ordinary ledger of as many events (copying cost about a tenth)."""
    reference = _cpu(lambda: _inspect_json(ledgers["ordinary"]))
    case = ledgers["root"] / "followed"
    shutil.copytree(ledgers["attempts"], case)
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        first = follower.snapshot().call("call-0001")
        assert first is not None
        shown = json.dumps(first.as_json())
        polls = []
        for n in range(1, 21):
            _append_attempt(case / "ledger.sqlite3", n)
            start = time.process_time()
            snap = follower.poll()
            polls.append(time.process_time() - start)
            assert snap is not None
        last = snap.call("call-0001")
    finally:
        follower.close()
    assert last is not None and last.attempts == ATTEMPTS + 20
    assert json.dumps(first.as_json()) == shown  # the handed-out verdict did not move
    poll = statistics.median(polls)
    assert poll < reference / 30, (
        f"a poll with one new attempt of a call of {ATTEMPTS:,}: {poll * 1000:.1f} ms CPU; "
        f"projecting an ordinary ledger of as many events {reference:.2f} s")


def test_following_a_task_of_many_compilations_costs_a_poll_what_arrived(
        tmp_path: Path) -> None:
    """A new compilation of a task with 20,000: the task's verdict and the snapshot come
    from what is kept, not from a pass over every compilation (which cost a poll about a
    thirtieth of projecting the whole ledger; now about a four-hundredth)."""
    case = tmp_path / "compilations"
    bulk_ledger(case, numbered(compilations_events(20_000)))
    follower = CaseFollower(case)
    try:
        start = time.process_time()
        follower.catch_up()
        follower.snapshot()
        projecting = time.process_time() - start
        polls = []
        conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        try:
            for n in range(20):
                seq = conn.execute("SELECT max(seq) FROM events").fetchone()[0] + 1
                conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", (
                    seq, f"live-{seq}", "2026-11-30T00:00:00.000Z",
                    "context.compilation_requested", "task-0001", None, None, f"comp-live-{n}",
                    json.dumps({"offered": [], "required_ids": []})))
                start = time.process_time()
                snap = follower.poll()
                polls.append(time.process_time() - start)
                assert snap is not None
        finally:
            conn.close()
    finally:
        follower.close()
    assert len(snap.state.compilations) == 20_020
    (task,) = snap.state.tasks
    assert task.next_operation.value == "recompile" and task.subject_id == "comp-0000009"
    poll = statistics.median(polls)
    assert poll < projecting / 100, (
        f"a poll with one new compilation of a task of 20,000: {poll * 1000:.1f} ms CPU; "
        f"projecting the ledger {projecting:.2f} s")
