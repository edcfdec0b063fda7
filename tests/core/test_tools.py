"""The tool kernel: admitted before it runs, completed with a signed receipt, and
`receipts verify` that catches a changed byte, a missing receipt and dedupes repeats."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from codeai_tui.ledger import LedgerReader, LedgerWriter
from codeai_tui.read.inspection import project_case
from codeai_tui.runtime.responses import PlannedToolCall
from codeai_tui.tools import (
    PUBLISH_REPORT,
    KeyProblem,
    OperationExists,
    Outcome,
    PublishReport,
    ToolKernel,
    Verdict,
    canonical_bytes,
    check_receipt,
    count_publications,
    load_or_create_signing_key,
    sign_receipt,
    verify_case_receipts,
)
from codeai_tui.tools.receipts import load_public_key
from codeai_tui.workstate import CallStage
from tests.support import cli

ARGS = '{"body":"all green","title":"Weekly report"}'


@dataclass
class Setup:
    case: Path
    key_path: Path
    writer: LedgerWriter
    kernel: ToolKernel


def _plan(n: int = 0, arguments: str = ARGS) -> PlannedToolCall:
    return PlannedToolCall(f"call_{n:024d}", PUBLISH_REPORT, arguments)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    case = tmp_path / "case"
    key_path = tmp_path / "keys" / "kernel.key"  # outside the case: the case is evidence
    writer = LedgerWriter.create(case)
    writer.append("task.created", "t1", {"title": "report"})
    writer.append("call.requested", "t1", {"idempotency_key": "k1", "purpose": "p", "model": "m"},
                  call_id="c1")
    writer.append("call.manifest", "t1", {"idempotency_key": "k1", "intent": {},
                                          "request_sha256": "0" * 64, "request_artifact": "0" * 64,
                                          "context_package_id": None,
                                          "rendered_context_sha256": None, "model": "m"},
                  call_id="c1")
    writer.append("attempt.started", "t1", {"attempt_no": 1, "request_sha256": "0" * 64},
                  call_id="c1", attempt_id="c1-a1")
    writer.append("attempt.observed", "t1", {"transport": {"status": 200}, "response_sha256": None,
                                             "response_artifact": None,
                                             "tool_plan": [_plan().as_ledger()]},
                  call_id="c1", attempt_id="c1-a1")
    kernel = ToolKernel.open(case, writer, key_path, {PUBLISH_REPORT: PublishReport(case)},
                             namespace="report-v1")
    yield Setup(case, key_path, writer, kernel)
    writer.close()


def _run_one(s: Setup, n: int = 0) -> str:
    admission = s.kernel.admit("t1", "c1", "c1-a1", "thread-1", "turn-1", _plan(n))
    return s.kernel.execute(admission, ARGS).receipt


def _receipt_lines(case: Path) -> list[str]:
    return (case / "tools" / "receipts.ndjson").read_text().splitlines()


def test_admitted_before_execution_and_completed_with_the_same_receipt(setup: Setup) -> None:
    seen_rows: list[int] = []
    s = setup
    s.kernel.on_commit = lambda e: seen_rows.append(count_publications(s.case))
    receipt = _run_one(s)
    assert seen_rows == [0, 1]  # admission committed before the row, completion after it
    with LedgerReader(s.case) as reader:
        tool_events = [e for e in reader.events() if e.kind.startswith("tool.")]
    admitted, completed = tool_events
    assert admitted.kind == "tool.admitted" and completed.kind == "tool.completed"
    assert admitted.payload == {
        "operation_key": "report-v1/thread-1/turn-1/call_000000000000000000000000",
        "tool_call_id": "call_000000000000000000000000", "tool": PUBLISH_REPORT,
        "arguments_sha256": _plan().arguments_sha256}
    assert (admitted.call_id, admitted.attempt_id) == ("c1", "c1-a1")
    assert (completed.call_id, completed.attempt_id) == ("c1", "c1-a1")
    assert completed.payload is not None and completed.payload["receipt"] == receipt
    assert _receipt_lines(s.case) == [receipt]
    body = json.loads(receipt)["body"]
    assert body["outcome"] == "succeeded" and body["result"] == {"publication_id": 1}
    assert body["admitted_seq"] == admitted.seq
    conn = sqlite3.connect(s.case / "tools" / "reports.sqlite3")
    rows = conn.execute("SELECT operation_key, title FROM publications").fetchall()
    conn.close()
    assert rows == [(admitted.payload["operation_key"], "Weekly report")]


def test_tool_events_are_known_and_leave_the_call_rungs_alone(setup: Setup) -> None:
    """Tool events have their own rungs (workstate/tool_ops.py): known kinds that add an
    operation to the call and leave the call's own stage as it was."""
    before = project_case(setup.case)
    _run_one(setup)
    after = project_case(setup.case)
    assert after.unknown_kinds == {}
    assert after.anomalies == before.anomalies == ()
    call_before, call_after = before.call("c1"), after.call("c1")
    assert call_before is not None and call_after is not None
    assert call_after.stage is call_before.stage is CallStage.OBSERVED
    tools = call_after.tools
    assert tools is not None
    assert [(o.stage.value, o.completed_seq is not None) for o in tools.operations] == [
        ("completed", True)]


