"""Settled calls kept in columns (workstate/columns.py) against the event-by-event oracle:
at every seq of random and hostile ledgers the projection that settles calls in columns
shows the same verdicts, next operations, counts, reasons and documents as projecting the
prefix anew, and a snapshot handed out never changes while it goes on."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeai_tui.ledger import LedgerReader
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.services.gather import projector_from
from codeai_tui.services.projection import gather
from codeai_tui.services.time_travel import CallHistory, state_as_of
from codeai_tui.workstate import Projector, WorkState, project
from codeai_tui.workstate.calls_view import CallsView
from codeai_tui.workstate.receipts import index_for
from tests.core.test_fast_path import SHA, _write, ledgers
from tests.core.test_time_travel import assert_kept_sets_as_counted
from tests.support import examples, held_by

_LIFE = [("call.requested", None, {"idempotency_key": "K"}),
         ("call.manifest", None, {"idempotency_key": "K", "request_sha256": SHA}),
         ("attempt.started", "A", {"request_sha256": SHA}),
         ("attempt.observed", "A", {"transport": {"status": 200}, "response_sha256": SHA}),
         ("attempt.interpreted", "A", {"outcome": "success"}),
         ("attempt.completed", "A", {"status": "succeeded"}),
         ("call.completed", None, {"status": "succeeded", "adopted_attempt_id": "A"})]
# a first attempt that failed and was retried (the call then goes on with _LIFE's "A"):
# the columns keep the first as the key's cover, the earliest started with it; its
# request hash the same as the second's, or another
_RETRIED = [("attempt.started", "A1", {"request_sha256": "H"}),
            ("attempt.observed", "A1", {"transport": {"status": 429}, "response_sha256": SHA}),
            ("attempt.interpreted", "A1", {"outcome": "retryable_error"}),
            ("attempt.retry_decided", "A1", {"decision": "retry", "reason": "429"}),
            ("attempt.completed", "A1", {"status": "failed"})]
# what a hostile or odd ledger adds after a call completed: each names the call again
_LATE = [("attempt.started", "A2", {"request_sha256": SHA}),
         ("call.completed", None, {"status": "failed"}),
         ("call.resumed", None, {"resumed_as": "other"}),
         ("attempt.observed", "A", "not json"),
         ("call.requested", None, {"idempotency_key": "moved"})]


@st.composite
def lifecycles(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Up to five calls over two tasks, most run to completion, some cut short, some
    named again after they completed (events, a duplicate event id, broken payloads),
    their events interleaved; and a few receipts, some of a body no call asked for."""
    scripts: list[list[tuple[str, str, str | None, Any]]] = []
    for c in range(draw(st.integers(1, 5))):
        call = f"c{c}"
        # a key apart from the call id or equal to it; attempts named after the call (as
        # the runtime names them) or not: the columns keep each form its own way
        key = draw(st.sampled_from([f"k{c}", call]))
        att_of = draw(st.sampled_from([call, f"x{c}"]))
        life = _LIFE[:draw(st.sampled_from([7, 7, 7, 3, 5]))]
        if len(life) > 2 and draw(st.booleans()):
            first_sha = draw(st.sampled_from([SHA, "b" * 64]))
            life = [*life[:2], *[(kind, a, {k: first_sha if v == "H" else v
                                            for k, v in p.items()})
                                 for kind, a, p in _RETRIED], *life[2:]]
        script = [(kind, call, f"{att_of}-{a}" if a else None,
                   {k: (key if v == "K" else f"{att_of}-A" if v == "A" else v)
                    for k, v in p.items()}) for kind, a, p in life]
        for kind, a, p in draw(st.lists(st.sampled_from(_LATE), max_size=2)):
            script.append((kind, call, f"{att_of}-{a}" if a else None, p))
        scripts.append(script)
    events: list[dict[str, Any]] = []
    seq = 0
    while scripts:
        i = draw(st.integers(0, len(scripts) - 1))
        kind, call, att, payload = scripts[i].pop(0)
        if not scripts[i]:
            scripts.pop(i)
        seq += 1
        events.append({
            "seq": seq, "event_id": draw(st.sampled_from([f"e{seq}"] * 9 + ["dup"])),
            "recorded_at": f"2026-09-13T12:00:{seq % 60:02d}Z", "kind": kind,
            "task_id": f"t{int(call[1:]) % 2}", "call_id": call, "attempt_id": att,
            "compilation_id": None,
            "payload": payload if isinstance(payload, str) else json.dumps(payload)})
    receipts = [{"receipt_id": f"r{j}", "received_at": "2026-09-13T12:00:01Z",
                 "idempotency_key": f"k{draw(st.integers(0, 4))}",
                 # (or a body no attempt asked for: its key covered, the receipt not)
                 "body_sha256": draw(st.sampled_from([SHA, SHA, "c" * 64])),
                 "bytes": 1} for j in range(draw(st.integers(0, 3)))]
    return events, receipts


def _calls_facts(state: WorkState) -> list[tuple[object, ...]]:
    """Every call's verdict, facts (its seqs read apart: a settled call's come from the
    projector's own columns), next operation, reason (with receipts) and document."""
    index = state.receipts.index
    return [(c, c.first_seq, c.last_seq, c.completed_seq, c.attempts, c.status,
             c.idempotency_key, c.task_id, c.next_operation, c.settled, c.resumable,
             c.reason, c.reason_with(index), c.as_json(index)) for c in state.calls]


