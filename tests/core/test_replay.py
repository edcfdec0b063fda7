"""`codeai-tui replay`: a saved plan runs without the provider, once, and never where an
operation's effect is unknown. Real worker processes killed by SIGKILL on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from codeai_tui.lab.provider import ProviderProcess
from codeai_tui.ledger import ArtifactStore, LedgerReader, read_receipts
from codeai_tui.tools import count_publications, verify_case_receipts
from codeai_tui.tools.turn import saved_response
from tests.support import cli

ROOT = Path(__file__).resolve().parents[2]


def _killed_run(case: Path, key: Path, kill_at: str, truncate: int | None = None) -> None:
    with ProviderProcess(case / "provider" / "receipts.jsonl", truncate_after=truncate) as prov:
        args = ["run", str(case), prov.base_url, str(key), "--stream"]
        if kill_at:
            args += ["--kill-at", kill_at]
        proc = subprocess.run([sys.executable, "-m", "codeai_tui.tools.worker", *args],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == (-signal.SIGKILL if kill_at else 0), proc.stderr


def _events(case: Path) -> int:
    with LedgerReader(case) as reader:
        return len(reader.events())


def _effects(case: Path) -> tuple[int, int]:
    return count_publications(case), len(read_receipts(case).receipts)


def test_replay_runs_the_saved_plan_once_without_the_provider(tmp_path: Path) -> None:
    case, key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, key, "call.completed")  # decision saved, no tool admitted yet
    assert _effects(case) == (0, 1)
    before = _events(case)

    unconfirmed = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(key))
    assert unconfirmed.returncode == 2 and "confirmation" in unconfirmed.stderr
    other_key = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(tmp_path / "other.key"),
                    "--yes")
    assert other_key.returncode == 2 and "another kernel key" in other_key.stderr
    assert _events(case) == before and _effects(case) == (0, 1)

    done = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(key), "--yes")
    assert done.returncode == 0, done.stderr
    assert "not_admitted" in done.stderr  # the preview showed the state it acted on
    assert ": succeeded" in done.stdout
    assert _effects(case) == (1, 1)  # one publication, and no second provider call
    assert verify_case_receipts(case).ok

    assert "resume" in done.stdout and "turn-1-m2" in done.stdout
    with LedgerReader(case) as reader:
        recorded = [e.kind for e in reader.events_for_call("turn-1-m2")]
    assert recorded == ["call.requested", "call.manifest"]  # recorded, not sent

    again = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(key), "--yes")
    assert again.returncode == 0 and "nothing to run" in again.stdout
    assert "completed" in again.stderr and _effects(case) == (1, 1)
    assert "recorded the follow-up" not in again.stdout  # one follow-up per turn

    # the turn goes on through the normal gate: resume, with its drift check
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        resumed = cli("resume", str(case), "turn-1-m2", "--base-url", prov.base_url, "--yes")
    assert resumed.returncode == 0, resumed.stderr
    assert _effects(case) == (1, 2)  # the seed's row: one publication, two provider calls
    receipt = read_receipts(case).receipts[-1]
    with LedgerReader(case) as reader:
        new_call = [e for e in reader.events() if e.kind == "call.manifest"][-1]
    assert new_call.payload is not None
    assert new_call.payload["request_sha256"] == receipt.body_sha256
    sent = json.loads(ArtifactStore(case).get(receipt.body_sha256) or b"{}")
    plan = saved_response(case, "turn-1-m1").plan
    assert sent["messages"][-1]["tool_call_id"] == plan[0].tool_call_id
    assert sent["stream"] is True and sent["tools"][0]["function"]["name"] == "publish_report"


def test_replay_refuses_an_operation_admitted_without_outcome(tmp_path: Path) -> None:
    case, key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, key, "tool-effect")  # the publication happened, no outcome recorded
    before = _events(case)
    proc = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(key), "--yes")
    assert proc.returncode == 3
    assert "effect_unknown" in proc.stderr and "admitted without an outcome" in proc.stderr
    assert _events(case) == before and _effects(case) == (1, 1)


def test_replay_refuses_a_call_without_saved_plan_and_names_bad_input(tmp_path: Path) -> None:
    case, key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, key, "", truncate=3)  # the decision's stream was cut: no plan exists
    before = _events(case)
    proc = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(key), "--yes")
    assert proc.returncode == 3 and "no saved plan" in proc.stderr
    unknown = cli("replay", str(case), "no-such-call", "--kernel-key", str(key), "--yes")
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    assert _events(case) == before and _effects(case) == (0, 1)


def test_replay_records_no_second_follow_up_when_the_turn_went_on_under_another_id(
        tmp_path: Path) -> None:
    """The turn's next model call is found by its `turn`, not by the id replay would
    give it: another writer's follow-up (here `m2-by-hand`) counts."""
    from codeai_tui.actions.replay import plan_replay
    from codeai_tui.ledger import LedgerWriter

    case, key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, key, "tool.completed")  # every operation done, no follow-up yet
    assert not plan_replay(case, "turn-1-m1").follow_up_recorded
    with LedgerReader(case) as reader:
        first = reader.events_for_call("turn-1-m1")[0]
    turn = (first.payload or {})["turn"]
    with LedgerWriter.open(case) as writer:
        writer.append("call.requested", first.task_id,
                      {"idempotency_key": "k-by-hand", "turn": turn}, call_id="m2-by-hand")
    assert plan_replay(case, "turn-1-m1").follow_up_recorded
    done = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(key), "--yes")
    assert done.returncode == 0, done.stderr
    assert "recorded the follow-up" not in done.stdout
    with LedgerReader(case) as reader:
        assert not reader.events_for_call("turn-1-m2")


