"""A settled call's covering request hash, where a receipt of the followed log holds
the same hash (the receipt it covers), is read in the log's column of body hashes
instead of kept a second time: 4 bytes a call where 32 were. The receipt check reads
the same covers, answers receipts appended later from them, and keeps its answers
when the log is rewritten (the hashes are then copied back into the columns)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest

from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.ledger.receipts import ReceiptLog, read_more_receipts
from codeai_tui.ledger.schema import Event
from codeai_tui.workstate import Projector, project
from tests.core.test_call_columns import _LIFE, SHA
from tests.support import held_by

ROUND = 512  # calls a poll


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _call_events(c: int, first_seq: int) -> list[Event]:
    """Call c's `_LIFE` (its request hash SHA, as every receipt's body: one str, so that
    no cache of hashes seen by the process holds a per-call one)."""
    call = f"call-{c:06d}"
    return [Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, f"t-{c // 10}", call,
                  f"{call}-a1" if a else None,
                  payload={k: (call if v == "K" else f"{call}-a1" if v == "A" else v)
                           for k, v in p.items()})
            for seq, (kind, a, p) in enumerate(_LIFE, first_seq)]


def _receipt_line(n: int, key: str, sha: str) -> bytes:
    return orjson.dumps({"receipt_id": f"r-{n}", "received_at": "2026-09-13T12:00:01Z",
                         "idempotency_key": key, "body_sha256": sha, "bytes": 1}) + b"\n"


def _events(calls: int) -> list[Event]:
    return [e for c in range(calls) for e in _call_events(c, 1 + c * len(_LIFE))]


def _follow(case: Path, calls: int, log_every: int = 1) -> tuple[Projector, ReceiptLog]:
    """A projector following `calls` calls, ROUND a poll, each call's receipt logged
    (as a provider does) before its attempt starts, the log read on every `log_every`
    polls (a console reads it a second or so apart); every call settles in columns."""
    path = case / RECEIPTS_RELPATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"")
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(lambda call_id, n, position: None)
    log = read_more_receipts(case, None)
    for start in range(0, calls, ROUND):
        with path.open("ab") as out:
            for c in range(start, start + ROUND):
                out.write(_receipt_line(c, f"call-{c:06d}", SHA))
        if start // ROUND % log_every == log_every - 1:
            log = read_more_receipts(case, log)
        projector.feed([e for c in range(start, start + ROUND)
                        for e in _call_events(c, 1 + c * len(_LIFE))])
        projector.snapshot(log)
    log = read_more_receipts(case, log)
    projector.snapshot(log)  # (the last round's calls settle)
    projector.snapshot(log)
    return projector, log


@pytest.mark.parametrize("log_every", [1, 2])
def test_a_settled_call_reads_its_covering_hash_in_the_receipt_log(
        tmp_path: Path, log_every: int) -> None:
    """Where the receipt was read before the call settled, and where it is read after
    (the hash waits for it)."""
    calls = 8 * ROUND
    (projector, log), held = held_by(lambda: _follow(tmp_path / "case", calls, log_every))
    assert projector.settled_count == calls
    # what the projection keeps a call, the receipt log (the caller's) included: ~259
    # and ~267 bytes here; ~284 with its own 32-byte hash each; ~315 where the log is
    # read every other poll and the hashes are read there only where the receipt came
    # first; ~300 and ~350 where the duplicate groups kept the log as it was when they
    # last changed (and its last block's texts with it, after the log's own were packed)
    assert held / calls < 275, held / calls
    assert projector.snapshot(log).receipts == project(_events(calls), log).receipts


def test_receipts_appended_later_are_checked_against_the_hashes_read_in_the_log(
        tmp_path: Path) -> None:
    """A second receipt of a settled call's key with the same hash is covered (a
    duplicate effect); one with another hash is not; so too once the log is rewritten
    (read anew: the columns keep the hashes they read in it again), calls settle
    reading theirs in the new log, and it is read on."""
    case = tmp_path / "case"
    projector, log = _follow(case, 2 * ROUND)
    events = _events(2 * ROUND)
    path = case / RECEIPTS_RELPATH
    with path.open("ab") as out:
        out.write(_receipt_line(10**6, "call-000007", SHA))
        out.write(_receipt_line(10**6 + 1, "call-000009", _sha("another body")))
    log = read_more_receipts(case, log)
    check = projector.snapshot(log).receipts
    assert check == project(events, log).receipts
    assert check.uncovered == ("r-1000001",)
    assert [tuple(g) for g in check.duplicates] == [("r-7", "r-1000000")]
    # rewritten: fewer lines, in another order (each place now holds another receipt)
    lines = path.read_bytes().splitlines(keepends=True)
    rewritten = case / "rewritten"
    rewritten.write_bytes(b"".join(reversed(lines[:ROUND])))
    rewritten.replace(path)
    log = read_more_receipts(case, log)
    check = projector.snapshot(log).receipts
    assert check == project(events, log).receipts and check.uncovered == ()
    # calls that settle now read their hashes in the rewritten log's column; those
    # settled before must not (their places there hold other receipts)
    more = range(2 * ROUND, 3 * ROUND)
    with path.open("ab") as out:
        for c in more:
            out.write(_receipt_line(c, f"call-{c:06d}", SHA))
    log = read_more_receipts(case, log)
    events = _events(3 * ROUND)
    projector.feed(events[2 * ROUND * len(_LIFE):])
    projector.snapshot(log)
    projector.snapshot(log)
    with path.open("ab") as out:
        out.write(_receipt_line(10**6 + 2, "call-000900", SHA))
        out.write(_receipt_line(10**6 + 3, "call-000901", _sha("yet another body")))
    log = read_more_receipts(case, log)
    check = projector.snapshot(log).receipts
    assert check == project(events, log).receipts
    assert check.uncovered == ("r-1000003",)