def _follow_in_columns(case: Path, unique_ids: bool, rest_after: int | None = None) -> int:
    """Feed the case event by event into a projector that settles calls in columns and
    compare each snapshot with projecting the prefix anew; then check every snapshot
    handed out still shows what it showed. Returns how many calls the columns held.
    `rest_after`: calls in flight are kept in columns once this many seqs quiet (0:
    at the next snapshot, then taken back by their next event)."""
    log = read_receipts(case)
    with LedgerReader(case) as reader:
        events = reader.events()
    history = CallHistory(case / "ledger.sqlite3")
    projector = Projector(event_ids_unique=unique_ids)
    projector.settle_in_columns(history)
    if rest_after is not None:
        projector.rest_after = rest_after
    held: list[tuple[WorkState, dict[str, Any], list[tuple[object, ...]]]] = []
    settled = 0
    try:
        for i, ev in enumerate(events):
            projector.add(ev)
            snap = projector.snapshot(log)
            oracle = project(events[:i + 1], log)
            settled = max(settled, projector.settled_count)
            assert snap.as_json("x") == oracle.as_json("x"), ev.seq
            assert _calls_facts(snap) == _calls_facts(oracle), ev.seq
            assert snap.effect_unknown_set() == oracle.effect_unknown_set()
            assert [c.call_id for c in snap.pending_calls()] == \
                [c.call_id for c in oracle.pending_calls()]
            assert [c.call_id for c in snap.resumable_calls()] == \
                [c.call_id for c in oracle.resumable_calls()]
            assert snap.tasks == oracle.tasks
            # each receipt's cover (a settled call's read from its slot in the columns)
            assert list(snap.receipts.covered_by.attempts) == \
                list(oracle.receipts.covered_by.attempts)
            assert_kept_sets_as_counted(snap)
            for pos, call in enumerate(snap.calls):
                assert projector.position_of(call.call_id) == pos
            held.append((snap, snap.as_json("x"), _calls_facts(snap),
                         list(snap.receipts.covered_by.attempts)))
        for snap, doc, facts, covers in held:  # what was handed out never moved
            assert snap.as_json("x") == doc
            assert _calls_facts(snap) == facts
            assert list(snap.receipts.covered_by.attempts) == covers
        # the receipt check built afresh (a log object it has not seen) reads the covers
        # of settled calls from the columns: each receipt's attempt as projected anew
        fresh, oracle_check = projector.receipt_check(replace(log, tail=None)), project(events, log).receipts
        assert list(fresh.covered_by.attempts) == list(oracle_check.covered_by.attempts)
        assert fresh.uncovered == oracle_check.uncovered
    finally:
        history.close()
    return settled


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lifecycles(), st.booleans())
def test_calls_in_columns_equal_the_oracle_at_every_seq(ledger: Any, unique_ids: bool) -> None:
    events, receipts = ledger
    with tempfile.TemporaryDirectory() as tmp:
        _follow_in_columns(_write(Path(tmp), events, receipts, unique_ids), unique_ids)


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.booleans())
def test_calls_in_columns_equal_the_oracle_on_random_ledgers(ledger: Any,
                                                             unique_ids: bool) -> None:
    events, receipts = ledger
    with tempfile.TemporaryDirectory() as tmp:
        _follow_in_columns(_write(Path(tmp), events, receipts, unique_ids), unique_ids)


def _resting(history: CallHistory, unique_ids: bool, *, rest_after: int) -> Projector:
    """A projector that settles calls in columns and keeps there the calls in flight
    quiet for `rest_after` seqs."""
    projector = Projector(event_ids_unique=unique_ids)
    projector.settle_in_columns(history)
    projector.rest_after = rest_after
    return projector


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(lifecycles(), ledgers()), st.booleans())
def test_calls_at_rest_in_columns_equal_the_oracle_at_every_seq(ledger: Any,
                                                                unique_ids: bool) -> None:
    """Every call not settled goes into columns at the next snapshot and comes back to
    objects with its next event: verdicts, documents, held snapshots and time travel
    stay those of projecting the prefix anew."""
    events, receipts = ledger
    with tempfile.TemporaryDirectory() as tmp:
        case = _write(Path(tmp), events, receipts, unique_ids)
        _follow_in_columns(case, unique_ids, rest_after=0)
        log = read_receipts(case)
        with LedgerReader(case) as reader:
            read = reader.events()
        history, sql = CallHistory(case / "ledger.sqlite3"), EvidenceSQL(case)
        try:
            projector = _resting(history, unique_ids, rest_after=0)
            for ev in read:
                projector.add(ev)
                projector.snapshot(log)
            for n in range(read[-1].seq + 1 if read else 1):
                travelled = state_as_of(projector, sql, n, log)[0]
                assert travelled.as_json("x") == project(read, log, n).as_json("x"), n
        finally:
            sql.close()
            history.close()


def _in_flight_tasks(tasks: int) -> list[Any]:
    """Tasks of three calls each as a writer makes them, the last left in flight (its
    attempt started, effect unknown), then a task of calls that complete."""
    from codeai_tui.ledger.schema import Event
    events: list[Event] = []

    def add(kind: str, task: str, call: str | None, att: str | None, p: dict[str, Any]) -> None:
        seq = len(events) + 1
        # (each event's ids a string of its own, as read from SQLite)
        events.append(Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, "".join(task),
                            "".join(call) if call else None, att, payload=p))
    for t in range(tasks + 1):
        add("task.created", f"t{t}", None, None, {"title": f"task {t}"})
        for c in range(3):
            call = f"t{t}-c{c}"
            add("call.requested", f"t{t}", call, None, {"idempotency_key": call})
            add("call.manifest", f"t{t}", call, None,
                {"idempotency_key": call, "request_sha256": SHA})
            add("attempt.started", f"t{t}", call, f"{call}-a", {"request_sha256": SHA})
            if c == 2 and t < tasks:
                continue
            for kind, a, p in _LIFE[3:]:
                add(kind, f"t{t}", call, f"{call}-a" if a else None,
                    {k: f"{call}-a" if v == "A" else v for k, v in p.items()})
    return events


