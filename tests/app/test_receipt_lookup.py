"""The Receipts pane finds a row by its key without a key -> position table: by the
receipt's line number (a log's receipts are in line order), checked against the id."""

from __future__ import annotations

from codeai_tui.app.widgets.receipts_pane import receipt_key, receipt_lookup
from codeai_tui.ledger.receipts import parse_receipt_lines


def _log() -> bytes:
    lines = []
    for i in range(40):
        if i % 7 == 3:
            lines.append(b"not json")  # a problem line: line numbers skip it
        lines.append(b'{"receipt_id": "r-%d", "received_at": "2026-01-01T00:00:00Z", '
                     b'"idempotency_key": "k%d", "body_sha256": "%s", "bytes": 1}'
                     % (i, i % 5, b"ab" * 32))
    lines.append(b'{"receipt_id": "r-5", "received_at": "2026-01-01T00:00:01Z", '
                 b'"idempotency_key": "k0", "body_sha256": "x", "bytes": 1}')  # id reused
    return b"\n".join(lines) + b"\n"


def test_every_row_is_found_by_its_key() -> None:
    receipts = parse_receipt_lines(_log()).receipts
    lookup = receipt_lookup(receipts)
    assert len(receipts) == 41
    for i, r in enumerate(receipts):
        assert lookup(receipt_key(r)) == i


def test_a_key_naming_no_row_finds_nothing() -> None:
    receipts = parse_receipt_lines(_log()).receipts
    lookup = receipt_lookup(receipts)
    line = receipts[10].line_no
    assert lookup(f"{line}:r-999") is None  # the line holds another receipt
    assert lookup("9999:r-1") is None  # past the end
    assert lookup("4:r-3") is None  # a problem line, not a receipt
    assert lookup("r-3") is None and lookup("x:r-3") is None and lookup("") is None
    assert receipt_lookup(())("1:r-0") is None
