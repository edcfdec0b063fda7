"""The live producer keeps a case changing and stops cleanly, taking its children along."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from codeai_tui.demo import start_live

DEADLINE_S = 60.0


def children_of(pid: int) -> set[int]:
    """Direct children, from /proc (Linux)."""
    found: set[int] = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def event_count(case: Path) -> int:
    if not (case / "ledger.sqlite3").exists():
        return 0
    conn = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True,
                           isolation_level=None, timeout=5)
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    except sqlite3.Error:
        return 0  # schema not created yet
    finally:
        conn.close()


def kinds(case: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True, isolation_level=None)
    try:
        return {r[0] for r in conn.execute("SELECT DISTINCT kind FROM events")}
    finally:
        conn.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_live_producer_appends_and_stops_cleanly(tmp_path: Path, sig: signal.Signals) -> None:
    proc: subprocess.Popen[str] = start_live(tmp_path, 50.0)
    case = tmp_path / "live"
    seen_children: set[int] = set()
    try:
        deadline = time.monotonic() + DEADLINE_S
        # past the in-flight step (4th in the cycle): some calls completed, one unknown
        while event_count(case) < 45:
            assert proc.poll() is None, (tmp_path / "live.log").read_text()
            assert time.monotonic() < deadline, "live producer made no progress"
            seen_children |= children_of(proc.pid)
            time.sleep(0.05)
        seen_children |= children_of(proc.pid)
        first = event_count(case)
        while event_count(case) <= first:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(sig)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert len(seen_children) >= 3  # two providers and at least one producer
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in seen_children):
        assert time.monotonic() < deadline, [p for p in seen_children if alive(p)]
        time.sleep(0.05)
    assert {"call.completed", "attempt.started", "call.manifest"} <= kinds(case)
    assert (case / "case.json").exists()
    assert os.path.getsize(case / "provider" / "receipts.jsonl") > 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_an_outside_write_lock_is_reported_and_the_producer_goes_on(tmp_path: Path) -> None:
    """A lock held past the producer's busy timeout loses that step's remaining events:
    the live producer says which task, in live.log, and carries on with the next."""
    proc: subprocess.Popen[str] = start_live(tmp_path, 50.0, busy_timeout=0.3)
    case = tmp_path / "live"
    log = tmp_path / "live.log"
    try:
        deadline = time.monotonic() + DEADLINE_S
        while event_count(case) < 10:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "live producer made no progress"
            time.sleep(0.05)
        holder = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None, timeout=5)
        holder.execute("BEGIN IMMEDIATE")
        try:
            while "was not recorded in full" not in log.read_text():
                assert proc.poll() is None
                assert time.monotonic() < deadline, "nothing said about the lost step"
                time.sleep(0.05)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        said = [line for line in log.read_text().splitlines() if "not recorded" in line]
        assert len(said) >= 1 and "task-" in said[0] and "busy" in said[0]
        after = event_count(case)
        while event_count(case) <= after:  # and it goes on
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "live producer stopped after the lock"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
