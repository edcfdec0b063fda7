"""The verifier's own small implementation of the WORK_STATE_V1 rules (docs/ledger.md
sections 4-5).

Written from the contract, not from the project's projection module (import-linter
forbids importing it), so a bug there shows up as a disagreement here. It only has to
derive the compared fields: stage, next operation, provider effect, duplicate risk,
attempt count, supersession, status; compilation stage and missing required inputs;
task next operation and subject; receipt coverage and duplicates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from codeai_tui.verify.store import Row
from codeai_tui.verify.tool_rungs import DONE as TOOL_DONE
from codeai_tui.verify.tool_rungs import CallTools, derive_tools

OUTCOME_KINDS = ("attempt.observed", "attempt.interpreted", "attempt.retry_decided",
                 "attempt.completed")


@dataclass(slots=True)
class Attempt:
    first_seq: int
    started_seq: int | None = None
    request_sha256: str | None = None
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)  # kind -> payload


@dataclass(slots=True)
class Call:
    call_id: str
    task_id: str
    first_seq: int
    seen: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    attempts: dict[str, Attempt] = field(default_factory=dict)

    def payload(self, kind: str) -> dict[str, Any] | None:
        got = self.seen.get(kind)
        return got[1] if got else None

    @property
    def key(self) -> str | None:
        for kind in ("call.manifest", "call.requested"):
            p = self.payload(kind)
            if p and isinstance(p.get("idempotency_key"), str):
                return str(p["idempotency_key"])
        return None


@dataclass(slots=True)
class Compilation:
    compilation_id: str
    task_id: str
    first_seq: int
    seen: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(slots=True)
class Derived:
    calls: dict[str, dict[str, Any]]
    compilations: dict[str, dict[str, Any]]
    tasks: dict[str, dict[str, Any]]
    call_evidence: dict[str, Call]
    compilation_evidence: dict[str, Compilation]


def _first(store: dict[str, Any], kind: str, value: Any) -> None:
    store.setdefault(kind, value)


def collect(rows: list[Row]) -> tuple[dict[str, Call], dict[str, Compilation], dict[str, list[Row]]]:
    calls: dict[str, Call] = {}
    comps: dict[str, Compilation] = {}
    tasks: dict[str, list[Row]] = {}
    for r in rows:
        tasks.setdefault(r.task_id, []).append(r)
        if r.kind.startswith("context.") and r.compilation_id:
            comp = comps.setdefault(r.compilation_id, Compilation(r.compilation_id, r.task_id, r.seq))
            _first(comp.seen, r.kind, r.payload)
        elif (r.kind.startswith("call.") or r.kind.startswith("attempt.")) and r.call_id:
            call = calls.setdefault(r.call_id, Call(r.call_id, r.task_id, r.seq))
            if r.kind.startswith("attempt."):
                aid = r.attempt_id or f"(none at seq {r.seq})"
                att = call.attempts.setdefault(aid, Attempt(r.seq))
                if r.kind == "attempt.started" and att.started_seq is None:
                    att.started_seq = r.seq
                    sha = r.payload.get("request_sha256")
                    att.request_sha256 = sha if isinstance(sha, str) else None
                _first(att.seen, r.kind, r.payload)
            else:
                _first(call.seen, r.kind, (r.seq, r.payload))
    return calls, comps, tasks


FINDINGS = ("received", "not_received")


def _finding(att: Attempt) -> str | None:
    """docs/reconcile.md section 2: the first attempt.reconciled stands; a finding
    that is neither word is ignored."""
    found = att.seen.get("attempt.reconciled", {}).get("finding")
    return found if found in FINDINGS else None


def _effect_when_done(call: Call) -> str:
    if any("attempt.observed" in a.seen or _finding(a) == "received"
           for a in call.attempts.values()):
        return "happened"
    if any(a.started_seq is not None and _finding(a) is None for a in call.attempts.values()):
        return "unknown"
    return "none"


def _reconciled(att: Attempt) -> tuple[str, str, str, bool]:
    """docs/reconcile.md section 2's table: stage, next operation, effect, duplicate risk."""
    completed = "attempt.completed" in att.seen
    if _finding(att) == "not_received":
        if completed:
            return "attempt_completed", "finalize", "none", False
        return "reconciled_not_received", "start_next_attempt", "none", False
    if completed:
        return "attempt_completed", "finalize", "happened", False
    decided = att.seen.get("attempt.retry_decided")
    if decided is not None and decided.get("decision") == "stop":
        return "retry_decided", "finalize", "happened", False
    if decided is not None and decided.get("decision") == "retry" \
            and decided.get("accept_duplicate") is True:
        return "retry_decided", "start_next_attempt", "happened", True
    return "reconciled_received", "decide_duplicate", "happened", True


