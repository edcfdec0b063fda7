"""reinterpret / redecide / finalize / next-attempt: real processes, real provider."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from codeai_tui.lab.reliability.cases import OVERLOADED, make_advance_case
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.runtime.interpreter import INTERPRETER_VERSION, interpret_recorded
from codeai_tui.runtime.runner import Transport, interpret
from tests.support import cli


def _rows(case: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(case / "ledger.sqlite3") as conn:
        return conn.execute("SELECT seq, kind, call_id, attempt_id, payload FROM events "
                            "ORDER BY seq").fetchall()


def _call(case: Path, call_id: str = "call-1") -> dict[str, Any]:
    proc = cli("inspect", str(case), "--json")
    assert proc.returncode == 0, proc.stderr
    return next(c for c in json.loads(proc.stdout)["calls"] if c["call_id"] == call_id)


def _receipts(case: Path) -> int:
    return len(read_receipts(case).receipts)


def _case(tmp_path: Path, provider: Any, upto: str) -> Path:
    case = tmp_path / f"case-{upto}"
    make_advance_case(case, provider.base_url, upto)
    return case


@pytest.mark.parametrize(("status", "body", "stream"), [
    (None, b"", False), (503, OVERLOADED, False), (429, b"", False), (400, b"{}", False),
    (200, b'{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}', False),
    (200, b"not json", False),
    (200, b'data: {"choices":[{"index":0,"delta":{"content":"o"},"finish_reason":"stop"}]}\n\n'
          b"data: [DONE]\n\n", True),
])
def test_interpreter_v1_agrees_with_the_runner(status: int | None, body: bytes,
                                               stream: bool) -> None:
    from codeai_tui.runtime.responses import parse_response

    live = Transport(status, body, stream=stream, completion=parse_response(body, stream))
    assert interpret_recorded(status, body, stream) == interpret(live)


def test_reinterpret_reads_the_stored_bytes_and_never_sends(tmp_path: Path, provider: Any) -> None:
    case = _case(tmp_path, provider, "observed")
    before = _rows(case)
    proc = cli("reinterpret", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    after = _rows(case)
    assert after[:-1] == before and len(after) == len(before) + 1
    _seq, kind, _call_id, attempt_id, payload = after[-1]
    body = json.loads(payload)
    assert (kind, attempt_id) == ("attempt.interpreted", "call-1-a1")
    assert body["interpreter"] == INTERPRETER_VERSION and body["outcome"] == "retryable_error"
    assert body["decided_by"]["pid"] > 0
    assert _receipts(case) == 0  # the provider was never asked
    assert _call(case)["next_operation"] == "redecide"


@pytest.mark.parametrize(("damage", "said"), [("missing", "is missing"),
                                              ("altered", "do not hash to its name")])
def test_reinterpret_refuses_an_unusable_artifact(tmp_path: Path, provider: Any,
                                                  damage: str, said: str) -> None:
    case = _case(tmp_path, provider, "observed")
    observed = next(json.loads(r[4]) for r in _rows(case) if r[1] == "attempt.observed")
    sha = observed["response_artifact"]
    path = case / "artifacts" / "sha256" / sha[:2] / sha
    if damage == "missing":
        path.unlink()
    else:
        path.chmod(0o644)
        path.write_bytes(b'{"choices":[{"message":{"content":"forged"}}]}')
    before = _rows(case)
    proc = cli("reinterpret", str(case), "call-1", "--yes")
    assert proc.returncode == 3, proc.stderr
    assert "next operation: reinterpret" in proc.stderr and said in proc.stderr
    assert _rows(case) == before


@pytest.mark.parametrize(("max_attempts", "decision", "next_op"), [
    ("2", "retry", "start_next_attempt"), ("1", "stop", "finalize")])
def test_redecide_applies_the_stated_policy(tmp_path: Path, provider: Any, max_attempts: str,
                                            decision: str, next_op: str) -> None:
    case = _case(tmp_path, provider, "interpreted")
    proc = cli("redecide", str(case), "call-1", "--max-attempts", max_attempts, "--yes")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(_rows(case)[-1][4])
    assert body["decision"] == decision
    assert body["policy"]["max_attempts"] == int(max_attempts)
    assert "retryable_error" in body["reason"]
    assert _call(case)["next_operation"] == next_op


@pytest.mark.parametrize(("upto", "kinds"), [
    ("decided_stop", ["attempt.completed", "call.completed"]),
    ("attempt_completed", ["call.completed"])])
def test_finalize_records_the_terminal_events(tmp_path: Path, provider: Any, upto: str,
                                              kinds: list[str]) -> None:
    case = _case(tmp_path, provider, upto)
    before = _rows(case)
    proc = cli("finalize", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    new = _rows(case)[len(before):]
    assert [r[1] for r in new] == kinds
    assert json.loads(new[-1][4])["status"] == "failed"
    c = _call(case)
    assert (c["stage"], c["next_operation"], c["status"]) == ("completed", "none", "failed")


def _reconciled_received(tmp_path: Path, provider: Any) -> Path:
    case = _case(tmp_path, provider, "effect_unknown")
    proc = cli("reconcile", str(case), "call-1", "--finding", "received", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert _call(case)["next_operation"] == "decide_duplicate"
    return case


def test_decide_duplicate_finalizes_as_failed_without_sending(tmp_path: Path,
                                                              provider: Any) -> None:
    case = _reconciled_received(tmp_path, provider)
    assert cli("next-attempt", str(case), "call-1", "--yes").returncode == 3
    before = _rows(case)
    proc = cli("finalize", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    new = _rows(case)[len(before):]
    assert [r[1] for r in new] == ["attempt.retry_decided", "attempt.completed", "call.completed"]
    assert json.loads(new[0][4])["decision"] == "stop"
    c = _call(case)
    assert (c["status"], c["provider_effect"], c["duplicate_effect_risk"]) == (
        "failed", "happened", False)
    assert _receipts(case) == 0


@pytest.mark.parametrize("verb", ["finalize", "redecide"])
def test_an_accepted_duplicate_is_recorded_then_sent_once(tmp_path: Path, provider: Any,
                                                          verb: str) -> None:
    case = _reconciled_received(tmp_path, provider)
    assert cli("redecide", str(case), "call-1", "--yes").returncode == 3  # must accept
    proc = cli(verb, str(case), "call-1", "--accept-duplicate", "--note", "ok by me", "--yes")
    assert proc.returncode == 0, proc.stderr
    body = json.loads(_rows(case)[-1][4])
    assert (body["decision"], body["accept_duplicate"], body["note"]) == ("retry", True, "ok by me")
    assert _call(case)["next_operation"] == "start_next_attempt"
    proc = cli("next-attempt", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    assert _receipts(case) == 1
    assert _call(case)["status"] == "succeeded"


def test_next_attempt_commits_its_start_before_sending(tmp_path: Path, provider: Any) -> None:
    case = _case(tmp_path, provider, "retry_decided")
    before = _rows(case)
    proc = cli("next-attempt", str(case), "call-1", "--yes")
    assert proc.returncode == 0, proc.stderr
    new = _rows(case)[len(before):]
    assert [r[1] for r in new][:2] == ["attempt.started", "attempt.observed"]
    started = json.loads(new[0][4])
    assert (new[0][3], started["attempt_no"]) == ("call-1-a2", 2)
    assert started["decided_by"]["pid"] > 0
    receipt = read_receipts(case).receipts
    assert len(receipt) == 1 and receipt[0].body_sha256 == started["request_sha256"]
    with sqlite3.connect(case / "ledger.sqlite3") as conn:
        (started_at,) = conn.execute("SELECT recorded_at FROM events WHERE seq = ?",
                                     (new[0][0],)).fetchone()
    assert started_at <= receipt[0].received_at  # committed before the provider had it
    c = _call(case)
    assert (c["stage"], c["status"], c["attempts"]) == ("completed", "succeeded", 2)
    again = cli("next-attempt", str(case), "call-1", "--yes")
    assert again.returncode == 3 and "none" in again.stderr
    assert _receipts(case) == 1


@pytest.mark.parametrize("upto", ["effect_unknown", "observed", "interpreted", "decided_stop"])
def test_next_attempt_is_refused_where_not_projected(tmp_path: Path, provider: Any,
                                                     upto: str) -> None:
    case = _case(tmp_path, provider, upto)
    before = _rows(case)
    proc = cli("next-attempt", str(case), "call-1", "--yes")
    assert proc.returncode == 3
    assert "start_next_attempt" in proc.stderr
    assert _call(case)["next_operation"] in proc.stderr
    assert _rows(case) == before and _receipts(case) == 0


@pytest.mark.parametrize(("verb", "upto"), [
    ("reinterpret", "interpreted"), ("redecide", "observed"), ("finalize", "retry_decided"),
    ("redecide", "effect_unknown"), ("finalize", "effect_unknown")])
def test_each_action_is_gated_by_the_projection(tmp_path: Path, provider: Any, verb: str,
                                                upto: str) -> None:
    case = _case(tmp_path, provider, upto)
    before = _rows(case)
    proc = cli(verb, str(case), "call-1", "--yes")
    assert proc.returncode == 3
    assert f"next operation: {_call(case)['next_operation']}" in proc.stderr
    assert _rows(case) == before


@pytest.mark.parametrize("args", [
    ["next-attempt", "{case}", "call-1", "--base-url", "ftp://x", "--yes"],
    ["next-attempt", "{case}", "call-1", "--base-url", "localhost:1", "--yes"],
    ["redecide", "{case}", "call-1", "--max-attempts", "0", "--yes"],
    ["redecide", "{case}", "call-1", "--max-attempts", "x", "--yes"],
    ["finalize", "{case}", "nope", "--yes"],
    ["finalize", "{case}", " ", "--yes"],
    ["finalize", "{case}/missing", "call-1", "--yes"],
    ["finalize", "{case}", "call-1"],  # no terminal, no --yes
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, provider: Any,
                                                  args: list[str]) -> None:
    case = _case(tmp_path, provider, "retry_decided")
    before = _rows(case)
    proc = cli(*[a.replace("{case}", str(case)) for a in args])
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and lines[-1].startswith("codeai-tui")
    assert len(lines) == 1, lines  # argparse's errors too (cli._Parser)
    assert _rows(case) == before and _receipts(case) == 0
