"""Resume against a real provider process on loopback, from separate OS processes."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ledgerfactory import write_ledger

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.resume import plan_resume, resume_call
from codeai_tui.ledger import ArtifactStore, LedgerReader, read_receipts
from codeai_tui.read.inspection import project_case
from codeai_tui.workstate import CallStage, NextOperation
from tests.core.cases import file_hashes, make_case
from tests.support import cli, load_vectors


def _events(case: Path) -> list[Any]:
    with LedgerReader(case) as reader:
        return reader.events()


def _receipts(case: Path) -> list[Any]:
    return list(read_receipts(case).receipts)


def test_resume_manifest_recorded_sends_exactly_the_recorded_request(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "c1", provider.base_url)
    recorded = next(e for e in _events(case) if e.kind == "call.manifest").payload
    proc = cli("resume", str(case), "call-1", "--yes", "--reason", "producer crashed")
    assert proc.returncode == 0, proc.stderr
    receipts = _receipts(case)
    assert len(receipts) == 1
    assert receipts[0].body_sha256 == recorded["request_sha256"]
    assert receipts[0].idempotency_key == "key-1"
    events = _events(case)
    resumed = next(e for e in events if e.kind == "call.resumed")
    new_id = resumed.payload["resumed_as"]
    assert resumed.call_id == "call-1"
    assert resumed.payload["reason"] == "producer crashed"
    assert set(resumed.payload["by"]) == {"user", "host", "pid"}
    new_manifest = next(e for e in events if e.kind == "call.manifest" and e.call_id == new_id)
    assert new_manifest.payload["request_sha256"] == recorded["request_sha256"]
    kinds = [e.kind for e in events if e.call_id == new_id]
    assert kinds[:3] == ["call.requested", "call.manifest", "attempt.started"]
    assert kinds[-1] == "call.completed"
    # the three resume events are contiguous: one transaction
    seqs = [e.seq for e in events if e.kind in ("call.resumed",) or
            (e.call_id == new_id and e.kind in ("call.requested", "call.manifest"))]
    assert seqs == list(range(seqs[0], seqs[0] + 3))
    doc = json.loads(cli("inspect", str(case), "--json").stdout)
    calls = {c["call_id"]: c for c in doc["calls"]}
    assert calls["call-1"]["stage"] == "superseded" and calls["call-1"]["superseded_by"] == new_id
    assert calls[new_id]["stage"] == "completed" and calls[new_id]["resumed_from"] == "call-1"
    assert doc["tasks"][0]["next_operation"] == "check_and_accept"
    assert doc["receipts"]["uncovered"] == [] and doc["receipts"]["duplicates"] == []
    # request bytes on disk hash to their name
    assert ArtifactStore(case).verify(recorded["request_sha256"])


def test_resume_with_other_model_is_refused_with_nothing_sent(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "c2", provider.base_url)
    before = file_hashes(case), len(_events(case))
    proc = cli("resume", str(case), "call-1", "--yes", "--model", "synthetic-large")
    assert proc.returncode == 3
    assert "drift" in proc.stderr and "synthetic-large" in proc.stderr
    assert _receipts(case) == []
    assert (file_hashes(case), len(_events(case))) == before


def test_case_json_model_change_is_drift(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "c3", provider.base_url, case_model="synthetic-large")
    plan = plan_resume(case, "call-1")
    assert plan.verdict == "drift"
    assert plan.model_recorded == "synthetic-small" and plan.model_configured == "synthetic-large"
    with pytest.raises(ActionRefused):
        resume_call(case, "call-1")
    assert _receipts(case) == []


def test_rendered_context_drift_is_refused(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "c4", provider.base_url)
    plan = plan_resume(case, "call-1")
    assert plan.verdict == "match"
    art = ArtifactStore(case).path_for(plan.rendered_sha256_recorded or "")
    art.write_bytes(art.read_bytes() + b" tampered")
    plan = plan_resume(case, "call-1")
    assert any("rendered context" in d for d in plan.drift)
    assert cli("resume", str(case), "call-1", "--yes").returncode == 3
    assert _receipts(case) == []


def test_resume_requested_without_manifest_warns_no_drift_check(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "c5", provider.base_url, upto="requested")
    plan = plan_resume(case, "call-1")
    assert not plan.drift_check_possible and plan.verdict == "no drift check possible"
    proc = cli("resume", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert "no drift check" in proc.stderr
    assert len(_receipts(case)) == 1


@pytest.mark.parametrize(
    ("vector", "call_id", "op"),
    [
        ("killed_in_flight", "call-16", NextOperation.RECONCILE_EFFECT),
        ("killed_after_observed", "call-16", NextOperation.REINTERPRET),
        ("completed_task", "call-1", NextOperation.NONE),
        ("resumed_then_completed", "call-16", NextOperation.NONE),
        ("retry_pending", "call-5", NextOperation.START_NEXT_ATTEMPT),
        ("preparation_failed", "call-9", NextOperation.FIX_INPUTS),
    ],
)
def test_resume_of_other_states_is_refused_and_appends_nothing(
    tmp_path: Path, provider: Any, vector: str, call_id: str, op: NextOperation
) -> None:
    v = next(x for x in load_vectors() if x["name"] == vector)
    case = tmp_path / vector
    write_ledger(case, v["events"], receipts=v["receipts"])
    (case / "case.json").write_text(json.dumps({"provider": {
        "base_url": f"{provider.base_url.rsplit('/v1', 1)[0]}/c/{vector}/v1"}}))
    before = file_hashes(case), len(_receipts(case))
    with pytest.raises(ActionRefused) as err:
        resume_call(case, call_id)
    assert err.value.next_operation is op
    proc = cli("resume", str(case), call_id, "--yes")
    assert proc.returncode == 3
    assert f"next operation: {op.value}" in proc.stderr
    assert (file_hashes(case), len(_receipts(case))) == before


def test_unknown_call_and_bad_case_are_clear(tmp_path: Path, provider: Any) -> None:
    """An unknown or empty call id is bad input (exit 2, one line), not a refusal (3)."""
    case = make_case(tmp_path / "c6", provider.base_url)
    before = file_hashes(case)
    for call_id in ("no-such-call", "", "   "):
        proc = cli("resume", str(case), call_id, "--yes")
        assert proc.returncode == 2, (call_id, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1
        assert "Traceback" not in proc.stderr
    assert "no call 'no-such-call'" in cli("resume", str(case), "no-such-call", "--yes").stderr
    assert file_hashes(case) == before and _receipts(case) == []
    proc = cli("resume", str(tmp_path / "nowhere"), "call-1", "--yes")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_resume_without_yes_off_a_terminal_is_refused(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "c7", provider.base_url)
    proc = cli("resume", str(case), "call-1", input="y\n")
    assert proc.returncode == 2 and "--yes" in proc.stderr
    assert _receipts(case) == []


def test_plan_pinned_to_evidence_refuses_when_the_call_changed(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "c8", provider.base_url, upto="requested")
    plan = plan_resume(case, "call-1")
    from codeai_tui.ledger import LedgerWriter

    with LedgerWriter.open(case) as writer:  # the producer came back and wrote the manifest
        writer.append("call.manifest", "task-1", {"idempotency_key": "key-1", "intent": {}},
                      call_id="call-1")
    with pytest.raises(ActionRefused) as err:
        resume_call(case, "call-1", expected=plan)
    assert "changed" in err.value.reason
    assert _receipts(case) == []


RACER = """
import sys
from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.resume import resume_call
sys.stdin.readline()  # start together
try:
    r = resume_call(sys.argv[1], "call-1")
    print("WON", r.new_call_id, flush=True)
