"""The receipt cross-check (LEDGER.md section 5) and the receipts as of a point in time.

Receipts as of seq N are those the provider received before the next event (seq > N)
was recorded; as of the last seq that is all of them (section 7). The cut-off belongs
to the projection, so `inspect --as-of` and the console's time travel agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from codeai_tui.ledger.receipts import Receipt, ReceiptLog
from codeai_tui.workstate.evidence import CallEvidence, ReceiptIndex
from codeai_tui.workstate.verdicts import ReceiptCheck


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time from a ledger or receipt (naive means UTC); None if unreadable."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, TypeError, AttributeError):
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def receipts_before(log: ReceiptLog, next_recorded_at: str | None) -> ReceiptLog:
    """The receipts received before `next_recorded_at` (the recorded_at of the first event
    after the cut-off); None means no later event: all receipts. A receipt whose time
    cannot be read is kept (hiding it could hide an uncovered effect)."""
    if next_recorded_at is None:
        return log
    limit = parse_time(next_recorded_at)
    if limit is None:
        return log
    kept = tuple(r for r, when in zip(log.receipts, _times(log), strict=True)
                 if when is None or when < limit)
    if len(kept) == len(log.receipts):
        return log
    return replace(log, receipts=kept)


Pair = tuple[str, str]  # (idempotency key, request hash)


def index_receipts(receipts: Sequence[Receipt], problems: Sequence[tuple[int, str]] = (),
                   log_present: bool = False) -> ReceiptIndex:
    """The receipts (already cut to the as-of point) by (key, body hash), so every
    attempt can name the receipts that match it. A log that exists but whose reading
    failed as a whole (a line-0 problem) is "unreadable": no receipt proves nothing."""
    if not log_present:
        status = "absent"
    elif any(line == 0 for line, _ in problems):
        status = "unreadable"
    else:
        status = "present"

    def build() -> tuple[dict[Pair, tuple[tuple[str, str], ...]], str | None]:
        by_pair: dict[Pair, tuple[tuple[str, str], ...]] = {}
        latest: tuple[datetime, str] | None = None
        for r in receipts:
            pair = (r.idempotency_key, r.body_sha256)
            by_pair[pair] = by_pair.get(pair, ()) + ((r.receipt_id, r.received_at),)
            when = parse_time(r.received_at)
            if when is not None and (latest is None or when > latest[0]):
                latest = (when, r.received_at)
        return by_pair, latest[1] if latest else None

    return ReceiptIndex(status, build)


def index_for(log: ReceiptLog | None) -> ReceiptIndex:
    return index_receipts(log.receipts if log else (), log.problems if log else (),
                          bool(log and log.exists))

Coverage = dict[Pair, tuple[int, str]]  # pair -> (started seq, attempt id) of its earliest


_TIMES: list[tuple[ReceiptLog, list[datetime | None]]] = []


def _times(log: ReceiptLog) -> list[datetime | None]:
    """The receipts' parsed times, for the last log asked about (time travel steps
    through one log many times; parsing 140k times costs 0.1-0.3 s)."""
    if _TIMES and _TIMES[0][0] is log:
        return _TIMES[0][1]
    times = [parse_time(r.received_at) for r in log.receipts]
    _TIMES[:] = [(log, times)]
    return times


def coverage_pairs(calls: Iterable[CallEvidence]) -> Coverage:
    """Every started attempt's (key, request hash) -> the earliest such attempt (by its
    attempt.started seq: the same answer whatever order calls are visited in, so an
    incremental check and a batch check agree)."""
    started: Coverage = {}
    for call in calls:
        add_coverage(started, call)
    return started


def add_coverage(started: Coverage, call: CallEvidence) -> list[Pair]:
    """Add one call's started attempts; returns the pairs whose covering attempt changed."""
    key = call.key
    changed: list[Pair] = []
    if key is None:
        return changed
    for att in call.attempts:
        seq = att.started_seq
        if seq is not None and att.request_sha256:
            pair = (key, att.request_sha256)
            have = started.get(pair)
            if have is None or seq < have[0]:
                started[pair] = (seq, att.attempt_id)
                changed.append(pair)
    return changed


