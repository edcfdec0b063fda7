"""Properties of the pure projection over arbitrary event sequences (hypothesis)."""

from __future__ import annotations

import json
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from codeai_tui.console.severity import case_verdict
from codeai_tui.ledger.schema import KNOWN_KINDS, Event, parse_payload
from codeai_tui.workstate import CallStage, NextOperation, Projector, project
from tests.support import examples

KINDS = sorted(KNOWN_KINDS) + ["call.teleported", "", "task.created\x1b[31m"]
IDS = st.sampled_from(["c1", "c2", "c3", None])
ATTEMPTS = st.sampled_from(["a1", "a2", None])

payload_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=6,
)
payload_texts = st.one_of(
    st.dictionaries(
        st.sampled_from(["idempotency_key", "decision", "status", "resumed_as", "outcome",
                         "acceptance_id", "offered", "required_ids", "missing_ids", "error",
                         "request_sha256", "by", "transport"]),
        payload_values, max_size=5,
    ).map(json.dumps),
    st.sampled_from(["[]", "null", "42", "{", "\"text\"", "{\"decision\": \"retry\"}"]),
    st.text(max_size=10),
)


@st.composite
def event_lists(draw: st.DrawFn) -> list[Event]:
    n = draw(st.integers(0, 30))
    events = []
    seq = 0
    for _ in range(n):
        seq += draw(st.sampled_from([1, 1, 1, 1, 2]))  # occasional gaps
        text = draw(payload_texts)
        payload, problem = parse_payload(text)
        events.append(Event(
            seq=seq, event_id=f"e{seq}", recorded_at="t", kind=draw(st.sampled_from(KINDS)),
            task_id=draw(st.sampled_from(["t1", "t2"])), call_id=draw(IDS),
            attempt_id=draw(ATTEMPTS), compilation_id=draw(st.sampled_from(["k1", None])),
            payload=payload, payload_text=text, payload_error=problem,
        ))
    return events


@settings(max_examples=examples(75), deadline=None)
@given(event_lists())
def test_projection_never_raises_and_is_complete(events: list[Event]) -> None:
    state = project(events)
    assert state.event_count == len(events)
    named_calls = {  # unknown kinds are counted and ignored, even when they look like calls
        e.call_id for e in events
        if e.call_id and e.kind in KNOWN_KINDS and e.kind.startswith(("call.", "attempt.", "tool."))
    }
    assert {c.call_id for c in state.calls} == named_calls
    for c in state.calls:
        assert c.reason
        if c.resumable:
            assert c.next_operation is NextOperation.START_CALL
            assert c.stage in (CallStage.REQUESTED, CallStage.MANIFEST_RECORDED)
        if c.stage is CallStage.EFFECT_UNKNOWN:
            assert c.duplicate_effect_risk
    json.dumps(state.as_json("x"))  # always serialisable


@settings(max_examples=examples(50), deadline=None)
@given(event_lists(), st.integers(0, 40))
def test_as_of_equals_projecting_a_prefix(events: list[Event], n: int) -> None:
    as_of = project(events, as_of=n).as_json("x")
    prefix = project([e for e in events if e.seq <= n]).as_json("x")
    assert as_of == prefix


@settings(max_examples=examples(50), deadline=None)
@given(event_lists(), st.data())
def test_an_event_never_changes_calls_it_does_not_name(events: list[Event], data: st.DataObject) -> None:
    before = {c.call_id: c for c in project(events).calls}
    extra = data.draw(event_lists().filter(lambda evs: len(evs) > 0)).pop()
    last = events[-1].seq if events else 0
    extra = Event(last + 1, "x", "t", extra.kind, extra.task_id, extra.call_id,
                  extra.attempt_id, extra.compilation_id, extra.payload, extra.payload_text,
                  extra.payload_error)
    after = {c.call_id: c for c in project([*events, extra]).calls}
    for call_id, state in before.items():
        if call_id != extra.call_id:
            assert after[call_id] == state


