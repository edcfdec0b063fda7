"""The slimmed records keep their meaning: a call's attempts read the same whether it
holds one or several, a copy folded later leaves the original alone, verdicts stay
immutable, and the console's read path never loads the signature library."""

from __future__ import annotations

import subprocess
import sys

import pytest

from codeai_tui.workstate.evidence import CallEvidence, fold_call_event
from codeai_tui.workstate.ladder import classify_call
from codeai_tui.workstate.vocab import CallStage

SHA = "ab" * 32


def _call(*attempts: str) -> CallEvidence:
    call = CallEvidence("c1", "t1", 1, 0)
    problems: list[str] = []
    fold_call_event(call, True, "call.requested", 1, None, {"idempotency_key": "k1"},
                    problems.append)
    fold_call_event(call, False, "call.manifest", 2, None,
                    {"idempotency_key": "k1", "request_sha256": SHA}, problems.append)
    for i, aid in enumerate(attempts):
        fold_call_event(call, False, "attempt.started", 3 + 2 * i, aid,
                        {"request_sha256": SHA, "attempt_no": i + 1}, problems.append)
    assert problems == []
    return call


def test_attempts_read_alike_for_none_one_and_several() -> None:
    assert list(_call().attempts) == []
    one = _call("a1")
    assert [a.attempt_id for a in one.attempts] == ["a1"]
    assert one.last_attempt() is one.attempts[0]
    three = _call("a1", "a2", "a3")
    assert [a.attempt_id for a in three.attempts] == ["a1", "a2", "a3"]
    assert three.last_attempt() is three.attempts[2]
    assert [a.attempt_id for a in three.started_attempts()] == ["a1", "a2", "a3"]


def test_a_clone_folded_later_leaves_the_original_alone() -> None:
    original = _call("a1")
    before = classify_call(original, anomalous=False)
    copy = original.clone()
    assert copy == original
    fold_call_event(copy, False, "attempt.observed", 9, "a1", {"transport": {"status": 200}},
                    print)
    fold_call_event(copy, False, "attempt.started", 10, "a2", {"request_sha256": SHA}, print)
    assert [a.attempt_id for a in copy.attempts] == ["a1", "a2"]
    assert [a.attempt_id for a in original.attempts] == ["a1"]
    assert original.attempts[0].observed_seq is None
    assert classify_call(original, anomalous=False) == before
    assert before.stage is CallStage.EFFECT_UNKNOWN


def test_a_verdict_is_immutable_and_flags_anomalies_by_copy() -> None:
    state = classify_call(_call("a1"), anomalous=False)
    with pytest.raises(AttributeError):
        state.anomalous = True  # type: ignore[misc]
    flagged = state.with_anomalous(True)
    assert (flagged.anomalous, state.anomalous) == (True, False)
    assert (flagged.stage, flagged.next_operation, flagged.provider_effect) == (
        state.stage, state.next_operation, state.provider_effect)
    assert flagged != state and flagged.with_anomalous(False) == state


def test_reading_a_case_does_not_load_the_signature_library() -> None:
    # cryptography costs ~10 MB of memory; it loads where a key is used, not before
    code = ("import sys, codeai_tui.console.model, codeai_tui.app.app, codeai_tui.read.inspection;"
            " print('cryptography' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_a_task_waiting_on_a_call_words_its_reason_when_read() -> None:
    """A task whose next step is a call in flight keeps that call's verdict, not a text of
    its reason (~220 bytes a task while following); the reason, equality, hash and a
    pickle (what another process gets) read as the text would."""
    import gc
    import pickle
    import tracemalloc

    from codeai_tui.workstate.evidence import TaskEvidence
    from codeai_tui.workstate.ladder import TaskRollup, classify_task, contribution

    calls = [classify_call(_call(f"a{i}")) for i in range(2000)]
    assert all(c.stage is CallStage.EFFECT_UNKNOWN for c in calls)
    rollups = []
    for c in calls:
        rollup = TaskRollup()
        rollup.take(contribution(c))
        rollups.append(rollup)
    tasks = [TaskEvidence(f"t{i}", 1) for i in range(2000)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        states = [classify_task(t, r) for t, r in zip(tasks, rollups, strict=True)]
        per_task = (tracemalloc.get_traced_memory()[0] - before) / len(states)
    finally:
        tracemalloc.stop()
    assert per_task <= 120, per_task  # the verdict object (~96) and the list's pointer
    first = states[0]
    assert first.reason == f"c1: {calls[0].reason}" and "effect" in first.reason.lower()
    copy = pickle.loads(pickle.dumps(first))
    assert copy == first and hash(copy) == hash(first) and copy.reason == first.reason
    assert type(copy.because) is str  # (the text crossed, not the call and its evidence)
    assert first.as_json()["reason"] == first.reason


def test_a_task_waiting_on_one_call_in_flight_keeps_no_table_for_it() -> None:
    """Following a writer whose tasks each wait on a call in flight: the projection keeps
    per task its evidence, the call's evidence and verdicts, and its calls' share of
    the task's verdict, where one unresolved call needs no table of its own (~1,400
    bytes a task with one, ~1,170 without, counting what recurs per task)."""
    import gc
    import tracemalloc

    from codeai_tui.ledger.schema import Event
    from codeai_tui.workstate import Projector

    def events(tasks: int) -> list[Event]:
        out: list[Event] = []
        for t in range(tasks):
            for kind, att, p in (
                    ("task.created", None, {"title": "t"}),
                    ("call.requested", None, {"idempotency_key": f"k{t}"}),
                    ("call.manifest", None, {"idempotency_key": f"k{t}", "request_sha256": SHA}),
                    ("attempt.started", f"c{t}-a1", {"request_sha256": SHA})):
                seq = len(out) + 1
                out.append(Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, f"t{t}",
                                 None if kind == "task.created" else f"c{t}", att, payload=p))
        return out

    evs = events(3000)
    projector = Projector(event_ids_unique=True)
    projector.feed(evs[:4000])  # (the first thousand tasks: the tables have grown)
    projector.snapshot()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        projector.feed(evs[4000:])
        state = projector.snapshot()
        gc.collect()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    # what recurs per task (a line allocating more than twice): a table that doubles
    # once in the window (a dict, an array, the interpreter's interned strings, whose
    # size depends on the tests run before in the process) is not a task's cost
    grown = sum(d.size_diff for d in after.compare_to(before, "lineno") if d.count_diff > 2)
    per_task = grown / 2000
    assert per_task <= 1280, per_task
    assert len(state.tasks) == 3000 and all(t.subject_id == f"c{i}"
                                            for i, t in enumerate(state.tasks))