def derive_call(call: Call) -> dict[str, Any]:
    """The ladder: first matching rung wins."""
    effect, risk, superseded_by = "none", False, None
    started = [a for a in call.attempts.values() if a.started_seq is not None]
    ordered = sorted(call.attempts.values(),
                     key=lambda a: a.started_seq if a.started_seq is not None else a.first_seq)
    last = ordered[-1] if ordered else None
    resumed = call.payload("call.resumed")
    completed = call.payload("call.completed")
    if resumed is not None:
        stage, op, effect = "superseded", "none", _effect_when_done(call)
        superseded_by = resumed.get("resumed_as")
    elif completed is not None:
        stage, op, effect = "completed", "none", _effect_when_done(call)
    elif "call.preparation_failed" in call.seen:
        stage, op = "preparation_failed", "fix_inputs"
    elif "call.manifest" not in call.seen and last is None:
        stage, op = "requested", "start_call"
    elif last is None:
        stage, op = "manifest_recorded", "start_call"
    elif _finding(last) is not None and "attempt.observed" not in last.seen:
        stage, op, effect, risk = _reconciled(last)
    elif not any(k in last.seen for k in OUTCOME_KINDS):
        stage, op, effect, risk = "effect_unknown", "reconcile_effect", "unknown", True
    else:
        effect = "happened"
        if "attempt.interpreted" not in last.seen:
            stage, op = "observed", "reinterpret"
        elif "attempt.retry_decided" not in last.seen and "attempt.completed" not in last.seen:
            stage, op = "interpreted", "redecide"
        elif "attempt.completed" not in last.seen:
            decision = last.seen["attempt.retry_decided"].get("decision")
            stage, op = "retry_decided", "start_next_attempt" if decision == "retry" else "finalize"
        else:
            stage, op = "attempt_completed", "finalize"
    status = completed.get("status") if completed else None
    return {"stage": stage, "next_operation": op, "provider_effect": effect,
            "duplicate_effect_risk": risk, "attempts": len(started),
            "superseded_by": superseded_by, "status": status}


def derive_compilation(comp: Compilation) -> dict[str, Any]:
    missing: list[str] = []
    if "context.compilation_completed" in comp.seen:
        stage, op = "completed", "none"
    elif "context.compilation_failed" in comp.seen:
        stage, op = "failed", "fix_inputs"
        req = comp.seen.get("context.compilation_requested", {})
        offered = {str(o.get("id")) for o in req.get("offered") or [] if isinstance(o, dict)}
        required = {str(i) for i in req.get("required_ids") or []}
        named = {str(i) for i in comp.seen["context.compilation_failed"].get("missing_ids") or []}
        missing = sorted((required - offered) | named)
    else:
        stage, op = "requested", "recompile"
    return {"stage": stage, "next_operation": op, "missing_required": missing}


