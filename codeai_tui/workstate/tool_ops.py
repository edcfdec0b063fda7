"""Tool operations in the projection (docs/tools.md): evidence, folds and the ladder.

Per planning call: the tool plan its saved response recorded (`attempt.observed`
`tool_plan`), the turn that keys its operations (`call.requested` `turn`), and per
operation its `tool.admitted` / `tool.completed`. The rungs, first match wins:

| evidence | stage | next_operation |
|---|---|---|
| tool.completed | completed | none (receipt checked: valid / invalid / missing) |
| admitted, reconciled executed | reconciled_executed | none (never run it again) |
| admitted, reconciled not_executed | reconciled_not_executed | start_tool (as below) |
| tool.admitted, no tool.completed | effect_unknown | reconcile_effect (duplicate risk) |
| planned in the call's adopted response, not admitted | not_admitted | start_tool |
| planned, the call not finished yet | not_admitted | none (the call's own rung first) |

Both projection paths fold through `fold_tool_*` and judge through `classify_tools`, so
they cannot disagree. Pure: no I/O (receipt bytes and keys are handed in).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol

from codeai_tui.ledger.schema import TOOL_ADMITTED, TOOL_RECONCILED
from codeai_tui.workstate.tool_receipts import ToolReceipts, receipt_verdict
from codeai_tui.workstate.vocab import NextOperation


class _Attempt(Protocol):
    attempt_id: str
    observed_seq: int | None


class CallEvidence(Protocol):
    """What the tool rungs read of a call's evidence (the call's own fold holds more):
    a protocol, so that the call's evidence can import this module and not the reverse."""

    call_id: str
    first_seq: int
    event_count: int
    status: str | None
    adopted_attempt_id: str | None
    completed_seq: int | None
    tools: ToolEvidence | None

    def last_attempt(self) -> _Attempt | None: ...

EXECUTED, NOT_EXECUTED = "executed", "not_executed"
TOOL_FINDINGS = (EXECUTED, NOT_EXECUTED)


@dataclass(frozen=True, slots=True)
class PlannedTool:
    tool_call_id: str
    name: str
    arguments_sha256: str

    def as_json(self) -> dict[str, str]:
        return {"tool_call_id": self.tool_call_id, "name": self.name,
                "arguments_sha256": self.arguments_sha256}


@dataclass(slots=True)
class ToolOpEvidence:
    """One operation key's events (the first of each kind counts)."""

    operation_key: str
    tool_call_id: str | None = None
    tool: str | None = None
    arguments_sha256: str | None = None
    attempt_id: str | None = None
    admitted_seq: int | None = None
    completed_seq: int | None = None
    outcome: str | None = None
    receipt: str | None = None
    reconciled_seq: int | None = None  # the operator's finding for this admission
    finding: str | None = None


@dataclass(slots=True)
class ToolEvidence:
    """A call's tool evidence; absent (None on the call) for every v1 call."""

    turn: tuple[str, str, str] | None = None
    plans: dict[str, tuple[PlannedTool, ...]] = field(default_factory=dict)  # attempt -> plan
    ops: list[ToolOpEvidence] = field(default_factory=list)
    # operation key -> the position of its evidence in `ops` (`op`, `add_op`): a scan
    # of `ops` for each event made a call with 10^5 operations quadratic. Not compared:
    # derived from ops.
    at: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    # positions below `shared` hold operations the evidence this was cloned from holds
    # too, except those `copied` since (`op_to_change`): a clone copied every one, ~1 s
    # for each live poll of a call with 10^5 operations
    shared: int = field(default=0, compare=False, repr=False)
    copied: set[int] | None = field(default=None, compare=False, repr=False)
    # the last judgement (`classify_tools`) and the call's event count it was made at:
    # the console asks for it on every paint of the call (its row, the verdict line,
    # Detail), and judging 10^5 operations each time held the UI thread for seconds
    judged: tuple[int, ToolsState | None] | None = field(default=None, compare=False,
                                                         repr=False)

    def clone(self) -> ToolEvidence:
        """A copy to fold into while this one stays as it is: the operations are shared
        until one changes (`op_to_change`)."""
        return ToolEvidence(self.turn, dict(self.plans), list(self.ops), dict(self.at),
                            len(self.ops))

    def op(self, key: str) -> ToolOpEvidence | None:
        """The (first) operation with this key."""
        i = self.at.get(key)
        return None if i is None else self.ops[i]

    def op_to_change(self, key: str) -> ToolOpEvidence | None:
        """`op`, for a fold about to change it (copied first if shared: see `clone`)."""
        i = self.at.get(key)
        if i is None:
            return None
        op = self.ops[i]
        if i < self.shared:
            copied = self.copied
            if copied is None:
                copied = self.copied = set()
            if i not in copied:
                copied.add(i)
                op = self.ops[i] = replace(op)
        return op

    def add_op(self, op: ToolOpEvidence) -> None:
        self.ops.append(op)
        self.at.setdefault(op.operation_key, len(self.ops) - 1)


