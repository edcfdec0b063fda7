"""The verifier's own tool rungs (codeai_tui/verify/tool_rungs.py) agree with every tool
conformance vector, written for the projection: two implementations, one contract."""

from __future__ import annotations

import hashlib
import json
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from ledgerfactory import write_ledger

from codeai_tui.verify.effects import (
    ToolEvidence,
    check_line,
    read_tool_evidence,
    receipt_verdict,
)
from codeai_tui.verify.rules import derive
from codeai_tui.verify.store import Row
from codeai_tui.verify.tool_rungs import ToolOp, derive_tools
from tests.support import TESTS, cli

VECTORS = [json.loads(p.read_text()) for p in sorted((TESTS / "conformance_ext").glob("tool_*.json"))]


def _rows(events: list[dict[str, Any]], as_of: int | None) -> list[Row]:
    return [Row(e["seq"], f"e{e['seq']}", e["kind"], e["task_id"], e.get("call_id"),
                e.get("attempt_id"), e.get("compilation_id"), e["payload"], True)
            for e in events if as_of is None or e["seq"] <= as_of]


def _evidence(vector: dict[str, Any]) -> ToolEvidence:
    ev = ToolEvidence()
    tools = vector.get("tools")
    if tools is None:
        return ev
    key = serialization.load_pem_public_key(tools["kernel_pub"].encode())
    assert isinstance(key, Ed25519PublicKey)
    ev.public = key
    ev.lines = [check_line(n, line.encode(), key)
                for n, line in enumerate(tools["receipts_ndjson"], start=1)]
    return ev


def test_there_are_tool_vectors() -> None:
    assert len(VECTORS) >= 18


def _short(op: ToolOp, ev: ToolEvidence) -> dict[str, Any]:
    """The vectors' short form of an operation: a finding only where one stands."""
    out: dict[str, Any] = {"state": op.state, "next_operation": op.next_operation}
    if (verdict := receipt_verdict(op, ev)) is not None:
        out["receipt"] = verdict
    if op.reconciled is not None:
        out |= {"finding": op.finding, "reconciled_seq": op.reconciled.seq}
    return out


def _fields(op: ToolOp) -> dict[str, Any]:
    """The inspect --json fields a vector's `tool_operation_fields` may name."""
    return {"duplicate_effect_risk": op.duplicate_effect_risk,
            "admitted_seq": op.admitted.seq if op.admitted else None,
            "completed_seq": op.completed.seq if op.completed else None,
            "outcome": op.completed.payload.get("outcome") if op.completed else None}


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_verifier_tool_rungs_match_the_vectors(vector: dict[str, Any]) -> None:
    ev = _evidence(vector)
    points = [(None, vector["expect"])] + [
        (int(k), v) for k, v in vector.get("expect_as_of", {}).items()]
    for as_of, expect in points:
        rows = _rows(vector["events"], as_of)
        tools = derive_tools(rows)
        for call_id, fields in expect.get("calls", {}).items():
            if "tool_operations" in fields:
                got = [_short(o, ev) for o in tools[call_id].ops] if call_id in tools else None
                assert got == fields["tool_operations"], (call_id, as_of)
            if "tool_operation_fields" in fields:
                got_fields = [{k: _fields(o)[k] for k in want}
                              for o, want in zip(tools[call_id].ops,
                                                 fields["tool_operation_fields"], strict=True)]
                assert got_fields == fields["tool_operation_fields"], (call_id, as_of)
            if fields.get("tools", "absent") is None:
                assert call_id not in tools
        # the tool events the document calls anomalies, by seq (the wording is the
        # projection's; the verifier only has to agree on which events changed nothing)
        anomalous = sorted(s for ct in tools.values() for s in ct.anomalies)
        assert anomalous == [a["seq"] for a in expect.get("anomalies", [])], as_of
        derived = derive(rows)
        for task_id, fields in expect.get("tasks", {}).items():
            for key, want in fields.items():
                assert derived.tasks[task_id][key] == want, (task_id, key, as_of)
        ops = [o for ct in tools.values() for o in ct.ops]
        unknown_calls = sum(c["stage"] == "effect_unknown" for c in derived.calls.values())
        unknown_ops = sum(o.state == "effect_unknown" for o in ops)
        counts = {"tool_operations": len(ops), "effect_unknown_tool_operations": unknown_ops,
                  "effect_unknown_calls": unknown_calls,
                  "effect_unknown": unknown_calls + unknown_ops,
                  "start_tool": sum(o.next_operation == "start_tool" for o in ops)}
        for key, want in expect.get("counts", {}).items():
            assert counts[key] == want, (key, as_of)