def test_calls_in_flight_that_stay_quiet_are_kept_in_columns_not_objects(
        tmp_path: Path) -> None:
    """A call left in flight (a writer that crashed, a provider that never answered)
    costs ~1,100 bytes as objects for as long as the console follows: once it has been
    quiet for `rest_after` seqs it is kept in columns, its verdict unchanged, and its
    next event takes it back and judges it from its events."""
    events = _in_flight_tasks(40)
    case = _write(tmp_path, [{"seq": e.seq, "event_id": e.event_id, "recorded_at": e.recorded_at,
                         "kind": e.kind, "task_id": e.task_id, "call_id": e.call_id,
                         "attempt_id": e.attempt_id, "compilation_id": None,
                         "payload": json.dumps(e.payload)} for e in events], [], True)
    history = CallHistory(case / "ledger.sqlite3")
    try:
        projector = _resting(history, True, rest_after=50)
        for ev in events:
            projector.add(ev)
            if ev.seq % 10 == 0:
                projector.snapshot()
        snap = projector.snapshot()
        oracle = project(events)
        assert _calls_facts(snap) == _calls_facts(oracle)
        assert snap.tasks == oracle.tasks
        assert snap.effect_unknown_set() == oracle.effect_unknown_set() == \
            {f"t{t}-c2" for t in range(40)}
        # every call is in columns but those with an event in the last 50 seqs
        recent = {e.call_id for e in events if e.call_id and e.seq > events[-1].seq - 50}
        assert set(projector.calls) <= recent and len(recent) <= 9
        assert projector.settled_count >= 3 * 40
        # the next event of a call at rest takes it back: judged from its events
        from codeai_tui.ledger.schema import Event
        seq = events[-1].seq + 1
        later = Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", "attempt.observed", "t3",
                      "t3-c2", "t3-c2-a",
                      payload={"transport": {"status": 200}, "response_sha256": SHA})
        held = _calls_facts(snap)
        projector.add(later)
        assert _calls_facts(projector.snapshot()) == _calls_facts(project([*events, later]))
        assert "t3-c2" in projector.calls
        assert _calls_facts(snap) == held
    finally:
        history.close()


def _gathered_in_columns(case: Path) -> int:
    """Gather the case in SQL as of every seq into a projector that settles calls in
    columns as they are produced, compare it with the oracle there, follow the rest of
    the ledger event by event, compare again, check the first snapshot never moved, and
    (from two of the cuts) travel to every seq.
    Returns how many calls the columns held straight from a gathering."""
    log = read_receipts(case)
    with LedgerReader(case) as reader:
        events = reader.events()
    history = CallHistory(case / "ledger.sqlite3")
    sql = EvidenceSQL(case)
    settled = 0
    try:
        for cut in range(1, len(events) + 1):
            got = gather(sql, events[cut - 1].seq, log)
            assert not isinstance(got, str), got
            projector = projector_from(got, history)
            settled = max(settled, projector.settled_count)
            first = projector.snapshot(log)
            oracle = project(events[:cut], log)
            assert first.as_json("x") == oracle.as_json("x"), cut
            assert _calls_facts(first) == _calls_facts(oracle), cut
            assert first.effect_unknown_set() == oracle.effect_unknown_set()
            assert [c.call_id for c in first.resumable_calls()] == \
                [c.call_id for c in oracle.resumable_calls()]
            assert_kept_sets_as_counted(first)
            held = (first.as_json("x"), _calls_facts(first))
            projector.feed(events[cut:])
            last = projector.snapshot(log)
            whole = project(events, log)
            assert last.as_json("x") == whole.as_json("x"), cut
            assert _calls_facts(last) == _calls_facts(whole), cut
            assert (first.as_json("x"), _calls_facts(first)) == held, cut
            if cut in (len(events) // 2, len(events)):  # time travel from there
                for n in range(events[-1].seq + 1):
                    travelled = state_as_of(projector, sql, n, log)[0]
                    assert travelled.as_json("x") == project(events, log, n).as_json("x"), n
    finally:
        sql.close()
        history.close()
    return settled


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(lifecycles(), ledgers()))
def test_a_gathered_start_in_columns_equals_the_oracle_at_every_seq(ledger: Any) -> None:
    """Lifecycles (most calls settle) and random ledgers (hostile shapes)."""
    events, receipts = ledger
    with tempfile.TemporaryDirectory() as tmp:
        _gathered_in_columns(_write(Path(tmp), events, receipts, True))


def test_a_followed_call_words_the_outcome_the_fast_path_skipped(tmp_path: Path) -> None:
    """An attempt interpreted before it started (hostile): gathered at seq 1 the call is
    only requested, so its reason needs no outcome, but the call is kept as an object
    and followed: once seq 2 moves it on, its reason words the outcome read at seq 1."""
    ids = {"task_id": "t1", "call_id": "c1", "attempt_id": "a1", "compilation_id": "k1"}
    events = [dict(ids, seq=seq, kind=kind, payload=payload, event_id=f"e{seq}",
                   recorded_at=f"2026-09-13T12:00:0{seq}Z")
              for seq, kind, payload in [(1, "attempt.interpreted", '{"outcome": []}'),
                                         (2, "attempt.started", "{}")]]
    case = _write(tmp_path, events, [], True)
    assert _gathered_in_columns(case) == 0
    with LedgerReader(case) as reader:
        whole = project(reader.events())
    assert "interpreted as []" in whole.calls[0].reason  # (what the oracle words)


