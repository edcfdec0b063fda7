"""The receipt log kept in columns gives back exactly what each line said: every
received_at text (packed or kept as text), sizes beyond 64 bits, equality with plain
receipts, and the same cut-off as comparing parsed times one by one."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from codeai_tui.ledger.receipts import (
    Receipt,
    ReceiptLog,
    Receipts,
    micros_of,
    parse_receipt_lines,
)
from codeai_tui.workstate.receipts import (
    ByKey,
    check_coverage,
    check_receipts,
    parse_time,
    receipts_before,
)
from tests.support import held_by

SHA = "ab" * 32

_utc_texts = st.builds(
    lambda dt, digits, z: f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:"
    f"{dt.minute:02d}:{dt.second:02d}"
    + (f".{dt.microsecond:06d}"[:digits + 1] if digits else "") + z,
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.integers(0, 6), st.sampled_from(["Z", "+00:00"]))
_times = st.one_of(
    _utc_texts,
    st.text(max_size=40),  # anything a hostile log may hold
    st.sampled_from(["2026-02-29T00:00:00Z", "2024-02-29T00:00:00Z", "0000-01-01T00:00:00Z",
                     "2026-01-01T24:00:00Z", "2026-01-01T00:00:60Z", "2026-13-01T00:00:00Z",
                     "2026-01-01T00:00:00.1234567Z", "2026-01-01T00:00:00+01:00",
                     "2026-01-01T00:00:00", "2026-01-01 00:00:00Z", "\u0662026-01-01T00:00:00Z",
                     "2026-01-01T00:00:00z", ""]))


def _receipt(i: int, when: str, size: int = 1) -> Receipt:
    return Receipt(f"r-{i}", when, f"k{i % 3}", SHA, size, i + 1)


@settings(max_examples=100, deadline=None)
@given(st.lists(_times, max_size=12))
def test_every_received_at_comes_back_as_written(times: list[str]) -> None:
    plain = [_receipt(i, t) for i, t in enumerate(times)]
    cols = Receipts(plain)
    assert list(cols) == plain
    assert [cols.received_at(i) for i in range(len(cols))] == times
    for i, text in enumerate(times):
        micros = cols.received_micros(i)
        parsed = parse_time(text)
        if micros is not None:  # packed: the same instant the text parses to
            assert parsed is not None and micros == micros_of(parsed)


@settings(max_examples=100, deadline=None)
@given(st.lists(_times, max_size=12), _utc_texts,
       st.sampled_from([UTC, timezone(timedelta(hours=5)),
                        timezone(timedelta(hours=-3, minutes=-30))]))
def test_the_cut_off_equals_comparing_parsed_times(times: list[str], cut: str,
                                                   tz: timezone) -> None:
    limit = parse_time(cut)
    assert limit is not None
    next_recorded_at = limit.astimezone(tz).isoformat() if 1 < limit.year < 9999 else cut
    log = ReceiptLog(True, Receipts(_receipt(i, t) for i, t in enumerate(times)))
    bound = parse_time(next_recorded_at)
    expected = [r for r in log.receipts
                if (when := parse_time(r.received_at)) is None or when < bound]  # type: ignore[operator]
    assert list(receipts_before(log, next_recorded_at).receipts) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(_utc_texts, max_size=12), st.integers(0, 12), st.booleans(), _utc_texts,
       st.lists(_utc_texts, max_size=3))
def test_a_cut_of_a_log_in_time_order_equals_comparing_parsed_times(
        times: list[str], read_first: int, swap: bool, cut: str, later: list[str]) -> None:
    """A provider logs in the order it receives, so its receipts' times rise: the cut is
    a prefix then, found without a pass. The log read in two goes, with or without one
    receipt out of order, and cut again after more were read: the same receipts as
    comparing every parsed time."""
    times = sorted(times, key=lambda t: parse_time(t))  # type: ignore[arg-type, return-value]
    if swap and len(times) > 1 and parse_time(times[0]) != parse_time(times[-1]):
        times[0], times[-1] = times[-1], times[0]
    rows = [(r.receipt_id, r.received_at, r.idempotency_key, r.body_sha256, r.bytes, r.line_no)
            for r in (_receipt(i, t) for i, t in enumerate(times + later))]
    cols = Receipts()
    cols.extend(rows[:read_first])
    for more in (rows[read_first:len(times)], rows[len(times):]):
        cols.extend(more)
        log = ReceiptLog(True, cols)
        bound = parse_time(cut)
        expected = [r for r in log.receipts
                    if (when := parse_time(r.received_at)) is None or when < bound]  # type: ignore[operator]
        assert list(receipts_before(log, cut).receipts) == expected


def test_a_cut_before_year_one_keeps_only_unreadable_times() -> None:
    # the limit lies before 0001-01-01 UTC (a hostile recorded_at): a receipt whose time
    # cannot be read is still kept, never hidden
    plain = [_receipt(0, "0001-01-01T00:00:00Z"), _receipt(1, "yesterday"),
             _receipt(2, "2026-01-01T00:00:00+02:00")]
    log = ReceiptLog(True, Receipts(plain))
    assert list(receipts_before(log, "0001-01-01T01:00:00+05:00").receipts) == [plain[1]]


def test_sizes_beyond_64_bits_and_slices_survive() -> None:
    plain = [_receipt(0, "2026-01-01T00:00:00Z", 2**70), _receipt(1, "odd", 5),
             _receipt(2, "2026-01-01T00:00:01.5Z", -1)]
    cols = Receipts(plain)
    assert cols == plain and plain == list(cols) and cols == tuple(plain)
    assert cols[0].bytes == 2**70 and cols[-1] == plain[-1]
    assert list(cols[:2]) == plain[:2] and list(cols[:0]) == []
    assert list(cols[1:]) == plain[1:] and list(cols.take([2, 0])) == [plain[2], plain[0]]
    assert cols != plain[:2] and cols != "abc"


def test_a_log_parses_into_the_same_receipts() -> None:
    lines = [b'{"receipt_id": "r-1", "received_at": "2026-11-29T00:00:00.166Z", '
             b'"idempotency_key": "k", "body_sha256": "%s", "bytes": 100}' % SHA.encode(),
             b'{"receipt_id": 7, "received_at": "yesterday", "idempotency_key": "k", '
             b'"body_sha256": "%s", "bytes": 18446744073709551617}' % SHA.encode()]
    log = parse_receipt_lines(b"\n".join(lines) + b"\n")
    assert list(log.receipts) == [
        Receipt("r-1", "2026-11-29T00:00:00.166Z", "k", SHA, 100, 1),
        Receipt("(line 2)", "yesterday", "k", SHA, 18446744073709551617, 2)]
    assert log.problems == ((2, "receipt lacks or mistypes receipt_id"),)


def test_by_key_finds_each_key_in_log_order() -> None:
    plain = [Receipt(f"r-{i}", "2026-01-01T00:00:00Z", k, s, 1, i + 1)
             for i, (k, s) in enumerate([("b", "x"), ("a", "x"), ("b", "y"), ("b", "x"),
                                         ("c", "z")])]
    table = ByKey(plain)
    assert table.positions("b") == [0, 2, 3]
    assert table.positions("a") == [1] and table.positions("zz") == []
    assert table.matching("b", "x") == [0, 3] and table.matching("c", "x") == []
    dup = plain + [Receipt("r-9", "2026-01-01T00:00:00Z", "a", "x", 1, 9),
                   Receipt("r-10", "2026-01-01T00:00:00Z", "b", "x", 1, 10)]
    expected = (("r-0", "r-3", "r-10"), ("r-1", "r-9"))
    assert check_receipts(dup, []).duplicates == expected  # counted (time travel)
    assert check_coverage(dup, {}, by_key=ByKey(dup)).duplicates == expected  # from the table
    assert ByKey(dup).repeated_keys() == ["a", "b"]
    assert datetime(2026, 1, 1, tzinfo=UTC) == parse_time("2026-01-01T00:00:00Z")


def test_each_receipt_has_its_own_cover_when_ids_repeat() -> None:
    """Two lines with one receipt id (a hostile log), one covered and one not: each
    line's row gets its own cover, the id is listed as uncovered, both lines count."""
    from codeai_tui.ledger.schema import Event
    from codeai_tui.workstate import Projector

    log = parse_receipt_lines(
        b'{"receipt_id": "r1", "idempotency_key": "k", "body_sha256": "h1", "bytes": 1}\n'
        b'{"receipt_id": "r1", "idempotency_key": "k2", "body_sha256": "h2", "bytes": 1}\n'
        b'{"receipt_id": "r2", "idempotency_key": "k", "body_sha256": "h1", "bytes": 1}\n')
    projector = Projector()
    projector.feed([
        Event(1, "e1", "t", "call.requested", "t1", "c1", payload={"idempotency_key": "k"}),
        Event(2, "e2", "t", "call.manifest", "t1", "c1", payload={"idempotency_key": "k"}),
        Event(3, "e3", "t", "attempt.started", "t1", "c1", "a1", payload={"request_sha256": "h1"}),
    ])
    check = projector.snapshot(log).receipts
    first, second, third = log.receipts
    assert [check.covered_by.of(r) for r in (first, second, third)] == ["a1", None, "a1"]
    assert check.covered_by.of(Receipt("r1", "", "k", "h1", 1, 9)) is None  # not in the log
    assert check.uncovered == ("r1",) and check.count == 3
    assert dict(check.covered_by) == {"r1": None, "r2": "a1"}  # by id: the last line's
    assert check == check_receipts(log.receipts, projector.calls.values(), log_present=True,
                                   problems=log.problems)