def derive_task(task_rows: list[Row], calls: dict[str, dict[str, Any]],
                comps: dict[str, dict[str, Any]], call_ev: dict[str, Call],
                comp_ev: dict[str, Compilation],
                tools: dict[str, CallTools] | None = None) -> dict[str, Any]:
    """docs/tools.md: a finished call with an unresolved tool operation is unresolved through
    it (effect unknown first); a call whose adopted plan chose tools is not the answer
    to accept (when its operations are all completed or reconciled executed, the
    follow-up call is next)."""
    tools = tools or {}
    if any(r.kind == "task.completed" for r in task_rows):
        return {"next_operation": "none", "subject_id": None}
    done = {r.payload.get("acceptance_id") for r in task_rows if r.kind == "task.completed"}
    for r in task_rows:
        if r.kind == "task.accepted" and r.payload.get("acceptance_id") not in done:
            return {"next_operation": "repeat_acceptance", "subject_id": r.payload.get("acceptance_id")}
    task_id = task_rows[0].task_id
    pending: list[tuple[int, str, str]] = []
    for cid, c in comp_ev.items():
        if c.task_id == task_id and comps[cid]["next_operation"] != "none":
            pending.append((c.first_seq, cid, comps[cid]["next_operation"]))
    best: tuple[int, str] | None = None
    tools_done: tuple[int, str] | None = None
    for cid, c in call_ev.items():
        if c.task_id != task_id:
            continue
        st = calls[cid]
        ct = tools.get(cid)
        worst = ct.worst() if ct is not None else None
        if st["next_operation"] != "none":
            pending.append((c.first_seq, cid, st["next_operation"]))
        elif worst is not None:
            subject = worst.operation_key or f"{cid}/{worst.tool_call_id}"
            pending.append((c.first_seq, subject, worst.next_operation))
        elif ct is not None and ct.adopted and ct.plan:
            done_seq = c.seen["call.completed"][0] if "call.completed" in c.seen else c.first_seq
            if ct.ops and all(o.state in TOOL_DONE for o in ct.ops) and (
                    tools_done is None or done_seq > tools_done[0]):
                tools_done = (done_seq, cid)
        elif st["stage"] == "completed" and st["status"] == "succeeded":
            done_seq = c.seen["call.completed"][0]
            if best is None or done_seq > best[0]:
                best = (done_seq, cid)
    if pending:
        _, subject, op = min(pending)
        return {"next_operation": op, "subject_id": subject}
    if tools_done is not None and (best is None or best[0] < tools_done[0]):
        return {"next_operation": "start_call", "subject_id": None}
    if best is not None:
        return {"next_operation": "check_and_accept", "subject_id": best[1]}
    return {"next_operation": "start_call", "subject_id": None}


def derive(rows: list[Row]) -> Derived:
    call_ev, comp_ev, task_rows = collect(rows)
    calls = {cid: derive_call(c) for cid, c in call_ev.items()}
    comps = {cid: derive_compilation(c) for cid, c in comp_ev.items()}
    tools = derive_tools(rows)
    tasks = {tid: derive_task(rs, calls, comps, call_ev, comp_ev, tools)
             for tid, rs in task_rows.items()}
    return Derived(calls, comps, tasks, call_ev, comp_ev)


@dataclass(frozen=True, slots=True)
class ReceiptVerdict:
    covered: dict[str, str]          # receipt_id -> attempt_id
    uncovered: list[dict[str, Any]]  # the receipts themselves
    duplicates: list[list[dict[str, Any]]]


def check_receipts(receipts: list[dict[str, Any]], calls: dict[str, Call]) -> ReceiptVerdict:
    started: dict[tuple[str, str], str] = {}
    for call in calls.values():
        key = call.key
        for aid, att in call.attempts.items():
            if key is not None and att.started_seq is not None and att.request_sha256:
                started.setdefault((key, att.request_sha256), aid)
    covered: dict[str, str] = {}
    uncovered: list[dict[str, Any]] = []
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in receipts:
        pair = (str(r.get("idempotency_key", "")), str(r.get("body_sha256", "")))
        groups.setdefault(pair, []).append(r)
        if pair in started:
            covered[str(r.get("receipt_id"))] = started[pair]
        else:
            uncovered.append(r)
    return ReceiptVerdict(covered, uncovered, [g for g in groups.values() if len(g) > 1])
