"""`codeai-tui resume` on a real terminal asks, and only a clear yes resumes."""

from __future__ import annotations

import json
import os
import pty
import socket
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from codeai_tui.actions.resume import plan_resume
from codeai_tui.ledger import LedgerReader, read_receipts
from tests.core.cases import STOPPED_AT, make_case


def _run_on_pty(args: list[str], answer: str) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeai_tui", *args], stdin=slave, stdout=slave, stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    os.write(master, answer.encode())
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed the pty
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        rc = proc.wait(timeout=60)
    return rc, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize(("answer", "rc", "receipts"), [("n\n", 3, 0), ("y\n", 0, 1)])
def test_manifest_recorded_asks_yes_no(tmp_path: Path, provider: Any, answer: str, rc: int,
                                       receipts: int) -> None:
    case = make_case(tmp_path / "case", provider.base_url, recorded_at=STOPPED_AT)
    code, screen = _run_on_pty(["resume", str(case), "call-1"], answer)
    assert code == rc, screen
    assert "request sha256" in screen and "verdict" in screen and "match" in screen
    assert len(read_receipts(case).receipts) == receipts


def test_no_manifest_requires_typing_the_call_id(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "case", provider.base_url, upto="requested")
    code, screen = _run_on_pty(["resume", str(case), "call-1"], "y\n")
    assert code == 3 and "no drift check is possible" in screen
    assert read_receipts(case).receipts == ()
    code, screen = _run_on_pty(["resume", str(case), "call-1"], "call-1\n")
    assert code == 0, screen
    assert len(read_receipts(case).receipts) == 1


def test_a_call_that_moved_moments_ago_requires_typing_the_call_id(tmp_path: Path,
                                                                   provider: Any) -> None:
    """Its events were recorded just now: its process may still be running, so `y` is
    not enough (nothing sent), and the typed id is."""
    case = make_case(tmp_path / "case", provider.base_url)
    code, screen = _run_on_pty(["resume", str(case), "call-1"], "y\n")
    assert code == 3, screen
    assert "may still be running" in screen and "s ago" in screen, screen
    assert read_receipts(case).receipts == ()
    code, screen = _run_on_pty(["resume", str(case), "call-1"], "call-1\n")
    assert code == 0, screen
    assert len(read_receipts(case).receipts) == 1


def test_a_killed_producer_recorded_in_the_case_is_not_still_running(tmp_path: Path,
                                                                     provider: Any) -> None:
    """A call that moved seconds ago, whose producer the case's termination record says
    was killed after its last event (a demo case right after the build): no warning, `y`
    resumes. A record that ended before the call's last event does not count."""
    case = make_case(tmp_path / "case", provider.base_url)
    with LedgerReader(case) as reader:
        last = reader.events()[-1].seq
    (case / "termination.json").write_text(json.dumps(
        {"pid": 4_000_000, "seq": last - 1, "returncode": -9, "signal": "SIGKILL"}))
    assert plan_resume(case, "call-1").still_active(datetime.now(UTC)) is not None
    (case / "termination.json").write_text(json.dumps(
        {"pid": 4_000_000, "seq": last, "returncode": -9, "signal": "SIGKILL"}))
    plan = plan_resume(case, "call-1")
    assert plan.still_active(datetime.now(UTC)) is None
    assert "was stopped after seq" in (plan.writer_ended or "")
    code, screen = _run_on_pty(["resume", str(case), "call-1"], "y\n")
    assert code == 0, screen
    assert "may still be running" not in screen


def test_a_call_an_ended_operator_process_recorded_is_not_still_running(
        tmp_path: Path, provider: Any) -> None:
    """A successor an operator's resume recorded seconds ago, whose process then died
    before sending (a kill after the commit): its `recorded_by` names this host and a pid
    that is gone, so the call is not taken for a live producer's."""
    case = make_case(tmp_path / "case", provider.base_url, recorded_at="2026-09-13T12:00:00Z")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)
    plan = plan_resume(case, "call-1")
    record = plan.successor_requested("key-2", "synthetic-small")
    assert record["recorded_by"]["host"] == socket.gethostname()
    record["recorded_by"]["pid"] = dead_pid  # the resume process, killed after its commit
    with sqlite3.connect(case / "ledger.sqlite3") as conn:
        (seq,) = conn.execute("SELECT max(seq) FROM events").fetchone()
        now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        conn.execute(
            "INSERT INTO events (seq, event_id, recorded_at, kind, task_id, call_id, payload) "
            "VALUES (?, 'e-new', ?, 'call.requested', 'task-1', 'call-2', ?)",
            (seq + 1, now, json.dumps(record)))
    plan = plan_resume(case, "call-2")
    assert plan.still_active(datetime.now(UTC)) is None
    assert f"pid {dead_pid}" in (plan.writer_ended or "")
    record["recorded_by"]["pid"] = os.getppid()  # alive: it may still be writing
    with sqlite3.connect(case / "ledger.sqlite3") as conn:
        conn.execute("UPDATE events SET payload = ? WHERE event_id = 'e-new'",
                     (json.dumps(record),))
    assert plan_resume(case, "call-2").still_active(datetime.now(UTC)) is not None
