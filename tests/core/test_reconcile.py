"""`codeai-tui reconcile`: real processes on ledgers written with plain sqlite3."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ledgerfactory import write_ledger

from tests.support import TESTS, cli

EXT = TESTS / "conformance_ext"


def _case(tmp_path: Path, vector: str) -> Path:
    v = json.loads((EXT / f"{vector}.json").read_text())
    return write_ledger(tmp_path / vector, v["events"], receipts=v["receipts"]).parent


def _rows(case: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(case / "ledger.sqlite3") as conn:
        return conn.execute("SELECT seq, kind, call_id, attempt_id, payload FROM events "
                            "ORDER BY seq").fetchall()


def _call(case: Path, call_id: str) -> dict[str, Any]:
    proc = cli("inspect", str(case), "--json")
    assert proc.returncode == 0, proc.stderr
    return next(c for c in json.loads(proc.stdout)["calls"] if c["call_id"] == call_id)


def test_received_finding_records_the_matching_receipt(tmp_path: Path) -> None:
    case = _case(tmp_path, "evidence_received")
    before = _rows(case)
    proc = cli("reconcile", str(case), "c1", "--finding", "received", "--note", "seen", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert "next decide_duplicate" in proc.stdout
    after = _rows(case)
    assert after[:-1] == before
    seq, kind, call_id, attempt_id, payload = after[-1]
    assert (seq, kind, call_id, attempt_id) == (len(before) + 1, "attempt.reconciled", "c1", "a1")
    body = json.loads(payload)
    assert body["finding"] == "received"
    assert body["evidence"] == ["rcpt-1"]
    assert body["note"] == "seen"
    assert body["decided_by"]["pid"] != 0 and body["decided_by"]["user"]
    c1 = _call(case, "c1")
    assert (c1["stage"], c1["next_operation"], c1["provider_effect"]) == (
        "reconciled_received", "decide_duplicate", "happened")


def test_not_received_is_refused_while_a_receipt_matches(tmp_path: Path) -> None:
    case = _case(tmp_path, "evidence_received")
    before = _rows(case)
    proc = cli("reconcile", str(case), "c1", "--finding", "not_received", "--yes")
    assert proc.returncode == 3
    assert "rcpt-1" in proc.stderr and "reconcile_effect" in proc.stderr
    assert _rows(case) == before


def test_not_received_without_a_matching_receipt_allows_the_next_attempt(tmp_path: Path) -> None:
    case = _case(tmp_path, "evidence_not_received")
    proc = cli("reconcile", str(case), "c1", "--finding", "not_received", "--yes")
    assert proc.returncode == 0, proc.stderr
    c1 = _call(case, "c1")
    assert (c1["stage"], c1["next_operation"], c1["provider_effect"],
            c1["duplicate_effect_risk"]) == (
        "reconciled_not_received", "start_next_attempt", "none", False)
    assert json.loads(_rows(case)[-1][4])["evidence"] == []


@pytest.mark.parametrize(("call_id", "next_op"), [("c1", "decide_duplicate"),
                                                  ("c2", "start_call")])
def test_only_an_unknown_effect_may_be_reconciled(tmp_path: Path, call_id: str,
                                                  next_op: str) -> None:
    """A call already reconciled (c1) or never started (c2) is refused with exit 3,
    naming the projected next operation, and nothing is appended."""
    case = _case(tmp_path, "evidence_received")
    assert cli("reconcile", str(case), "c1", "--finding", "received", "--yes").returncode == 0
    before = _rows(case)
    proc = cli("reconcile", str(case), call_id, "--finding", "received", "--yes")
    assert proc.returncode == 3
    assert f"next operation: {next_op}" in proc.stderr
    assert _rows(case) == before


@pytest.mark.parametrize("call_id", ["nope", "", "  "])
def test_unknown_or_empty_call_id_is_bad_input(tmp_path: Path, call_id: str) -> None:
    case = _case(tmp_path, "evidence_received")
    before = _rows(case)
    proc = cli("reconcile", str(case), call_id, "--finding", "received", "--yes")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("codeai-tui") and len(proc.stderr.strip().splitlines()) == 1
    assert _rows(case) == before


def test_without_yes_and_no_terminal_nothing_is_written(tmp_path: Path) -> None:
    case = _case(tmp_path, "evidence_received")
    before = _rows(case)
    proc = cli("reconcile", str(case), "c1", "--finding", "received", input="c1\n")
    assert proc.returncode == 2
    assert "confirmation" in proc.stderr
    assert _rows(case) == before


def test_two_racing_reconcilers_record_one_finding(tmp_path: Path) -> None:
    """Both re-project inside BEGIN IMMEDIATE: the loser sees the winner's finding and is
    refused, so the attempt gets exactly one attempt.reconciled."""
    case = _case(tmp_path, "evidence_received")
    args = [sys.executable, "-m", "codeai_tui", "reconcile", str(case), "c1",
            "--finding", "received", "--yes"]
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    codes = sorted(p.wait(timeout=60) for p in procs)
    for p in procs:
        p.communicate()
    assert codes == [0, 3]
    assert [r[1] for r in _rows(case)].count("attempt.reconciled") == 1