def test_a_gathered_start_keeps_settled_calls_in_columns_only(tmp_path: Path) -> None:
    """Three completed calls and one cut short: the three go straight into columns
    (no objects), the fourth stays objects, and every as_of still equals the oracle."""
    late = [{"kind": kind, "call_id": "c3", "attempt_id": "c3-a" if a else None,
             "payload": {k: ("k3" if v == "K" else "c3-a" if v == "A" else v)
                         for k, v in pl.items()}} for kind, a, pl in _LIFE[:3]]
    case = _lifecycle_case(tmp_path, 3, late)
    assert _gathered_in_columns(case) == 3
    history = CallHistory(case / "ledger.sqlite3")
    sql = EvidenceSQL(case)
    try:
        got = gather(sql, None, None)
        assert not isinstance(got, str), got
        projector = projector_from(got, history)
        assert projector.settled_count == 3 and list(projector.calls) == ["c3"]
        state = projector.snapshot()
        assert "call.completed at seq 14" in state.calls[1].reason
        assert state.effect_unknown_set() == frozenset({"c3"})
    finally:
        sql.close()
        history.close()


def _lifecycle_case(root: Path, calls: int, late: list[dict[str, Any]]) -> Path:
    events = []
    for c in range(calls):
        for kind, a, p in _LIFE:
            events.append({"kind": kind, "call_id": f"c{c}", "attempt_id": f"c{c}-a" if a else None,
                           "payload": {k: (f"k{c}" if v == "K" else f"c{c}-a" if v == "A" else v)
                                       for k, v in p.items()}})
    rows = []
    for seq, ev in enumerate(events + late, 1):
        rows.append({"seq": seq, "event_id": f"e{seq}",
                     "recorded_at": f"2026-09-13T12:00:{seq % 60:02d}Z", "task_id": "t1",
                     "compilation_id": None, **ev, "payload": json.dumps(ev["payload"])})
    return _write(root, rows, [], unique_ids=True)


def test_settled_calls_are_kept_in_columns_and_read_from_them(tmp_path: Path) -> None:
    case = _lifecycle_case(tmp_path, 3, [])
    assert _follow_in_columns(case, True) == 3
    history = CallHistory(case / "ledger.sqlite3")
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(history)
    with LedgerReader(case) as reader:
        projector.feed(reader.events())
    state = projector.snapshot()
    try:
        assert projector.settled_count == 3 and not projector.calls  # no objects kept
        assert [c.call_id for c in state.calls] == ["c0", "c1", "c2"]
        assert all(c.stage.value == "completed" for c in state.calls)
        assert "call.completed at seq 14" in state.calls[1].reason
        assert state.calls[2].as_json(index_for(None))["evidence"]["attempts"][0][
            "attempt_id"] == "c2-a"
    finally:
        history.close()


def test_a_settled_call_named_again_is_taken_back_and_the_held_snapshot_stays(
        tmp_path: Path) -> None:
    late = [{"kind": "attempt.started", "call_id": "c0", "attempt_id": "c0-b",
             "payload": {"request_sha256": SHA}}]
    case = _lifecycle_case(tmp_path, 2, late)
    history = CallHistory(case / "ledger.sqlite3")
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(history)
    with LedgerReader(case) as reader:
        events = reader.events()
    try:
        projector.feed(events[:-1])
        before = projector.snapshot()
        assert projector.settled_count == 2
        shown = (before.calls[0].stage, before.calls[0].reason, before.calls[0].as_json())
        projector.add(events[-1])
        after = projector.snapshot()
        assert after.as_json("x") == project(events).as_json("x")
        assert after.calls[0].attempts == 2 and after.calls[1].stage.value == "completed"
        assert (before.calls[0].stage, before.calls[0].reason,
                before.calls[0].as_json()) == shown
        assert before.calls[0].attempts == 1
    finally:
        history.close()


def test_a_follower_reads_settled_calls_from_the_ledger_it_follows(tmp_path: Path) -> None:
    from codeai_tui.console.model import CaseFollower
    case = _lifecycle_case(tmp_path, 2, [])
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        snap = follower.snapshot()
        assert follower.projector.settled_count == 2
        assert snap.call("c1") is not None and snap.call("c1").call_id == "c1"  # type: ignore[union-attr]
        assert snap.call_index.get("c1") == 1
        with LedgerReader(case) as reader:
            oracle = project(reader.events(), read_receipts(case))
        assert snap.state.as_json("x") == oracle.as_json("x")
        assert [c.reason for c in snap.state.calls] == [c.reason for c in oracle.calls]
    finally:
        follower.close()


def test_calls_settle_a_batch_a_snapshot_and_every_snapshot_stays_right(
        tmp_path: Path) -> None:
    from unittest.mock import patch

    from codeai_tui.workstate import projector as projector_module
    case = _lifecycle_case(tmp_path, 5, [])
    history = CallHistory(case / "ledger.sqlite3")
    projector = Projector(event_ids_unique=True)
    with LedgerReader(case) as reader:
        events = reader.events()
    oracle = project(events).as_json("x")
    projector.settle_in_columns(history)
    try:
        projector.feed(events)  # (settled in columns from the next snapshot on)
        with patch.object(projector_module, "SETTLE_BATCH", 2):
            counts = []
            for _ in range(4):
                assert projector.snapshot().as_json("x") == oracle
                counts.append(projector.settled_count)
        assert counts == [2, 4, 5, 5]
    finally:
        history.close()


