"""A long-lived projection keeps the receipt log's strings and the skeleton's call ids
instead of equal copies: only equal text is ever swapped."""

from __future__ import annotations

from codeai_tui.ledger.receipts import Receipt
from codeai_tui.workstate.evidence import CallEvidence, fold_call_event
from codeai_tui.workstate.receipts import ByKey, share_receipt_strings

SHA = "ab" * 32


def _fold(manifest: dict[str, object], started: dict[str, object]) -> CallEvidence:
    call = CallEvidence("c1", "t1", 1, 0)
    fold_call_event(call, True, "call.requested", 1, None, {"idempotency_key": "k1"}, print)
    fold_call_event(call, False, "call.manifest", 2, None, manifest, print)
    fold_call_event(call, False, "attempt.started", 3, "a1", started, print)
    return call


def test_receipt_strings_are_shared_only_where_equal() -> None:
    r = Receipt("r1", "2026-01-01T00:00:00Z", "".join(["k", "1"]), "".join(["ab"] * 32), 1, 1)
    table = ByKey([r])
    other = "cd" * 32
    shared = _fold({"idempotency_key": "k1", "request_sha256": "ab" * 32},
                   {"request_sha256": other})
    missing = _fold({"idempotency_key": "k1"}, {})
    before = (missing.key, missing.request_sha256, missing.attempts[0].request_sha256)
    for call in (shared, missing):
        share_receipt_strings(call, table)
    assert shared.idempotency_key is r.idempotency_key
    assert shared.request_sha256 is r.body_sha256
    assert shared.attempts[0].request_sha256 == other
    assert shared.attempts[0].request_sha256 is not r.body_sha256
    # a call without a hash keeps none (the key is never taken for the hash)
    assert (missing.key, missing.request_sha256, missing.attempts[0].request_sha256) == before
    assert missing.request_sha256 is None


def test_a_call_with_another_key_keeps_its_own_strings() -> None:
    r = Receipt("r1", "2026-01-01T00:00:00Z", "k2", SHA, 1, 1)
    call = _fold({"idempotency_key": "k1", "request_sha256": "".join(["ab"] * 32)}, {})
    mine = call.request_sha256
    share_receipt_strings(call, ByKey([r]))
    assert call.request_sha256 is mine


def test_a_followed_task_keeps_one_id_object_and_no_empty_lists() -> None:
    """Each event read from SQLite brings its own copy of the task id (and a writer's key
    is the call id again): a projection that follows keeps the task's evidence's id for
    its calls and dicts, the call id for an equal key, and no list for a task that was
    never accepted or completed (three copies and two empty lists cost ~300 bytes a
    task of ten calls)."""
    from codeai_tui.ledger.schema import Event
    from codeai_tui.workstate import Projector

    def own(text: str) -> str:
        return "".join(list(text))  # an equal string, a distinct object

    p = Projector(event_ids_unique=True)
    rows = [("task.created", None, {"title": "t"}),
            ("call.requested", "c1", {"idempotency_key": own("c1")}),
            ("task.claimed", None, {"worker": "w"}),
            ("call.requested", "c2", {"idempotency_key": "k2"})]
    for seq, (kind, call, payload) in enumerate(rows, 1):
        p.add(Event(seq, f"e{seq}", "2026-01-01T00:00:00Z", kind, own("task-1"),
                    own(call) if call else None, payload=payload))
    snap = p.snapshot()
    task = p.tasks["task-1"]
    assert [c.task_id for c in snap.calls] == ["task-1", "task-1"]
    assert all(c.task_id is task.task_id for c in snap.calls)
    assert snap.tasks[0].task_id is task.task_id
    assert snap.calls[0].idempotency_key is snap.calls[0].call_id
    assert snap.calls[1].idempotency_key == "k2"
    assert not isinstance(task.accepted, list) and not isinstance(task.completed, list)
    # accepting and completing still folds as before
    p.add(Event(5, "e5", "2026-01-01T00:00:00Z", "task.accepted", "task-1",
                payload={"acceptance_id": "acc", "call_id": "c1"}))
    p.add(Event(6, "e6", "2026-01-01T00:00:00Z", "task.completed", "task-1",
                payload={"acceptance_id": "acc"}))
    assert task.accepted == [(5, "acc", "c1")] and task.completed == [(6, "acc")]
    assert p.snapshot().tasks[0].next_operation.value == "none"
