"""The reader: read-only, a good WAL neighbour, and clear about every bad file."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest
from ledgerfactory import SCHEMA, append_rows, write_ledger

from codeai_tui.ledger import LedgerError, LedgerProblem, LedgerReader, LedgerWriter, find_cases
from codeai_tui.ledger.receipts import parse_receipt_lines
from tests.core.cases import file_hashes
from tests.support import cli, load_vectors

VECTOR = next(v for v in load_vectors() if v["name"] == "resumed_then_completed")


def _live_writer(case: Path) -> sqlite3.Connection:
    """A writer connection that stays open, as a running producer's would."""
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


def test_inspect_of_a_closed_ledger_changes_no_byte(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, VECTOR["events"])
    before = file_hashes(case), (case / "ledger.sqlite3").stat().st_mtime_ns
    assert cli("inspect", str(case), "--json").returncode == 0
    assert (file_hashes(case), (case / "ledger.sqlite3").stat().st_mtime_ns) == before


def test_inspect_leaves_ledger_byte_for_byte_unchanged(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, VECTOR["events"][:10])
    writer = _live_writer(case)  # keep the -wal alive so its bytes are checked too
    append_rows(writer, VECTOR["events"][10:])
    before = file_hashes(case)
    assert before["ledger.sqlite3-wal"] != "absent"
    for args in (["--json"], [], ["--json", "--as-of", "3"]):
        assert cli("inspect", str(case), *args).returncode == 0
    with LedgerReader(case) as reader:
        assert len(reader.events()) == len(VECTOR["events"])
    assert file_hashes(case) == before
    writer.close()


def test_reader_follows_appends_from_another_connection(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, VECTOR["events"][:5])
    writer = _live_writer(case)
    with LedgerReader(case) as reader:
        assert reader.stats() == (5, 5)
        assert reader.changed() is False
        append_rows(writer, VECTOR["events"][5:8])
        assert reader.changed() is True
        assert reader.changed() is False
        assert [e.seq for e in reader.read_after(5)] == [6, 7, 8]
        assert reader.call_seqs("call-16") == [6, 7, 8]
    writer.close()


def test_reader_between_polls_does_not_starve_checkpoints(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, VECTOR["events"][:3])
    writer = _live_writer(case)
    with LedgerReader(case) as reader:
        reader.events()
        reader.changed()
        append_rows(writer, VECTOR["events"][3:])
        busy, _log, _ckpt = writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0, "an open reader pinned a read transaction between polls"
        assert (case / "ledger.sqlite3-wal").stat().st_size == 0
        assert reader.stats()[0] == len(VECTOR["events"])
    writer.close()


def test_reader_detects_a_removed_ledger(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, VECTOR["events"][:3])
    reader = LedgerReader(case)
    for name in os.listdir(case):
        if name.startswith("ledger.sqlite3"):
            os.unlink(case / name)
    with pytest.raises(LedgerError) as err:
        reader.changed()
    assert err.value.problem is LedgerProblem.GONE
    reader.close()


def _bad(tmp_path: Path, name: str) -> Path:
    case = tmp_path / name
    case.mkdir()
    return case


@pytest.mark.parametrize(
    ("name", "problem", "words"),
    [
        ("missing", LedgerProblem.MISSING, "no such"),
        ("garbage", LedgerProblem.NOT_SQLITE, "not an SQLite database"),
        ("empty_sqlite", LedgerProblem.NOT_A_LEDGER, "without the ledger v1 tables"),
        ("other_format", LedgerProblem.WRONG_FORMAT, "codeai.ledger.v2"),
        ("no_format", LedgerProblem.WRONG_FORMAT, "no 'format' row"),
    ],
)
def test_bad_files_are_one_clear_line_and_never_written(
    tmp_path: Path, name: str, problem: LedgerProblem, words: str
) -> None:
    case = _bad(tmp_path, name)
    ledger = case / "ledger.sqlite3"
    if name == "garbage":
        ledger.write_bytes(b"this is not a database, it is a shopping list\n" * 100)
    elif name == "empty_sqlite":
        sqlite3.connect(ledger).execute("CREATE TABLE t (x)").connection.close()
    elif name == "other_format":
        write_ledger(case, VECTOR["events"][:2], fmt="codeai.ledger.v2")
    elif name == "no_format":
        conn = sqlite3.connect(ledger)
        conn.executescript(SCHEMA)
        conn.close()
    before = set(os.listdir(case)), ledger.read_bytes() if ledger.exists() else None
    with pytest.raises(LedgerError) as err:
        LedgerReader(case)
    assert err.value.problem is problem
    assert words in str(err.value)
    proc = cli("inspect", str(case), "--json") if name != "missing" else cli("inspect", str(ledger))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    after = set(os.listdir(case)), ledger.read_bytes() if ledger.exists() else None
    assert after[1] == before[1], "the ledger's bytes changed"
    created = after[0] - before[0]
    # only SQLite's own WAL index files, and an empty -wal, may appear (see file_hashes)
    assert created <= {"ledger.sqlite3-shm", "ledger.sqlite3-wal"}
    if "ledger.sqlite3-wal" in created:
        assert (case / "ledger.sqlite3-wal").stat().st_size == 0


