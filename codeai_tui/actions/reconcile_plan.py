"""Reconcile as gated actions: a model call's finding (`reconcile`) and a tool
operation's (`reconcile-tool`), docs/reconcile.md section 3 and docs/tools.md.

`plan` is read-only: the call's own events (projected as the writer will project them),
the provider's receipt log (or the tool's own records) as it is now, and the finding
that evidence suggests. `run` records the operator's finding through the gate
(actions/reconcile.py), pinned to the call's evidence the dialog showed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codeai_tui.actions.gate import ActionRefused, PinnedEvidence, UnknownCall
from codeai_tui.actions.protocol import (
    ActionBase,
    ActionOptions,
    Decision,
    Done,
    Progress,
    Selected,
)
from codeai_tui.actions.reconcile import (
    FINDINGS,
    UnknownOperation,
    check_reconcilable,
    check_tool_reconcilable,
    planning_call_of,
    reconcile_call,
    reconcile_operation,
)
from codeai_tui.ledger import LedgerReader, read_receipts
from codeai_tui.ledger.schema import Event
from codeai_tui.tools.publish import publications_line
from codeai_tui.tools.receipts import (
    PUBLIC_KEY_FILE,
    RECEIPTS_FILE,
    TOOLS_DIR,
    KeyProblem,
    check_receipt,
    load_public_key,
    read_receipt_lines,
)
from codeai_tui.workstate import CallState, parse_time, project_call
from codeai_tui.workstate.evidence import attempt_receipts
from codeai_tui.workstate.reasons import receipt_phrase
from codeai_tui.workstate.receipts import index_for
from codeai_tui.workstate.tool_ops import TOOL_FINDINGS, ToolOpState


@dataclass(frozen=True, slots=True)
class ReconcilePlan:
    """What the dialog shows, for exactly one call at one last seq."""

    case_dir: Path
    call_id: str
    task_id: str
    attempt_id: str  # the verdict's attempt: the last started one
    idempotency_key: str | None
    request_sha256: str | None
    started_seq: int
    started_at: str | None  # attempt.started's recorded_at
    last_seq: int  # the pin: a call that moved on is refused
    reason: str  # the projection's reason, with the log's phrase
    receipt_log: str  # present | absent | unreadable
    complete_up_to: str | None
    matching: tuple[tuple[str, str], ...]  # (receipt_id, received_at) of that attempt
    suggested: str | None  # received | not_received | None (unknowable)
    why_suggested: str
    event_count: int = 0  # with last_seq: the pinned evidence

    @property
    def pinned(self) -> PinnedEvidence:
        return PinnedEvidence(self.call_id, self.event_count, self.last_seq)

    @property
    def not_received_allowed(self) -> bool:
        """`not_received` is refused while a receipt matches the attempt."""
        return not self.matching


def suggest(matching: tuple[tuple[str, str], ...], log: str, complete_up_to: str | None,
            started_at: str | None) -> tuple[str | None, str]:
    """The finding the evidence supports, and why (None: the operator must find out)."""
    if matching:
        ids = ", ".join(rid for rid, _at in matching)
        return "received", f"receipt {ids} matches the attempt (same key and body hash)"
    if log == "absent":
        return None, "there is no receipt log: the evidence cannot say; find out first"
    if log == "unreadable":
        return None, "the receipt log cannot be read: the evidence cannot say"
    upto, start = parse_time(complete_up_to or ""), parse_time(started_at or "")
    if upto is not None and start is not None and upto >= start:
        return "not_received", (f"the log is complete up to {complete_up_to}, after the "
                                f"attempt started ({started_at}), and no receipt matches")
    return None, ("no receipt matches, but the log holds nothing received after the "
                  "attempt started: a late receipt is still possible; find out first")


def _call(case: Path, call_id: str) -> tuple[list[Event], CallState | None]:
    """The call's own events, projected as the writer will project them."""
    with LedgerReader(case) as reader:
        events = reader.events_for_call(call_id)
    return events, project_call(events, call_id)


def plan_reconcile(case: Path, call_id: str) -> ReconcilePlan:
    """Read-only. Raises UnknownCall or ActionRefused (not at rung 6, or an anomaly)."""
    if not call_id:
        raise UnknownCall(call_id)
    events, state = _call(case, call_id)
    state = check_reconcilable(state, call_id)
    last = state.evidence.last_attempt()
    if last is None or last.started_seq is None:  # rung 6 has one; never guess
        raise ActionRefused(state.next_operation, f"call {call_id}: no started attempt")
    started_at = next((e.recorded_at for e in events if e.seq == last.started_seq), None)
    index = index_for(read_receipts(case))
    matching = attempt_receipts(state.evidence, last, index)
    suggested, why = suggest(matching, index.log, index.complete_up_to, started_at)
    phrase = receipt_phrase(state.evidence, index)
    return ReconcilePlan(
        case_dir=case, call_id=call_id, task_id=state.task_id, attempt_id=last.attempt_id,
        idempotency_key=state.evidence.key, request_sha256=last.request_sha256,
        started_seq=last.started_seq, started_at=started_at, last_seq=state.last_seq,
        reason=f"{state.reason}; {phrase}" if phrase else state.reason,
        receipt_log=index.log, complete_up_to=index.complete_up_to, matching=matching,
        suggested=suggested, why_suggested=why, event_count=len(events))


