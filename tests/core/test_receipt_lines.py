"""The receipt log is parsed with orjson for speed; every line means what the standard
library reads in it (orjson rejects NaN and lone surrogates and reads integers beyond
64 bits as floats: those lines are read again by the standard library)."""

from __future__ import annotations

import json

import pytest

from codeai_tui.ledger.receipts import parse_receipt_lines

FIELDS = '"receipt_id": "r1", "received_at": "t", "idempotency_key": "k", "body_sha256": "s"'


@pytest.mark.parametrize("line", [
    '{' + FIELDS + ', "bytes": 99999999999999999999999}',  # orjson: a float
    '{' + FIELDS + ', "bytes": 12, "extra": NaN}',  # orjson: rejected
    '{"receipt_id": "\\ud800", "received_at": "t", "idempotency_key": "k", '
    '"body_sha256": "s", "bytes": 1}',  # a lone surrogate: orjson rejects it
    '{' + FIELDS + ', "bytes": 1.5}',
    '{' + FIELDS + ', "bytes": 7}',
])
def test_each_line_is_read_as_the_standard_library_reads_it(line: str) -> None:
    log = parse_receipt_lines((line + "\n").encode())
    (receipt,) = log.receipts
    obj = json.loads(line)
    assert receipt.receipt_id == obj["receipt_id"]
    size = obj["bytes"]
    valid = type(size) is int and size >= 0
    assert receipt.bytes == (size if valid else -1)
    assert bool(log.problems) is not valid