def test_every_settled_call_is_found_by_id_as_the_index_grows(tmp_path: Path) -> None:
    case = _lifecycle_case(tmp_path, 1500, [])
    history = CallHistory(case / "ledger.sqlite3")
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(history)
    try:
        with LedgerReader(case) as reader:
            events = reader.events()
        for at in range(0, len(events), 700):  # snapshots as a follower takes them
            projector.feed(events[at:at + 700])
            projector.snapshot()
        state = projector.snapshot()
        assert projector.settled_count == 1500 and not projector.calls
        assert all(projector.position_of(f"c{i}") == i for i in range(1500))
        assert projector.position_of("c1500") is None
        assert [c.call_id for c in state.calls] == [f"c{i}" for i in range(1500)]
        assert state.calls[1234].reason == project(events).calls[1234].reason
    finally:
        history.close()


def test_a_gathered_start_of_many_calls_finds_every_one_by_id(tmp_path: Path) -> None:
    """A fast start sizes the id index once for the calls it will settle (1,500 here,
    past the first size of 1,024): every call is found by id, and one more follows."""
    case = _lifecycle_case(tmp_path, 1500, [])
    history = CallHistory(case / "ledger.sqlite3")
    sql = EvidenceSQL(case)
    try:
        got = gather(sql, None, None)
        assert not isinstance(got, str), got
        projector = projector_from(got, history)
        assert projector.settled_count == 1500 and not projector.calls
        assert all(projector.position_of(f"c{i}") == i for i in range(1500))
        assert projector.position_of("c1500") is None
        state = projector.snapshot()
        assert "call.completed at seq 10500" in state.calls[1499].reason
    finally:
        sql.close()
        history.close()


def test_the_calls_of_a_receipt_derive_only_the_evidence_of_calls_with_its_key(
        tmp_path: Path) -> None:
    from codeai_tui.console.evidence import calls_of_receipt
    from codeai_tui.console.model import CaseSnapshot
    from codeai_tui.ledger import Receipt
    case = _lifecycle_case(tmp_path, 3, [])
    history = CallHistory(case / "ledger.sqlite3")
    asked: list[str] = []

    def load(call_id: str, n: int, position: int) -> Any:
        asked.append(call_id)
        return history(call_id, n, position)

    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(load)
    try:
        with LedgerReader(case) as reader:
            projector.feed(reader.events())
        state = projector.snapshot()
        assert projector.settled_count == 3
        snap = CaseSnapshot(case, state, 21, 21, None, read_receipts(case))
        receipt = Receipt("r1", "2026-09-13T12:00:01Z", "k1", SHA, 1, 1)
        links = calls_of_receipt(receipt, snap)
        assert [(link.call_id, link.attempt_id) for link in links] == [("c1", "c1-a")]
        assert asked == ["c1"]  # the others' keys were read from the columns
    finally:
        history.close()


def _keyed_case(root: Path) -> Path:
    """Settled calls keyed apart from their ids (two sharing one key), two keyed by
    their own ids, one in flight sharing a settled call's key; then one keyed by its id
    named again (taken back from the columns), to its end."""
    keys = {"c0": "k0", "c1": "kshared", "c2": "kshared", "c3": "c3", "c4": "k0", "c5": "c5"}
    events = []
    for call, key in keys.items():
        life = _LIFE[:3] if call == "c4" else _LIFE
        events += [{"kind": kind, "call_id": call, "attempt_id": f"{call}-a" if a else None,
                    "payload": {k: (key if v == "K" else f"{call}-a" if v == "A" else v)
                                for k, v in p.items()}} for kind, a, p in life]
    # c3 named again: a second attempt, to the end (it settles anew, in a slot of its own)
    events += [{"kind": kind, "call_id": "c3", "attempt_id": "c3-b", "payload": p}
               for kind, a, p in _LIFE[2:6]]
    rows = [{"seq": seq, "event_id": f"e{seq}", "recorded_at": f"2026-09-13T12:00:{seq:02d}Z",
             "task_id": "t1", "compilation_id": None, **ev, "payload": json.dumps(ev["payload"])}
            for seq, ev in enumerate(events, 1)]
    return _write(root, rows, [], unique_ids=True)


def test_the_calls_of_a_key_are_found_in_the_columns_as_by_reading_each(
        tmp_path: Path) -> None:
    """`positions_keyed` gives the calls a scan of every call's key gives, in every
    snapshot, asked as it is taken and again at the end: a key kept apart, shared, its
    call's own id, held by a call in flight, and a call keyed by its id taken back (the
    snapshot before still reads its slot)."""
    case = _keyed_case(tmp_path)
    history = CallHistory(case / "ledger.sqlite3")
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(history)
    with LedgerReader(case) as reader:
        events = reader.events()
    keys = ("k0", "kshared", "c3", "c5", "c0", "nobody")

    def asked(state: WorkState) -> dict[str, list[str]]:
        calls = state.calls
        assert isinstance(calls, CallsView)
        found = {key: calls.positions_keyed(key) for key in keys}
        assert found == {key: [i for i, c in enumerate(calls) if c.idempotency_key == key]
                         for key in keys}
        return {key: [calls[p].call_id for p in found[key]] for key in keys}

    try:
        projector.feed(events[:-4])
        before = projector.snapshot()
        assert projector.settled_count == 5  # all but c4 (in flight)
        first = asked(before)
        projector.add(events[-4])  # c3 named again: taken back
        taken = projector.snapshot()
        projector.feed(events[-3:])
        after = projector.snapshot()
        assert [s.calls[3].attempts for s in (before, taken, after)] == [1, 2, 2]
        assert first == asked(before) == asked(taken) == asked(after) == {
            "k0": ["c0", "c4"], "kshared": ["c1", "c2"], "c3": ["c3"], "c5": ["c5"],
            "c0": [], "nobody": []}
    finally:
        history.close()