def _publications(case: Path) -> list[tuple[str, str]]:
    """(operation_key, tool_call_id) of each row of the tool's own store, read with plain
    sqlite3 (not the project's counting code)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{case / 'tools' / 'reports.sqlite3'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT operation_key, tool_call_id FROM publications").fetchall()
    finally:
        conn.close()


def test_a_resumed_tool_decision_keeps_its_turn_and_replays_once(tmp_path: Path) -> None:
    """Killed right after the decision's manifest (nothing sent), resumed by an operator:
    the successor names the same turn, so inspect names the operation by its key, replay
    of the successor (or of the superseded original) runs the saved plan, and the tool's
    own store holds exactly one publication under the saved response's tool-call id."""
    case, key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    turn = {"namespace": "report-v1", "thread": "thread-1", "turn": "turn-1"}
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        worker = subprocess.run(
            [sys.executable, "-m", "codeai_tui.tools.worker", "run", str(case), prov.base_url,
             str(key), "--kill-at", "call.manifest"],
            capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert worker.returncode == -signal.SIGKILL, worker.stderr
        assert _effects(case) == (0, 0)  # killed before anything was sent
        resumed = cli("resume", str(case), "turn-1-m1", "--base-url", prov.base_url, "--yes")
    assert resumed.returncode == 0, resumed.stderr
    assert _effects(case) == (0, 1)
    with LedgerReader(case) as reader:
        (requested,) = [e for e in reader.events() if e.kind == "call.requested"
                        and (e.payload or {}).get("resumed_from") == "turn-1-m1"]
    new_call = requested.call_id
    assert new_call is not None and (requested.payload or {}).get("turn") == turn

    doc = json.loads(cli("inspect", str(case), "--json").stdout)
    plan = saved_response(case, new_call).plan
    op_key = f"report-v1/thread-1/turn-1/{plan[0].tool_call_id}"
    (task,) = doc["tasks"]
    assert (task["next_operation"], task["subject_id"]) == ("start_tool", op_key)
    (call,) = [c for c in doc["calls"] if c["call_id"] == new_call]
    (op,) = call["tools"]["operations"]
    assert (op["operation_key"], op["next_operation"]) == (op_key, "start_tool")

    done = cli("replay", str(case), new_call, "--kernel-key", str(key), "--yes")
    assert done.returncode == 0, done.stderr
    assert f"{op_key}: succeeded" in done.stdout and "turn-1-m2" in done.stdout
    # the superseded original points at its successor's plan: nothing left to run
    again = cli("replay", str(case), "turn-1-m1", "--kernel-key", str(key), "--yes")
    assert again.returncode == 0, again.stderr
    assert f"resumed as {new_call}" in again.stderr and "nothing to run" in again.stdout
    assert _publications(case) == [(op_key, plan[0].tool_call_id)]
    assert _effects(case) == (1, 1)  # one publication, the provider asked once
    assert verify_case_receipts(case).ok
