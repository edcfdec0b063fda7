"""The receipt log is parsed with orjson for speed; every line means what the standard
library reads in it (orjson rejects NaN and lone surrogates and reads integers beyond
64 bits as floats: those lines are read again by the standard library)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeai_tui.ledger import receipts as receipts_module
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


_LINE = st.one_of(
    st.builds(lambda n, size: json.dumps({"receipt_id": f"r{n}", "received_at": "t",
                                          "idempotency_key": "k", "body_sha256": "s",
                                          "bytes": size}), st.integers(0, 99),
              st.sampled_from([1, -1])),
    st.sampled_from(["not json", "[1]", "", "   ", '{"receipt_id": "cut'])
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, max_size=30), st.booleans(), st.integers(1, 64))
def test_a_log_parsed_a_few_bytes_at_a_time_reads_as_one_parsed_whole(
        lines: list[str], clean_end: bool, batch: int) -> None:
    data = "\n".join(lines).encode() + (b"\n" if clean_end and lines else b"")
    whole = parse_receipt_lines(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(receipts_module, "PARSE_BATCH", batch)
        batched = parse_receipt_lines(data)
    assert list(batched.receipts) == list(whole.receipts)
    assert (batched.problems, batched.truncated_tail) == (whole.problems, whole.truncated_tail)
    # and what a reader line by line finds: each line's number, a last line without its
    # newline that does not parse taken as cut short, not as a problem
    expected_ids, expected_problems, cut_short = [], [], False
    for no, line in enumerate(lines, start=1):
        try:
            obj = json.loads(line) if line.strip() else None
        except ValueError:
            if no == len(lines) and not clean_end:
                cut_short = True
                continue
            expected_problems.append(no)
            continue
        if isinstance(obj, dict):
            expected_ids.append(obj["receipt_id"])
            if obj["bytes"] < 0:
                expected_problems.append(no)
        elif obj is not None:
            expected_problems.append(no)
    assert [r.receipt_id for r in batched.receipts] == expected_ids
    assert [no for no, _problem in batched.problems] == expected_problems
    assert batched.truncated_tail is cut_short


@pytest.mark.parametrize("ending", [b"\n", b""])
def test_a_line_longer_than_any_receipt_is_reported_and_not_held(tmp_path: Path,
                                                                  ending: bytes) -> None:
    """A log of one endless line (a hostile or broken provider) is read a batch at a time
    without holding the line: past LONGEST_LINE it is skipped to its end, reported once
    with its number, and the receipts around it are read as ever."""
    def line(rid: str) -> bytes:
        return json.dumps({"receipt_id": rid, "received_at": "2026-09-13T12:00:00Z",
                           "idempotency_key": "k", "body_sha256": "s", "bytes": 1}).encode()
    log = tmp_path / "provider" / "receipts.jsonl"
    log.parent.mkdir()
    long = b"x" * 5000
    log.write_bytes(line("r1") + b"\n" + long + b"\n" + line("r2") + b"\n" + long + ending)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(receipts_module, "PARSE_BATCH", 64)
        mp.setattr(receipts_module, "LONGEST_LINE", 1000)
        got = receipts_module.read_receipts(tmp_path)
    assert [r.receipt_id for r in got.receipts] == ["r1", "r2"]
    assert got.problems == ((2, "a line longer than 1000 bytes: not read"),
                            (4, "a line longer than 1000 bytes: not read"))