Report = Any  # Callable[[str], None]; kept loose to avoid importing evidence here


def _text(p: dict[str, Any], key: str) -> str | None:
    value = p.get(key)
    return value if isinstance(value, str) else None


TURN_KEYS = ("namespace", "thread", "turn")


def parse_turn(value: object) -> tuple[str, str, str] | None:
    """A `call.requested` `turn` as (namespace, thread, turn) when it can key operations:
    an object whose three parts are non-empty strings without `/`; None otherwise."""
    if not isinstance(value, dict):
        return None
    parts = tuple(value.get(k) for k in TURN_KEYS)
    if all(isinstance(x, str) and x and "/" not in x for x in parts):
        return parts  # type: ignore[return-value]
    return None


def fold_tool_request(call: CallEvidence, p: dict[str, Any]) -> None:
    """`call.requested` `turn` {namespace, thread, turn}: the key every operation shares."""
    parts = parse_turn(p.get("turn"))
    if parts is not None:
        tools = call.tools = call.tools or ToolEvidence()
        tools.turn = parts


def fold_tool_plan(call: CallEvidence, attempt_id: str, p: dict[str, Any], report: Report) -> None:
    """`attempt.observed` `tool_plan`: absent means no plan known; malformed is reported."""
    plan = p.get("tool_plan")
    if plan is None:
        return
    items: list[PlannedTool] = []
    ok = isinstance(plan, list)
    for item in plan if isinstance(plan, list) else ():
        if not isinstance(item, dict):
            ok = False
            continue
        tcid, name, sha = (_text(item, k) for k in ("tool_call_id", "name", "arguments_sha256"))
        if tcid is None or name is None or sha is None:
            ok = False
            continue
        items.append(PlannedTool(tcid, name, sha))
    if not ok:
        report(f"attempt.observed for attempt {attempt_id}: tool_plan entries without "
               "tool_call_id, name and arguments_sha256 (ignored)")
    tools = call.tools = call.tools or ToolEvidence()
    tools.plans.setdefault(attempt_id, tuple(items))


def fold_tool_event(call: CallEvidence, kind: str, seq: int, attempt_id: str | None,
                    p: dict[str, Any], report: Report) -> None:
    """`tool.admitted` / `tool.completed` / `tool.reconciled` of an operation the call's
    response planned."""
    key = _text(p, "operation_key")
    if not key:
        report(f"{kind} without operation_key (ignored)")
        return
    tools = call.tools = call.tools or ToolEvidence()
    op = tools.op_to_change(key)
    if kind == TOOL_RECONCILED:
        _fold_finding(op, key, seq, p, report)
        return
    if op is None:
        op = ToolOpEvidence(key, attempt_id=attempt_id)
        tools.add_op(op)
    if kind == TOOL_ADMITTED:
        if op.admitted_seq is not None and not readmittable(op):
            report(f"operation {key} admitted a second time (the first admission stands)")
            return
        # a first admission, or one after the operator found the last did not run
        op.reconciled_seq = op.finding = None
        op.admitted_seq = seq
        op.tool_call_id = _text(p, "tool_call_id")
        op.tool = _text(p, "tool")
        op.arguments_sha256 = _text(p, "arguments_sha256")
        op.attempt_id = attempt_id
    else:
        if op.completed_seq is not None:
            report(f"operation {key} completed a second time (the first outcome stands)")
            return
        if op.admitted_seq is None:
            report(f"tool.completed for operation {key} that was never admitted")
        op.completed_seq = seq
        op.outcome = _text(p, "outcome")
        op.receipt = _text(p, "receipt")


