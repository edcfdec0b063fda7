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