def test_incremental_feeding_equals_one_shot() -> None:
    events = [
        Event(1, "e1", "t", "task.created", "t1", payload={"title": "x"}),
        Event(2, "e2", "t", "call.requested", "t1", "c1", payload={"idempotency_key": "k"}),
        Event(3, "e3", "t", "call.manifest", "t1", "c1", payload={"idempotency_key": "k"}),
    ]
    projector = Projector()
    projector.add(events[0])
    mid = projector.snapshot()
    assert mid.tasks[0].next_operation is NextOperation.START_CALL
    projector.feed(events[1:])
    assert projector.snapshot().as_json("x") == project(events).as_json("x")
    assert projector.call_state("c1").stage is CallStage.MANIFEST_RECORDED


def test_attempt_without_manifest_is_anomalous_and_not_untouched() -> None:
    events = [
        Event(1, "e1", "t", "call.requested", "t1", "c1", payload={"idempotency_key": "k"}),
        Event(2, "e2", "t", "attempt.started", "t1", "c1", "a1", payload={"attempt_no": 1}),
    ]
    state = project(events)
    call = state.call("c1")
    assert call is not None
    assert call.stage is CallStage.EFFECT_UNKNOWN
    assert call.anomalous and not call.resumable
    assert [a.seq for a in state.anomalies] == [2]


def test_broken_payloads_and_gaps_are_anomalies_not_crashes() -> None:
    events = [
        Event(1, "e1", "t", "call.requested", "t1", "c1", payload=None, payload_text="[1]",
              payload_error="payload is a JSON list, not an object"),
        Event(3, "e3", "t", "attempt.observed", "t1", "c1", "a9", payload={}),
        Event(4, "e4", "t", "call.teleported", "t1", "c1", payload={}),
    ]
    state = project(events)
    problems = [a.problem for a in state.anomalies]
    assert any("not an object" in p for p in problems)
    assert any("seq gap" in p for p in problems)
    assert any("never started" in p for p in problems)
    assert state.unknown_kinds == {"call.teleported": 1}
    call = state.call("c1")
    # the orphan observation (attempt a9 never started) does not stand in for an attempt
    assert call is not None and call.stage is CallStage.REQUESTED
    assert call.provider_effect.value == "none" and call.anomalous and not call.resumable


def test_receipt_check_is_reused_until_coverage_evidence_or_log_changes() -> None:
    from codeai_tui.ledger.receipts import parse_receipt_lines

    log = parse_receipt_lines(
        b'{"receipt_id": "r1", "idempotency_key": "k", "body_sha256": "h1", "bytes": 1}\n'
    )
    projector = Projector()
    projector.feed([
        Event(1, "e1", "t", "call.requested", "t1", "c1", payload={"idempotency_key": "k"}),
        Event(2, "e2", "t", "call.manifest", "t1", "c1", payload={"idempotency_key": "k"}),
    ])
    first = projector.snapshot(log).receipts
    assert first.uncovered == ("r1",)
    projector.add(Event(3, "e3", "t", "task.objective", "t1", payload={}))
    assert projector.snapshot(log).receipts is first  # nothing coverage depends on changed
    projector.add(Event(4, "e4", "t", "attempt.started", "t1", "c1", "a1",
                        payload={"request_sha256": "h1"}))
    covered = projector.snapshot(log).receipts
    assert covered.uncovered == () and covered.covered_by == {"r1": "a1"}
    other = parse_receipt_lines(b"")
    assert projector.snapshot(other).receipts.count == 0  # a new log object is re-checked


def test_a_kept_verdict_never_words_newer_evidence() -> None:
    projector = Projector()
    projector.feed([
        Event(1, "e1", "t", "call.requested", "t1", "c1", payload={"idempotency_key": "k"}),
        Event(2, "e2", "t", "call.manifest", "t1", "c1", payload={"idempotency_key": "k"}),
    ])
    old = projector.snapshot().call("c1")
    assert old is not None and old.reason.startswith("call.manifest at seq 2")
    projector.add(Event(3, "e3", "t", "attempt.started", "t1", "c1", "a1", payload={}))
    assert old.stage is CallStage.MANIFEST_RECORDED
    # a snapshot: the verdict and its reason are what they were at seq 2
    assert old.reason.startswith("call.manifest at seq 2, no attempt started")
    new = projector.snapshot().call("c1")
    assert new is not None and new.reason.startswith("attempt a1 started at seq 3")