def test_every_single_changed_byte_fails_the_signature_check(setup: Setup) -> None:
    receipt = _run_one(setup)
    public = load_public_key(setup.case / "tools" / "kernel.pub")
    assert check_receipt(receipt, public).valid
    for i in range(len(receipt)):
        changed = receipt[:i] + chr(ord(receipt[i]) ^ 0x01) + receipt[i + 1:]
        assert not check_receipt(changed, public).valid, f"byte {i} changed and still valid"


def test_cli_all_valid_then_one_changed_byte_fails_naming_the_operation(
    setup: Setup, tmp_path: Path
) -> None:
    _run_one(setup, 0)
    _run_one(setup, 1)
    trusted = tmp_path / "trusted.pub"
    shutil.copy(setup.case / "tools" / "kernel.pub", trusted)
    ok = cli("receipts", "verify", str(setup.case), "--trusted-key", str(trusted))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "2 operation(s): 2 valid, 0 invalid, 0 missing" in ok.stdout
    path = setup.case / "tools" / "receipts.ndjson"
    lines = _receipt_lines(setup.case)
    lines[1] = lines[1].replace('"publication_id":2', '"publication_id":3')
    path.write_text("\n".join(lines) + "\n")
    bad = cli("receipts", "verify", str(setup.case), "--trusted-key", str(trusted))
    assert bad.returncode == 1
    (invalid,) = [line for line in bad.stdout.splitlines() if line.startswith("INVALID")]
    assert "report-v1/thread-1/turn-1/call_000000000000000000000001" in invalid


def test_missing_receipt_fails(setup: Setup) -> None:
    _run_one(setup, 0)
    _run_one(setup, 1)
    path = setup.case / "tools" / "receipts.ndjson"
    path.write_text(_receipt_lines(setup.case)[0] + "\n")
    report = verify_case_receipts(setup.case)
    assert not report.ok
    assert [(v.operation.rsplit("/", 1)[1], v.verdict) for v in report.verdicts] == [
        ("call_000000000000000000000000", Verdict.VALID),
        ("call_000000000000000000000001", Verdict.MISSING),
    ]
    proc = cli("receipts", "verify", str(setup.case))
    assert proc.returncode == 1 and "MISSING" in proc.stdout


def test_duplicate_appended_receipt_dedupes_keeping_the_original(setup: Setup) -> None:
    receipt = _run_one(setup)
    setup.kernel.save_receipt(receipt)  # what recovery does after a crash
    report = verify_case_receipts(setup.case)
    assert report.ok and report.duplicates == 1 and report.count(Verdict.VALID) == 1


def test_a_second_different_receipt_for_one_operation_is_invalid(setup: Setup) -> None:
    receipt = _run_one(setup)
    body = json.loads(receipt)["body"]
    # validly signed by the kernel's own key, same operation, another outcome
    other = sign_receipt(load_or_create_signing_key(setup.key_path), {**body, "outcome": "failed"})
    setup.kernel.save_receipt(other)
    report = verify_case_receipts(setup.case)
    assert not report.ok
    (verdict,) = report.verdicts  # one operation, judged once
    assert (verdict.operation, verdict.verdict) == (body["operation_key"], Verdict.INVALID)
    assert "line 2 differs from the original receipt on line 1" in verdict.detail


def test_admitted_without_outcome_is_listed_and_never_admitted_twice(setup: Setup) -> None:
    s = setup
    s.kernel.admit("t1", "c1", "c1-a1", "thread-1", "turn-1", _plan())
    with pytest.raises(OperationExists) as info:
        s.kernel.admit("t1", "c1", "c1-a1", "thread-1", "turn-1", _plan())
    assert info.value.receipt is None
    report = verify_case_receipts(s.case)
    assert report.ok and [v.verdict for v in report.verdicts] == [Verdict.NO_OUTCOME]
    assert count_publications(s.case) == 0


