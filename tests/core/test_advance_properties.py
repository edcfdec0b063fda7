"""Properties of the advance actions with resume and reconcile, run in-process against a
real provider: whatever sequence an operator (or a script) tries, no request is sent
for an attempt whose predecessor's effect is unknown, or for a received effect without
a recorded acceptance; a refused action appends nothing; every receipt is covered."""

from __future__ import annotations

import itertools
import socket
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeai_tui.actions import advance
from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.reconcile import reconcile_call
from codeai_tui.actions.resume import resume_call
from codeai_tui.lab.provider import ProviderProcess
from codeai_tui.lab.reliability.cases import (
    ADVANCE_STAGES,
    add_call,
    advance_call,
    case_base_url,
    make_call_case,
)
from codeai_tui.lab.reliability.sendgate import unsafe_sends
from codeai_tui.ledger import CaseConfig, LedgerReader, LedgerWriter, ProviderConfig
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.ledger.schema import Event
from codeai_tui.workstate import Projector

_ROOT: dict[str, Any] = {}
_names = itertools.count()
_TALLY: Counter[str] = Counter()
STAGES = ("manifest", *ADVANCE_STAGES)
VERBS = ("resume", "reconcile-received", "reconcile-not", "reinterpret", "redecide",
         "accept", "finalize", "next", "next-unreachable")
# "follow": do what the projection names (so sequences get deep), picking between the
# choices an operator has there; the other verbs are tried blindly
FOLLOW = {
    "start_call": ("resume",), "reconcile_effect": ("reconcile-received", "reconcile-not"),
    "reinterpret": ("reinterpret",), "redecide": ("redecide",),
    "decide_duplicate": ("accept", "finalize"), "finalize": ("finalize",),
    "start_next_attempt": ("next", "next-unreachable"),
}


@pytest.fixture(scope="module", autouse=True)
def shared_provider() -> Iterator[None]:
    with tempfile.TemporaryDirectory(prefix="advprops-") as root, \
            ProviderProcess(receipts_root=Path(root), fail_first=2) as proc:
        with socket.socket() as s:  # a port nothing listens on: the connection fails
            s.bind(("127.0.0.1", 0))
            dead = s.getsockname()[1]
        _ROOT.update(root=Path(root), url=proc.base_url, dead=f"http://127.0.0.1:{dead}/v1")
        yield
        _ROOT.clear()


def _events(case: Path) -> list[Event]:
    with LedgerReader(case) as reader:
        return reader.events()


def _case(stages: list[str]) -> Path:
    case = _ROOT["root"] / f"case-{next(_names)}"
    make_call_case(case, _ROOT["url"], call_id="call-1")
    config = CaseConfig(ProviderConfig(base_url=case_base_url(_ROOT["url"], case),
                                       model="synthetic-small"))
    for n, upto in enumerate(stages, start=1):
        call_id = f"call-{n}"
        if n > 1:
            with LedgerWriter.open(case) as writer:
                add_call(case, writer, config, call_id)
        if upto != "manifest":
            advance_call(case, call_id, upto)
    return case


def _act(case: Path, verb: str, call_id: str, n: int) -> None:
    if verb == "resume":
        resume_call(case, call_id)
    elif verb.startswith("reconcile"):
        reconcile_call(case, call_id, "received" if verb.endswith("received") else "not_received")
    elif verb == "reinterpret":
        advance.reinterpret(case, call_id)
    elif verb == "redecide":
        advance.redecide(case, call_id, max_attempts=n)
    elif verb == "accept":
        advance.redecide(case, call_id, accept_duplicate=True)
    elif verb == "finalize":
        advance.finalize(case, call_id)
    else:
        base = _ROOT["dead"] if verb == "next-unreachable" else None
        advance.next_attempt(case, call_id, base_url=base, max_attempts=n)


