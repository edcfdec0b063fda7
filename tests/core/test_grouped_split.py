"""The skeleton's grouped read split in two by call id, each part read by a child process
(ledger/grouped_worker.py): the parts cover every call once, whatever the ids' types;
the children's rows are the one read's; a child that cannot answer, hangs or outlives
its parent leaves its part to the parent, and is gone."""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeai_tui.lab.bench import write_ledger as write_bench_ledger
from codeai_tui.ledger import grouped_worker
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.ledger.grouped_worker import GroupedChild
from codeai_tui.ledger.stage_columns import StageColumns
from codeai_tui.services import stage_reads
from codeai_tui.services.stage_reads import CODES, StageReads
from tests.core.test_fast_path import drawn_case, ledgers
from tests.support import examples

BOUNDS = st.one_of(st.sampled_from(["c1", "c2", "c3", "c", "d", ""]),
                   st.integers(-2, 2), st.binary(max_size=2))


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), BOUNDS, st.booleans(), st.sampled_from([b"c1", 7, 2.5]))
def test_two_parts_cover_every_call_once(ledger: Any, middle: object, odd: bool,
                                         odd_id: object) -> None:
    """Read in two parts split at any value (text, number or bytes), and put in first-seq
    order, the rows are the one read's at every as_of; also when some call id cells hold
    another type than text (a hostile ledger)."""
    with drawn_case(ledger, unique_ids=True) as (case, as_ofs):
        if odd:
            conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
            conn.execute("UPDATE events SET call_id = ? WHERE seq = (SELECT min(seq) FROM "
                         "events WHERE call_id IS NOT NULL)", (odd_id,))
            conn.close()
        with EvidenceSQL(case) as sql:
            for as_of in as_ofs:
                limit = 1 << 62 if as_of is None else as_of
                whole = sql.call_stage_rows(limit, CODES)
                parts = (sql.call_stage_rows(limit, CODES, (None, middle))
                         + sql.call_stage_rows(limit, CODES, (middle, None)))
                assert sorted(parts, key=lambda r: r[1]) == whole, (as_of, middle)


def _bench_case(root: Path) -> Path:
    case = root / "bench"
    write_bench_ledger(case, 20_000, writers=10, tasks=40)
    return case


def _index_print(rows: list[Any]) -> tuple[int, int, int]:
    """The sums of the rows' index-print fields (their last three)."""
    return (sum(r[6] for r in rows), sum(r[7] for r in rows), sum(r[8] for r in rows))


def _read_here(parts: list[tuple[object, object]]) -> Any:
    """EvidenceSQL.call_stage_rows, recording the parts read in this process."""
    original = EvidenceSQL.call_stage_rows

    def rows(sql: EvidenceSQL, as_of: int, codes: Any, ids: Any = (None, None)) -> Any:
        parts.append(ids)
        return original(sql, as_of, codes, ids)
    return rows


def test_the_children_read_the_one_reads_rows(tmp_path: Path) -> None:
    case = _bench_case(tmp_path)
    with EvidenceSQL(case) as sql:
        limit = sql.max_seq()
        whole = sql.call_stage_rows(limit, CODES)
        sent = sql.calls_observed_mentioning(limit, "sent")
        middle = sql.middle_call_id(limit)
        assert middle is not None
        below = sum(1 for r in whole if r[0] < middle)
        assert 0.25 < below / len(whole) < 0.75  # a split near the middle
        here: list[tuple[object, object]] = []
        with patch.object(stage_reads, "SPLIT_MIN_EVENTS", 0), \
                patch.object(EvidenceSQL, "call_stage_rows", _read_here(here)):
            rows, got_sent = StageReads(sql, limit).result()
    assert here == []  # both parts came from the children
    assert list(rows.rows()) == [r[:6] for r in whole] and got_sent == sent
    assert rows.index_print == _index_print(whole)


