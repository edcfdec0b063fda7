"""What the receipt check keeps per receipt stays small: the duplicate effects as
positions (not a tuple of id strings per group, nor a dict by key and hash of them),
and the key table filled up to two thirds. Measured with tracemalloc on logs of
several sealed column blocks; the answers are the ones a check made anew gives."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.ledger.receipts import Receipts, parse_receipt_lines, read_more_receipts
from codeai_tui.workstate.evidence import AttemptEvidence, CallEvidence
from codeai_tui.workstate.receipts import (
    ByKey,
    LiveReceiptCheck,
    check_coverage,
    coverage_pairs,
)
from tests.core.test_inspect_memory import N, _sha
from tests.support import held_by


def _key_of(i: int) -> str:
    """Receipt 0 has a key of its own; the others come in pairs of one key and hash."""
    return "k-solo" if i == 0 else f"k-{(i - 1) // 2:06d}"


def _lines(items: list[tuple[int, str]]) -> bytes:
    return b"".join(orjson.dumps({
        "receipt_id": f"r-{i}", "received_at": "2026-11-29T00:00:00.166Z",
        "idempotency_key": key, "body_sha256": _sha(hash_no(key)), "bytes": 100,
    }) + b"\n" for i, key in items)


def hash_no(key: str) -> int:
    return 7 if key == "k-solo" else int(key[2:])


def _calls() -> list[CallEvidence]:
    """A started attempt covering every key's receipts."""
    keys = dict.fromkeys(_key_of(i) for i in range(N))
    calls = []
    for n, key in enumerate(keys):
        call = CallEvidence(f"call-{n:06d}", "t", 10 * n + 1, idempotency_key=key)
        call.add_attempt(AttemptEvidence(f"call-{n:06d}-a1", 10 * n + 2, started_off=0,
                                         request_sha256=_sha(hash_no(key))))
        calls.append(call)
    return calls


def test_the_live_check_keeps_its_duplicate_groups_as_positions(tmp_path: Path) -> None:
    """Nearly every receipt is in a duplicate group. A dict by (key, hash) of each
    group's positions and a tuple of each group's id strings cost ~300 bytes a receipt
    here (41 MB for the 68,786 groups of a 10M-event ledger); positions cost ~6. The
    groups read as the tuple of tuples of ids a check made anew gives, and stay so once
    receipts appended join a group and make one with an earlier receipt."""
    path = tmp_path / RECEIPTS_RELPATH
    path.parent.mkdir()
    path.write_bytes(_lines([(i, _key_of(i)) for i in range(N)]))
    log = read_more_receipts(tmp_path, None)
    started = coverage_pairs(_calls())
    live, held = held_by(lambda: LiveReceiptCheck(log, started))
    # (the key table, each cover's id and started seq: ~45 bytes a receipt)
    assert held / N < 80, held / N
    groups = tuple((f"r-{i}", f"r-{i + 1}") for i in range(1, N - 1, 2))
    check = live.check()
    assert check.duplicates == groups
    assert groups == check.duplicates
    assert set(check.duplicates) == set(groups)
    assert check.duplicates[-1] == groups[-1]
    assert check.as_json()["duplicates"] == [list(g) for g in groups]

    # appended: a receipt like the first (a group before all others) and one more of
    # the first pair's
    with open(path, "ab") as out:
        out.write(_lines([(N, "k-solo"), (N + 1, _key_of(1))]))
    grown = read_more_receipts(tmp_path, log)
    assert live.extended_by(grown)
    live.grow(grown, started)
    check = live.check()
    fresh = check_coverage(grown.receipts, started, problems=grown.problems,
                           log_present=True)
    assert check == fresh
    assert tuple(check.duplicates) == tuple(fresh.duplicates)
    assert check.duplicates[:2] == (("r-0", f"r-{N}"), ("r-1", "r-2", f"r-{N + 1}"))
    assert tuple(check.duplicates[2:]) == groups[1:]


def test_a_check_made_anew_keeps_its_duplicate_groups_as_positions() -> None:
    """`inspect --json`'s check: the same groups held as positions, not as tuples of
    id strings (~90 bytes a receipt here)."""
    log = parse_receipt_lines(_lines([(i, _key_of(i)) for i in range(N)]))
    started = coverage_pairs(_calls())
    check, held = held_by(lambda: check_coverage(log.receipts, started, log_present=True))
    # (each receipt's cover, ~20 bytes, and the key table the index builds when read)
    assert held / N < 50, held / N
    assert check.duplicates == tuple((f"r-{i}", f"r-{i + 1}") for i in range(1, N - 1, 2))
    assert check.uncovered == ()