@dataclass(frozen=True, slots=True)
class ToolReconcilePlan:
    """What the tool dialog shows, for exactly one admission of one operation."""

    case_dir: Path
    call_id: str  # the planning call
    operation_key: str
    tool_call_id: str | None
    tool: str | None
    arguments_sha256: str | None
    attempt_id: str | None
    admitted_seq: int  # the pin: another admission or a finding since is refused
    admitted_at: str | None
    reason: str
    suggested: str | None  # executed | None (only the tool's own records can say)
    why_suggested: str
    # where the tool's own records are and what each says of this operation, one line
    # each, for the operator to look at before choosing (untrusted: shown literally)
    records: tuple[str, ...] = ()
    pinned: PinnedEvidence | None = None  # the planning call's evidence when shown


def tool_records(case: Path, operation_key: str, tool_call_id: str | None) -> tuple[str, ...]:
    """One line per file of the tool's own records in the case: its path, and how many
    of its lines (or rows) name this operation. Read-only; a file that cannot be read
    says why instead."""
    tools = case / TOOLS_DIR
    out: list[str] = []
    names = {operation_key} | ({tool_call_id} if tool_call_id else set())
    receipts = tools / RECEIPTS_FILE
    shown = f"{TOOLS_DIR}/{RECEIPTS_FILE}"  # relative to the case the header names
    try:
        if not os.path.lexists(receipts):
            raise FileNotFoundError(receipts)
        lines = read_receipt_lines(receipts)
    except FileNotFoundError:
        out.append(f"{shown}: absent (the kernel emitted no receipt)")
    except (OSError, ValueError) as exc:
        out.append(f"{shown}: cannot be read ({exc})")
    else:
        naming = [number for number, text in lines if any(n in text for n in names)]
        where = (f"line {', '.join(str(n) for n in naming[:5])} names this operation"
                 if naming else "no line names this operation")
        out.append(f"{shown}: {len(lines)} receipt line(s); {where}" if lines
                   else f"{shown}: no receipt line (the kernel emitted none)")
    out.append(publications_line(case, operation_key))
    return tuple(out)


def _receipt_line_for(case: Path, operation_key: str) -> int | None:
    """The line of `tools/receipts.ndjson` holding a receipt for this operation whose
    signature verifies against the case's `tools/kernel.pub`, if any (untrusted text:
    anything else suggests nothing)."""
    tools = case / TOOLS_DIR
    try:
        public = load_public_key(tools / PUBLIC_KEY_FILE)
        lines = read_receipt_lines(tools / RECEIPTS_FILE)
    except (KeyProblem, OSError, ValueError):
        return None
    for number, text in lines:
        check = check_receipt(text, public)
        if check.valid and check.operation_key == operation_key:
            return number
    return None


def plan_tool_reconcile(case: Path, call_id: str, operation_key: str) -> ToolReconcilePlan:
    """Read-only. Raises UnknownOperation or ActionRefused (not at T2, anomaly)."""
    events, state = _call(case, call_id)
    op = check_tool_reconcilable(state, operation_key)
    assert op.admitted_seq is not None  # T2 is an admission
    admitted_at = next((e.recorded_at for e in events if e.seq == op.admitted_seq), None)
    line = _receipt_line_for(case, operation_key)
    if line is not None:
        suggested: str | None = "executed"
        why = (f"{TOOLS_DIR}/{RECEIPTS_FILE} line {line} holds this operation's receipt, "
               "signed by the case's kernel key: the kernel completed it")
    else:
        suggested, why = None, (
            f"neither the ledger nor {TOOLS_DIR}/{RECEIPTS_FILE} can say: look in "
            f"{op.tool or 'the tool'}'s own records, then choose")
    return ToolReconcilePlan(
        case_dir=case, call_id=call_id, operation_key=operation_key,
        tool_call_id=op.tool_call_id, tool=op.tool, arguments_sha256=op.arguments_sha256,
        attempt_id=op.admitted_attempt_id, admitted_seq=op.admitted_seq,
        admitted_at=admitted_at, reason=op.reason, suggested=suggested, why_suggested=why,
        records=tool_records(case, operation_key, op.tool_call_id),
        pinned=PinnedEvidence.of_events(call_id, events))