def _covered(case: Path, events: list[Event]) -> bool:
    """Every receipt has an attempt.started with its key and hash (none sent unrecorded)."""
    keys: dict[str, str] = {}
    for e in events:
        if e.kind == "call.manifest" and e.call_id:
            keys[e.call_id] = str((e.payload or {}).get("idempotency_key"))
    started = Counter((keys.get(e.call_id or ""), (e.payload or {}).get("request_sha256"))
                      for e in events if e.kind == "attempt.started")
    sent = Counter((r.idempotency_key, r.body_sha256) for r in read_receipts(case).receipts)
    return all(started[k] >= n for k, n in sent.items())


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(stages=st.lists(st.sampled_from(STAGES), min_size=1, max_size=4),
       steps=st.lists(st.tuples(st.sampled_from(("follow", "follow", "follow", *VERBS)),
                                st.integers(1, 4), st.integers(1, 3)),
                      min_size=1, max_size=12))
def test_no_sequence_sends_past_the_gate(stages: list[str],
                                         steps: list[tuple[str, int, int]]) -> None:
    case = _case(stages)
    for verb, which, n in steps:
        call_id = f"call-{1 + (which - 1) % len(stages)}"
        before = _events(case)
        if verb == "follow":
            projector = Projector()
            projector.feed(before)
            calls = [c for c in projector.calls if c.startswith("call-")]
            call_id = calls[(which - 1) % len(calls)]
            options = FOLLOW.get(projector.call_state(call_id).next_operation.value, ("finalize",))
            verb = options[n % len(options)]
        receipts = len(read_receipts(case).receipts)
        try:
            _act(case, verb, call_id, n)
            _TALLY[f"ran {verb}"] += 1
        except ActionRefused:
            assert _events(case) == before  # refused: nothing appended
            assert len(read_receipts(case).receipts) == receipts  # and nothing sent
            _TALLY["refused"] += 1
        events = _events(case)
        assert unsafe_sends(events) == []
        assert _covered(case, events)


def test_the_sequences_were_not_vacuous() -> None:
    if not _TALLY:
        pytest.skip("run together with test_no_sequence_sends_past_the_gate")
    ran = {k for k in _TALLY if k.startswith("ran ")}
    assert {"ran next", "ran reinterpret", "ran redecide", "ran finalize"} <= ran, _TALLY
    assert _TALLY["refused"] > 0


def _row(seq: int, kind: str, attempt: str | None, payload: dict[str, Any]) -> Event:
    import json

    from codeai_tui.ledger.schema import event_from_row
    return event_from_row((seq, f"e{seq}", "2026-01-01T00:00:00Z", kind, "t", "c", attempt,
                           None, json.dumps(payload)))


@pytest.mark.parametrize(("between", "problem"), [
    ([], "effect unknown"),
    ([("attempt.reconciled", {"finding": "received"})], "received without accept_duplicate"),
    ([("attempt.reconciled", {"finding": "received"}),
      ("attempt.retry_decided", {"decision": "retry"})], "received without accept_duplicate"),
    ([("attempt.observed", {"transport": {"status": 503}})], "observed without a retry decision"),
    ([("attempt.reconciled", {"finding": "not_received"})], None),
    ([("attempt.reconciled", {"finding": "received"}),
      ("attempt.retry_decided", {"decision": "retry", "accept_duplicate": True})], None),
    ([("attempt.observed", {"transport": {"status": 503}}),
      ("attempt.retry_decided", {"decision": "retry"})], None),
])
def test_the_send_gate_check_catches_what_it_should(
        between: list[tuple[str, dict[str, Any]]], problem: str | None) -> None:
    events = [_row(1, "attempt.started", "a1", {"attempt_no": 1})]
    events += [_row(2 + i, kind, "a1", p) for i, (kind, p) in enumerate(between)]
    events.append(_row(len(events) + 1, "attempt.started", "a2", {"attempt_no": 2}))
    found = unsafe_sends(events)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0]
