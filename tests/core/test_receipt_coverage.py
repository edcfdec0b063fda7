"""The receipt coverage `inspect --json` keeps in the receipt log's columns
(workstate.receipts.ReceiptCoverage) gives the same receipt check, and the same
covering attempt for every pair the log holds, as the coverage dict of attempt objects
(`coverage_pairs`): on logs with repeated keys, several hashes per key, several
attempts per key started in any order, and half the calls covered in a forked helper
and handed back pickled."""

from __future__ import annotations

import pickle
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codeai_tui.ledger.receipts import Receipt, ReceiptLog, Receipts
from codeai_tui.workstate.evidence import AttemptEvidence, CallEvidence
from codeai_tui.workstate.receipts import (
    ByKey,
    ReceiptCoverage,
    add_coverage,
    check_log,
    coverage_pairs,
    covering,
    merge_coverage,
)
from tests.support import examples

KEYS = ["k1", "k2", "k3", "k4"]
SHAS = [c * 64 for c in "abc"]


@st.composite
def calls_and_receipts(draw: st.DrawFn) -> tuple[list[CallEvidence], list[Receipt]]:
    """Calls with 0-3 attempts under a few keys (started or not, at distinct seqs in any
    order), and receipts of those keys and hashes and of others, repeated."""
    seqs = iter(draw(st.permutations(range(1, 200))))
    calls = []
    for n in range(draw(st.integers(0, 12))):
        call = CallEvidence(f"c{n}", "t", next(seqs),
                            idempotency_key=draw(st.sampled_from([*KEYS, None])))
        for a in range(draw(st.integers(0, 3))):
            first = next(seqs)
            att = AttemptEvidence(f"c{n}-a{a}", first,
                                  request_sha256=draw(st.sampled_from([*SHAS, None])))
            if draw(st.booleans()):
                att.started_off = draw(st.integers(0, 3))
            call.add_attempt(att)
        calls.append(call)
    receipts = [Receipt(f"r{i}", f"2026-01-01T00:00:{i % 60:02d}Z",
                        draw(st.sampled_from([*KEYS, "other"])),
                        draw(st.sampled_from([*SHAS, "d" * 64])), 1, i + 1)
                for i in range(draw(st.integers(0, 14)))]
    return calls, receipts


def _cover_of(have: Any) -> tuple[str, int, str] | None:
    return None if have is None else (have.attempt_id, have.started_seq, have.request_sha256)


@settings(max_examples=examples(300), deadline=None)
@given(calls_and_receipts(), st.data())
def test_columns_give_the_dicts_check_and_covers(drawn: Any, data: st.DataObject) -> None:
    calls, receipts = drawn
    log = ReceiptLog(True, Receipts(receipts))
    table = ByKey(log.receipts)
    whole = coverage_pairs(calls)
    # the first calls here, the rest in "helpers" whose coverages come back pickled (at
    # the helpers' protocol and at pickle's default)
    mid = data.draw(st.integers(0, len(calls)))
    end = data.draw(st.integers(mid, len(calls)))
    here, helper, second = (ReceiptCoverage(table) for _ in range(3))
    for part, coverage in ((calls[:mid], here), (calls[mid:end], helper),
                           (calls[end:], second)):
        for call in part:
            add_coverage(coverage, call)
    merge_coverage(here, pickle.loads(pickle.dumps(helper, protocol=5)))  # type: ignore[arg-type]
    merge_coverage(here, pickle.loads(pickle.dumps(second)))  # type: ignore[arg-type]
    # and a merged coverage pickled on (all its covers in one column again)
    again = ReceiptCoverage(table)
    merge_coverage(again, pickle.loads(pickle.dumps(here, protocol=5)))  # type: ignore[arg-type]

    for upto in (None, data.draw(st.integers(0, 200))):
        assert check_log(log, here, upto=upto) == check_log(log, whole, upto=upto), upto
        assert check_log(log, again, upto=upto) == check_log(log, whole, upto=upto), upto
    for r in receipts:
        pair = (r.idempotency_key, r.body_sha256)
        assert _cover_of(covering(here, *pair)) == _cover_of(covering(whole, *pair)), pair


def test_the_earliest_started_attempt_covers_whatever_order_calls_come_in() -> None:
    """Three calls share a key and hash; the one whose attempt started first covers
    both receipts of the pair, whichever call is added first."""
    def call(n: int, started: int) -> CallEvidence:
        c = CallEvidence(f"c{n}", "t", started - 1, idempotency_key="k")
        c.add_attempt(AttemptEvidence(f"c{n}-a", started - 1, started_off=1,
                                      request_sha256="a" * 64))
        return c

    rs = [Receipt(f"r{i}", "2026-01-01T00:00:00Z", "k", "a" * 64, 1, i + 1) for i in range(2)]
    log = ReceiptLog(True, Receipts(rs))
    coverage = ReceiptCoverage(ByKey(log.receipts))
    for c in (call(1, 30), call(2, 10), call(3, 20)):
        add_coverage(coverage, c)
    check = check_log(log, coverage)
    assert [check.covered_by.get(r) for r in ("r0", "r1")] == ["c2-a", "c2-a"]
    assert _cover_of(coverage.get("k")) == ("c2-a", 10, "a" * 64)
    assert check.duplicates == (("r0", "r1"),)