def readmittable(op: ToolOpEvidence) -> bool:
    """The operator found the last admission did not run, and it has no outcome: the
    kernel may admit the operation again (docs/tools.md, T2n)."""
    return op.finding == NOT_EXECUTED and op.completed_seq is None


def _fold_finding(op: ToolOpEvidence | None, key: str, seq: int, p: dict[str, Any],
                  report: Report) -> None:
    """`tool.reconciled`: the first valid finding of an admission counts; anything else
    is reported and changes nothing."""
    if op is None or op.admitted_seq is None:
        report(f"tool.reconciled for operation {key} that was never admitted (ignored)")
        return
    if op.completed_seq is not None:
        report(f"tool.reconciled for operation {key} after its tool.completed "
               "(the outcome stands)")
        return
    finding = p.get("finding")
    if finding not in TOOL_FINDINGS:
        report(f"tool.reconciled with finding {str(finding)[:40]!r} (ignored)")
        return
    if op.reconciled_seq is not None:
        report(f"operation {key} reconciled a second time (the first finding stands)")
        return
    op.reconciled_seq, op.finding = seq, finding  # type: ignore[assignment]


# --------------------------------------------------------------------------- ladder


class ToolOpStage(StrEnum):
    NOT_ADMITTED = "not_admitted"
    EFFECT_UNKNOWN = "effect_unknown"
    COMPLETED = "completed"
    RECONCILED_EXECUTED = "reconciled_executed"  # ran, outcome not recorded: never again
    RECONCILED_NOT_EXECUTED = "reconciled_not_executed"  # did not run: may run (replay)


@dataclass(frozen=True, slots=True)
class ToolOpState:
    call_id: str
    operation_key: str | None  # None: the call names no turn, so no key can be rebuilt
    tool_call_id: str | None
    tool: str | None
    arguments_sha256: str | None
    stage: ToolOpStage
    next_operation: NextOperation
    planned: bool  # in the saved plan (False: an admission the plan does not name)
    first_seq: int  # the planning call's first seq: orders a task's unresolved work
    admitted_seq: int | None = None
    completed_seq: int | None = None
    outcome: str | None = None
    receipt: str | None = field(default=None, repr=False)
    admitted_attempt_id: str | None = None
    finding: str | None = None
    reconciled_seq: int | None = None

    @property
    def effect_unknown(self) -> bool:
        return self.stage is ToolOpStage.EFFECT_UNKNOWN

    @property
    def done(self) -> bool:
        """Nothing is left to run: completed, or found to have run (its outcome unknown)."""
        return self.stage in (ToolOpStage.COMPLETED, ToolOpStage.RECONCILED_EXECUTED)

    @property
    def subject(self) -> str:
        return self.operation_key or f"{self.call_id}/{self.tool_call_id}"

    @property
    def reason(self) -> str:
        if self.stage is ToolOpStage.COMPLETED:
            return (f"tool.completed at seq {self.completed_seq}: {self.tool} "
                    f"{self.outcome or 'no outcome named'}")
        if self.stage is ToolOpStage.EFFECT_UNKNOWN:
            return (f"tool.admitted at seq {self.admitted_seq} and no tool.completed: the "
                    f"tool may have had its effect; reconcile it, never run it again "
                    "(duplicate risk)")
        if self.stage is ToolOpStage.RECONCILED_EXECUTED:
            return (f"tool.reconciled at seq {self.reconciled_seq}: the operator found that "
                    f"{self.tool} ran (admitted at seq {self.admitted_seq}); its outcome was "
                    "not recorded: never run it again")
        if self.stage is ToolOpStage.RECONCILED_NOT_EXECUTED:
            then = ("safe to run again from the saved response (replay; no provider)"
                    if self.next_operation is NextOperation.START_TOOL else
                    "the call's own next operation comes first")
            return (f"tool.reconciled at seq {self.reconciled_seq}: the operator found that "
                    f"{self.tool} did not run (admitted at seq {self.admitted_seq}): {then}")
        if self.next_operation is NextOperation.START_TOOL:
            return (f"planned in call {self.call_id}'s saved response and never admitted: "
                    "safe to run from the saved response (replay; no provider)")
        return (f"planned in call {self.call_id}'s response, which is not finished yet: "
                "the call's own next operation comes first")

    def as_json(self, receipts: ToolReceipts | None = None) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "operation_key": self.operation_key, "tool_call_id": self.tool_call_id,
            "tool": self.tool, "arguments_sha256": self.arguments_sha256,
            "state": self.stage.value, "next_operation": self.next_operation.value,
            "duplicate_effect_risk": self.effect_unknown, "planned": self.planned,
            "admitted_seq": self.admitted_seq, "completed_seq": self.completed_seq,
            "outcome": self.outcome, "reason": self.reason,
        }
        if self.reconciled_seq is not None:  # only then: other operations are unchanged
            doc["finding"] = self.finding
            doc["reconciled_seq"] = self.reconciled_seq
        if self.stage is ToolOpStage.COMPLETED:
            verdict, detail = receipt_verdict(self, receipts)
            doc["receipt"] = {"verdict": verdict.value, "detail": detail}
        return doc


