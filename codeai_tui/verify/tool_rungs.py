"""The verifier's own small implementation of the tool rungs (docs/tools.md).

Written from the document, not from workstate (import-linter forbids importing it): per
planning call, the plan of the attempt the call adopted (else its last observed one),
the turn that keys its operations, and per operation the admission that stands with its
`tool.completed` and its first valid `tool.reconciled`, folded in seq order. completed ->
none; admitted and reconciled executed -> reconciled_executed / none; admitted and
reconciled not_executed -> reconciled_not_executed / start_tool when the call adopted
the plan, else none; admitted only -> effect_unknown / reconcile_effect; planned in the
adopted response of a succeeded call -> not_admitted / start_tool; planned otherwise ->
not_admitted / none. A `tool.admitted` after a not_executed finding with no outcome
starts a new admission (its own finding, if any, counts); every other second admission,
second outcome, second or unknown finding, finding for an operation not admitted or
after its outcome is an anomaly that changes nothing (`CallTools.anomalies`). Receipt
verdicts are judged by the caller (effects.py holds the verifier's Ed25519 code).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codeai_tui.verify.store import Row

FINDINGS = ("executed", "not_executed")
DONE = ("completed", "reconciled_executed")  # the task rule: nothing left to run


@dataclass(frozen=True, slots=True)
class ToolOp:
    call_id: str
    operation_key: str | None
    tool_call_id: str | None
    state: str
    next_operation: str
    admitted: Row | None  # the admission that stands (the last one a not_executed finding let in)
    completed: Row | None
    reconciled: Row | None = None  # that admission's first valid finding
    admissions: int = 0  # admissions that stood: 1 + re-admissions after not_executed

    @property
    def finding(self) -> str | None:
        return self.reconciled.payload.get("finding") if self.reconciled else None

    @property
    def duplicate_effect_risk(self) -> bool:
        return self.state == "effect_unknown"


@dataclass(frozen=True, slots=True)
class CallTools:
    call_id: str
    task_id: str
    first_seq: int
    plan: list[dict[str, Any]] | None
    adopted: bool  # the plan is in the response a succeeded call adopted
    ops: list[ToolOp]
    anomalies: list[int] = field(default_factory=list)  # seqs of tool events the document calls anomalies

    def worst(self) -> ToolOp | None:
        """What the task sees first: effect unknown before start_tool."""
        pending = [o for o in self.ops if o.next_operation != "none"]
        unknown = [o for o in pending if o.state == "effect_unknown"]
        return (unknown or pending or [None])[0]


@dataclass(slots=True)
class _Fold:
    admitted: Row | None = None
    completed: Row | None = None
    reconciled: Row | None = None
    admissions: int = 0


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


def _fold(tool_rows: list[Row]) -> tuple[dict[str, _Fold], list[int]]:
    """Per operation key, in seq order: the admission that stands, its outcome and its
    first valid finding; and the seqs of the events that changed nothing (anomalies)."""
    ops: dict[str, _Fold] = {}
    anomalies: list[int] = []
    for r in sorted(tool_rows, key=lambda r: r.seq):
        key = r.payload.get("operation_key")
        if not isinstance(key, str) or not key:
            anomalies.append(r.seq)
            continue
        f = ops.get(key)
        if r.kind == "tool.reconciled":
            if (r.payload.get("finding") not in FINDINGS or f is None or f.admitted is None
                    or f.completed is not None or f.reconciled is not None):
                anomalies.append(r.seq)
            else:
                f.reconciled = r
            continue
        f = ops.setdefault(key, _Fold())
        if r.kind == "tool.admitted":
            again = f.admitted is not None
            if again and (f.completed is not None or f.reconciled is None
                          or f.reconciled.payload.get("finding") != "not_executed"):
                anomalies.append(r.seq)
                continue
            f.admitted, f.reconciled = r, None
            f.admissions += 1
        elif f.completed is not None:
            anomalies.append(r.seq)  # a second outcome: the first stands
        else:
            if f.admitted is None:
                anomalies.append(r.seq)  # an outcome never admitted: shown, still an outcome
            f.completed = r
    return ops, anomalies


def turn_prefix(requested: dict[str, Any]) -> str | None:
    """`namespace/thread/turn` of a `call.requested` payload's `turn`, when its three parts
    are non-empty strings without `/` (what keys operations); None otherwise."""
    turn = requested.get("turn")
    parts = [turn.get(k) for k in ("namespace", "thread", "turn")] if isinstance(turn, dict) else []
    ok = len(parts) == 3 and all(isinstance(p, str) and p and "/" not in p for p in parts)
    return "/".join(parts) if ok else None


def derive_tools(rows: list[Row]) -> dict[str, CallTools]:
    """Per call with tool evidence (a plan or a tool event), its operations' rungs."""
    by_call: dict[str, list[Row]] = {}
    for r in rows:
        if r.call_id and r.kind.startswith(("call.", "attempt.", "tool.")):
            by_call.setdefault(r.call_id, []).append(r)
    out: dict[str, CallTools] = {}
    for cid, crows in by_call.items():
        plan, adopted = _plan_rows(crows)
        tool_rows = [r for r in crows
                     if r.kind in ("tool.admitted", "tool.completed", "tool.reconciled")]
        if plan is None and not tool_rows:
            continue
        requested = next((r for r in crows if r.kind == "call.requested"), None)
        prefix = turn_prefix(requested.payload) if requested else None
        folds, anomalies = _fold(tool_rows)
        ops: list[ToolOp] = []
        seen: set[str] = set()
        entries = [p for p in plan or [] if isinstance(p, dict)
                   and all(isinstance(p.get(k), str) for k in ("tool_call_id", "name",
                                                               "arguments_sha256"))]
        for entry in entries:
            tcid = entry["tool_call_id"]
            key = f"{prefix}/{tcid}" if prefix else next(
                (k for k, f in folds.items() if f.admitted is not None
                 and f.admitted.payload.get("tool_call_id") == tcid), None)
            if key is not None:
                seen.add(key)
            ops.append(_op(cid, key, tcid, folds, adopted))
        for key in folds:  # admissions (or outcomes) the plan does not name, in first-seen order
            if key not in seen:
                seen.add(key)
                ops.append(_op(cid, key, None, folds, adopted))
        out[cid] = CallTools(cid, crows[0].task_id, crows[0].seq, plan, adopted, ops, anomalies)
    return out


def _op(cid: str, key: str | None, tcid: str | None, folds: dict[str, _Fold],
        adopted: bool) -> ToolOp:
    f = folds.get(key) if key else None
    f = f or _Fold()
    adm, finding = f.admitted, f.reconciled.payload.get("finding") if f.reconciled else None
    if f.completed is not None:
        state, nxt = "completed", "none"
    elif adm is not None and finding == "executed":
        state, nxt = "reconciled_executed", "none"
    elif adm is not None and finding == "not_executed":
        state, nxt = "reconciled_not_executed", "start_tool" if adopted else "none"
    elif adm is not None:
        state, nxt = "effect_unknown", "reconcile_effect"
    else:
        state, nxt = "not_admitted", "start_tool" if adopted else "none"
    if tcid is None and adm is not None:
        tcid = adm.payload.get("tool_call_id") if isinstance(
            adm.payload.get("tool_call_id"), str) else None
    return ToolOp(cid, key, tcid, state, nxt, adm, f.completed, f.reconciled, f.admissions)
