"""Writes the tool-operation vectors (tool_*.json) of this directory.

Run from the repository root: `python tests/conformance_ext/make_tool_vectors.py`.
Receipts are signed by a fixed test key (seed bytes below), so the output is stable;
a vector's `tools` holds the case's `tools/kernel.pub` and `tools/receipts.ndjson`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from codeai_tui.tools.receipts import canonical_bytes, public_pem, sign_receipt

HERE = Path(__file__).parent
KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
OTHER = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
H = "1" * 64
NS, THREAD, TURN = "ns", "th", "turn-1"
AT = "2026-09-13T12:00:{:02d}Z"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


ARGS = {"tc-1": '{"title":"a"}', "tc-2": '{"title":"b"}'}
PLAN = [{"tool_call_id": t, "name": "publish_report", "arguments_sha256": _sha(a)}
        for t, a in ARGS.items()]


class Ledger:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, kind: str, payload: dict[str, Any], **ids: str) -> int:
        seq = len(self.events) + 1
        self.events.append({"seq": seq, "kind": kind, "task_id": "t1", **ids,
                            "payload": payload, "recorded_at": AT.format(seq)})
        return seq

    def call(self, cid: str, plan: list[dict[str, Any]] | None, *, observed: bool = True,
             completed: bool = True) -> None:
        turn = {"namespace": NS, "thread": THREAD, "turn": TURN}
        self.add("call.requested", {"idempotency_key": f"k-{cid}", "purpose": "p", "model": "m",
                                    "turn": turn}, call_id=cid)
        self.add("call.manifest", {"idempotency_key": f"k-{cid}", "intent": {},
                                   "request_sha256": H, "request_artifact": H,
                                   "context_package_id": None, "rendered_context_sha256": None,
                                   "model": "m"}, call_id=cid)
        aid = f"{cid}-a1"
        self.add("attempt.started", {"attempt_no": 1, "request_sha256": H},
                 call_id=cid, attempt_id=aid)
        if not observed:
            return
        obs: dict[str, Any] = {"transport": {"status": 200, "stream": True},
                               "response_sha256": "2" * 64, "response_artifact": "2" * 64}
        if plan is not None:
            obs["tool_plan"] = plan
        self.add("attempt.observed", obs, call_id=cid, attempt_id=aid)
        if not completed:
            return
        self.add("attempt.interpreted", {"interpreter": "v1", "outcome": "success"},
                 call_id=cid, attempt_id=aid)
        self.add("attempt.completed", {"status": "succeeded"}, call_id=cid, attempt_id=aid)
        self.add("call.completed", {"status": "succeeded", "adopted_attempt_id": aid},
                 call_id=cid)

    def admit(self, tcid: str) -> int:
        key = f"{NS}/{THREAD}/{TURN}/{tcid}"
        return self.add("tool.admitted", {"operation_key": key, "tool_call_id": tcid,
                                          "tool": "publish_report",
                                          "arguments_sha256": _sha(ARGS[tcid])},
                        call_id="m1", attempt_id="m1-a1")

    def complete(self, tcid: str, admitted_seq: int, key: Ed25519PrivateKey = KEY) -> str:
        op = f"{NS}/{THREAD}/{TURN}/{tcid}"
        result = {"publication_id": 1}
        body = {"format": "codeai.tool_receipt.v1", "operation_key": op, "tool_call_id": tcid,
                "tool": "publish_report", "arguments_sha256": _sha(ARGS[tcid]),
                "call_id": "m1", "attempt_id": "m1-a1", "admitted_seq": admitted_seq,
                "outcome": "succeeded", "result": result,
                "result_sha256": hashlib.sha256(canonical_bytes(result)).hexdigest(),
                "completed_at": "2026-09-13T12:01:00Z"}
        receipt = sign_receipt(key, body)
        self.add("tool.completed", {"operation_key": op, "outcome": "succeeded",
                                    "receipt": receipt}, call_id="m1", attempt_id="m1-a1")
        return receipt

    def reconcile(self, tcid: str, finding: str, note: str | None = None) -> int:
        """The operator's finding for the operation (docs/tools.md, `tool.reconciled`)."""
        return self.add("tool.reconciled", {"operation_key": f"{NS}/{THREAD}/{TURN}/{tcid}",
                                            "finding": finding, "note": note,
                                            "decided_by": {"user": "op", "host": "h", "pid": 1}},
                        call_id="m1", attempt_id="m1-a1")