@dataclass(frozen=True, slots=True)
class ToolsState:
    """A call's tool plan and operations, as the ladder judges them."""

    call_id: str
    plan: tuple[PlannedTool, ...] | None  # None: no plan known (no complete response)
    plan_attempt_id: str | None
    adopted: bool  # the plan is in the response the succeeded call adopted
    operations: tuple[ToolOpState, ...]
    # counted once: the console asks on every paint of the call (10^5 operations)
    effect_unknown_count: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "effect_unknown_count",
                           sum(1 for o in self.operations if o.effect_unknown))

    def unresolved(self) -> ToolOpState | None:
        """The operation a task must see first: effect unknown before start_tool."""
        pending = [o for o in self.operations if o.next_operation is not NextOperation.NONE]
        return next((o for o in pending if o.effect_unknown), pending[0] if pending else None)

    @property
    def all_done(self) -> bool:
        """Every operation completed or found to have run: the turn may go on."""
        return bool(self.operations) and all(o.done for o in self.operations)

    def listed(self, limit: int) -> tuple[ToolOpState, ...]:
        """At most `limit` operations, in their order, for a view that must stay small:
        all when they are few, else those whose effect is unknown first, then those
        with a next operation, then the rest (one pass: a paint asks more than once)."""
        ops = self.operations
        if len(ops) <= limit:
            return ops
        unknown: list[int] = []
        to_do: list[int] = []
        rest: list[int] = []
        for i, op in enumerate(ops):
            kept = (unknown if op.stage is ToolOpStage.EFFECT_UNKNOWN else
                    to_do if op.next_operation is not NextOperation.NONE else rest)
            if len(kept) < limit:
                kept.append(i)
        return tuple(ops[i] for i in sorted((unknown + to_do + rest)[:limit]))

    def as_json(self, receipts: ToolReceipts | None = None,
                limit: int | None = None) -> dict[str, Any]:
        """`limit`: at most that many plan entries and operations (`listed`), saying how
        many were left out (`*_not_shown`); every one without it."""
        plan = self.plan if self.plan is None or limit is None else self.plan[:limit]
        ops = self.operations if limit is None else self.listed(limit)
        doc: dict[str, Any] = {
            "plan": None if plan is None else [t.as_json() for t in plan],
            "plan_attempt_id": self.plan_attempt_id,
            "plan_adopted": self.adopted,
            "operations": [o.as_json(receipts) for o in ops],
            "effect_unknown": self.effect_unknown_count,
        }
        if plan is not None and self.plan is not None and len(plan) < len(self.plan):
            doc["plan_not_shown"] = len(self.plan) - len(plan)
        if len(ops) < len(self.operations):
            doc["operations_not_shown"] = len(self.operations) - len(ops)
        return doc


