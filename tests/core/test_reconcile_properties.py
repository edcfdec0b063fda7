"""Safety of the reconcile rungs over arbitrary sequences of one call's events: the
projection never offers to send a request for an attempt whose effect is unknown, nor
for one reconciled as received without a recorded acceptance of the duplicate. The
check reads the raw events itself (not the projection's evidence records)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codeai_tui.ledger.schema import Event
from codeai_tui.workstate import Projector

SHA = "ab" * 32
HEAD = [("call.requested", None, {"idempotency_key": "k"}),
        ("call.manifest", None, {"idempotency_key": "k", "request_sha256": SHA})]
STEPS = st.sampled_from([
    ("attempt.started", {"attempt_no": 1, "request_sha256": SHA}),
    ("attempt.observed", {"transport": {"status": 500}}),
    ("attempt.interpreted", {"outcome": "retryable_error"}),
    ("attempt.retry_decided", {"decision": "retry"}),
    ("attempt.retry_decided", {"decision": "retry", "accept_duplicate": True}),
    ("attempt.retry_decided", {"decision": "stop"}),
    ("attempt.reconciled", {"finding": "received", "evidence": ["r-1"]}),
    ("attempt.reconciled", {"finding": "not_received", "evidence": []}),
    ("attempt.completed", {"status": "failed"}),
])
SENDS = {"start_next_attempt", "start_call"}


def _events(steps: list[tuple[tuple[str, dict[str, Any]], str]]) -> list[Event]:
    rows = [(k, a, p) for k, a, p in HEAD] + [(k, a, p) for (k, p), a in steps]
    return [Event(seq=i, event_id=f"e{i}", recorded_at="2026-09-13T12:00:00Z", kind=k,
                  task_id="t1", call_id="c1", attempt_id=a, payload=p)
            for i, (k, a, p) in enumerate(rows, start=1)]


def _last_started(events: list[Event]) -> tuple[str | None, list[Event]]:
    """The attempt whose (first) attempt.started is latest, and its own events: a second
    attempt.started of one attempt is an anomaly and does not move it."""
    started: list[str | None] = []
    for e in events:
        if e.kind == "attempt.started" and e.attempt_id not in started:
            started.append(e.attempt_id)
    if not started:
        return None, []
    aid = started[-1]
    return aid, [e for e in events if e.attempt_id == aid]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(STEPS, st.sampled_from(["a1", "a2"])), max_size=10))
def test_nothing_sends_for_an_unknown_or_unaccepted_received_effect(
        steps: list[tuple[tuple[str, dict[str, Any]], str]]) -> None:
    events = _events(steps)
    projector = Projector()
    for n, ev in enumerate(events, start=1):
        projector.add(ev)
        verdict = projector.call_state("c1")
        aid, own = _last_started(events[:n])
        if aid is None or verdict.next_operation.value not in SENDS:
            continue
        # a send is offered: the attempt's own events must justify it
        kinds = [e.kind for e in own]
        observed = "attempt.observed" in kinds
        reconciled = next((e.payload for e in own if e.kind == "attempt.reconciled"
                           and e.payload and e.payload.get("finding") in
                           ("received", "not_received")), None)
        # the latest decision is the one in force (as for v1's decision=retry|stop)
        decided = next((e.payload for e in reversed(own) if e.kind == "attempt.retry_decided"),
                       None)
        # docs/ledger.md rung 6: unknown while none of observed / interpreted / retry_decided /
        # completed exists (and, docs/reconcile.md, no finding was recorded)
        answered = observed or any(k in kinds for k in (
            "attempt.interpreted", "attempt.retry_decided", "attempt.completed"))
        assert answered or reconciled is not None, (
            f"send offered for {aid} whose effect is unknown: {kinds}")
        if not observed and reconciled is not None and reconciled["finding"] == "received":
            assert decided is not None and decided.get("decision") == "retry" \
                and decided.get("accept_duplicate") is True, (
                f"send offered for {aid} received without accepting a duplicate: {kinds}")


def test_a_received_effect_waits_for_an_explicit_acceptance() -> None:
    """The example the property is about, spelled out: retry without acceptance stays at
    decide_duplicate; the acceptance on a fresh attempt is what permits the retry."""
    started = ("attempt.started", {"attempt_no": 1, "request_sha256": SHA})
    received = ("attempt.reconciled", {"finding": "received", "evidence": ["r-1"]})
    retry = ("attempt.retry_decided", {"decision": "retry"})
    projector = Projector()
    projector.feed(_events([(started, "a1"), (received, "a1"), (retry, "a1")]))
    assert projector.call_state("c1").next_operation.value == "decide_duplicate"