def _op(state: str, nxt: str, verdict: str | None = None, *, finding: str | None = None,
        reconciled_seq: int | None = None) -> dict[str, Any]:
    """An operation in the vectors' short form; `finding` and `reconciled_seq` only on an
    operation whose standing admission has a finding (inspect --json has them only there)."""
    out: dict[str, Any] = {"state": state, "next_operation": nxt}
    if verdict is not None:
        out["receipt"] = verdict
    if finding is not None:
        out["finding"] = finding
        out["reconciled_seq"] = reconciled_seq
    return out


def _key(tcid: str) -> str:
    return f"{NS}/{THREAD}/{TURN}/{tcid}"


def _fields(admitted_seq: int | None, completed_seq: int | None = None, *,
            risk: bool = False) -> dict[str, Any]:
    """Fields of one operation's inspect --json object compared exactly."""
    return {"duplicate_effect_risk": risk, "admitted_seq": admitted_seq,
            "completed_seq": completed_seq}


def vector(name: str, description: str, ledger: Ledger, lines: list[str] | None,
           expect: dict[str, Any], as_of: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "description": description, "events": ledger.events,
                           "receipts": []}
    if lines is not None:
        doc["tools"] = {"kernel_pub": public_pem(KEY.public_key()).decode(),
                        "receipts_ndjson": lines}
    doc["expect"] = expect
    if as_of:
        doc["expect_as_of"] = as_of
    return doc


