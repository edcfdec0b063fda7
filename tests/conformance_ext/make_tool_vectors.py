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


def _op(state: str, nxt: str, verdict: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"state": state, "next_operation": nxt}
    if verdict is not None:
        out["receipt"] = verdict
    return out


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
    return out


def main() -> None:
    for v in build():
        (HERE / f"{v['name']}.json").write_text(json.dumps(v, indent=1) + "\n")


if __name__ == "__main__":
    main()