receipt_lines = st.lists(  # receipt ids repeat often (a hostile log): covers are per line
    st.tuples(st.sampled_from(["k", "k2", ""]), st.sampled_from(["h1", "h2"]), st.integers(0, 3)),
    max_size=6,
).map(lambda rs: "".join(
    json.dumps({"receipt_id": f"r{n}", "idempotency_key": k, "body_sha256": h, "bytes": 1}) + "\n"
    for k, h, n in rs).encode())


@st.composite
def coverage_events(draw: st.DrawFn) -> list[Event]:
    """Calls whose keys and request hashes collide with the receipts' often."""
    kinds = ["call.requested", "call.manifest", "attempt.started", "attempt.observed"]
    events = []
    for seq in range(1, draw(st.integers(0, 25)) + 1):
        kind = draw(st.sampled_from(kinds))
        payload = {"idempotency_key": draw(st.sampled_from(["k", "k2", ""])),
                   "request_sha256": draw(st.sampled_from(["h1", "h2", None]))}
        events.append(Event(seq, f"e{seq}", "t", kind, "t1", draw(st.sampled_from(["c1", "c2"])),
                            draw(st.sampled_from(["a1", "a2"])) if kind.startswith("attempt")
                            else None, payload=payload))
    return events


@settings(max_examples=examples(100), deadline=None)
@given(coverage_events(), receipt_lines)
def test_receipt_check_kept_up_to_date_equals_a_fresh_check(events: list[Event], log_bytes: bytes) -> None:
    """The live check (updated with the pairs that changed) gives what a fresh check of
    the same evidence gives, after every event."""
    from codeai_tui.ledger.receipts import parse_receipt_lines
    from codeai_tui.workstate import check_receipts

    log = parse_receipt_lines(log_bytes)
    projector = Projector()
    for ev in events:
        projector.add(ev)
        got = projector.receipt_check(log)
        fresh = check_receipts(log.receipts, projector.calls.values(), problems=log.problems,
                               log_present=True)
        assert got == fresh
        assert got.covered_by.attempts == fresh.covered_by.attempts  # each line's own cover


LIFECYCLE = [  # a call's kinds with payloads that move it along (and back: a late failure)
    ("call.requested", {"idempotency_key": "k"}),
    ("call.manifest", {"idempotency_key": "k"}),
    ("attempt.started", {"attempt_no": 1}),
    ("attempt.observed", {"transport": {"status": 200}}),
    ("attempt.interpreted", {"outcome": "success"}),
    ("attempt.completed", {"status": "succeeded"}),
    ("call.completed", {"status": "succeeded"}),
    ("call.completed", {"status": "failed"}),
    ("task.accepted", {"acceptance_id": "acc", "call_id": "c1"}),
]


@st.composite
def task_histories(draw: st.DrawFn) -> list[Event]:
    """Calls of two tasks moving through their lifecycle, interleaved: calls turn
    unresolved, resolved, succeeded and failed again under the tasks' verdicts."""
    events = []
    for seq in range(1, draw(st.integers(1, 40)) + 1):
        kind, payload = draw(st.sampled_from(LIFECYCLE))
        call = draw(st.sampled_from(["c1", "c2", "c3", "c4"]))
        text = json.dumps(payload)
        events.append(Event(
            seq=seq, event_id=f"e{seq}", recorded_at="t", kind=kind,
            task_id=draw(st.sampled_from(["t1", "t1", "t2"])),
            call_id=None if kind.startswith("task.") else call,
            attempt_id="a1" if kind.startswith("attempt.") else None,
            payload=payload, payload_text=text,
        ))
    return events


@settings(max_examples=examples(150), deadline=None)
@given(task_histories())
def test_following_event_by_event_equals_projecting_each_prefix(events: list[Event]) -> None:
    """The projector keeps each task's share of its calls as they change (not a pass
    over them per snapshot); after every event its document equals a fresh projection
    of the prefix, tasks' verdicts included."""
    projector = Projector()
    for i, ev in enumerate(events):
        projector.add(ev)
        state = projector.snapshot()
        assert state.as_json("x") == project(events[:i + 1]).as_json("x"), i
        # the case's worst next operation from the kept pending calls equals a full pass
        assert case_verdict(state, 0) == case_verdict(replace(state, pending_positions=None), 0)