def test_a_store_killed_inside_its_transaction_is_read_without_writing_it(
        tmp_path: Path) -> None:
    """A hot journal (the tool killed mid-transaction) cannot be rolled back by a
    read-only connection; the verifier reads a scratch copy: the committed rows, and the
    case's files are unchanged."""
    case = tmp_path / "case"
    (case / "tools").mkdir(parents=True)
    store = case / "tools" / "reports.sqlite3"
    script = f"""
import os, sqlite3
conn = sqlite3.connect({str(store)!r}, isolation_level=None)
conn.execute("CREATE TABLE publications (id INTEGER PRIMARY KEY, operation_key TEXT, "
             "tool_call_id TEXT, title TEXT, body TEXT, published_at TEXT)")
conn.execute("INSERT INTO publications (operation_key, tool_call_id) VALUES ('k1', 't1')")
conn.execute("PRAGMA cache_size=1")
conn.execute("BEGIN IMMEDIATE")
for i in range(2000):  # spills pages into the file: the journal is hot
    conn.execute("INSERT INTO publications (operation_key, tool_call_id, body) "
                 "VALUES (?, ?, ?)", (f"k{{i}}", "t", "x" * 500))
os.kill(os.getpid(), 9)
"""
    done = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert done.returncode == -signal.SIGKILL
    journal = store.with_name(store.name + "-journal")
    assert journal.exists() and journal.stat().st_size > 0, "no hot journal was left"
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in store.parent.iterdir()}
    ev = read_tool_evidence(case)
    assert ev.problems == []
    assert ev.publications == [(1, "k1", "t1")]
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in store.parent.iterdir()}
    assert after == before


def _case(tmp_path: Path, name: str, published: list[str]) -> Path:
    """A case from a tool vector, with the demo tool's store holding a publication for
    each of `published` (tool-call ids, in that order: publication ids 1, 2, ...)."""
    vector = next(v for v in VECTORS if v["name"] == name)
    case = write_ledger(tmp_path / name, vector["events"], receipts=vector["receipts"]).parent
    (case / "tools").mkdir()
    (case / "tools" / "kernel.pub").write_text(vector["tools"]["kernel_pub"])
    (case / "tools" / "receipts.ndjson").write_text(
        "".join(line + "\n" for line in vector["tools"]["receipts_ndjson"]))
    conn = sqlite3.connect(case / "tools" / "reports.sqlite3")
    conn.execute("CREATE TABLE publications (id INTEGER PRIMARY KEY, operation_key TEXT, "
                 "tool_call_id TEXT, title TEXT, body TEXT, published_at TEXT)")
    conn.executemany("INSERT INTO publications (operation_key, tool_call_id) VALUES (?, ?)",
                     [(f"ns/th/turn-1/{t}", t) for t in published])
    conn.commit()
    conn.close()
    return case


def _verify(case: Path) -> tuple[int, list[str]]:
    done = cli("verify", str(case))
    return done.returncode, done.stdout.splitlines()


def test_a_re_admission_after_not_executed_is_one_admission_with_its_receipt(
        tmp_path: Path) -> None:
    """Two tool.admitted for one publication, the first closed by a not_executed finding:
    the second stands, and the receipt names it."""
    code, lines = _verify(_case(tmp_path, "tool_reconciled_not_executed_then_completed",
                                ["tc-1"]))
    assert code == 0, lines
    assert "PASS tool_reconciled_not_executed_then_completed: publication 1 (ns/th/turn-1/tc-1): " \
        "one admission (seq 10, admitted again after 1 not_executed finding(s)) and one " \
        "valid receipt naming it" in lines


def test_a_second_admission_without_a_finding_still_fails(tmp_path: Path) -> None:
    code, lines = _verify(_case(tmp_path, "tool_readmitted_without_finding", ["tc-1", "tc-2"]))
    assert code == 1
    assert "FAIL tool_readmitted_without_finding: publication 1 (ns/th/turn-1/tc-1): 2 " \
        "tool.admitted events, 1 of them a second admission without a not_executed " \
        "finding" in lines
    # tc-2's executed finding stands and its publication is there; its second admission
    # (after that finding) is the failure
    assert "PASS tool_readmitted_without_finding: operation ns/th/turn-1/tc-2: reconciled " \
        "executed at seq 11; tools/reports.sqlite3 has its publication" in lines
    assert any(line.startswith("FAIL tool_readmitted_without_finding: publication 2 "
                               "(ns/th/turn-1/tc-2): 2 tool.admitted events") for line in lines)


@pytest.mark.parametrize(("name", "published", "found", "ok"), [
    ("tool_reconciled_executed", ["tc-1", "tc-2"], True, True),
    ("tool_reconciled_executed", ["tc-1"], False, False),
    ("tool_reconciled_not_executed", [], False, True),
    ("tool_reconciled_not_executed", ["tc-1"], True, False),
])
def test_a_finding_is_checked_against_the_tools_own_store(
        tmp_path: Path, name: str, published: list[str], found: bool, ok: bool) -> None:
    """executed needs the publication in the tool's store, not_executed must have none:
    the operator's word is evidence the verifier checks, not takes."""
    code, lines = _verify(_case(tmp_path, name, published))
    key = "ns/th/turn-1/tc-2" if name == "tool_reconciled_executed" else "ns/th/turn-1/tc-1"
    finding = [line for line in lines if f"operation {key}: reconciled" in line]
    assert len(finding) == 1, lines
    assert finding[0].startswith("PASS" if ok else "FAIL"), finding
    assert finding[0].endswith("has its publication" if found else "has no publication of it")
    assert (code == 0) == ok, lines
