"""A turn with tools, end to end in real processes on 127.0.0.1, counted the seed's way:
publications from the tool's own store, provider calls from the provider's own log."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codeai_tui.lab.provider import ProviderProcess
from codeai_tui.ledger import ArtifactStore, LedgerReader, read_receipts
from codeai_tui.tools import count_publications, verify_case_receipts
from codeai_tui.tools.turn import TurnError, saved_response

ROOT = Path(__file__).resolve().parents[2]


def _worker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeai_tui.tools.worker", *args],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
    )


def _effects(case: Path) -> tuple[int, int]:
    """(publications, provider calls), neither taken from our ledger."""
    return count_publications(case), len(read_receipts(case).receipts)


def _kinds(case: Path) -> list[str]:
    with LedgerReader(case) as reader:
        return [e.kind for e in reader.events()]


def _receipt_lines(case: Path) -> list[str]:
    path = case / "tools" / "receipts.ndjson"
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
def test_a_whole_turn(tmp_path: Path, stream: bool) -> None:
    case = tmp_path / "case"
    key = tmp_path / "keys" / "kernel.key"
    flags = ["--stream"] if stream else []
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        proc = _worker("run", str(case), prov.base_url, str(key), *flags)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["complete"] is True and out["provider_calls_made"] == 2
    assert _effects(case) == (1, 2)
    assert verify_case_receipts(case).ok
    decision = saved_response(case, "turn-1-m1")
    (planned,) = decision.plan
    with LedgerReader(case) as reader:
        tool_events = [e for e in reader.events() if e.kind.startswith("tool.")]
        follow_manifest = [e for e in reader.events_for_call("turn-1-m2")
                           if e.kind == "call.manifest"][0]
    assert [(e.kind, e.call_id, e.attempt_id) for e in tool_events] == [
        ("tool.admitted", "turn-1-m1", decision.attempt_id),
        ("tool.completed", "turn-1-m1", decision.attempt_id)]
    # the follow-up request carries the result under the original tool-call id
    assert follow_manifest.payload is not None
    sent = ArtifactStore(case).get(follow_manifest.payload["request_sha256"])
    assert sent is not None
    messages = json.loads(sent)["messages"]
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == planned.tool_call_id
    assert messages[-2]["tool_calls"][0]["id"] == planned.tool_call_id
    assert json.loads(sent).get("stream", False) is stream
    assert out["text"].startswith("synthetic answer after 1 tool result(s)")
    assert _kinds(case)[-2:] == ["task.accepted", "task.completed"]
    with LedgerReader(case) as reader:
        requested = [e.payload for e in reader.events() if e.kind == "call.requested"]
    identity = {"namespace": "report-v1", "thread": "thread-1", "turn": "turn-1"}
    assert [p["turn"] for p in requested if p is not None] == [identity, identity]
    key = json.loads(_receipt_lines(case)[0])["body"]["operation_key"]
    assert key == "/".join([*identity.values(), planned.tool_call_id])


def test_truncated_stream_runs_no_tool_and_asks_no_one_again(tmp_path: Path) -> None:
    case = tmp_path / "case"
    with ProviderProcess(case / "provider" / "receipts.jsonl", truncate_after=3) as prov:
        proc = _worker("run", str(case), prov.base_url, str(tmp_path / "k"), "--stream")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["complete"], out["stopped_at"]) == (False, "decision_effect_unknown")
    assert _effects(case) == (0, 1)
    kinds = _kinds(case)
    assert "attempt.observed" not in kinds and not any(k.startswith("tool.") for k in kinds)
    assert _receipt_lines(case) == []


@pytest.mark.parametrize(
    ("kill_at", "stream"),
    [("receipt", True), ("tool.completed", False)],
    ids=["stream-after-receipt", "before-receipt-saved"],
)
def test_killed_after_the_tool_completed_then_replayed(
    tmp_path: Path, kill_at: str, stream: bool
) -> None:
    case = tmp_path / "case"
    key = str(tmp_path / "keys" / "kernel.key")
    flags = ["--stream"] if stream else []
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        killed = _worker("run", str(case), prov.base_url, key, "--kill-at", kill_at, *flags)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert _effects(case) == (1, 1)
        lines_before = _receipt_lines(case)
        assert len(lines_before) == (1 if kill_at == "receipt" else 0)
        replayed = _worker("replay", str(case), prov.base_url, key, *flags)
    assert replayed.returncode == 0, replayed.stderr
    out: dict[str, Any] = json.loads(replayed.stdout)
    assert out["complete"] is True and out["provider_calls_made"] == 1  # the follow-up only
    assert _effects(case) == (1, 2)  # the seed's row: 1 publication, 2 provider calls
    (line,) = _receipt_lines(case)
    with LedgerReader(case) as reader:
        (completed,) = [e for e in reader.events() if e.kind == "tool.completed"]
    assert completed.payload is not None and completed.payload["receipt"] == line
    assert verify_case_receipts(case).ok


def test_killed_while_the_tool_runs_replay_refuses_and_writes_nothing(tmp_path: Path) -> None:
    case = tmp_path / "case"
    key = str(tmp_path / "keys" / "kernel.key")
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        killed = _worker("run", str(case), prov.base_url, key, "--kill-at", "tool.admitted")
        assert killed.returncode == -signal.SIGKILL
        before = _kinds(case)
        refused = _worker("replay", str(case), prov.base_url, key)
    assert refused.returncode == 3, refused.stderr
    assert "admitted without an outcome" in json.loads(refused.stdout)["refused"]
    assert _kinds(case) == before and before[-1] == "tool.admitted"
    assert _effects(case) == (0, 1)
    report = verify_case_receipts(case)
    assert report.ok and [v.verdict.value for v in report.verdicts] == ["no_outcome"]
    assert os.path.exists(case / "tools" / "kernel.pub")


def test_a_replaced_saved_response_is_refused(tmp_path: Path) -> None:
    case = tmp_path / "case"
    key = str(tmp_path / "keys" / "kernel.key")
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        killed = _worker("run", str(case), prov.base_url, key, "--kill-at", "tool.admitted")
        assert killed.returncode == -signal.SIGKILL
        decision = saved_response(case, "turn-1-m1")
        with LedgerReader(case) as reader:
            (observed,) = [e for e in reader.events() if e.kind == "attempt.observed"]
        assert observed.payload is not None
        path = ArtifactStore(case).path_for(observed.payload["response_artifact"])
        path.write_bytes(path.read_bytes().replace(decision.plan[0].tool_call_id.encode(),
                                                   b"call_" + b"f" * 24))
        with pytest.raises(TurnError, match="hash"):
            saved_response(case, "turn-1-m1")


def test_a_worker_refuses_a_resumed_decision_that_names_another_turn(tmp_path: Path) -> None:
    """Killed after the decision's manifest, resumed by an operator; then the successor's
    `turn` is rewritten (plain sqlite3) to another thread: the replacement worker would
    key its operations to another turn, so it refuses before any tool runs."""
    import sqlite3

    from tests.support import cli

    case = tmp_path / "case"
    key = str(tmp_path / "keys" / "kernel.key")
    with ProviderProcess(case / "provider" / "receipts.jsonl") as prov:
        killed = _worker("run", str(case), prov.base_url, key, "--kill-at", "call.manifest")
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        resumed = cli("resume", str(case), "turn-1-m1", "--base-url", prov.base_url, "--yes")
        assert resumed.returncode == 0, resumed.stderr
        conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        ((seq, call_id, payload),) = conn.execute(
            "SELECT seq, call_id, payload FROM events WHERE kind = 'call.requested' "
            "AND json_extract(payload, '$.resumed_from') = 'turn-1-m1'").fetchall()
        other = {**json.loads(payload),
                 "turn": {"namespace": "report-v1", "thread": "thread-9", "turn": "turn-1"}}
        conn.execute("UPDATE events SET payload = ? WHERE seq = ?", (json.dumps(other), seq))
        conn.close()
        before = _kinds(case)
        refused = _worker("replay", str(case), prov.base_url, key)
    assert refused.returncode == 2
    assert (f"turn-1-m1 was resumed as {call_id}, which names report-v1/thread-9/turn-1, "
            "not report-v1/thread-1/turn-1") in refused.stderr
    assert _kinds(case) == before and _effects(case) == (0, 1)
