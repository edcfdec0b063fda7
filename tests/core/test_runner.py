"""The runner records only what it knows, in the order that makes a kill honest."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from codeai_tui.lab.provider import ProviderProcess
from codeai_tui.ledger import CaseConfig, LedgerReader, LedgerWriter, ProviderConfig, read_receipts
from codeai_tui.read.inspection import project_case
from codeai_tui.runtime.request_bytes import intent_for
from codeai_tui.runtime.runner import CallRunner
from codeai_tui.services.projection import project_case as project_either
from codeai_tui.workstate import CallStage, ProviderEffect


def _call(case: Path, base_url: str, timeout: float = 10.0) -> str:
    config = CaseConfig(ProviderConfig(base_url=base_url))
    with LedgerWriter.create(case) as writer:
        runner = CallRunner(case, writer, config, timeout=timeout)
        writer.append("task.created", "t1", {"title": "x"})
        runner.request("t1", "c1", "k1", "review")
        manifest = runner.manifest("t1", "c1", "k1", intent_for("review", None), None)
        return runner.execute("t1", "c1", "k1", manifest.payload["request_sha256"])


def _kinds(case: Path) -> list[str]:
    with LedgerReader(case) as reader:
        return [e.kind for e in reader.events() if e.call_id == "c1"]


def test_retryable_answer_then_success(tmp_path: Path) -> None:
    case = tmp_path / "case"
    with ProviderProcess(case / "provider" / "receipts.jsonl", fail_first=1) as prov:
        assert _call(case, prov.base_url) == "succeeded"
    assert _kinds(case) == [
        "call.requested", "call.manifest",
        "attempt.started", "attempt.observed", "attempt.interpreted", "attempt.retry_decided",
        "attempt.started", "attempt.observed", "attempt.interpreted", "attempt.completed",
        "call.completed",
    ]
    state = project_case(case).call("c1")
    assert state is not None and state.attempts == 2 and state.status == "succeeded"
    assert len(read_receipts(case).receipts) == 2  # two real provider effects, both covered
    assert project_case(case).receipts.uncovered == ()


def test_sent_and_timed_out_records_nothing_after_started(tmp_path: Path) -> None:
    case = tmp_path / "case"
    with ProviderProcess(case / "provider" / "receipts.jsonl", latency=5.0) as prov:
        assert _call(case, prov.base_url, timeout=0.5) == "effect_unknown"
    assert _kinds(case)[-1] == "attempt.started"
    state = project_case(case).call("c1")
    assert state is not None and state.stage is CallStage.EFFECT_UNKNOWN
    assert len(read_receipts(case).receipts) == 1  # the provider did receive it


def test_connection_refused_is_observed_as_not_sent(tmp_path: Path) -> None:
    """No connection, no byte left: the observation records `sent: false` and the
    projection says no provider effect, per attempt and for the call, in inspect --json
    (docs/reconcile.md section 4), instead of v1's "happened" for any observation."""
    from tests.support import cli

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    case = tmp_path / "case"
    assert _call(case, f"http://127.0.0.1:{port}/v1") == "failed"
    with LedgerReader(case) as reader:
        observed = [e for e in reader.events() if e.kind == "attempt.observed"]
    assert len(observed) == 2  # one retry, also refused
    for ev in observed:
        assert ev.payload["transport"]["status"] is None
        assert ev.payload["transport"]["sent"] is False
        assert "error" in ev.payload["transport"]
    for fast in (True, False):
        state = project_either(case, fast=fast).call("c1")
        assert state is not None and state.stage is CallStage.COMPLETED
        assert state.provider_effect is ProviderEffect.NONE
        assert "nothing was sent" in state.reason
    proc = cli("inspect", str(case), "--json")
    assert proc.returncode == 0, proc.stderr
    call = json.loads(proc.stdout)["calls"][0]
    assert call["provider_effect"] == "none"
    assert [a["provider_effect"] for a in call["evidence"]["attempts"]] == ["none", "none"]


def test_an_answered_attempt_is_not_marked_unsent(tmp_path: Path) -> None:
    """Only a connection never made says `sent: false`: a 500 that was answered is an
    effect that happened."""
    case = tmp_path / "case"
    with ProviderProcess(case / "provider" / "receipts.jsonl", fail_first=1) as prov:
        assert _call(case, prov.base_url) == "succeeded"
    with LedgerReader(case) as reader:
        observed = [e for e in reader.events() if e.kind == "attempt.observed"]
    assert [e.payload["transport"]["status"] for e in observed] == [503, 200]
    assert all("sent" not in e.payload["transport"] for e in observed)
    state = project_case(case).call("c1")
    assert state is not None and state.provider_effect is ProviderEffect.HAPPENED


def test_provider_dying_mid_request_leaves_effect_unknown(tmp_path: Path) -> None:
    """A reset after the request left is not an observation: it may have been served."""
    import threading

    case = tmp_path / "case"
    receipts = case / "provider" / "receipts.jsonl"
    prov = ProviderProcess(receipts, latency=30.0).start()
    result: list[str] = []
    worker = threading.Thread(target=lambda: result.append(_call(case, prov.base_url, timeout=20)))
    worker.start()
    try:
        waited = threading.Event()
        for _ in range(500):  # poll with a timeout for the provider's own receipt
            if receipts.exists() and receipts.read_bytes().endswith(b"\n"):
                break
            waited.wait(0.02)
        prov.stop()  # SIGKILL while it holds the request
        worker.join(timeout=30)
    finally:
        prov.stop()
    assert result == ["effect_unknown"]
    assert _kinds(case)[-1] == "attempt.started"
    state = project_case(case).call("c1")
    assert state is not None and state.stage is CallStage.EFFECT_UNKNOWN
    assert len(read_receipts(case).receipts) == 1