def test_the_split_halves_the_events(tmp_path: Path) -> None:
    """The children's parts hold about as many events each: the answer waits for the
    larger one."""
    case = tmp_path / "bench"
    write_bench_ledger(case, 200_000, writers=20, tasks=200)
    with EvidenceSQL(case) as sql:
        middle = sql.middle_call_id(sql.max_seq())
    conn = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True)
    below, every = conn.execute(
        "SELECT sum(call_id < ?), count(*) FROM events WHERE call_id != ''",
        (middle,)).fetchone()
    conn.close()
    assert 0.47 < below / every < 0.53


def test_a_child_that_cannot_answer_leaves_its_part_to_the_parent(tmp_path: Path) -> None:
    """No interpreter to start, or one that ends without a word: the parent reads the
    parts itself, and the rows are the same."""
    case = _bench_case(tmp_path)
    with EvidenceSQL(case) as sql:
        limit = sql.max_seq()
        whole = sql.call_stage_rows(limit, CODES)
        middle = sql.middle_call_id(limit)
        for executable in ("", "/bin/false", str(tmp_path / "missing")):
            here: list[tuple[object, object]] = []
            with patch.object(stage_reads, "SPLIT_MIN_EVENTS", 0), \
                    patch.object(EvidenceSQL, "call_stage_rows", _read_here(here)), \
                    patch.object(sys, "executable", executable):
                rows, _ = StageReads(sql, limit).result()
            assert here == [(None, middle), (middle, None)], executable
            assert list(rows.rows()) == [r[:6] for r in whole], executable
            assert rows.index_print == _index_print(whole), executable


def test_a_child_is_killed_when_the_reader_stops(tmp_path: Path) -> None:
    """A child that does not answer (here: a script that sleeps) is killed and reaped as
    soon as `stop` turns true; the part is then read by the caller."""
    script, pids = _sleeper(tmp_path)
    case = _bench_case(tmp_path)
    begun = time.monotonic()
    with patch.object(sys, "executable", str(script)):
        child = GroupedChild.start(case / "ledger.sqlite3", 100, CODES, (None, "m"))
    assert child is not None
    got = child.columns(lambda: time.monotonic() - begun > 0.3)
    took = time.monotonic() - begun
    assert got is None
    assert took < 5, took
    pid = int(pids.read_text())
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped: no process, no zombie


def test_a_child_whose_parent_is_gone_stops_its_read(tmp_path: Path) -> None:
    """The child's read checks that the process that started it is still its parent;
    when it is not (the console was killed), the read ends at the next check."""
    case = _bench_case(tmp_path)
    path = str(case / "ledger.sqlite3")
    with EvidenceSQL(case) as sql:
        limit = sql.max_seq()
    kind, value = grouped_worker.run((path, limit, CODES, (None, None), os.getppid()))
    assert kind == "columns" and isinstance(value, StageColumns) and len(value)
    kind, value = grouped_worker.run((path, limit, CODES, (None, None), os.getppid() + 1))
    assert kind == "error" and "interrupted" in str(value), value


def _sleeper(root: Path) -> tuple[Path, Path]:
    """An "interpreter" that never answers, appending its pid to a file."""
    script, pids = root / "sleeper", root / "pids"
    script.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 30\n")
    script.chmod(0o755)
    return script, pids


def test_reads_a_follower_does_not_take_kill_their_children(tmp_path: Path) -> None:
    """Reads begun on a longer ledger than the follower's (it was replaced) are let go,
    and their children with them."""
    from codeai_tui.console.model import CaseFollower

    case = _bench_case(tmp_path)
    script, pids = _sleeper(tmp_path)
    with EvidenceSQL(case) as sql:
        limit = sql.max_seq()
        with patch.object(stage_reads, "SPLIT_MIN_EVENTS", 0), \
                patch.object(sys, "executable", str(script)):
            reads = StageReads(sql, limit + 10)
    deadline = time.monotonic() + 10
    while len(pids.read_text().split() if pids.exists() else ()) < 2:
        assert time.monotonic() < deadline, "the children did not start"
        time.sleep(0.02)
    follower = CaseFollower(case)
    try:
        assert follower.skeleton(reads) is not None  # built from reads of its own
    finally:
        follower.close()
    for pid in pids.read_text().split():
        assert not Path(f"/proc/{pid}").exists(), pid
