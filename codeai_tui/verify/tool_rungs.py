"""The verifier's own small implementation of the tool rungs (ledger/TOOLS.md).

Written from the document, not from workstate (import-linter forbids importing it): per
planning call, the plan of the attempt the call adopted (else its last observed one),
the turn that keys its operations, and per operation its first `tool.admitted` /
`tool.completed`. completed -> none; admitted only -> effect_unknown / reconcile_effect;
planned in the adopted response of a succeeded call -> not_admitted / start_tool;
planned otherwise -> not_admitted / none. Receipt verdicts are judged by the caller
(effects.py holds the verifier's Ed25519 code).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codeai_tui.verify.store import Row


@dataclass(frozen=True, slots=True)
class ToolOp:
    call_id: str
    operation_key: str | None
    tool_call_id: str | None
    state: str
    next_operation: str
    admitted: Row | None
    completed: Row | None


@dataclass(frozen=True, slots=True)
class CallTools:
    call_id: str
    task_id: str
    first_seq: int
    plan: list[dict[str, Any]] | None
    adopted: bool  # the plan is in the response a succeeded call adopted
    ops: list[ToolOp]

    def worst(self) -> ToolOp | None:
        """What the task sees first: effect unknown before start_tool."""
        pending = [o for o in self.ops if o.next_operation != "none"]
        unknown = [o for o in pending if o.state == "effect_unknown"]
        return (unknown or pending or [None])[0]


def _plan_rows(rows: list[Row]) -> tuple[list[dict[str, Any]] | None, bool]:
    completed = next((r for r in rows if r.kind == "call.completed"), None)
    observed: dict[str, Row] = {}
    started: list[Row] = []
    for r in rows:
        if r.kind == "attempt.observed" and r.attempt_id:
            observed.setdefault(r.attempt_id, r)
        elif r.kind == "attempt.started":
            started.append(r)
    if completed is not None:
        adopted = completed.payload.get("adopted_attempt_id")
        plan = observed[adopted].payload.get("tool_plan") if adopted in observed else None
        if isinstance(plan, list):
            return plan, completed.payload.get("status") == "succeeded"
    if started:
        last = max(started, key=lambda r: r.seq).attempt_id
        plan = observed[last].payload.get("tool_plan") if last in observed else None
        if isinstance(plan, list):
            return plan, False
    return None, False


def derive_tools(rows: list[Row]) -> dict[str, CallTools]:
    """Per call with tool evidence (a plan or a tool event), its operations' rungs."""
    by_call: dict[str, list[Row]] = {}
    for r in rows:
        if r.call_id and r.kind.startswith(("call.", "attempt.", "tool.")):
            by_call.setdefault(r.call_id, []).append(r)
    out: dict[str, CallTools] = {}
    for cid, crows in by_call.items():
        plan, adopted = _plan_rows(crows)
        tool_rows = [r for r in crows if r.kind in ("tool.admitted", "tool.completed")]
        if plan is None and not tool_rows:
            continue
        requested = next((r for r in crows if r.kind == "call.requested"), None)
        turn = requested.payload.get("turn") if requested else None
        parts = [turn.get(k) for k in ("namespace", "thread", "turn")] if isinstance(turn, dict) else []
        prefix = "/".join(parts) if len(parts) == 3 and all(
            isinstance(p, str) and p and "/" not in p for p in parts) else None
        admitted: dict[str, Row] = {}
        completed: dict[str, Row] = {}
        for r in tool_rows:
            key = r.payload.get("operation_key")
            if isinstance(key, str) and key:
                (admitted if r.kind == "tool.admitted" else completed).setdefault(key, r)
        ops: list[ToolOp] = []
        seen: set[str] = set()
        entries = [p for p in plan or [] if isinstance(p, dict)
                   and all(isinstance(p.get(k), str) for k in ("tool_call_id", "name",
                                                               "arguments_sha256"))]
        for entry in entries:
            tcid = entry["tool_call_id"]
            key = f"{prefix}/{tcid}" if prefix else next(
                (k for k, r in admitted.items() if r.payload.get("tool_call_id") == tcid), None)
            if key is not None:
                seen.add(key)
            ops.append(_op(cid, key, tcid, admitted, completed, adopted))
        for key in list(admitted) + [k for k in completed if k not in admitted]:
            if key not in seen:
                seen.add(key)
                ops.append(_op(cid, key, None, admitted, completed, adopted))
        out[cid] = CallTools(cid, crows[0].task_id, crows[0].seq, plan, adopted, ops)
    return out


def _op(cid: str, key: str | None, tcid: str | None, admitted: dict[str, Row],
        completed: dict[str, Row], adopted: bool) -> ToolOp:
    adm = admitted.get(key) if key else None
    done = completed.get(key) if key else None
    if done is not None:
        state, nxt = "completed", "none"
    elif adm is not None:
        state, nxt = "effect_unknown", "reconcile_effect"
    else:
        state, nxt = "not_admitted", "start_tool" if adopted else "none"
    if tcid is None and adm is not None:
        tcid = adm.payload.get("tool_call_id") if isinstance(
            adm.payload.get("tool_call_id"), str) else None
    return ToolOp(cid, key, tcid, state, nxt, adm, done)
