"""`codeai-tui export`: a case killed mid-write is shared whole, and the source is not
touched (copying only ledger.sqlite3 loses every commit still in -wal)."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.support import cli

PRODUCER = """
import os, signal, sys
from codeai_tui.ledger import LedgerWriter
from codeai_tui.ledger.artifacts import ArtifactStore
case = sys.argv[1]
store = ArtifactStore(case)
with LedgerWriter.create(case) as w:
    w.append("task.created", "task-1", {"title": "t"})
    for i in range(40):
        sha = store.put(f"request {i}".encode())
        w.append("call.requested", "task-1", {"idempotency_key": f"k{i}", "purpose": "p",
                 "model": "m"}, call_id=f"call-{i}")
        w.append("call.manifest", "task-1", {"idempotency_key": f"k{i}", "intent": {},
                 "request_sha256": sha, "request_artifact": sha, "model": "m",
                 "context_package_id": None, "rendered_context_sha256": None},
                 call_id=f"call-{i}")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_case(tmp_path: Path) -> Path:
    case = tmp_path / "killed"
    proc = subprocess.run([sys.executable, "-c", PRODUCER, str(case)], timeout=60)
    assert proc.returncode == -signal.SIGKILL
    (case / "case.json").write_text(json.dumps({"description": "killed producer"}))
    (case / "provider").mkdir()
    (case / "provider" / "receipts.jsonl").write_text("")
    return case


def _count(db: Path) -> int | str:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return str(exc)


def _hashes(case: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in (case / "ledger.sqlite3", case / "ledger.sqlite3-wal")}


def test_export_keeps_every_commit_a_sigkill_left_in_the_wal(tmp_path: Path) -> None:
    case = _killed_case(tmp_path)
    assert (case / "ledger.sqlite3-wal").stat().st_size > 0
    # the trap: the main file alone has none of the events
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(case / "ledger.sqlite3", lone / "ledger.sqlite3")
    assert _count(lone / "ledger.sqlite3") != 81
    before = _hashes(case)
    proc = cli("export", str(case), str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "exported 81 events" in proc.stdout and "40 artifacts" in proc.stdout
    out = tmp_path / "out"
    assert _hashes(case) == before  # the source's ledger and -wal bytes are untouched
    assert not (out / "ledger.sqlite3-wal").exists()
    # the copy alone is the whole case: move only its ledger file and it still has it all
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(out / "ledger.sqlite3", alone / "ledger.sqlite3")
    assert _count(alone / "ledger.sqlite3") == 81
    inspected = json.loads(cli("inspect", str(out), "--json").stdout)
    assert inspected["event_count"] == 81 and len(inspected["calls"]) == 40
    assert (out / "case.json").read_text() == (case / "case.json").read_text()
    assert (out / "provider" / "receipts.jsonl").exists()


def test_export_refuses_to_overwrite_and_skips_what_is_not_a_regular_file(tmp_path: Path) -> None:
    case = _killed_case(tmp_path)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "x").write_text("keep me")
    proc = cli("export", str(case), str(taken))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert (taken / "x").read_text() == "keep me"
    (case / "case.json").unlink()
    (case / "case.json").symlink_to("/etc/hostname")
    proc = cli("export", str(case), str(tmp_path / "out2"))
    assert proc.returncode == 0, proc.stderr
    assert "skipped 1: case.json is not a regular file" in proc.stdout
    assert not (tmp_path / "out2" / "case.json").exists()
    assert cli("export", str(tmp_path / "nowhere"), str(tmp_path / "o3")).returncode == 2
