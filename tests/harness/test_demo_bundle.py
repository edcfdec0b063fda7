"""The demo bundle built by real kills: every case's state, receipts and evidence."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support import CONFORMANCE, cli

CASE_VECTORS: dict[str, list[str]] = {
    "01_killed_after_requested": ["killed_after_requested"],
    "02_killed_after_manifest": ["killed_after_manifest"],
    "03_drift_refused": ["killed_after_manifest"],
    "04_killed_in_flight": ["killed_in_flight"],
    "05_naive_restart": ["naive_restart_copy"],
    "06_killed_after_observed": ["killed_after_observed"],
    "07_killed_after_compilation_requested": ["killed_after_compilation_requested"],
    "08_compilation_failed": ["compilation_failed_missing_required"],
    "09_resumed": ["resumed_then_completed"],
    "10_completed_and_accepted": ["completed_task", "accepted_not_completed"],
}
CHECKPOINTS = {
    "01_killed_after_requested": ("call.requested", "after_commit"),
    "02_killed_after_manifest": ("call.manifest", "after_commit"),
    "03_drift_refused": ("call.manifest", "after_commit"),
    "04_killed_in_flight": ("attempt.started", "provider_holding_request"),
    "05_naive_restart": ("attempt.started", "provider_holding_request"),
    "06_killed_after_observed": ("attempt.observed", "after_commit"),
    "07_killed_after_compilation_requested": ("context.compilation_requested", "after_commit"),
    "08_compilation_failed": ("context.compilation_failed", "after_commit"),
    "09_resumed": ("call.manifest", "after_commit"),
    "10_completed_and_accepted": ("task.accepted", "after_commit"),
}
CALL_FIELDS = ("stage", "next_operation", "provider_effect", "duplicate_effect_risk",
               "attempts", "status")


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def shape(calls: list[dict[str, Any]], comps: list[dict[str, Any]],
          tasks: list[dict[str, Any]]) -> tuple[Any, ...]:
    """States without ids (ids are not part of the experiment's claims)."""
    return (
        sorted(tuple(c[f] for f in CALL_FIELDS) + (c["superseded_by"] is not None,) for c in calls),
        sorted((c["stage"], c["next_operation"], tuple(c["missing_required"])) for c in comps),
        sorted(t["next_operation"] for t in tasks),
    )


def vector_shape(names: list[str]) -> tuple[tuple[Any, ...], int, int | None]:
    calls: list[dict[str, Any]] = []
    comps: list[dict[str, Any]] = []
    tasks: list[dict[str, Any]] = []
    events, receipts = 0, None
    for name in names:
        vec = load(CONFORMANCE / f"{name}.json")
        calls += vec["expect"]["calls"].values()
        comps += vec["expect"]["compilations"].values()
        tasks += vec["expect"]["tasks"].values()
        events += len(vec["events"])
        if vec["receipts"] is not None:
            receipts = (receipts or 0) + len(vec["receipts"])
    return shape(calls, comps, tasks), events, receipts


def receipts_of(case: Path) -> list[dict[str, Any]]:
    log = case / "provider" / "receipts.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def manifests_of(case: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True, isolation_level=None)
    try:
        rows = conn.execute("SELECT payload FROM events WHERE kind='call.manifest' ORDER BY seq")
        return [json.loads(r[0]) for r in rows.fetchall()]
    finally:
        conn.close()


TOOL_CASES = {  # after the ten, in this order (tests/harness/test_tool_cases.py)
    "11_tool_generate": "tool_generate",
    "12_tool_stream": "tool_stream",
    "13_tool_truncated_stream": "tool_truncated_stream",
    "14_tool_killed_in_tool": "tool_killed_in_tool",
}
LATER_TOOL_CASES = {  # after the advance cases (tests/harness/test_fresh_ids.py)
    "19_tool_fresh_ids": "tool_fresh_ids",
}


# a case where each advance step is next (stage, next operation, receipts)
ADVANCE_CASES = {
    "15_reconciled_not_received": "reconciled_not_received",
    "16_reconciled_received": "reconciled_received",
    "17_killed_after_interpreted": "killed_after_interpreted",
}
# a tool decision killed after its manifest, resumed by an operator, finished by a worker
RESUMED_TOOL_CASES = {"18_tool_resumed_decision": "tool_resumed_decision"}
ADVANCE_STATES = {
    "15_reconciled_not_received": ("reconciled_not_received", "start_next_attempt", 0),
    "16_reconciled_received": ("reconciled_received", "decide_duplicate", 1),
    "17_killed_after_interpreted": ("interpreted", "redecide", 1),
}


@pytest.mark.parametrize("name", list(ADVANCE_STATES))
def test_each_advance_step_has_a_case(demo_bundle: Path, name: str) -> None:
    projection = load(demo_bundle / name / "inspection.json")["projection"]
    (call,) = projection["calls"]
    stage, op, receipts = ADVANCE_STATES[name]
    assert (call["stage"], call["next_operation"]) == (stage, op)
    assert projection["receipts"]["count"] == receipts == len(receipts_of(demo_bundle / name))
    assert projection["anomalies"] == []
    action = demo_bundle / name / "operator_action.json"
    if name != "17_killed_after_interpreted":  # 15 and 16: a separate reconcile process
        rec = load(action)
        assert rec["exit_code"] == 0 and rec["action"] == "reconcile"
        assert rec["after"]["event_count"] == rec["before"]["event_count"] + 1
        assert rec["after"]["receipt_count"] == rec["before"]["receipt_count"]
    else:
        assert not action.exists()


def test_bundle_holds_the_ten_cases(demo_bundle: Path) -> None:
    manifest = load(demo_bundle / "bundle.json")
    dirs = [c["dir"] for c in manifest["cases"]]
    assert dirs[:10] == list(CASE_VECTORS)  # numbering and roles of the ten unchanged
    assert [c["role"] for c in manifest["cases"][:10]] == [n.split("_", 1)[1] for n in CASE_VECTORS]
    assert {c["dir"]: c["role"] for c in manifest["cases"][10:14]} == TOOL_CASES
    assert dirs[10:14] == list(TOOL_CASES)
    assert {c["dir"]: c["role"] for c in manifest["cases"][14:17]} == ADVANCE_CASES
    assert dirs[14:17] == list(ADVANCE_CASES)
    assert {c["dir"]: c["role"] for c in manifest["cases"][17:18]} == RESUMED_TOOL_CASES
    assert dirs[17:18] == list(RESUMED_TOOL_CASES)
    assert {c["dir"]: c["role"] for c in manifest["cases"][18:]} == LATER_TOOL_CASES
    assert dirs[18:] == list(LATER_TOOL_CASES)
    bundle_id = manifest["bundle_id"]
    assert re.fullmatch(r"[0-9a-f]{16}", bundle_id), bundle_id
    for name in CASE_VECTORS:
        assert (demo_bundle / name / "ledger.sqlite3").is_file()
        config = load(demo_bundle / name / "case.json")["provider"]
        # the bundle's own id in the path, which only this bundle's provider answers,
        # and the identity resume asks of it before sending
        assert config["base_url"] == f"http://127.0.0.1:8768/b/{bundle_id}/c/{name}/v1"
        assert config["identity"] == bundle_id
        assert config["model"] == ("synthetic-large" if name == "03_drift_refused" else "synthetic-small")


@pytest.mark.parametrize("name", list(CASE_VECTORS))
def test_case_projects_the_conformance_state(demo_bundle: Path, name: str) -> None:
    projection = load(demo_bundle / name / "inspection.json")["projection"]
    expected, events, receipts = vector_shape(CASE_VECTORS[name])
    assert shape(projection["calls"], projection["compilations"], projection["tasks"]) == expected
    assert projection["event_count"] == events
    assert projection["anomalies"] == []
    if receipts is not None:
        assert projection["receipts"]["count"] == receipts


@pytest.mark.parametrize("name", list(CASE_VECTORS))
def test_producer_was_sigkilled_at_its_checkpoint(demo_bundle: Path, name: str) -> None:
    t = load(demo_bundle / name / "termination.json")
    assert (t["event"], t["point"]) == CHECKPOINTS[name]
    assert t["signal"] == "SIGKILL" and t["returncode"] == -9 and t["pid"] > 0


@pytest.mark.parametrize("name", list(CASE_VECTORS))
def test_inspecting_appended_nothing(demo_bundle: Path, name: str) -> None:
    rec = load(demo_bundle / name / "inspection.json")
    assert rec["exit_code"] == 0
    assert rec["before"] == rec["after"]
    assert rec["before"]["files_sha256"]["ledger.sqlite3"] is not None


def test_resume_produced_exactly_one_receipt_with_the_manifest_hash(demo_bundle: Path) -> None:
    case = demo_bundle / "09_resumed"
    rec = load(case / "resume_attempt.json")
    assert rec["exit_code"] == 0
    assert (rec["before"]["receipt_count"], rec["after"]["receipt_count"]) == (0, 1)
    assert (rec["before"]["event_count"], rec["after"]["event_count"]) == (7, 15)
    receipts = receipts_of(case)
    manifests = manifests_of(case)
    assert len(receipts) == 1 and len(manifests) == 2
    assert receipts[0]["body_sha256"] == manifests[0]["request_sha256"] == manifests[1]["request_sha256"]
    assert receipts[0]["idempotency_key"] == manifests[0]["idempotency_key"] == manifests[1]["idempotency_key"]
    calls = {c["call_id"]: c for c in load(case / "inspection.json")["projection"]["calls"]}
    new_id = calls["call-1"]["superseded_by"]
    assert calls["call-1"]["stage"] == "superseded"
    assert calls[new_id]["stage"] == "completed" and calls[new_id]["resumed_from"] == "call-1"
    before = load(case / "inspection_before_resume.json")["projection"]
    assert before["calls"][0]["stage"] == "manifest_recorded"
    assert before["tasks"][0]["next_operation"] == "start_call"


def test_resume_plans_were_shown_by_separate_processes(demo_bundle: Path) -> None:
    requested = load(demo_bundle / "01_killed_after_requested" / "resume_plan.json")
    assert requested["exit_code"] == 0 and requested["before"] == requested["after"]
    assert requested["plan"]["drift_check_possible"] is False
    assert requested["plan"]["verdict"] == "no drift check possible"
    manifest = load(demo_bundle / "02_killed_after_manifest" / "resume_plan.json")
    assert manifest["exit_code"] == 0 and manifest["before"] == manifest["after"]
    assert manifest["plan"]["verdict"] == "match" and manifest["plan"]["drift"] == []
    recorded = manifests_of(demo_bundle / "02_killed_after_manifest")[0]["request_sha256"]
    assert manifest["plan"]["request_sha256_rebuilt"] == recorded


def test_naive_restart_duplicated_the_effect_and_appended_nothing(demo_bundle: Path) -> None:
    case = demo_bundle / "05_naive_restart"
    rec = load(case / "naive_restart.json")
    assert rec["exit_code"] == 0
    assert rec["before"]["events_sha256"] == rec["after"]["events_sha256"]
    assert rec["before"]["event_count"] == rec["after"]["event_count"] == 8
    assert (rec["before"]["receipt_count"], rec["after"]["receipt_count"]) == (1, 2)
    receipts = receipts_of(case)
    assert len(receipts) == 2
    assert receipts[0]["idempotency_key"] == receipts[1]["idempotency_key"]
    assert receipts[0]["body_sha256"] == receipts[1]["body_sha256"] == manifests_of(case)[0]["request_sha256"]
    assert receipts[0]["receipt_id"] == receipts_of(demo_bundle / "04_killed_in_flight")[0]["receipt_id"]
    dup = load(case / "inspection.json")["projection"]["receipts"]["duplicates"]
    assert [sorted(d) for d in dup] == [sorted(r["receipt_id"] for r in receipts)]


def test_drift_refusal_sent_nothing(demo_bundle: Path) -> None:
    case = demo_bundle / "03_drift_refused"
    rec = load(case / "resume_attempt.json")
    assert rec["exit_code"] == 3
    assert "drift" in rec["stderr"]
    assert rec["before"] == rec["after"]
    assert rec["after"]["receipt_count"] == 0
    assert receipts_of(case) == []


@pytest.mark.parametrize("name,operation", [("04_killed_in_flight", "reconcile_effect"),
                                            ("06_killed_after_observed", "reinterpret")])
def test_post_effect_resumes_were_refused(demo_bundle: Path, name: str, operation: str) -> None:
    rec = load(demo_bundle / name / "resume_attempt.json")
    assert rec["exit_code"] == 3
    assert f"next operation: {operation}" in rec["stderr"]
    assert rec["before"] == rec["after"]
    assert len(receipts_of(demo_bundle / name)) == 1


def test_compilation_inventories_are_recoverable(demo_bundle: Path) -> None:
    failed = load(demo_bundle / "08_compilation_failed" / "inspection.json")["projection"]
    comp = failed["compilations"][0]
    assert comp["missing_required"] == ["C"]
    assert comp["error"]["type"] == "RequiredContextMissing"
    offered = {o["id"]: (o["required"], o["size"], o["size_estimated"]) for o in comp["offered"]}
    assert offered == {"A": (True, 12, True), "B": (True, 0, False), "D": (False, 0, False)}
    stopped = load(demo_bundle / "07_killed_after_compilation_requested" / "inspection.json")
    assert [o["id"] for o in stopped["projection"]["compilations"][0]["offered"]] == ["A", "B", "D"]


def test_a_fresh_process_projects_the_recorded_states(demo_bundle: Path) -> None:
    done = cli("inspect", str(demo_bundle), "--json")
    assert done.returncode == 0, done.stderr
    fresh = {Path(c["case"]).name: c for c in json.loads(done.stdout)["cases"]}
    for name in CASE_VECTORS:
        recorded = load(demo_bundle / name / "inspection.json")["projection"]
        for key in ("event_count", "tasks", "calls", "compilations", "receipts"):
            assert fresh[name][key] == recorded[key], (name, key)


def test_verify_passes_every_claim(demo_bundle: Path) -> None:
    done = cli("verify", str(demo_bundle))
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, "\n".join(line for line in lines if line.startswith("FAIL"))
    passed, failed = re.fullmatch(r"(\d+) passed, (\d+) failed", lines[-1]).groups()  # type: ignore[union-attr]
    assert int(failed) == 0 and int(passed) == len(lines) - 1 >= 150
    assert any("05_naive_restart: shows 2 identical receipts" in line for line in lines)


def _normalised(bundle: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in CASE_VECTORS:
        text = (bundle / name / "inspection.json").read_text()
        text = re.sub(r"call-[0-9a-f]{12}", "call-NEW", text)
        text = re.sub(r"pid \d+", "pid N", text)  # the resumer's pid is in a reason
        # receipts named beside verdicts carry the provider's own ids and clock
        text = re.sub(r"rcpt-[0-9a-f]{16}", "rcpt-N", text)
        text = re.sub(r"\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)?", "TIME", text)
        text = re.sub(r"\b\d\d:\d\d:\d\d(\.\d{1,3})?\b", "HH:MM:SS", text)
        proj = json.loads(text)["projection"]
        proj.pop("case")
        proj["receipts"] = {k: (len(v) if isinstance(v, list) else v)
                            for k, v in proj["receipts"].items()}
        out[name] = proj
    return out


def test_demo_refuses_a_non_empty_out_dir(tmp_path: Path) -> None:
    (tmp_path / "something").write_text("x")
    done = cli("demo", str(tmp_path))
    assert done.returncode == 2
    assert "not an empty directory" in done.stderr and "Traceback" not in done.stderr
