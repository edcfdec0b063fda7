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
from codeai_tui.workstate.evidence import CallEvidence
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
    kept = tuple(r for r in log.receipts
                 if (when := parse_time(r.received_at)) is None or when < limit)
    if len(kept) == len(log.receipts):
        return log
    return replace(log, receipts=kept)


def coverage_pairs(calls: Iterable[CallEvidence]) -> dict[tuple[str, str], str]:
    """(idempotency key, request hash) of every started attempt -> the first such attempt."""
    started: dict[tuple[str, str], str] = {}
    for call in calls:
        add_coverage(started, call)
    return started


def add_coverage(started: dict[tuple[str, str], str], call: CallEvidence) -> None:
    key = call.key
    if key is None:
        return
    for att in call.attempts:
        if att.started_seq is not None and att.request_sha256:
            started.setdefault((key, att.request_sha256), att.attempt_id)


def check_coverage(
    receipts: Sequence[Receipt],
    started: dict[tuple[str, str], str],
    *,
    problems: Sequence[tuple[int, str]] = (),
    log_present: bool = False,
) -> ReceiptCheck:
    """Every receipt covered by an attempt.started with the same key and request hash;
    two or more receipts with one key and body hash are a duplicate."""
    covered_by: dict[str, str | None] = {}
    groups: dict[tuple[str, str], list[str]] = {}
    for r in receipts:
        covered_by[r.receipt_id] = started.get((r.idempotency_key, r.body_sha256))
        groups.setdefault((r.idempotency_key, r.body_sha256), []).append(r.receipt_id)
    return ReceiptCheck(
        count=len(receipts),
        uncovered=tuple(rid for rid, att in covered_by.items() if att is None),
        duplicates=tuple(tuple(ids) for ids in groups.values() if len(ids) > 1),
        covered_by=covered_by,
        problems=tuple(problems),
        log_present=log_present,
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


def check_log(log: ReceiptLog | None, started: dict[tuple[str, str], str]) -> ReceiptCheck:
    return check_coverage(
        log.receipts if log else (), started,
        problems=log.problems if log else (), log_present=bool(log and log.exists),
    )
