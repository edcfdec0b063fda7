"""What `inspect --json` keeps per receipt and per call while it streams a document
stays small: no skeleton of a call waiting to be folded, the receipt log's keys and
hashes in columns (read back exactly, odd
hashes included, and found by key as a dict of them would find them), and the receipt
coverage beside the log instead of an attempt object per call. Measured with
tracemalloc on logs of several sealed column blocks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson

from codeai_tui.lab.bench import write_ledger
from codeai_tui.ledger.blocks import BLOCK
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.ledger.receipts import parse_receipt_lines
from codeai_tui.services.gather import Gathered
from codeai_tui.workstate.evidence import AttemptEvidence, CallEvidence
from codeai_tui.workstate.receipts import (
    ByKey,
    ReceiptCoverage,
    add_coverage,
    check_log,
    covering,
    index_for,
)
from tests.support import held_by

# twelve sealed blocks and an open one: enough receipts that a few blocks' own costs stay
# small beside the bytes a receipt these tests bound
N = 12 * BLOCK + 17


def _sha(i: int) -> str:
    return f"{i * 2654435761 % (1 << 64):016x}" * 4


def _hash_of(i: int) -> str:
    """Lower-case hex digests, but for an upper-case, a short and a non-hex one in the
    second block (that block keeps text, and gives it back as it was)."""
    odd = {BLOCK + 3: _sha(3).upper(), BLOCK + 5: "abc", BLOCK + 7: "z" * 64}
    return odd.get(i, _sha(i % 5000))  # (every key below has receipts of one hash or two)


def _log_lines() -> bytes:
    return b"".join(orjson.dumps({
        "receipt_id": f"r-{i}", "received_at": "2026-11-29T00:00:00.166Z",
        "idempotency_key": f"key-{i % 5000:06d}", "body_sha256": _hash_of(i), "bytes": 100,
    }) + b"\n" for i in range(N))


def test_a_receipt_log_keeps_keys_and_hashes_in_columns_read_back_exactly() -> None:
    data = _log_lines()
    log, held = held_by(lambda: parse_receipt_lines(data))
    # a str per key and hash cost ~250 bytes a receipt in all
    assert held / N < 110, held / N
    rs = log.receipts
    assert [r.idempotency_key for r in rs] == [f"key-{i % 5000:06d}" for i in range(N)]
    assert [r.body_sha256 for r in rs] == [_hash_of(i) for i in range(N)]

    table = ByKey(rs)
    by_key: dict[str, list[int]] = {}
    for i in range(N):
        by_key.setdefault(f"key-{i % 5000:06d}", []).append(i)
    assert all(table.positions(k) == ps for k, ps in by_key.items())
    assert table.positions("key-absent") == []
    assert table.repeated_keys() == sorted(k for k, ps in by_key.items() if len(ps) > 1)
    for k, ps in by_key.items():  # (the upper-case hash is its own, lower-case or not)
        for h in {_hash_of(i) for i in ps} | {_sha(3)}:
            assert table.matching(k, h) == [i for i in ps if _hash_of(i) == h], (k, h)


def _calls() -> list[CallEvidence]:
    """A call per receipt key, its attempt started with the receipts' hash: ids, keys
    and hashes of their own (as parsed from a ledger)."""
    calls = []
    for n in range(5000):
        call = CallEvidence(f"call-{n:06d}", "t", 10 * n + 1,
                            idempotency_key="".join(["key-", f"{n:06d}"]))
        call.add_attempt(AttemptEvidence(f"call-{n:06d}-a1", 10 * n + 2, started_off=0,
                                         request_sha256="".join([_sha(n)[:8], _sha(n)[8:]])))
        calls.append(call)
    return calls


def test_the_receipt_coverage_keeps_a_few_bytes_a_receipt_not_an_attempt_a_call() -> None:
    log = parse_receipt_lines(_log_lines())
    table = ByKey(log.receipts)
    calls = _calls()

    def cover() -> ReceiptCoverage:
        coverage = ReceiptCoverage(table)
        for call in calls:
            add_coverage(coverage, call)
        return coverage

    coverage, held = held_by(cover)
    # an attempt object with its key and hash kept per call cost ~440 bytes a call
    assert held / len(calls) < 90, held / len(calls)
    found = covering(coverage, "key-000042", _sha(42))  # type: ignore[arg-type]
    assert found is not None
    assert (found.attempt_id, found.started_seq) == ("call-000042-a1", 422)
    assert covering(coverage, "key-000042", _sha(43)) is None  # type: ignore[arg-type]


def test_the_skeletons_of_the_calls_to_come_are_not_held(tmp_path: Path) -> None:
    """From the grouped reads to the first call out, no call's skeleton is held by the
    projection: SQLite sorts them, and they are read as the fold reaches them. Held in
    columns they cost ~160 bytes a call more than what is left here (~7,500 calls in
    ~970 tasks, the receipt log not read: mostly the tasks' evidence)."""
    case = tmp_path / "case"
    write_ledger(case, 60_000)
    with EvidenceSQL(case) as sql:
        Gathered(sql)  # (what a first projection imports is not counted)
        gathered, held = held_by(lambda: Gathered(sql))
        calls = list(gathered.calls())
    assert len(calls) > BLOCK
    assert held / len(calls) < 100, held / len(calls)


def _peak_of(work: Callable[[], object]) -> int:
    """The most bytes allocated at once while `work` ran (traced), above where it began."""
    import tracemalloc

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_a_coverage_handed_back_by_a_helper_is_written_from_its_own_columns() -> None:
    """A helper process hands its half's receipt coverage back pickled into a file.
    Written from its own columns, it holds next to nothing more while it is written
    (a copy of the covered receipts built to pickle held ~50 bytes a covered receipt
    at once: the helper's peak on a 10M-event ledger). What comes back covers what the
    helper's did, at the helper's protocol and at pickle's default, and is taken in
    without copying its attempt ids."""
    import pickle
    import tempfile

    log = parse_receipt_lines(_log_lines())
    coverage = ReceiptCoverage(ByKey(log.receipts))
    for call in _calls():
        add_coverage(coverage, call)
    covered = sum(1 for i in range(N) if coverage.cover_at(i)[0] is not None)
    assert covered > 2 * BLOCK
    with tempfile.TemporaryFile() as file:
        peak = _peak_of(lambda: pickle.dump(coverage, file, protocol=pickle.HIGHEST_PROTOCOL))
        assert peak / covered < 20, peak / covered
        file.seek(0)
        updates = pickle.load(file)
    for later in (updates, pickle.loads(pickle.dumps(coverage))):
        fresh = ReceiptCoverage(ByKey(log.receipts))
        _, held = held_by(lambda: fresh.merge(later))  # noqa: B023 - called at once
        # (its ids are read where they came back: copied in, ~16 bytes a receipt)
        assert held / covered < 4, held / covered
        assert [fresh.cover_at(i) for i in range(N)] == [coverage.cover_at(i) for i in range(N)]


def test_duplicate_groups_are_found_one_key_at_a_time() -> None:
    """Every key has receipts of two body hashes, and a few keys a hash twice (the
    duplicates). The check groups one key's receipts at a time: a group per (key, hash)
    of every shared key, held until all were made, was ~300 bytes a receipt at once
    (~40 MB as `inspect --json` finished on a 10M-event ledger). The groups found are
    the same as a plain count finds."""
    def hash_of(i: int) -> str:
        return _sha(0 if i % 2 == 0 or i % 1000 == 1 else i)

    data = b"".join(orjson.dumps({
        "receipt_id": f"r-{i}", "received_at": "2026-11-29T00:00:00.166Z",
        "idempotency_key": f"key-{i // 2:06d}", "body_sha256": hash_of(i), "bytes": 100,
    }) + b"\n" for i in range(N))
    log = parse_receipt_lines(data)
    coverage = ReceiptCoverage(ByKey(log.receipts))
    for i in range(N):  # (every receipt covered: no uncovered ids to list)
        call = CallEvidence(f"call-{i}", "t", 10 * i + 1, idempotency_key=f"key-{i // 2:06d}")
        call.add_attempt(AttemptEvidence(f"call-{i}-a1", 10 * i + 2, started_off=0,
                                         request_sha256=hash_of(i)))
        add_coverage(coverage, call)
    index = index_for(log, coverage.by_key)  # (the document's, built before its calls)
    check = None

    def run() -> None:
        nonlocal check
        check = check_log(log, coverage, index, settled=True)
    peak = _peak_of(run)
    assert check is not None
    assert check.uncovered == ()
    assert check.duplicates == tuple((f"r-{i - 1}", f"r-{i}") for i in range(1, N, 2)
                                     if i % 1000 == 1)
    assert peak / N < 100, peak / N


def test_the_check_of_a_finished_document_reads_its_coverage_in_place() -> None:
    """The document's coverage is done once its calls are: its check reads the covers
    where the coverage keeps them. A column of its own held every covering attempt's id
    again (~30 bytes a receipt at once, `inspect --json`'s peak as it finished on a
    10M-event ledger). Both checks say the same."""
    log = parse_receipt_lines(_log_lines())
    coverage = ReceiptCoverage(ByKey(log.receipts))
    for call in _calls():
        add_coverage(coverage, call)
    index = index_for(log, coverage.by_key)  # (the document's, built before its calls)
    copied, held_copied = held_by(lambda: check_log(log, coverage, index))
    check, held = held_by(lambda: check_log(log, coverage, index, settled=True))
    assert check == copied
    assert list(check.covered_by.attempts) == list(copied.covered_by.attempts)
    assert check.covered_by.attempts[-1] == copied.covered_by.attempts[-1]
    assert 0 < len(check.uncovered) < N
    # (what both hold is the check's own answer: the uncovered and duplicate ids; the
    # column of ids the copy holds besides keeps ~7 bytes a receipt, `call-000123-a1`
    # sealed as a run's prefix and the last few characters of each)
    assert held_copied - held > 5 * N, (held / N, held_copied / N)