def _plan_of(call: CallEvidence, tools: ToolEvidence
             ) -> tuple[tuple[PlannedTool, ...] | None, str | None, bool]:
    """The plan the call's adopted response holds, else its last observed attempt's."""
    adopted = call.adopted_attempt_id
    if call.completed_seq is not None and adopted in tools.plans:
        return tools.plans[adopted], adopted, call.status == "succeeded"  # type: ignore[index]
    last = call.last_attempt()
    if last is not None and last.attempt_id in tools.plans and last.observed_seq is not None:
        return tools.plans[last.attempt_id], last.attempt_id, False
    return None, None, False


def _state(call: CallEvidence, key: str | None, ev: ToolOpEvidence | None,
           planned: PlannedTool | None, adopted: bool) -> ToolOpState:
    tcid = planned.tool_call_id if planned else (ev.tool_call_id if ev else None)
    tool = planned.name if planned else (ev.tool if ev else None)
    sha = planned.arguments_sha256 if planned else (ev.arguments_sha256 if ev else None)
    if ev is not None and ev.completed_seq is not None:
        stage, op = ToolOpStage.COMPLETED, NextOperation.NONE
    elif ev is not None and ev.admitted_seq is not None and ev.finding == EXECUTED:
        stage, op = ToolOpStage.RECONCILED_EXECUTED, NextOperation.NONE
    elif ev is not None and ev.admitted_seq is not None and ev.finding == NOT_EXECUTED:
        stage = ToolOpStage.RECONCILED_NOT_EXECUTED
        op = NextOperation.START_TOOL if adopted else NextOperation.NONE
    elif ev is not None and ev.admitted_seq is not None:
        stage, op = ToolOpStage.EFFECT_UNKNOWN, NextOperation.RECONCILE_EFFECT
    else:
        stage = ToolOpStage.NOT_ADMITTED
        op = NextOperation.START_TOOL if adopted else NextOperation.NONE
    return ToolOpState(
        call.call_id, key if key is not None else (ev.operation_key if ev else None), tcid,
        tool, sha, stage, op, planned is not None, call.first_seq,
        ev.admitted_seq if ev else None, ev.completed_seq if ev else None,
        ev.outcome if ev else None, ev.receipt if ev else None, ev.attempt_id if ev else None,
        ev.finding if ev else None, ev.reconciled_seq if ev else None)


def classify_tools(call: CallEvidence) -> ToolsState | None:
    """The tool rungs for one call (None when it has no tool evidence: every v1 call)."""
    tools = call.tools
    if tools is None or (not tools.plans and not tools.ops):
        return None
    judged = tools.judged
    if judged is not None and judged[0] == call.event_count:  # (no event folded since)
        return judged[1]
    state = _classify_tools(call, tools)
    tools.judged = (call.event_count, state)
    return state


def _classify_tools(call: CallEvidence, tools: ToolEvidence) -> ToolsState:
    plan, plan_attempt, adopted = _plan_of(call, tools)
    by_tool_call: dict[str | None, ToolOpEvidence] | None = None  # (made when needed)
    used: set[str] = set()
    out: list[ToolOpState] = []
    for planned in plan or ():
        key = "/".join((*tools.turn, planned.tool_call_id)) if tools.turn else None
        if key is not None:
            ev = tools.op(key)
        else:  # no turn: the first operation admitted for its tool call
            if by_tool_call is None:
                by_tool_call = {}
                for o in tools.ops:
                    by_tool_call.setdefault(o.tool_call_id, o)
            ev = by_tool_call.get(planned.tool_call_id)
        if ev is not None:
            used.add(ev.operation_key)
        out.append(_state(call, key, ev, planned, adopted))
    for ev in tools.ops:  # admissions the plan does not name: shown, judged the same way
        if ev.operation_key not in used:
            out.append(_state(call, ev.operation_key, ev, None, adopted))
    return ToolsState(call.call_id, plan, plan_attempt, adopted, tuple(out))