except ActionRefused as exc:
    print("REFUSED", exc.reason, flush=True)
"""


@pytest.mark.parametrize("round_no", range(3))
def test_two_racing_resumers_exactly_one_wins(tmp_path: Path, provider: Any, round_no: int) -> None:
    case = make_case(tmp_path / f"race{round_no}", provider.base_url)
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, str(case)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    try:
        for p in procs:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert sorted(o.split()[0] for o in outs) == ["REFUSED", "WON"], outs
    events = _events(case)
    assert sum(1 for e in events if e.kind == "call.resumed") == 1
    assert len(_receipts(case)) == 1
    recorded = next(e for e in events if e.kind == "call.manifest" and e.call_id == "call-1")
    assert _receipts(case)[0].body_sha256 == recorded.payload["request_sha256"]


def test_request_hash_is_of_exactly_the_bytes_sent(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "c9", provider.base_url)
    resume_call(case, "call-1")
    started = [e for e in _events(case) if e.kind == "attempt.started"]
    body = ArtifactStore(case).get(started[0].payload["request_sha256"])
    assert body is not None
    assert hashlib.sha256(body).hexdigest() == _receipts(case)[0].body_sha256
    state = {c.call_id: c for c in project_case(case).calls}
    assert state["call-1"].stage is CallStage.SUPERSEDED


def test_each_outcome_of_a_resume_has_its_own_exit_code(tmp_path: Path) -> None:
    """0 succeeded, 4 the call ended failed, 5 the effect is unknown: a script can tell."""
    import time

    from codeai_tui.lab.provider import ProviderProcess

    with ProviderProcess(tmp_path / "r-fail.jsonl", fail_first=10) as prov:
        case = make_case(tmp_path / "fails", prov.base_url)
        proc = cli("resume", str(case), "call-1", "--yes", "--base-url", prov.base_url)
    assert proc.returncode == 4, proc.stderr
    assert ": failed;" in proc.stdout
    prov = ProviderProcess(tmp_path / "r-held.jsonl", latency=60.0).start()
    try:
        case = make_case(tmp_path / "held", prov.base_url)
        resumer = subprocess.Popen(
            [sys.executable, "-m", "codeai_tui", "resume", str(case), "call-1", "--yes",
             "--base-url", prov.base_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        deadline = time.monotonic() + 30
        while not (tmp_path / "r-held.jsonl").exists() or not (tmp_path / "r-held.jsonl").read_text():
            assert time.monotonic() < deadline, "the provider never received the request"
            time.sleep(0.02)
        prov.stop()  # SIGKILL while it holds the request: it may have acted on it
        out, err = resumer.communicate(timeout=60)
    finally:
        prov.stop()
    assert resumer.returncode == 5, err
    assert ": effect_unknown;" in out


def test_a_turn_that_cannot_key_operations_refuses_the_resume(tmp_path: Path, provider: Any) -> None:
    """A call whose `turn` has a `/` in a part (written with plain sqlite3): a successor
    under it could plan tools no replay could address, so resume refuses, writes nothing
    and sends nothing."""
    case = tmp_path / "bad-turn"
    write_ledger(case, [
        {"seq": 1, "kind": "task.created", "task_id": "t1", "payload": {"title": "report"}},
        {"seq": 2, "kind": "call.requested", "task_id": "t1", "call_id": "turn-1-m1",
         "payload": {"idempotency_key": "k-1", "purpose": "publish", "model": "synthetic-small",
                     "turn": {"namespace": "report-v1", "thread": "a/b", "turn": "turn-1"}}},
    ])
    (case / "case.json").write_text(json.dumps({"provider": {
        "base_url": f"{provider.base_url.rsplit('/v1', 1)[0]}/c/bad-turn/v1"}}))
    before = file_hashes(case)
    proc = cli("resume", str(case), "turn-1-m1", "--yes")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if "turn" in ln and "refus" in ln]
    assert "cannot key tool operations" in line
    assert file_hashes(case) == before and _receipts(case) == []
