"""Sharing the receipt log's strings with the folds substitutes equal text only."""

from __future__ import annotations

from codeai_tui.ledger.receipts import Receipt
from codeai_tui.workstate.evidence import (
    CallEvidence,
    fold_call_event,
    sharing_call_ids,
    sharing_receipt_strings,
)
from codeai_tui.workstate.receipts import receipts_by_key

SHA = "ab" * 32


def _fold(manifest: dict[str, object], started: dict[str, object]) -> CallEvidence:
    call = CallEvidence("c1", "t1", 1, 0)
    fold_call_event(call, True, "call.requested", 1, None, {"idempotency_key": "k1"}, print)
    fold_call_event(call, False, "call.manifest", 2, None, manifest, print)
    fold_call_event(call, False, "attempt.started", 3, "a1", started, print)
    return call


def test_receipt_strings_are_shared_only_where_equal() -> None:
    r = Receipt("r1", "2026-01-01T00:00:00Z", "".join(["k", "1"]), "".join(["ab"] * 32), 1, 1)
    other = "cd" * 32
    with sharing_receipt_strings(receipts_by_key([r])):
        shared = _fold({"idempotency_key": "k1", "request_sha256": "ab" * 32},
                       {"request_sha256": other})
        missing = _fold({"idempotency_key": "k1"}, {})
    assert shared.idempotency_key is r.idempotency_key
    assert shared.request_sha256 is r.body_sha256
    assert shared.attempts[0].request_sha256 == other
    # a manifest without a hash keeps none (the key is never taken for the hash)
    assert missing.request_sha256 is None and missing.attempts[0].request_sha256 is None
    plain = _fold({"idempotency_key": "k1"}, {})
    assert (plain.key, plain.request_sha256) == (missing.key, missing.request_sha256)


def test_call_ids_are_shared_only_where_equal() -> None:
    ids = ["".join(["c", "1"]), "c2"]
    with sharing_call_ids(ids):
        same = CallEvidence("c1", "t1", 1, 0)
        moved = CallEvidence("c9", "t1", 1, 1)
        beyond = CallEvidence("c3", "t1", 1, 5)
    assert same.call_id is ids[0]
    assert moved.call_id == "c9" and beyond.call_id == "c3"