def build() -> list[dict[str, Any]]:
    out = []
    led = Ledger()
    led.call("m1", PLAN)
    out.append(vector(
        "tool_planned_not_admitted",
        "The saved response planned two tool calls; none admitted: start_tool each "
        "(replay from the saved response, no provider). Before call.completed the plan "
        "is known but waits for the call's own rung.",
        led, [], {"calls": {"m1": {"stage": "completed", "next_operation": "none",
                                   "tool_operations": [_op("not_admitted", "start_tool")] * 2}},
                  "tasks": {"t1": {"next_operation": "start_tool",
                                   "subject_id": f"{NS}/{THREAD}/{TURN}/tc-1"}},
                  "counts": {"effect_unknown": 0, "start_tool": 2, "tool_operations": 2}},
        {"4": {"calls": {"m1": {"stage": "observed", "next_operation": "reinterpret",
                                "tool_operations": [_op("not_admitted", "none")] * 2}},
               "tasks": {"t1": {"next_operation": "reinterpret", "subject_id": "m1"}}}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    admitted = led.admit("tc-1")
    out.append(vector(
        "tool_admitted_no_outcome",
        "Admitted, no tool.completed: effect unknown, reconcile_effect (never automatic); "
        "the task must not read check_and_accept.",
        led, [], {"calls": {"m1": {"next_operation": "none",
                                   "tool_operations": [_op("effect_unknown", "reconcile_effect")]}},
                  "tasks": {"t1": {"next_operation": "reconcile_effect",
                                   "subject_id": f"{NS}/{THREAD}/{TURN}/tc-1"}},
                  "counts": {"effect_unknown": 1, "effect_unknown_tool_operations": 1,
                             "effect_unknown_calls": 0}},
        {str(admitted - 1): {"calls": {"m1": {"tool_operations": [_op("not_admitted", "start_tool")]}},
                             "tasks": {"t1": {"next_operation": "start_tool"}}}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    receipt = led.complete("tc-1", led.admit("tc-1"))
    out.append(vector(
        "tool_completed_valid",
        "Completed with a receipt signed by the trusted key and saved in receipts.ndjson: "
        "valid; the turn goes on with its follow-up call.",
        led, [receipt, receipt],
        {"calls": {"m1": {"tool_operations": [_op("completed", "none", "valid")]}},
         "tasks": {"t1": {"next_operation": "start_call", "subject_id": None}},
         "counts": {"effect_unknown": 0, "tool_operations": 1}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    receipt = led.complete("tc-1", led.admit("tc-1"), key=OTHER)
    out.append(vector(
        "tool_completed_invalid_other_key",
        "Completed, but the receipt was signed by another key than the trusted one: invalid.",
        led, [receipt], {"calls": {"m1": {"tool_operations": [_op("completed", "none", "invalid")]}}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    receipt = led.complete("tc-1", led.admit("tc-1"))
    changed = receipt.replace('"publication_id":1', '"publication_id":2')
    out.append(vector(
        "tool_completed_invalid_changed_byte",
        "receipts.ndjson holds the receipt with one changed byte: invalid.",
        led, [changed], {"calls": {"m1": {"tool_operations": [_op("completed", "none", "invalid")]}}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    led.complete("tc-1", led.admit("tc-1"))
    out.append(vector(
        "tool_completed_missing",
        "The ledger completed the operation and receipts.ndjson has no line for it: missing.",
        led, [], {"calls": {"m1": {"tool_operations": [_op("completed", "none", "missing")]}}}))

    led = Ledger()
    led.call("m1", None, observed=False)
    out.append(vector(
        "tool_stream_cut",
        "A stream cut off before the response completed: the call is effect unknown and "
        "there is no tool plan (nothing may regenerate one).",
        led, None, {"calls": {"m1": {"stage": "effect_unknown", "next_operation": "reconcile_effect",
                                     "tools": None}},
                    "tasks": {"t1": {"next_operation": "reconcile_effect", "subject_id": "m1"}}}))

    led = Ledger()
    led.call("m1", PLAN)
    receipt = led.complete("tc-1", led.admit("tc-1"))
    led.admit("tc-2")
    out.append(vector(
        "tool_mixed_operations",
        "One operation completed (valid), the other admitted without an outcome: the "
        "task reconciles the unknown one; nothing is replayable.",
        led, [receipt],
        {"calls": {"m1": {"tool_operations": [_op("completed", "none", "valid"),
                                              _op("effect_unknown", "reconcile_effect")]}},
         "tasks": {"t1": {"next_operation": "reconcile_effect",
                          "subject_id": f"{NS}/{THREAD}/{TURN}/tc-2"}},
         "counts": {"effect_unknown": 1, "start_tool": 0, "tool_operations": 2}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    receipt = led.complete("tc-1", led.admit("tc-1"))
    led.call("m2", [])
    out.append(vector(
        "tool_turn_follow_up",
        "The operation completed and the follow-up call (its response chose no tool) "
        "succeeded: check and accept the follow-up, not the planning call.",
        led, [receipt],
        {"calls": {"m1": {"tool_operations": [_op("completed", "none", "valid")]},
                   "m2": {"stage": "completed", "tool_operations": []}},
         "tasks": {"t1": {"next_operation": "check_and_accept", "subject_id": "m2"}}}))
    out += build_reconciled()
    return out


def build_reconciled() -> list[dict[str, Any]]:
    """`tool.reconciled` (docs/tools.md, "Reconciling a tool operation"): rungs T2x and T2n,
    re-admission after not_executed, and the findings that are anomalies."""
    out = []
    led = Ledger()
    led.call("m0", None)  # an earlier answer of the task: not the one to accept now
    led.call("m1", PLAN)
    a1 = led.admit("tc-1")
    receipt = led.complete("tc-1", a1)
    c1 = len(led.events)
    a2 = led.admit("tc-2")
    rec = led.reconcile("tc-2", "executed", "reports.db has its publication row")
    out.append(vector(
        "tool_reconciled_executed",
        "One operation completed, the other admitted and killed before its outcome, then "
        "reconciled executed: reconciled_executed / none (never run again, no duplicate "
        "risk); every operation is done, so the task reads start_call (the follow-up), "
        "not check_and_accept of the earlier answer m0.",
        led, [receipt],
        {"calls": {"m0": {"stage": "completed", "status": "succeeded", "tools": None},
                   "m1": {"stage": "completed", "next_operation": "none",
                          "tool_operations": [
                              _op("completed", "none", "valid"),
                              _op("reconciled_executed", "none", finding="executed",
                                  reconciled_seq=rec)],
                          "tool_operation_fields": [
                              _fields(a1, c1), _fields(a2) | {"outcome": None}]}},
         "tasks": {"t1": {"next_operation": "start_call", "subject_id": None}},
         "counts": {"effect_unknown": 0, "effect_unknown_tool_operations": 0,
                    "effect_unknown_calls": 0, "start_tool": 0, "tool_operations": 2}},
        {str(rec - 1): {
            "calls": {"m1": {"tool_operations": [_op("completed", "none", "valid"),
                                                 _op("effect_unknown", "reconcile_effect")],
                             "tool_operation_fields": [_fields(a1, c1),
                                                       _fields(a2, risk=True)]}},
            "tasks": {"t1": {"next_operation": "reconcile_effect", "subject_id": _key("tc-2")}},
            "counts": {"effect_unknown": 1, "effect_unknown_tool_operations": 1}}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    a1 = led.admit("tc-1")
    rec = led.reconcile("tc-1", "not_executed", "no row in reports.db")
    out.append(vector(
        "tool_reconciled_not_executed",
        "Admitted, killed before its outcome, reconciled not_executed: the call adopted the "
        "plan, so reconciled_not_executed / start_tool (replay may run it again under its "
        "original tool-call id); no duplicate risk.",
        led, [],
        {"calls": {"m1": {"stage": "completed", "next_operation": "none",
                          "tool_operations": [_op("reconciled_not_executed", "start_tool",
                                                  finding="not_executed", reconciled_seq=rec)],
                          "tool_operation_fields": [_fields(a1)]}},
         "tasks": {"t1": {"next_operation": "start_tool", "subject_id": _key("tc-1")}},
         "counts": {"effect_unknown": 0, "effect_unknown_tool_operations": 0,
                    "start_tool": 1, "tool_operations": 1}},
        {str(rec - 1): {
            "calls": {"m1": {"tool_operations": [_op("effect_unknown", "reconcile_effect")],
                             "tool_operation_fields": [_fields(a1, risk=True)]}},
            "tasks": {"t1": {"next_operation": "reconcile_effect", "subject_id": _key("tc-1")}},
            "counts": {"effect_unknown": 1, "start_tool": 0}}}))

    led = Ledger()
    led.call("m1", PLAN[:1], completed=False)
    a1 = led.admit("tc-1")
    rec = led.reconcile("tc-1", "not_executed")
    out.append(vector(
        "tool_reconciled_not_executed_not_adopted",
        "Reconciled not_executed while the planning call has not finished (it never adopted "
        "the plan): reconciled_not_executed / none; the call's own next operation comes "
        "first.",
        led, [],
        {"calls": {"m1": {"stage": "observed", "next_operation": "reinterpret",
                          "tool_operations": [_op("reconciled_not_executed", "none",
                                                  finding="not_executed", reconciled_seq=rec)],
                          "tool_operation_fields": [_fields(a1)]}},
         "tasks": {"t1": {"next_operation": "reinterpret", "subject_id": "m1"}},
         "counts": {"effect_unknown": 0, "start_tool": 0, "tool_operations": 1}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    a1 = led.admit("tc-1")
    rec = led.reconcile("tc-1", "not_executed")
    a2 = led.admit("tc-1")
    receipt = led.complete("tc-1", a2)
    c2 = len(led.events)
    out.append(vector(
        "tool_reconciled_not_executed_then_completed",
        "Reconciled not_executed, then replay admitted it again (a re-admission, not an "
        "anomaly) and completed it: completed with a valid receipt naming the second "
        "admission; the finding belonged to the first admission, so the operation shows "
        "none.",
        led, [receipt],
        {"calls": {"m1": {"tool_operations": [_op("completed", "none", "valid")],
                          "tool_operation_fields": [_fields(a2, c2) | {"outcome": "succeeded"}]}},
         "tasks": {"t1": {"next_operation": "start_call", "subject_id": None}},
         "counts": {"effect_unknown": 0, "start_tool": 0, "tool_operations": 1}},
        {str(a2): {"calls": {"m1": {"tool_operations": [_op("effect_unknown", "reconcile_effect")],
                                    "tool_operation_fields": [_fields(a2, risk=True)]}},
                   "tasks": {"t1": {"next_operation": "reconcile_effect",
                                    "subject_id": _key("tc-1")}}},
         str(rec): {"calls": {"m1": {"tool_operations": [
             _op("reconciled_not_executed", "start_tool", finding="not_executed",
                 reconciled_seq=rec)], "tool_operation_fields": [_fields(a1)]}},
                    "tasks": {"t1": {"next_operation": "start_tool", "subject_id": _key("tc-1")}}}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    led.admit("tc-1")
    led.reconcile("tc-1", "not_executed")
    a2 = led.admit("tc-1")
    out.append(vector(
        "tool_reconciled_not_executed_readmitted_no_outcome",
        "Reconciled not_executed, admitted again and killed again before the outcome: a "
        "new T2, effect_unknown / reconcile_effect with duplicate risk (the old finding "
        "does not carry over).",
        led, [],
        {"calls": {"m1": {"tool_operations": [_op("effect_unknown", "reconcile_effect")],
                          "tool_operation_fields": [_fields(a2, risk=True)]}},
         "tasks": {"t1": {"next_operation": "reconcile_effect", "subject_id": _key("tc-1")}},
         "counts": {"effect_unknown": 1, "effect_unknown_tool_operations": 1,
                    "effect_unknown_calls": 0, "start_tool": 0, "tool_operations": 1}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    led.admit("tc-1")
    led.reconcile("tc-1", "not_executed")
    a2 = led.admit("tc-1")
    rec = led.reconcile("tc-1", "executed")
    out.append(vector(
        "tool_reconciled_readmitted_reconciled_again",
        "Reconciled not_executed, re-admitted, killed again, then reconciled executed: the "
        "second admission's own first finding counts (not a second finding): "
        "reconciled_executed, task start_call.",
        led, [],
        {"calls": {"m1": {"tool_operations": [_op("reconciled_executed", "none",
                                                  finding="executed", reconciled_seq=rec)],
                          "tool_operation_fields": [_fields(a2)]}},
         "tasks": {"t1": {"next_operation": "start_call", "subject_id": None}},
         "counts": {"effect_unknown": 0, "start_tool": 0, "tool_operations": 1}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    a1 = led.admit("tc-1")
    rec = led.reconcile("tc-1", "executed")
    second = led.reconcile("tc-1", "not_executed")
    out.append(vector(
        "tool_reconciled_twice",
        "Reconciled executed, then not_executed: only the first finding of an admission "
        "counts; the second is an anomaly and changes nothing (no start_tool).",
        led, [],
        {"calls": {"m1": {"tool_operations": [_op("reconciled_executed", "none",
                                                  finding="executed", reconciled_seq=rec)],
                          "tool_operation_fields": [_fields(a1)]}},
         "tasks": {"t1": {"next_operation": "start_call", "subject_id": None}},
         "counts": {"effect_unknown": 0, "start_tool": 0, "tool_operations": 1},
         "anomalies": [{"seq": second, "problem_contains":
                        f"operation {_key('tc-1')} reconciled a second time"}]}))

    led = Ledger()
    led.call("m1", PLAN)
    a1 = led.admit("tc-1")
    bad = led.reconcile("tc-1", "maybe")
    early = led.reconcile("tc-2", "executed")
    rec = led.reconcile("tc-1", "executed")
    a2 = led.admit("tc-2")
    anomalies = [{"seq": bad, "problem_contains": "tool.reconciled with finding 'maybe'"},
                 {"seq": early, "problem_contains":
                  f"tool.reconciled for operation {_key('tc-2')} that was never admitted"}]
    out.append(vector(
        "tool_reconciled_bad",
        "A finding 'maybe' and a finding for an operation never admitted are anomalies and "
        "change nothing: tc-1 stays effect_unknown, tc-2 not_admitted. A valid finding after "
        "the bad one still counts (the first valid one), and tc-2's early finding does not "
        "apply to its later admission.",
        led, [],
        {"calls": {"m1": {"tool_operations": [
            _op("reconciled_executed", "none", finding="executed", reconciled_seq=rec),
            _op("effect_unknown", "reconcile_effect")],
            "tool_operation_fields": [_fields(a1), _fields(a2, risk=True)]}},
         "tasks": {"t1": {"next_operation": "reconcile_effect", "subject_id": _key("tc-2")}},
         "counts": {"effect_unknown": 1, "effect_unknown_tool_operations": 1, "start_tool": 0,
                    "tool_operations": 2},
         "anomalies": anomalies},
        {str(early): {"calls": {"m1": {"tool_operations": [
            _op("effect_unknown", "reconcile_effect"), _op("not_admitted", "start_tool")],
            "tool_operation_fields": [_fields(a1, risk=True), _fields(None)]}},
            "tasks": {"t1": {"next_operation": "reconcile_effect", "subject_id": _key("tc-1")}},
            "counts": {"effect_unknown": 1, "start_tool": 1},
            "anomalies": anomalies}}))

    led = Ledger()
    led.call("m1", PLAN[:1])
    a1 = led.admit("tc-1")
    receipt = led.complete("tc-1", a1)
    c1 = len(led.events)
    late = led.reconcile("tc-1", "not_executed")
    out.append(vector(
        "tool_reconciled_after_completed",
        "A finding after the operation's tool.completed is an anomaly: the recorded "
        "outcome stands (completed, valid, no finding shown, nothing to run).",
        led, [receipt],
        {"calls": {"m1": {"tool_operations": [_op("completed", "none", "valid")],
                          "tool_operation_fields": [_fields(a1, c1)]}},
         "tasks": {"t1": {"next_operation": "start_call", "subject_id": None}},
         "counts": {"effect_unknown": 0, "start_tool": 0, "tool_operations": 1},
         "anomalies": [{"seq": late, "problem_contains":
                        f"tool.reconciled for operation {_key('tc-1')} after its tool.completed"}]}))

    led = Ledger()
    led.call("m1", PLAN)
    a1 = led.admit("tc-1")
    dup1 = led.admit("tc-1")
    a2 = led.admit("tc-2")
    rec = led.reconcile("tc-2", "executed")
    dup2 = led.admit("tc-2")
    out.append(vector(
        "tool_readmitted_without_finding",
        "A second tool.admitted without a not_executed finding is an anomaly as before, and "
        "so is one after an executed finding: the first admission stands (tc-1 effect "
        "unknown, tc-2 reconciled executed).",
        led, [],
        {"calls": {"m1": {"tool_operations": [
            _op("effect_unknown", "reconcile_effect"),
            _op("reconciled_executed", "none", finding="executed", reconciled_seq=rec)],
            "tool_operation_fields": [_fields(a1, risk=True), _fields(a2)]}},
         "tasks": {"t1": {"next_operation": "reconcile_effect", "subject_id": _key("tc-1")}},
         "counts": {"effect_unknown": 1, "effect_unknown_tool_operations": 1, "start_tool": 0,
                    "tool_operations": 2},
         "anomalies": [
             {"seq": dup1, "problem_contains": f"operation {_key('tc-1')} admitted a second time"},
             {"seq": dup2, "problem_contains": f"operation {_key('tc-2')} admitted a second time"}]}))
    return out


def main() -> None:
    for v in build():
        (HERE / f"{v['name']}.json").write_text(json.dumps(v, indent=1) + "\n")


if __name__ == "__main__":
    main()