def test_calls_judged_before_settling_was_asked_stay_objects(tmp_path: Path) -> None:
    case = _lifecycle_case(tmp_path, 2, [])
    history = CallHistory(case / "ledger.sqlite3")
    projector = Projector(event_ids_unique=True)
    with LedgerReader(case) as reader:
        events = reader.events()
    try:
        projector.feed(events[:7])  # c0 complete
        projector.snapshot()
        projector.settle_in_columns(history)
        projector.feed(events[7:])  # c1 complete
        state = projector.snapshot()
        assert projector.settled_count == 1 and list(projector.calls) == ["c0"]
        assert state.as_json("x") == project(events).as_json("x")
    finally:
        history.close()


def test_a_settled_call_costs_a_hundred_and_some_bytes_in_columns() -> None:
    """Following adds a settled call to the columns every millisecond or so: its seqs are
    read from the projector (not kept twice), its numbers and index slots take 4 bytes
    where they fit. Every fact still reads back as the objects had it."""
    from array import array

    from codeai_tui.ledger.schema import Event
    from codeai_tui.workstate.columns import SettledCalls
    n = 2 * 4096  # (two sealed blocks of each text column)
    projector = Projector(event_ids_unique=True)
    seq = 0
    for c in range(n):
        for kind, a, p in _LIFE:
            seq += 1
            projector.add(Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, f"t{c % 7}",
                                f"c{c}", f"c{c}-a" if a else None, payload={
                                    k: (f"k{c}" if v == "K" else f"c{c}-a" if v == "A" else v)
                                    for k, v in p.items()}))
    states = list(projector.snapshot().calls)
    firsts, lasts = array("q", (st.first_seq for st in states)), \
        array("q", (st.last_seq for st in states))
    texts = sum(len(st.call_id) + len(st.idempotency_key or "") + len(f"{st.call_id}-a")
                for st in states)

    def settled() -> SettledCalls:
        cols = SettledCalls(lambda call_id, n, position: None)
        cols.share_seqs(firsts, lasts)
        for pos, state in enumerate(states):
            cols.add(state, pos, state.evidence.held)  # type: ignore[arg-type]
        return cols

    cols, held = held_by(settled)
    per_call = (held - texts) / n
    # 3 x 4 (text ends) + 6 x 4 (seqs kept after the call's first among them) + 2 x 2
    # + 3 (flags) + 32 (hash) + 2 x 4 (index slots, a third to two thirds full) x 1.5..3:
    # ~95 (8 bytes more when the two seqs took 8 each)
    assert per_call <= 100, per_call
    for slot in (0, 4097, n - 1):
        have, was = cols.state(slot), states[slot]
        assert (have.call_id, have.first_seq, have.last_seq, have.completed_seq,
                have.attempts, have.task_id, have.idempotency_key, have.verdict) == \
            (was.call_id, was.first_seq, was.last_seq, was.completed_seq, was.attempts,
             was.task_id, was.idempotency_key, was.verdict)
        assert cols.find(was.call_id) == slot
        cover, att = cols.cover(was.idempotency_key), was.evidence.held  # type: ignore[arg-type]
        assert cover is not None and (cover.attempt_id, cover.started_seq, cover.request_sha256) \
            == (att.attempt_id, att.started_seq, att.request_sha256)  # type: ignore[union-attr]


@pytest.mark.parametrize(("first", "far"), [(1, 1 << 40), (-(1 << 62), 1 << 62)])
def test_a_seq_far_after_the_calls_first_widens_its_column_and_reads_back(
        first: int, far: int) -> None:
    """A call's completion and its cover's start are kept as seqs after its first, 4
    bytes each; one that does not fit (a hostile ledger's seq 2^40, or seqs 2^63 apart,
    beyond 8 bytes too) widens that column instead of wrapping or failing, and columns
    of either width extend each other."""
    from array import array

    from codeai_tui.ledger.schema import Event
    from codeai_tui.workstate.columns import SettledCalls
    projector = Projector(event_ids_unique=True)
    seqs = [first, first + 1, far, far + 1, far + 2, far + 3, far + 4]  # (a gap: an anomaly)
    for seq, (kind, a, p) in zip(seqs, _LIFE, strict=True):
        projector.add(Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, "t", "c",
                            "c-a" if a else None,
                            payload={k: ("c" if v == "K" else "c-a" if v == "A" else v)
                                     for k, v in p.items()}))
    st = projector.snapshot().calls[0]
    assert st.settled and st.completed_seq == far + 4
    lent_firsts, lent_lasts = array("q", [first, first]), array("q", [far + 4, far + 4])
    narrow = SettledCalls(lambda call_id, n, position: None)
    narrow.share_seqs(lent_firsts, lent_lasts)
    wide = SettledCalls(lambda call_id, n, position: None)
    wide.share_seqs(lent_firsts, lent_lasts)
    wide.add(st, 0, st.evidence.held)  # type: ignore[arg-type]
    assert wide.state(0).completed_seq == far + 4
    cover = wide.cover("c")
    assert cover is not None and cover.started_seq == far
    narrow.extend(wide.to_extend(), 1)  # (a narrow column extended by a wide one)
    assert narrow.state(0).completed_seq == far + 4
    assert narrow.contribution([0]) == (None, (far + 4, "c"), None)


def _kept_bytes_a_call(life: list[tuple[str, str | None, dict[str, Any]]], n: int) -> float:
    """What a projector settling in columns keeps for each of `n` calls living `life`
    (fed as they follow, a snapshot every 64 calls), beyond their texts' characters."""
    from codeai_tui.ledger.schema import Event
    events, texts = [], 0
    for c in range(n):
        texts += 2 * len(f"c{c}") + 2
        for kind, a, p in life:
            seq = len(events) + 1
            events.append(Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, f"t{c % 7}",
                                f"c{c}", f"c{c}-{a}" if a else None, payload={
                                    k: (f"k{c}" if v == "K" else f"c{c}-A" if v == "A"
                                        else SHA if v == "H" else v)
                                    for k, v in p.items()}))
    def followed() -> Projector:
        projector = Projector(event_ids_unique=True)
        projector.settle_in_columns(lambda call_id, n, position: None)
        for at in range(0, len(events), 64 * len(life)):
            projector.feed(events[at:at + 64 * len(life)])
            projector.snapshot()
        return projector

    projector, kept = held_by(followed)
    assert projector.settled_count == n
    return (kept - texts) / n


