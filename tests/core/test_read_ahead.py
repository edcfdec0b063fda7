"""The gatherer's read-ahead: rows in order, the reader gone when its consumer leaves,
its failure raised where the rows are read."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from ledgerfactory import write_ledger

from codeai_tui.ledger.errors import LedgerError, LedgerProblem
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.services.read_ahead import read_ahead

ALL = 1 << 40


def _case(tmp_path: Path, n: int) -> Path:
    case = tmp_path / "case"
    write_ledger(case, [{"seq": s, "kind": "task.created", "task_id": f"t{s % 7}",
                         "payload": {"title": f"title {s}"}} for s in range(1, n + 1)])
    return case


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "read-ahead"]


def test_rows_come_in_order_across_many_batches(tmp_path: Path) -> None:
    with EvidenceSQL(_case(tmp_path, 9000)) as sql:
        direct = [r for batch in sql.payload_batches(ALL, [], ["task.created"]) for r in batch]
        ahead = list(read_ahead(sql, lambda o: o.payload_batches(ALL, [], ["task.created"])))
    assert len(direct) == 9000
    assert ahead == direct
    assert not _readers()


def test_the_reader_ends_when_its_consumer_leaves_early(tmp_path: Path) -> None:
    with EvidenceSQL(_case(tmp_path, 30000)) as sql:
        rows = read_ahead(sql, lambda o: o.payload_batches(ALL, [], ["task.created"]))
        first = next(rows)
        assert first[0] == 1
        assert _readers()  # reading ahead while the consumer holds the first row
        rows.close()
        assert not _readers()


def test_a_failed_read_is_raised_in_the_consumer_after_the_rows_before_it(
        tmp_path: Path) -> None:
    def failing(other: EvidenceSQL) -> Iterator[list[tuple[int]]]:
        yield [(1,), (2,)]
        raise LedgerError(LedgerProblem.CORRUPT, "disk image is malformed")

    got: list[tuple[int]] = []
    with EvidenceSQL(_case(tmp_path, 3)) as sql, pytest.raises(LedgerError, match="malformed"):
        for row in read_ahead(sql, failing):
            got.append(row)
    assert got == [(1,), (2,)]
    assert not _readers()
