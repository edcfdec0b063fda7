"""The project's extension vectors (tests/conformance_ext) through both projection paths
(the SQLite fast path and the event-by-event oracle) and the real `inspect --json`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ledgerfactory import write_ledger

from codeai_tui.services.projection import project_case as _project_case
from codeai_tui.services.tool_receipts import with_tool_receipts
from codeai_tui.workstate import WorkState
from tests.support import TESTS, cli

EXT = TESTS / "conformance_ext"
VECTORS = [json.loads(p.read_text()) for p in sorted(EXT.glob("*.json"))]
IDS = [v["name"] for v in VECTORS]


def project_case(case: Path, as_of: int | None = None, *, fast: bool = True) -> WorkState:
    """The projection with the case's tool receipts, as `inspect --json` reads it."""
    return with_tool_receipts(_project_case(case, as_of, fast=fast), case)


def _tool_operations(call: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A call's operations in the vectors' short form: state, next op, receipt verdict,
    and `finding` / `reconciled_seq` where the document has them (only on an operation
    with a finding, so an operation without one must not carry them at all)."""
    tools = call.get("tools")
    if tools is None:
        return None
    out = []
    for op in tools["operations"]:
        short = {"state": op["state"], "next_operation": op["next_operation"]}
        if "receipt" in op:
            short["receipt"] = op["receipt"]["verdict"]
        for key in ("finding", "reconciled_seq"):
            if key in op:
                short[key] = op[key]
        out.append(short)
    return out


def _tool_fields(call: dict[str, Any], want: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Of each operation, the fields the vector names (compared exactly)."""
    ops = (call.get("tools") or {}).get("operations")
    if ops is None or len(ops) != len(want):
        return ops
    return [{k: op.get(k, "(absent)") for k in w} for op, w in zip(ops, want, strict=True)]


def _anomaly_problems(doc: dict[str, Any], want: list[dict[str, Any]]) -> list[str]:
    """The document's anomalies: exactly the expected seqs, in order, each problem
    containing the expected words (none expected when the vector names none)."""
    got = doc.get("anomalies", [])
    if [a["seq"] for a in got] != [w["seq"] for w in want]:
        return [f"anomalies: got {got!r}, want {want!r}"]
    return [f"anomaly at seq {a['seq']}: {a['problem']!r} lacks {w['problem_contains']!r}"
            for a, w in zip(got, want, strict=True) if w["problem_contains"] not in a["problem"]]


def _check(doc: dict[str, Any], expect: dict[str, Any]) -> list[str]:
    """Differences between an inspect-shaped document and a vector's expectations."""
    problems = []
    calls = {c["call_id"]: c for c in doc["calls"]}
    for ident, fields in expect.get("calls", {}).items():
        got = calls.get(ident)
        if got is None:
            problems.append(f"calls.{ident} missing")
            continue
        for key, want in fields.items():
            if key == "reason_contains":
                if want not in got["reason"]:
                    problems.append(f"calls.{ident}.reason {got['reason']!r} lacks {want!r}")
            elif key == "tool_operations":
                if _tool_operations(got) != want:
                    problems.append(f"calls.{ident}.tools: got {_tool_operations(got)!r}, "
                                    f"want {want!r}")
            elif key == "tool_operation_fields":
                if _tool_fields(got, want) != want:
                    problems.append(f"calls.{ident}.tools fields: got {_tool_fields(got, want)!r}, "
                                    f"want {want!r}")
            elif got.get(key) != want:
                problems.append(f"calls.{ident}.{key}: got {got.get(key)!r}, want {want!r}")
    tasks = {t["task_id"]: t for t in doc["tasks"]}
    for ident, fields in expect.get("tasks", {}).items():
        for key, want in fields.items():
            got_value = tasks.get(ident, {}).get(key)
            if got_value != want:
                problems.append(f"tasks.{ident}.{key}: got {got_value!r}, want {want!r}")
    for key, want in expect.get("counts", {}).items():
        got_value = doc.get("counts", {}).get(key)
        if got_value != want:
            problems.append(f"counts.{key}: got {got_value!r}, want {want!r}")
    return problems + _anomaly_problems(doc, expect.get("anomalies", []))


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("ext")
    out = {}
    for v in VECTORS:
        case = out[v["name"]] = write_ledger(root / v["name"], v["events"],
                                             receipts=v["receipts"]).parent
        if "tools" in v:  # docs/tools.md's case layout: the kernel's key and receipt lines
            (case / "tools").mkdir()
            (case / "tools" / "kernel.pub").write_text(v["tools"]["kernel_pub"])
            (case / "tools" / "receipts.ndjson").write_text(
                "".join(line + "\n" for line in v["tools"]["receipts_ndjson"]))
    return out


def _points(vector: dict[str, Any]) -> list[tuple[int | None, dict[str, Any]]]:
    return [(None, vector["expect"])] + [
        (int(seq), exp) for seq, exp in vector.get("expect_as_of", {}).items()]


def test_there_are_extension_vectors() -> None:
    assert len(VECTORS) >= 10
    # every tool rung and receipt verdict has a vector (docs/tools.md)
    states = {(op["state"], op["next_operation"], op.get("receipt"))
              for v in VECTORS for c in v["expect"].get("calls", {}).values()
              for op in c.get("tool_operations", [])}
    assert {("not_admitted", "start_tool", None), ("effect_unknown", "reconcile_effect", None),
            ("completed", "none", "valid"), ("completed", "none", "invalid"),
            ("completed", "none", "missing"), ("reconciled_executed", "none", None),
            ("reconciled_not_executed", "start_tool", None),
            ("reconciled_not_executed", "none", None)} <= states


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_both_projection_paths(vector: dict[str, Any], cases: dict[str, Path]) -> None:
    case = cases[vector["name"]]
    for as_of, expect in _points(vector):
        fast = project_case(case, as_of)
        slow = project_case(case, as_of, fast=False)
        assert fast.gathered == "sql"
        assert slow.gathered != "sql"
        assert _check(fast.as_json("x"), expect) == [], f"fast path as of {as_of}"
        assert _check(slow.as_json("x"), expect) == [], f"event path as of {as_of}"
        assert fast.as_json("x") == slow.as_json("x")  # anomalies included


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_cli_inspect_json(vector: dict[str, Any], cases: dict[str, Path]) -> None:
    case = cases[vector["name"]]
    for as_of, expect in _points(vector):
        args = ["inspect", str(case), "--json"] + ([] if as_of is None else ["--as-of", str(as_of)])
        proc = cli(*args)
        assert proc.returncode == 0, proc.stderr
        assert _check(json.loads(proc.stdout), expect) == [], f"as of {as_of}"


def test_unreadable_log_is_not_mistaken_for_no_receipts(tmp_path: Path) -> None:
    """A receipt log that is a symlink is refused: the verdict says unknowable, on both
    paths, instead of "not in the provider's log"."""
    vector = next(v for v in VECTORS if v["name"] == "evidence_received")
    case = write_ledger(tmp_path / "case", vector["events"], receipts=vector["receipts"]).parent
    log = case / "provider" / "receipts.jsonl"
    real = case / "elsewhere.jsonl"
    log.rename(real)
    log.symlink_to(real)
    for fast in (True, False):
        doc = project_case(case, fast=fast).as_json("x")
        c1 = next(c for c in doc["calls"] if c["call_id"] == "c1")
        assert c1["evidence"]["receipt_log"] == "unreadable"
        assert c1["evidence"]["received"] == []
        assert c1["reason"].endswith("; receipt log unreadable: unknowable")


def test_each_attempt_names_only_its_own_receipts(tmp_path: Path) -> None:
    """Two attempts with different request bodies: the receipt of the first does not
    make the second look received (the verdict's attempt is the last started)."""
    vector = next(v for v in VECTORS if v["name"] == "evidence_received")
    h1, h2 = "1" * 64, "2" * 64
    events = [e for e in vector["events"] if e["seq"] <= 4] + [
        {"seq": 5, "kind": "attempt.observed", "task_id": "t1", "call_id": "c1",
         "attempt_id": "a1", "payload": {"transport": {"status": 500}}},
        {"seq": 6, "kind": "attempt.interpreted", "task_id": "t1", "call_id": "c1",
         "attempt_id": "a1", "payload": {"interpreter": "v1", "outcome": "retryable_error"}},
        {"seq": 7, "kind": "attempt.retry_decided", "task_id": "t1", "call_id": "c1",
         "attempt_id": "a1", "payload": {"decision": "retry", "reason": "500"}},
        {"seq": 8, "kind": "attempt.started", "task_id": "t1", "call_id": "c1",
         "attempt_id": "a2", "payload": {"attempt_no": 2, "request_sha256": h2}},
    ]
    receipts = [{"receipt_id": "r-a1", "received_at": "2026-09-13T12:00:04.500Z",
                 "idempotency_key": "k1", "body_sha256": h1, "bytes": 3}]
    case = write_ledger(tmp_path / "case", events, receipts=receipts).parent
    for fast in (True, False):
        c1 = project_case(case, fast=fast).as_json("x")["calls"][0]
        assert c1["stage"] == "effect_unknown"
        assert c1["evidence"]["attempts"] == [
            {"attempt_id": "a1", "provider_effect": "happened",
             "received": [{"receipt_id": "r-a1", "received_at": "2026-09-13T12:00:04.500Z"}]},
            {"attempt_id": "a2", "provider_effect": "unknown", "received": []}]
        assert "not in the provider's log (log complete up to 12:00:04.500)" in c1["reason"]


def test_inspect_table_names_tool_operations(cases: dict[str, Path]) -> None:
    """The table counts effect-unknown tool operations and lists each operation; a case
    without tool evidence prints no tool table."""
    proc = cli("inspect", str(cases["tool_admitted_no_outcome"]))
    assert proc.returncode == 0, proc.stderr
    assert "tool effect unknown 1" in proc.stdout
    assert "!! tool effect unknown: duplicate risk" in proc.stdout
    v1 = cli("inspect", str(cases["evidence_received"]))
    assert "TOOL OPERATION" not in v1.stdout and "tool effect unknown" not in v1.stdout


def test_without_a_readable_key_a_receipt_is_unchecked_not_valid(tmp_path: Path) -> None:
    """No trusted key, no verdict either way: a missing or foreign key file never makes a
    receipt look valid."""
    vector = next(v for v in VECTORS if v["name"] == "tool_completed_valid")
    case = write_ledger(tmp_path / "case", vector["events"], receipts=[]).parent
    (case / "tools").mkdir()
    (case / "tools" / "receipts.ndjson").write_text(vector["tools"]["receipts_ndjson"][0] + "\n")
    for key_text in (None, "not a PEM key"):
        if key_text is not None:
            (case / "tools" / "kernel.pub").write_text(key_text)
        doc = project_case(case).as_json("x")
        receipt = doc["calls"][0]["tools"]["operations"][0]["receipt"]
        assert receipt["verdict"] == "unchecked", receipt
        assert "kernel.pub" in receipt["detail"]
