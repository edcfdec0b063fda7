"""Reconciling a tool operation whose effect is unknown (docs/tools.md, `tool.reconciled`):
real worker processes killed by SIGKILL, then the CLI as an operator runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from codeai_tui.ledger import ArtifactStore, LedgerReader, read_receipts
from codeai_tui.tools import count_publications, verify_case_receipts
from tests.core.test_replay import _killed_run
from tests.support import cli

ROOT = Path(__file__).resolve().parents[2]


def _kinds(case: Path) -> list[str]:
    with LedgerReader(case) as reader:
        return [e.kind for e in reader.events()]


def _inspect(case: Path) -> dict[str, Any]:
    out = cli("inspect", str(case), "--json")
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def _operation(doc: dict[str, Any]) -> dict[str, Any]:
    ops = [o for c in doc["calls"] if c.get("tools") for o in c["tools"]["operations"]]
    assert len(ops) == 1
    return ops[0]


def _key(case: Path) -> str:
    key = _operation(_inspect(case))["operation_key"]
    assert isinstance(key, str)
    return key


def test_executed_settles_the_operation_and_the_turn_goes_on_without_running_it(
        tmp_path: Path) -> None:
    case, kernel_key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, kernel_key, "tool-effect")  # the tool published, nothing recorded it
    assert count_publications(case) == 1
    doc = _inspect(case)
    assert _operation(doc)["state"] == "effect_unknown"
    assert doc["tasks"][0]["next_operation"] == "reconcile_effect"
    key, before = _key(case), _kinds(case)

    unconfirmed = cli("reconcile-tool", str(case), key, "--finding", "executed")
    assert unconfirmed.returncode == 2 and "confirmation" in unconfirmed.stderr
    unknown = cli("reconcile-tool", str(case), key + "x", "--finding", "executed", "--yes")
    assert unknown.returncode == 2 and "no admitted tool operation" in unknown.stderr
    assert _kinds(case) == before  # bad input writes nothing

    done = cli("reconcile-tool", str(case), key, "--finding", "executed", "--note",
               "reports.db holds the report", "--yes")
    assert done.returncode == 0, done.stderr
    assert "now reconciled_executed, next none" in done.stdout
    assert _kinds(case) == [*before, "tool.reconciled"]
    doc = _inspect(case)
    op = _operation(doc)
    assert (op["state"], op["next_operation"], op["duplicate_effect_risk"], op["finding"]) == (
        "reconciled_executed", "none", False, "executed")
    assert op["reconciled_seq"] == len(before) + 1
    assert doc["counts"]["effect_unknown"] == 0
    assert doc["tasks"][0]["next_operation"] == "start_call"

    again = cli("reconcile-tool", str(case), key, "--finding", "not_executed", "--yes")
    assert again.returncode == 3 and "reconciled_executed" in again.stderr
    assert _kinds(case) == [*before, "tool.reconciled"]  # the first finding stands

    replay = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(kernel_key), "--yes")
    assert replay.returncode == 0, replay.stderr
    assert "found to have run" in replay.stdout
    assert count_publications(case) == 1  # never run again
    with LedgerReader(case) as reader:
        manifest = [e for e in reader.events_for_call("turn-1-m2") if e.kind == "call.manifest"]
    assert len(manifest) == 1 and manifest[0].payload is not None
    sent = json.loads(ArtifactStore(case).get(manifest[0].payload["request_sha256"]) or b"{}")
    tool_messages = [m for m in sent["messages"] if m.get("role") == "tool"]
    assert [json.loads(m["content"]) for m in tool_messages] == [
        {"outcome": "unknown", "reconciled": "executed", "result": None}]


def test_not_executed_lets_replay_run_it_once_under_a_new_admission(tmp_path: Path) -> None:
    case, kernel_key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, kernel_key, "tool.admitted")  # admitted; the tool never started
    assert count_publications(case) == 0
    key = _key(case)
    refused = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(kernel_key), "--yes")
    assert refused.returncode == 3 and "reconcile" in refused.stderr

    done = cli("reconcile-tool", str(case), key, "--finding", "not_executed", "--yes")
    assert done.returncode == 0, done.stderr
    op = _operation(_inspect(case))
    assert (op["state"], op["next_operation"]) == ("reconciled_not_executed", "start_tool")

    replay = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(kernel_key), "--yes")
    assert replay.returncode == 0, replay.stderr
    assert "reconciled_not_executed" in replay.stderr  # the preview named the state
    assert count_publications(case) == 1
    doc = _inspect(case)
    op = _operation(doc)
    assert (op["state"], op["receipt"]["verdict"]) == ("completed", "valid")
    assert "finding" not in op  # the new admission carries no finding
    assert doc["anomalies"] == []  # the second admission follows the finding: not an anomaly
    assert _kinds(case).count("tool.admitted") == 2
    assert verify_case_receipts(case).ok  # the receipt names the admission that stands
    assert len(read_receipts(case).receipts) == 1  # no second provider call

    again = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(kernel_key), "--yes")
    assert again.returncode == 0 and "nothing to run" in again.stdout
    assert count_publications(case) == 1


def test_two_reconcilers_racing_one_operation_append_one_finding(tmp_path: Path) -> None:
    case, kernel_key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, kernel_key, "tool-effect")
    key = _key(case)
    procs = [subprocess.Popen(
        [sys.executable, "-m", "codeai_tui", "reconcile-tool", str(case), key, "--finding",
         finding, "--yes"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for finding in ("executed", "not_executed")]
    codes = sorted(p.wait(timeout=60) for p in procs)
    assert codes == [0, 3]
    assert _kinds(case).count("tool.reconciled") == 1
    assert _inspect(case)["anomalies"] == []