def planning_call(case: Path, operation_key: str) -> str:
    """Read-only: the call that admitted this operation (the command line names an
    operation by its key alone). Raises UnknownOperation or ActionRefused."""
    if not operation_key:
        raise UnknownOperation("no operation key given")
    with LedgerReader(case) as reader:
        return planning_call_of(reader.iter_events(), operation_key)


def tool_effect_unknown(call: CallState | None) -> ToolOpState | None:
    """The call's first tool operation whose effect is unknown (T2), if any."""
    tools = call.tools if call is not None else None
    if tools is None:
        return None
    return next((o for o in tools.operations if o.effect_unknown), None)


def _reconcile_refusal(selected: Selected, unknown: Callable[[CallState], bool]
                       ) -> str | None:
    """Why a reconcile of the selected call is refused (None: it is not). `unknown`: the
    effect this reconcile settles is unknown on the call (the call's own, or a tool
    operation's); a call an anomaly names is never reconciled."""
    call = selected.call
    if call is None:
        return "no call selected"
    if unknown(call) and not call.anomalous:
        return None
    either = call.effect_unknown or tool_effect_unknown(call) is not None
    what = ("an anomaly names this call" if call.anomalous and either
            else f"the projection says next operation is {call.next_operation.value}")
    return (f"{call.call_id}: reconcile not permitted (only an effect-unknown call or tool "
            f"operation); {what}: {call.reason}")


class Reconcile(ActionBase):
    """Record whether the provider received a call's attempt whose effect is unknown."""

    name, key, done_word = "reconcile", "x", "reconciled"

    def refusal(self, selected: Selected) -> str | None:
        return _reconcile_refusal(selected, lambda call: call.effect_unknown)

    def will(self, selected: Selected) -> str:
        return (f"{selected.call.call_id if selected.call else ''}: reconcile records "
                "received / not received for the last attempt, from the provider's log")

    def plan(self, case: Path, call_id: str, options: ActionOptions) -> ReconcilePlan:
        return plan_reconcile(case, call_id)

    def run(self, plan: ReconcilePlan, decision: Decision, options: ActionOptions,
            progress: Progress) -> Done:
        finding = decision.finding
        if finding not in FINDINGS:
            raise ValueError(f"finding must be one of {FINDINGS}, not {finding!r}")
        r = reconcile_call(plan.case_dir, plan.call_id, finding, decision.note,
                           expected=plan.pinned)
        named = f" (receipt {', '.join(r.evidence)})" if r.evidence else ""
        return Done(f"reconciled {r.call_id} attempt {r.attempt_id}: {r.finding}{named} at "
                    f"seq {r.seq}; now {r.state.stage.value}, next "
                    f"{r.state.next_operation.value}", result=r)


class ReconcileTool(ActionBase):
    """Record whether a tool operation whose effect is unknown ran, from its records."""

    name, key, done_word = "reconcile-tool", "x", "reconciled"

    def refusal(self, selected: Selected) -> str | None:
        return _reconcile_refusal(selected, lambda call: tool_effect_unknown(call) is not None)

    def will(self, selected: Selected) -> str:
        return (f"{selected.call.call_id if selected.call else ''}: reconcile-tool records "
                "executed / not executed for its first operation whose effect is unknown")

    def plan(self, case: Path, call_id: str, options: ActionOptions) -> ToolReconcilePlan:
        """The operation `options` names (the command line's), else the call's first
        whose effect is unknown (the console's), as the ledger says now."""
        if options.operation_key is not None:
            return plan_tool_reconcile(case, call_id, options.operation_key)
        _events, state = _call(case, call_id)
        op = tool_effect_unknown(state)
        if state is None:
            raise UnknownCall(call_id)
        if op is None or op.operation_key is None:
            raise ActionRefused(state.next_operation, f"call {call_id}: no tool operation "
                                "whose effect is unknown")
        return plan_tool_reconcile(case, call_id, op.operation_key)

    def run(self, plan: ToolReconcilePlan, decision: Decision, options: ActionOptions,
            progress: Progress) -> Done:
        finding = decision.finding
        if finding not in TOOL_FINDINGS:
            raise ValueError(f"finding must be one of {TOOL_FINDINGS}, not {finding!r}")
        r = reconcile_operation(plan.case_dir, plan.operation_key, finding, decision.note,
                                call_id=plan.call_id, expected=plan.pinned,
                                expected_admitted_seq=plan.admitted_seq)
        return Done(f"reconciled tool operation {r.operation_key}: {r.finding} at seq "
                    f"{r.seq}; now {r.state.stage.value}, next "
                    f"{r.state.next_operation.value}", result=r)


RECONCILE = Reconcile()
RECONCILE_TOOL = ReconcileTool()