def test_a_retried_call_settles_with_its_first_attempt_as_the_cover_in_columns() -> None:
    """A call retried once (one in twenty, where a provider rate-limits) settles as any
    other: the first attempt, which covers its key, is kept in the columns with it, not as
    an object in the coverage dict (~680 bytes a call more)."""
    n = 4096
    once = _kept_bytes_a_call(_LIFE, n)
    retried = _kept_bytes_a_call([*_LIFE[:2], *_RETRIED, *_LIFE[2:]], n)
    assert retried - once < 40, (once, retried)


def test_the_indexes_are_sized_a_quarter_at_a_time_up_to_two_thirds_full() -> None:
    """The columns' indexes (call id to slot, and covered key to slot for keys other
    than the call's id) take 4 bytes an entry and are filled up to two thirds: kept at
    most half full, 1.37M calls took 4M entries each (16 MB). They grow a quarter at a
    time, so at any count of calls they hold at most 1.5 x 1.25 entries a call each (15
    bytes for the two); doubling held up to 3 each (24 bytes), and a console following a
    ledger grew by a whole index at once."""
    from codeai_tui.workstate.columns import SettledCalls
    worst = 0.0
    for calls in range(1000, 60_000, 2_999):
        cols = SettledCalls(lambda call_id, n, position: None)
        _none, held = held_by(lambda cols=cols, calls=calls: cols.reserve(calls, calls))
        worst = max(worst, held / calls)
    assert 12 < worst <= 15.1, worst


def _settled_states(keys: list[tuple[str, str]]) -> list[Any]:
    """A settled verdict for each (call id, idempotency key), in that order (seqs rising),
    each call covering its key with its attempt (`_LIFE`)."""
    from codeai_tui.ledger.schema import Event
    projector = Projector(event_ids_unique=True)
    for call_id, key in keys:
        for kind, a, p in _LIFE:
            seq = projector.event_count + 1
            projector.add(Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, "t", call_id,
                                f"{call_id}-{a}" if a else None,
                                payload={k: (key if v == "K" else v) for k, v in p.items()}))
    states = list(projector.snapshot().calls)
    assert all(st.settled for st in states)
    return states


def _columns_of(states: list[Any]) -> Any:
    from codeai_tui.workstate.columns import SettledCalls
    cols = SettledCalls(lambda call_id, n, position: None)
    for pos, state in enumerate(states):
        cols.add(state, pos, state.evidence.held)
    return cols