def test_locked_ledger_is_a_clear_busy_state(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, VECTOR["events"][:3], wal=False)  # rollback journal: EXCLUSIVE blocks readers
    holder = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(LedgerError) as err:
            LedgerReader(case, timeout=0.2)
        assert err.value.problem is LedgerProblem.BUSY
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _make_readonly(case: Path) -> bool:
    """chmod for users; root ignores modes, so use the immutable flag where it works."""
    if os.geteuid() != 0:
        case.chmod(stat.S_IRUSR | stat.S_IXUSR)
        return True
    return subprocess.run(["chattr", "+i", str(case)], capture_output=True).returncode == 0


def _make_writable(case: Path) -> None:
    if os.geteuid() != 0:
        case.chmod(stat.S_IRWXU)
    else:
        subprocess.run(["chattr", "-i", str(case)], capture_output=True)


def test_readonly_directory_without_shm_is_a_clear_state(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, VECTOR["events"][:3])  # closed cleanly: no -wal/-shm on disk
    if not _make_readonly(case):
        pytest.skip("cannot make a directory read-only here")
    try:
        with pytest.raises(LedgerError) as err:
            LedgerReader(case).stats()
        assert err.value.problem is LedgerProblem.READONLY_DIR
        proc = cli("inspect", str(case))
        assert proc.returncode == 2 and "read-only" in proc.stderr
    finally:
        _make_writable(case)


def test_writer_assigns_gap_free_seqs_and_checks_format(tmp_path: Path) -> None:
    case = tmp_path / "case"
    with LedgerWriter.create(case) as writer:
        first = writer.append("task.created", "t1", {"title": "x"})
        second = writer.append("call.requested", "t1", {"idempotency_key": "k"}, call_id="c1")
    assert (first.seq, second.seq) == (1, 2)
    with LedgerReader(case) as reader:
        assert [e.kind for e in reader.events()] == ["task.created", "call.requested"]
    other = tmp_path / "other"
    write_ledger(other, [], fmt="something.else")
    with pytest.raises(LedgerError):
        LedgerWriter.open(other)


def test_bundle_discovery(tmp_path: Path) -> None:
    for rel in ("a", "b/c", "d/e/f/g", "h/i/j/k/l"):
        write_ledger(tmp_path / rel, [])
    found = [p.relative_to(tmp_path).as_posix() for p in find_cases(tmp_path)]
    assert found == ["a", "b/c", "d/e/f/g"]  # depth <= 4 below the bundle
    with pytest.raises(LedgerError):
        find_cases(tmp_path / "nothing-here")


def test_receipt_log_tolerates_a_torn_last_line() -> None:
    good = json.dumps({"receipt_id": "r1", "received_at": "2026-09-13T12:00:00Z",
                       "idempotency_key": "k", "body_sha256": "ab", "bytes": 3})
    log = parse_receipt_lines(f"{good}\n{good[:20]}".encode())
    assert [r.receipt_id for r in log.receipts] == ["r1"]
    assert log.truncated_tail and not log.problems
    log = parse_receipt_lines(f"{good[:20]}\n{good}\n".encode())
    assert log.problems == ((1, "not a JSON line"),)