def test_completed_operation_reports_its_receipt_when_admitted_again(setup: Setup) -> None:
    receipt = _run_one(setup)
    with pytest.raises(OperationExists) as info:
        setup.kernel.admit("t1", "c1", "c1-a1", "thread-1", "turn-1", _plan())
    assert info.value.receipt == receipt
    assert count_publications(setup.case) == 1


def test_arguments_other_than_admitted_never_run(setup: Setup) -> None:
    admission = setup.kernel.admit("t1", "c1", "c1-a1", "th", "tu", _plan())
    with pytest.raises(ValueError, match="differ"):
        setup.kernel.execute(admission, '{"body":"x","title":"other"}')
    assert count_publications(setup.case) == 0


def test_bad_arguments_complete_as_failed_with_a_receipt(setup: Setup) -> None:
    plan = _plan(arguments='{"title": 7}')
    admission = setup.kernel.admit("t1", "c1", "c1-a1", "th", "tu", plan)
    done = setup.kernel.execute(admission, plan.arguments)
    assert done.outcome is Outcome.FAILED and "title" in done.result["error"]["message"]
    assert count_publications(setup.case) == 0
    assert verify_case_receipts(setup.case).ok


def test_another_key_makes_every_receipt_invalid(setup: Setup, tmp_path: Path) -> None:
    _run_one(setup)
    other = ToolKernel.open(tmp_path / "other", setup.writer, tmp_path / "k2", {},
                            namespace="x")
    report = verify_case_receipts(setup.case, tmp_path / "other" / "tools" / "kernel.pub")
    assert not report.ok
    assert "another key" in report.verdicts[0].detail
    assert other.namespace == "x"


def test_kernel_key_guards(setup: Setup, tmp_path: Path) -> None:
    os.chmod(setup.key_path, 0o644)
    with pytest.raises(KeyProblem, match="readable by others"):
        ToolKernel.open(setup.case, setup.writer, setup.key_path, {}, namespace="n")
    with pytest.raises(KeyProblem, match="another kernel key"):
        ToolKernel.open(setup.case, setup.writer, tmp_path / "new.key", {}, namespace="n")
    with pytest.raises(ValueError, match="floats"):
        canonical_bytes({"a": 1.5})


def test_bad_input_is_one_line_exit_2(setup: Setup, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pub"
    junk.write_text("not a key")
    for args in (["receipts", "verify", str(tmp_path / "nope")],
                 ["receipts", "verify", str(setup.case), "--trusted-key", str(junk)],
                 ["receipts", "verify", str(tmp_path)]):
        proc = cli(*args)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_arguments_with_a_lone_surrogate_are_hashed_and_fail_as_an_outcome(setup: Setup) -> None:
    arguments = '{"body":"x","title":"\\ud800"}'  # valid JSON, a lone surrogate once parsed
    assert "\ud800" in json.loads(arguments)["title"]
    plan = _plan(7, arguments)
    admission = setup.kernel.admit("t1", "c1", "c1-a1", "th", "tu", plan)
    done = setup.kernel.execute(admission, arguments)
    assert done.outcome is Outcome.FAILED  # the tool's store cannot take it; no crash
    assert count_publications(setup.case) == 0 and verify_case_receipts(setup.case).ok


def test_a_linked_tools_directory_is_never_written_through(tmp_path: Path) -> None:
    from codeai_tui.tools.receipts import ToolsDirProblem

    case, elsewhere = tmp_path / "case", tmp_path / "elsewhere"
    elsewhere.mkdir()
    with LedgerWriter.create(case) as writer:
        (case / "tools").symlink_to(elsewhere)
        with pytest.raises(ToolsDirProblem, match="link"):
            ToolKernel.open(case, writer, tmp_path / "k.key", {}, namespace="n")
    assert list(elsewhere.iterdir()) == []


def test_receipts_are_not_read_through_a_linked_tools_directory(setup: Setup, tmp_path: Path) -> None:
    _run_one(setup)
    moved = tmp_path / "moved-tools"
    (setup.case / "tools").rename(moved)
    (setup.case / "tools").symlink_to(moved)
    proc = cli("receipts", "verify", str(setup.case))
    assert proc.returncode == 2 and "link" in proc.stderr


@pytest.mark.parametrize("name", ["kernel.pub", "receipts.ndjson"])
def test_a_fifo_in_tools_is_refused_without_hanging(setup: Setup, name: str) -> None:
    """A case directory is untrusted: a FIFO where a key or the log should be is one line."""
    _run_one(setup, 0)
    target = setup.case / "tools" / name
    target.unlink()
    os.mkfifo(target)
    done = cli("receipts", "verify", str(setup.case), timeout=10)
    assert done.returncode in (1, 2), done.stdout + done.stderr
    assert "not a regular file" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