def test_a_key_that_is_its_calls_id_is_found_through_the_id_index() -> None:
    """Writers key most calls by their ids (as the runtime does): such a call's cover is
    found through the id index, not a second index of the same texts, so columns keyed
    that way hold ~6 bytes a call fewer than columns of keys of their own (the keys'
    characters apart). A later cover of a key moves to the later call, whichever way
    either keeps its key, and a call taken back keeps covering its key."""
    n = 6000
    by_id = [(f"c{c}", f"c{c}") for c in range(n)]
    own = [(f"c{c}", f"k{c}") for c in range(n)]
    states_by_id, states_own = _settled_states(by_id), _settled_states(own)
    cols_by_id, held_by_id = held_by(lambda: _columns_of(states_by_id))
    cols_own, held_own = held_by(lambda: _columns_of(states_own))
    # (the keys' own column takes at most their characters: the rest is the second index)
    key_chars = sum(len(k) for _c, k in own) / n
    assert (held_own - held_by_id) / n > key_chars + 1, (held_own, held_by_id)
    for cols, keys in ((cols_by_id, by_id), (cols_own, own)):
        for slot in (0, 1, n // 2, n - 1):
            cover = cols.cover(keys[slot][1])
            assert cover is not None and cover.slot == slot
            assert cover.attempt_id == f"{keys[slot][0]}-A"
        assert cols.cover("c-absent") is None and cols.cover(f"k{n}") is None

    mixed = _settled_states([("c0", "c0"), ("c1", "k1"), ("c2", "c0"), ("k1", "k1"),
                             ("c4", "c4")])
    cols = _columns_of(mixed)
    assert [cols.cover(k).slot for k in ("c0", "k1", "c4")] == [2, 3, 4]  # type: ignore[union-attr]
    cols.forget(4)  # (its call lives as objects again)
    cols.forget(3)
    assert cols.find("c4") is None and cols.cover("c4").slot == 4  # type: ignore[union-attr]
    assert cols.cover("k1").slot == 3  # type: ignore[union-attr]
    # (a helper's half taken in: its call keyed by its id, a key held here, covers it)
    from array import array

    from codeai_tui.workstate.columns import SettledCalls
    pair = _settled_states([("c1", "k1"), ("k1", "k1")])
    seqs = [array("q", [st.first_seq for st in pair]), array("q", [st.last_seq for st in pair])]
    mine, helpers = (SettledCalls(lambda call_id, n, position: None) for _ in range(2))
    mine.share_seqs(*seqs)
    helpers.share_seqs(*(array("q", column[1:]) for column in seqs))
    mine.add(pair[0], 0, pair[0].evidence.held)
    helpers.add(pair[1], 0, pair[1].evidence.held)
    mine.extend(helpers.to_extend(), 1)
    assert mine.cover("k1").slot == 1  # type: ignore[union-attr]
    more = _settled_states([(f"z{i}", f"kz{i}") for i in range(3000)])
    for i, state in enumerate(more):  # (the key index grows past its first size)
        cols.add(state, 5 + i, state.evidence.held)
    assert [cols.cover(k).slot for k in ("c0", "k1", "c4", "kz0", "kz2999")] == \
        [2, 3, 4, 5, 3004]  # type: ignore[union-attr]


def test_a_snapshot_copies_only_the_calls_held_as_objects() -> None:
    """The console takes a snapshot on every poll while following, and holds two while
    the screen swaps them: one of n calls settled in columns allocates and keeps almost
    nothing for them (a slot a call was 8 bytes, 11 MB a snapshot at 1.37M calls), while
    the call still held as objects keeps, in a held snapshot, the verdict it had then."""
    import gc
    import tracemalloc

    from codeai_tui.ledger.schema import Event
    n = 8192  # (one batch settles per snapshot: see `SETTLE_BATCH`)
    lives = [(f"c{c}", _LIFE) for c in range(n)] + [("open", _LIFE[:3]), ("open", _LIFE[3:])]
    events = []
    for call, life in lives:
        for kind, a, p in life:
            seq = len(events) + 1
            events.append(Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, "t",
                                call, f"{call}-a" if a else None, payload={
                                    k: (f"k-{call}" if v == "K" else f"{call}-a" if v == "A"
                                        else v) for k, v in p.items()}))
    later = len(events) - len(_LIFE[3:])
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(lambda call_id, n, position: None)
    projector.feed(events[:later])
    projector.snapshot()  # (the completed calls settle into columns)
    assert projector.settled_count == n and list(projector.calls) == ["open"]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = projector.snapshot()
        gc.collect()
        kept, peak = (m - before for m in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
    assert kept / n < 1 and peak / n < 1, (kept / n, peak / n)
    assert len(held.calls) == n + 1 and held.calls[-1].call_id == "open"
    assert not held.calls[n].settled and held.calls[n - 1].settled
    projector.feed(events[later:])  # the open call completes after the snapshot
    now = projector.snapshot()
    assert now.calls[n].settled and not held.calls[n].settled
    def verdicts(state: WorkState) -> list[tuple[object, ...]]:
        return [(c.call_id, c.stage, c.next_operation, c.settled) for c in state.calls]
    assert verdicts(held) == verdicts(project(events[:later]))
    assert verdicts(now) == verdicts(project(events))


def test_a_receipt_covered_by_a_settled_call_keeps_its_cover_as_the_calls_slot(
        tmp_path: Path) -> None:
    """The first snapshot's receipt check keeps each receipt's cover: where the covering
    attempt is a settled call's, as that call's slot in the columns (4 bytes), not its
    attempt id's text (~17 bytes more here, 31 MB at 10M events); the covers read back
    as the attempt ids a check made anew gives."""
    import orjson

    from codeai_tui.ledger.case import RECEIPTS_RELPATH
    from codeai_tui.ledger.receipts import read_more_receipts
    from codeai_tui.ledger.schema import Event
    from tests.support import held_by
    n = 3 * 4096 + 17
    events = []
    for c in range(n):
        call = f"call-{c:08d}"
        for kind, a, p in _LIFE:
            seq = len(events) + 1
            events.append(Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, "t", call,
                                f"{call}-a1" if a else None, payload={
                                    k: (f"k{c}" if v == "K" else f"{call}-a1" if v == "A"
                                        else v) for k, v in p.items()}))
    path = tmp_path / RECEIPTS_RELPATH
    path.parent.mkdir()
    path.write_bytes(b"".join(orjson.dumps({
        "receipt_id": f"r{c}", "received_at": "2026-09-13T12:00:01Z",
        "idempotency_key": f"k{c}", "body_sha256": SHA, "bytes": 1}) + b"\n"
        for c in range(n)))
    log = read_more_receipts(tmp_path, None)
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(lambda call_id, n, position: None)
    for at in range(0, len(events), 4096 * len(_LIFE)):
        projector.feed(events[at:at + 4096 * len(_LIFE)])
        projector.snapshot()  # (each batch settles into columns)
    assert projector.settled_count == n
    snap, held = held_by(lambda: projector.snapshot(log))
    # (the key table ~10, each cover's started seq 4, its cover 4: ~18.5 bytes a
    # receipt; with each cover's attempt id as text, ~35.5)
    assert held / n < 25, held / n
    assert list(snap.receipts.covered_by.attempts) == \
        list(project(events, log).receipts.covered_by.attempts) == \
        [f"call-{c:08d}-a1" for c in range(n)]


def test_digests_in_chunks_read_back_as_appended_and_taken() -> None:
    """The covering request hashes are kept in chunks (a bytearray of all of them grew
    by a copy beside itself); what is appended and taken reads back in order across the
    chunks' edges."""
    import hashlib

    import pytest

    from codeai_tui.workstate.columns import Digests
    per = Digests.PER_CHUNK
    mine, theirs = Digests(), Digests()
    want = [hashlib.sha256(str(i).encode()).digest() for i in range(2 * per + 9)]
    for d in want[:per + 5]:
        mine.append(d)
    for d in want[per + 5:]:
        theirs.append(d)
    kept = theirs.copy()
    mine.take(theirs)
    assert len(mine) == len(want) and len(theirs) == 0  # (taken chunk by chunk)
    assert [mine[i] for i in range(len(want))] == want
    kept.append(want[0])  # (a copy's last chunk is its own)
    assert len(mine) == len(want) and [kept[i] for i in range(len(kept))] == \
        [*want[per + 5:], want[0]]
    with pytest.raises(IndexError):
        mine[len(want)]
    with pytest.raises(ValueError):
        mine.append(b"short")
