"""The demo's tool cases: the seed's effect table from real kills,
recounted here with plain sqlite3 and file reads (not the project's counting code)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.support import cli

# mode -> (case, publications, provider_calls, complete), as in the seed (+ killed-in-tool,
# + resumed-decision: killed before the decision was sent, resumed, then replayed)
# + fresh-ids and its counterfactual naive-reask, counted in the case's naive/)
SEED_TABLE = {
    "generate": ("11_tool_generate", 1, 2, True),
    "stream": ("12_tool_stream", 1, 2, True),
    "truncated-stream": ("13_tool_truncated_stream", 0, 1, False),
    "killed-in-tool": ("14_tool_killed_in_tool", 1, 1, False),
    "resumed-decision": ("18_tool_resumed_decision", 1, 2, True),
    "fresh-ids": ("19_tool_fresh_ids", 1, 2, True),
    "naive-reask": ("19_tool_fresh_ids/naive", 2, 2, False),
}
CASES = {case: mode for mode, (case, *_rest) in SEED_TABLE.items() if "/" not in case}


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def publications(case: Path) -> list[tuple[int, str]]:
    store = case / "tools" / "reports.sqlite3"
    if not store.exists():
        return []
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, operation_key FROM publications ORDER BY id").fetchall()
    finally:
        conn.close()


def lines(path: Path) -> list[str]:
    return [ln for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []


def ledger_kinds(case: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT kind FROM events ORDER BY seq")]
    finally:
        conn.close()


def test_effects_json_is_the_seed_table_counted_from_the_stores(demo_bundle: Path) -> None:
    rows = load(demo_bundle / "effects.json")
    assert [r["mode"] for r in rows] == list(SEED_TABLE)
    for row in rows:
        case, pubs, calls, complete = SEED_TABLE[row["mode"]]
        assert row == {"mode": row["mode"], "case": case, "publications": pubs,
                       "provider_calls": calls, "complete": complete}
        # recounted here from the tool's store and the provider's log
        assert len(publications(demo_bundle / case)) == pubs
        assert len(lines(demo_bundle / case / "provider" / "receipts.jsonl")) == calls


def test_demo_prints_the_effect_table(demo_bundle: Path) -> None:
    printed = (demo_bundle.parent / "demo.stderr").read_text()
    # the cases are built by several threads: each line is whole, none run together
    assert all(line.startswith("demo: ") and line.count("demo: ") == 1
               for line in printed.splitlines()), printed
    for mode, (case, pubs, calls, complete) in SEED_TABLE.items():
        assert f"demo: {mode:<17} {case:<25} {pubs:>12} {calls:>14} {str(complete).lower()}" \
            in printed


@pytest.mark.parametrize("case", list(CASES))
def test_tool_case_layout_and_worker_kills(demo_bundle: Path, case: str) -> None:
    mode = CASES[case]
    root = demo_bundle / case
    assert (root / "tools" / "kernel.pub").read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert not list(demo_bundle.rglob("*.key"))  # the private key never enters the bundle
    phases = load(root / "worker_runs.json")["phases"]
    steps = [(p["step"], p["exit_code"], p["signal"]) for p in phases]
    receipts = lines(root / "tools" / "receipts.ndjson")
    kinds = ledger_kinds(root)
    if mode == "truncated-stream":
        assert steps == [("run", 0, None)]
        assert json.loads(phases[0]["stdout"].splitlines()[-1])["complete"] is False
        assert receipts == [] and "tool.admitted" not in kinds  # no plan, so no tool ran
        assert not (root / "tools" / "reports.sqlite3").exists()
        return
    assert steps[0] == ("run", -9, "SIGKILL")
    assert ("--kill-at" in phases[0]["argv"]) and ("KERNEL_KEY (outside the case)" in phases[0]["argv"])
    (key,) = [op for _, op in publications(root)]
    assert kinds.count("tool.admitted") == 1
    if mode == "killed-in-tool":
        assert steps[1][:2] == ("replay", 3) and "refused" in phases[1]["stdout"]
        assert receipts == [] and "tool.completed" not in kinds
        return
    if mode == "resumed-decision":  # the operator's resume between the two workers
        assert phases[0]["argv"][-2:] == ["--kill-at", "call.manifest"]
        assert steps[1] == ("resume", 0, None) and "resumed turn-1-m1 as" in phases[1]["stdout"]
        phases, steps = phases[1:], steps[1:]
    assert steps[1] == ("replay", 0, None)
    assert json.loads(phases[1]["stdout"].splitlines()[-1])["complete"] is True
    assert [json.loads(r)["body"]["operation_key"] for r in receipts] == [key]
    assert kinds.count("tool.completed") == 1 and kinds[-1] == "task.completed"
    keys = [json.loads(r)["idempotency_key"] for r in lines(root / "provider" / "receipts.jsonl")]
    assert keys == ["report-v1/thread-1/turn-1/model-1", "report-v1/thread-1/turn-1/model-2"]


@pytest.mark.parametrize("case", ["11_tool_generate", "12_tool_stream", "14_tool_killed_in_tool",
                                  "18_tool_resumed_decision"])
def test_receipts_verify_accepts_the_tool_cases(demo_bundle: Path, case: str) -> None:
    done = cli("receipts", "verify", str(demo_bundle / case))
    assert done.returncode == 0, done.stdout + done.stderr
    want = "0 valid" if case.startswith("14") else "1 valid"
    assert want in done.stdout and "0 invalid, 0 missing" in done.stdout


def test_replay_of_the_killed_in_tool_case_refuses_and_writes_nothing(
    demo_bundle: Path, tmp_path: Path
) -> None:
    case = tmp_path / "14"
    shutil.copytree(demo_bundle / "14_tool_killed_in_tool", case)
    before = ledger_kinds(case), publications(case)
    done = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(tmp_path / "k.key"), "--yes")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "effect_unknown" in done.stdout + done.stderr
    assert (ledger_kinds(case), publications(case)) == before


def _requested(case: Path) -> dict[str, dict[str, Any]]:
    conn = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT call_id, payload FROM events WHERE kind = 'call.requested'")
        return {cid: json.loads(payload) for cid, payload in rows.fetchall()}
    finally:
        conn.close()


def test_the_resumed_decision_keeps_its_turn_and_publishes_once_under_its_ids(
        demo_bundle: Path) -> None:
    """Case 18, read with plain sqlite3 and file reads: the call resumed from the killed
    decision names the same turn, and the one publication is under the tool-call id of
    the response that successor saved (the provider was asked for the decision once)."""
    root = demo_bundle / "18_tool_resumed_decision"
    requested = _requested(root)
    turn = {"namespace": "report-v1", "thread": "thread-1", "turn": "turn-1"}
    (successor,) = [cid for cid, p in requested.items() if p.get("resumed_from") == "turn-1-m1"]
    assert requested["turn-1-m1"]["turn"] == requested[successor]["turn"] == turn
    conn = sqlite3.connect(f"file:{root / 'ledger.sqlite3'}?mode=ro", uri=True)
    try:
        ((observed,),) = conn.execute(
            "SELECT payload FROM events WHERE kind = 'attempt.observed' AND call_id = ?",
            (successor,)).fetchall()
        sent_by_original = conn.execute(
            "SELECT count(*) FROM events WHERE kind = 'attempt.started' AND call_id = ?",
            ("turn-1-m1",)).fetchone()[0]
    finally:
        conn.close()
    sha = json.loads(observed)["response_artifact"]
    response = json.loads((root / "artifacts" / "sha256" / sha[:2] / sha).read_bytes())
    ids = [tc["id"] for tc in response["choices"][0]["message"]["tool_calls"]]
    assert [key for _, key in publications(root)] == [f"report-v1/thread-1/turn-1/{i}" for i in ids]
    assert sent_by_original == 0  # killed before sending: the successor sent it, once
    keys = [json.loads(r)["idempotency_key"] for r in lines(root / "provider" / "receipts.jsonl")]
    assert keys == ["report-v1/thread-1/turn-1/model-1", "report-v1/thread-1/turn-1/model-2"]
