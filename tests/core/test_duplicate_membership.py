"""Which duplicate group holds a line of a receipt log, asked by the line's place in the
log (`DuplicateGroups.group_at`, `group_of`, `duplicate_group`): answers equal to a scan
of every group, for at most ~4 bytes a receipt in a group, and made once per groups
object (the screen asks it for every row it draws)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import orjson

from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.ledger.receipts import ReceiptLog, parse_receipt_lines, read_more_receipts
from codeai_tui.workstate.receipts import (
    DuplicateGroups,
    LiveReceiptCheck,
    check_coverage,
    duplicate_group,
)
from tests.core.test_inspect_memory import N, _sha
from tests.support import held_by


def _log_bytes(rows: list[tuple[str, str, int]]) -> bytes:
    """Receipt lines of (receipt id, key, body hash number)."""
    return b"".join(orjson.dumps({
        "receipt_id": rid, "received_at": "2026-11-29T00:00:00.166Z",
        "idempotency_key": key, "body_sha256": _sha(h), "bytes": 1}) + b"\n"
        for rid, key, h in rows)


def _groups(rows: list[tuple[str, str, int]]) -> DuplicateGroups:
    log = parse_receipt_lines(_log_bytes(rows))
    dups = check_coverage(log.receipts, {}, log_present=True).duplicates
    assert isinstance(dups, DuplicateGroups)
    return dups


def test_each_line_is_answered_with_the_group_that_holds_it() -> None:
    """A log of a few keys and hashes, ids repeated across lines: each position's group
    is the one whose positions hold it (a scan of every group), None for a line in no
    group; a receipt that is not a line of the log is in none."""
    rng = random.Random(7)
    rows = [(f"r-{rng.randrange(60)}", f"k-{rng.randrange(40)}", rng.randrange(3))
            for _ in range(400)]
    dups = _groups(rows)
    assert len(dups) > 20
    holder = {p: g for g in range(len(dups)) for p in dups.positions(g)}
    assert len(holder) < len(rows)  # (some lines are in no group)
    for p, r in enumerate(dups.receipts):
        assert dups.group_at(p) == holder.get(p), p
        assert dups.group_of(r) == holder.get(p), p
        assert duplicate_group(dups, r) == holder.get(p), p
        assert duplicate_group(dups, r, (dups.receipts, p)) == holder.get(p), p
    assert dups.group_at(len(rows)) is None and dups.group_at(-1) is None
    grouped = dups.receipts[dups.positions(0)[0]]
    assert dups.group_of(replace(grouped, line_no=10_000)) is None
    # a place found in another log is not taken for one in this log
    other = parse_receipt_lines(_log_bytes(rows)).receipts
    lone = next(p for p in range(len(rows)) if p not in holder)
    assert duplicate_group(dups, grouped, (other, lone)) == 0


def test_groups_given_as_ids_alone_are_asked_by_id() -> None:
    """Groups made by hand (ids, no places): the receipt's id is looked for."""
    log = parse_receipt_lines(_log_bytes([("r-1", "k", 1), ("r-2", "k", 2)]))
    first, second = log.receipts
    assert duplicate_group((("r-9", "r-2"),), second) == 0
    assert duplicate_group((("r-9", "r-2"),), first) is None


def test_the_lookup_costs_at_most_four_bytes_a_receipt_in_a_group() -> None:
    """Nearly every receipt in a group of two: the lookup made on the first question
    holds ~4 bytes a grouped receipt (a set of their ids held ~60)."""
    rows = [(f"r-{i}", f"k-{i // 2:06d}", i // 2) for i in range(N)]
    dups = _groups(rows)
    members = sum(len(g) for g in dups.groups())
    assert members >= N - 1
    found, held = held_by(lambda: dups.group_at(N // 2))
    assert found == (N // 2) // 2
    assert held / members < 4.5, held / members
    again, more = held_by(lambda: dups.group_at(N // 3))  # (made once: kept)
    assert again == (N // 3) // 2 and more < 1024


def _follow(tmp_path: Path, rows: list[tuple[str, str, int]]
            ) -> tuple[Path, ReceiptLog, LiveReceiptCheck]:
    path = tmp_path / RECEIPTS_RELPATH
    path.parent.mkdir()
    path.write_bytes(_log_bytes(rows))
    log = read_more_receipts(tmp_path, None)
    return path, log, LiveReceiptCheck(log, {})


def _answers(dups: Sequence[tuple[str, ...]], n: int) -> list[int | None]:
    assert isinstance(dups, DuplicateGroups)
    return [dups.group_at(p) for p in range(n)]


def test_groups_grown_as_receipts_are_appended_equal_groups_made_anew(
        tmp_path: Path) -> None:
    """Rounds of appended receipts that join packed groups, groups made since, and make
    groups with an earlier lone receipt or among themselves (enough, in the last round,
    to be packed anew): after each round the groups read, and answer which group holds
    each line, as a check made anew does; every check handed out before still shows
    what it showed (snapshots)."""
    rng = random.Random(11)

    def rows(start: int, count: int, keys: int) -> list[tuple[str, str, int]]:
        return [(f"r-{start + i}", f"k-{rng.randrange(keys)}", rng.randrange(2))
                for i in range(count)]

    path, log, live = _follow(tmp_path, rows(0, 300, 200))
    held = [(live.check(), tuple(live.check().duplicates), _answers(live.check().duplicates, 300))]
    n = 300
    for count, keys in ((5, 200), (1, 200), (40, 260), (3, 400), (3000, 700), (30, 700)):
        with open(path, "ab") as out:
            out.write(_log_bytes(rows(n, count, keys)))
        log = read_more_receipts(tmp_path, log)
        assert live.extended_by(log)
        live.grow(log, {})
        n += count
        check = live.check()
        fresh = check_coverage(log.receipts, {}, log_present=True)
        assert tuple(check.duplicates) == tuple(fresh.duplicates)
        assert len(check.duplicates) == len(fresh.duplicates)
        assert [check.duplicates[g] for g in range(len(fresh.duplicates))] == list(fresh.duplicates)
        assert _answers(check.duplicates, n) == _answers(fresh.duplicates, n)
        held.append((check, tuple(check.duplicates), _answers(check.duplicates, n)))
    for check, shown, answers in held:
        assert tuple(check.duplicates) == shown
        assert _answers(check.duplicates, len(answers)) == answers


def test_a_receipt_joining_a_group_does_not_copy_every_group(tmp_path: Path) -> None:
    """Nearly every receipt in a group of two, a check held (a snapshot): a receipt
    appended that joins a group keeps what grew beside the groups it grew from. A
    rebuild held a second copy of every group (~6 bytes a receipt here)."""
    path, log, live = _follow(tmp_path, [(f"r-{i}", f"k-{i // 2:06d}", i // 2)
                                         for i in range(N)])
    checks = [live.check()]
    for r in range(3):
        with open(path, "ab") as out:
            out.write(_log_bytes([(f"r-{N + r}", f"k-{r:06d}", r)]))
        log = read_more_receipts(tmp_path, log)
        _, held = held_by(lambda: live.grow(log, {}))  # noqa: B023  # (called at once)
        checks.append(live.check())
        if r:  # (the first grow also copies what a held check shares: covers)
            assert held < N / 2, held
    assert checks[-1].duplicates[:3] == tuple(
        (f"r-{2 * g}", f"r-{2 * g + 1}", f"r-{N + g}") for g in range(3))
    assert checks[0].duplicates[:3] == tuple((f"r-{2 * g}", f"r-{2 * g + 1}") for g in range(3))