def test_the_key_table_is_filled_up_to_two_thirds() -> None:
    """A table of a power of two at least twice the receipts was filled a quarter to a
    half: ~16 bytes a receipt just past a power of two (16.8 MB at 1.44M receipts). Each
    key's receipts are still found in log order."""
    n = (1 << 13) + 100
    log = parse_receipt_lines(_lines([(i, f"k-{i % (n - 50):06d}") for i in range(n)]))
    table, held = held_by(lambda: ByKey(log.receipts))
    assert held / n < 12, held / n
    assert table.positions("k-000003") == [3, n - 50 + 3]
    assert table.positions("k-000060") == [60]
    assert table.positions("k-absent") == []
    assert table.repeated_keys() == [f"k-{i:06d}" for i in range(50)]


def _few_lines(count: int) -> bytes:
    return b"".join(orjson.dumps({
        "receipt_id": f"{i}", "received_at": "2026-11-29T00:00:00.166Z",
        "idempotency_key": f"{i}", "body_sha256": "ab", "bytes": 1,
    }) + b"\n" for i in range(count))


def _started(count: int, seq_of: Callable[[int], int]) -> dict[str, Any]:
    """An attempt of a short id starting at `seq_of(i)` covering receipt i's key."""
    calls = []
    for i in range(count):
        call = CallEvidence(f"c{i}", "t", seq_of(i), idempotency_key=f"{i}")
        call.add_attempt(AttemptEvidence("a", seq_of(i), started_off=0, request_sha256="ab"))
        calls.append(call)
    return coverage_pairs(calls)


def test_the_live_check_keeps_each_covers_started_seq_in_four_bytes(tmp_path: Path) -> None:
    """Each receipt's cover's started seq (what time travel reads) in 4 bytes while
    every seq fits: 8 each cost 11.8 MB at 1.44M receipts. A seq that does not fit
    (a hostile ledger's) widens them, and every answer as of a seq stays that of a
    check made anew."""
    n = N
    path = tmp_path / RECEIPTS_RELPATH
    path.parent.mkdir()
    path.write_bytes(_few_lines(n))
    log = read_more_receipts(tmp_path, None)
    started = _started(n - 1, lambda i: 2 * i + 1)  # (the last receipt: no cover)
    _, held = held_by(lambda: LiveReceiptCheck(log, started))
    # (the key table 10 bytes, each cover's id ~7 and started seq 4)
    assert held / n < 22.5, held / n

    big = _started(n, lambda i: (1 << 40) + i if i == 5 else 2 * i + 1)
    live = LiveReceiptCheck(log, started)
    live.update(big, [("5", "ab"), (f"{n - 1}", "ab")])  # (the covers that changed)
    for check in (live, LiveReceiptCheck(log, big)):  # (widened as updated, as made)
        for at in (0, 11, (1 << 31) - 1, 1 << 40, (1 << 40) + 5, (1 << 62)):
            cut = check.as_of(log, at)
            anew = check_coverage(log.receipts, big, upto=at, log_present=True)
            assert cut == anew, at
            assert list(cut.covered_by.attempts) == list(anew.covered_by.attempts), at
        assert check.check() == check_coverage(log.receipts, big, log_present=True)


def _grown_tables(first: ByKey, logs: list[Receipts]) -> list[ByKey]:
    """The key tables grown from `first` as the log is read on to each of `logs`."""
    tables, table = [], first
    for grown in logs:
        table = table.grown(grown)
        tables.append(table)
    return tables


def test_receipts_appended_to_the_key_table_cost_a_few_bytes_each() -> None:
    """A followed log's table keeps the receipts appended since it was indexed by key
    (`ByKey.grown`, in steps as the log is read on): a dict of one list per key, copied
    on each read, kept ~200 bytes a receipt appended. Every table grown answers for its
    own receipts, and a table grown from stays as it was (a snapshot may hold it)."""
    n, more, step = 6000, 4000, 250
    keys = [f"k-{(i * 7) % 2500:06d}" for i in range(n + more)]
    log = parse_receipt_lines(_lines(list(enumerate(keys)))).receipts
    first = ByKey(log[:n])
    logs = [log[:k] for k in range(n + step, n + more + 1, step)]

    tables, held = held_by(lambda: _grown_tables(first, logs))
    assert held / more < 40, held / more  # (285 on the dict of lists)

    def expected(count: int, key: str) -> list[int]:
        return [i for i in range(count) if keys[i] == key]

    asked = [keys[0], keys[n - 1], keys[n], keys[-1], "k-absent"]
    for table, count in [(first, n), *((t, len(g)) for t, g in zip(tables, logs, strict=True))]:
        assert [table.positions(k) for k in asked] == [expected(count, k) for k in asked]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    assert tables[-1].repeated_keys() == repeated
    assert first.repeated_keys() == sorted({k for k in keys[:n] if keys[:n].count(k) > 1})