def check_coverage(
    receipts: Sequence[Receipt],
    started: Coverage,
    *,
    upto: int | None = None,
    problems: Sequence[tuple[int, str]] = (),
    log_present: bool = False,
    index: ReceiptIndex | None = None,
) -> ReceiptCheck:
    """Every receipt covered by an attempt.started with the same key and request hash;
    two or more receipts with one key and body hash are a duplicate. `upto`: only
    attempts started at or before that seq cover (time travel). `index`: the receipts'
    index when the caller built it already (else built here)."""
    covered_by: dict[str, str | None] = {}
    seen: dict[Pair, str | list[str]] = {}  # a list only once a pair repeats
    get = started.get
    for r in receipts:
        pair = (r.idempotency_key, r.body_sha256)
        have = get(pair)
        covered_by[r.receipt_id] = (
            have[1] if have is not None and (upto is None or have[0] <= upto) else None)
        first = seen.get(pair)
        if first is None:
            seen[pair] = r.receipt_id
        elif isinstance(first, list):
            first.append(r.receipt_id)
        else:
            seen[pair] = [first, r.receipt_id]
    return ReceiptCheck(
        count=len(receipts),
        uncovered=tuple(rid for rid, att in covered_by.items() if att is None),
        duplicates=tuple(tuple(ids) for ids in seen.values() if isinstance(ids, list)),
        covered_by=covered_by,
        problems=tuple(problems),
        log_present=log_present,
        index=index if index is not None else index_receipts(receipts, problems, log_present),
    )


def check_receipts(
    receipts: Sequence[Receipt],
    calls: Iterable[CallEvidence],
    *,
    problems: Sequence[tuple[int, str]] = (),
    log_present: bool = False,
) -> ReceiptCheck:
    """Section 5's cross-check of `receipts` against the calls' started attempts."""
    return check_coverage(receipts, coverage_pairs(calls), problems=problems,
                          log_present=log_present)


def check_log(log: ReceiptLog | None, started: Coverage,
              index: ReceiptIndex | None = None) -> ReceiptCheck:
    return check_coverage(
        log.receipts if log else (), started,
        problems=log.problems if log else (), log_present=bool(log and log.exists),
        index=index,
    )


class LiveReceiptCheck:
    """Section 5's check kept up to date as attempts start, in proportion to what changed:
    a receipt's cover only changes when its (key, hash) pair does, and duplicates depend
    on the log alone. Gives the same ReceiptCheck as `check_coverage` (tests)."""

    def __init__(self, log: ReceiptLog | None, started: Coverage) -> None:
        self.log = log
        receipts = log.receipts if log else ()
        full = check_coverage(receipts, started, problems=log.problems if log else (),
                              log_present=bool(log and log.exists))
        self._covered_by = dict(full.covered_by)
        self._uncovered = dict.fromkeys(full.uncovered)
        self._by_pair: dict[Pair, list[str]] = {}
        for r in receipts:
            self._by_pair.setdefault((r.idempotency_key, r.body_sha256), []).append(r.receipt_id)
        self._template = full
        self._check: ReceiptCheck | None = full

    def update(self, started: Coverage, pairs: Iterable[Pair]) -> None:
        for pair in pairs:
            for rid in self._by_pair.get(pair, ()):
                self._covered_by[rid] = started[pair][1]
                self._uncovered.pop(rid, None)
                self._check = None

    def check(self) -> ReceiptCheck:
        if self._check is None:
            t = self._template
            self._check = ReceiptCheck(len(self._covered_by), tuple(self._uncovered),
                                       t.duplicates, dict(self._covered_by), t.problems,
                                       t.log_present, t.index)
        return self._check