def test_a_long_log_keeps_its_keys_joined_and_its_hashes_as_bytes() -> None:
    """A console reads one receipt per attempt for as long as it follows: once a block
    is sealed, a receipt costs its texts and a few numbers, not a str per key and body
    hash (~180 bytes a receipt more); every receipt still reads back as written."""
    from hashlib import sha256

    from codeai_tui.ledger.blocks import BLOCK
    n = 2 * BLOCK
    rows = [(f"r-{i}", "2026-01-01T00:00:00.123456Z", f"key-{i:06d}",
             sha256(str(i).encode()).hexdigest(), 100, i + 1) for i in range(n)]
    texts = sum(len(r[0]) + len(r[2]) for r in rows)
    data = "".join(json.dumps({"receipt_id": r[0], "received_at": r[1], "idempotency_key": r[2],
                               "body_sha256": r[3], "bytes": r[4]}) + "\n"
                   for r in rows).encode()
    log, held = held_by(lambda: parse_receipt_lines(data))
    rs = log.receipts
    assert (held - texts) / n <= 64  # 32 (hash) + 8 (time) + 4 + 4 + 2 x 4 (ends) + slack
    assert list(rs) == [Receipt(*r) for r in rows]
    table, held = held_by(lambda: ByKey(rs))
    assert held / n <= 16  # a head table and a chain: ~12 bytes a receipt (no list of keys)
    assert table.positions("key-000007") == [7] and table.matching("key-000009", rows[9][3]) == [9]
    assert table.positions("key-") == [] and table.repeated_keys() == []