def _keyed_lines(keys: list[str]) -> bytes:
    return b"".join(orjson.dumps({
        "receipt_id": f"r-{i}", "received_at": "2026-11-29T00:00:00.166Z",
        "idempotency_key": key, "body_sha256": _sha(i), "bytes": 100,
    }) + b"\n" for i, key in enumerate(keys))


def test_receipts_of_keys_of_their_own_cost_under_thirteen_bytes_each_when_appended() -> None:
    """A provider logs a receipt per attempt, so a followed log appends mostly keys never
    seen before. A table of each key's last receipt beside the table of its first cost
    another 6-12 bytes a key (~17 bytes a receipt in all here); the last is found by walking
    the key's chain instead (~11 bytes a receipt at the heads' fullest). Every table grown
    still answers for its own receipts."""
    n, more, step = 40000, 5400, 450
    keys = [f"live-t{i // 10}-c{i % 10}" for i in range(n + more)]
    log = parse_receipt_lines(_keyed_lines(keys)).receipts
    first = ByKey(log[:n])
    logs = [log[:k] for k in range(n + step, n + more + 1, step)]

    tables, held = held_by(lambda: _grown_tables(first, logs))
    assert held / more < 13, held / more
    for table, count in zip(tables, map(len, logs), strict=True):
        asked = [keys[0], keys[n], keys[count - 1], keys[-1]]
        assert [table.positions(k) for k in asked] == [
            [keys.index(k)] if keys.index(k) < count else [] for k in asked]


def test_a_key_appended_many_times_is_joined_in_one_step_each() -> None:
    """A hostile log (or a client retrying one key) appends 20,000 receipts of one key:
    each joins the key's chain without a walk of it (a walk each was 2*10^8 steps).
    Measured by the answers (every receipt in order) and by the time against the same
    count of keys of their own, each appended in steps as the log is read on."""
    n, more, step = 100, 20000, 400

    def grown_time(keys: list[str]) -> tuple[float, ByKey]:
        log = parse_receipt_lines(_keyed_lines(keys)).receipts
        table = ByKey(log[:n])
        cuts = [log[:k] for k in range(n + step, n + more + 1, step)]
        began = time.perf_counter()
        for cut in cuts:
            table = table.grown(cut)
        return time.perf_counter() - began, table

    one_key, table = grown_time(["k-one"] * (n + more))
    own_keys, _ = grown_time([f"k-{i}" for i in range(n + more)])
    assert table.positions("k-one") == list(range(n + more))
    assert one_key < 3 * own_keys + 0.05, (one_key, own_keys)


def test_a_followed_log_grows_its_key_table_without_building_a_second_one() -> None:
    """A console follows a provider's log for hours: the receipts appended join the
    table's appended part, a quarter more slots at a time, and the log is never indexed
    whole again beside the table a snapshot still holds. Measured by the most the growing
    held at once, over the receipts of the whole log, with each table grown from kept as
    a snapshot keeps one: 25 bytes a receipt when the log was indexed again once an
    eighth of it was appended, ~8 now. Every table answers for its own receipts."""
    import tracemalloc
    n, more, step = 20000, 20000, 500
    keys = [f"live-t{i // 10}-c{i % 10}" for i in range(n + more)]
    log = parse_receipt_lines(_keyed_lines(keys)).receipts
    first = ByKey(log[:n])
    logs = [log[:k] for k in range(n + step, n + more + 1, step)]
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        held, table = [], first
        for grown in logs:
            table = table.grown(grown)
            held[-1:] = [table]  # (the screen holds the last snapshot's)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak / (n + more) < 12, peak / (n + more)
    assert [table.positions(k) for k in (keys[0], keys[n - 1], keys[n], keys[-1])] == \
        [[0], [n - 1], [n], [n + more - 1]]
