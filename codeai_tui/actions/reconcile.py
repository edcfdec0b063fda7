"""Reconcile an unknown effect (docs/reconcile.md): record the operator's finding.
A tool operation's unknown effect is reconciled the same way (`reconcile_operation`,
docs/tools.md `tool.reconciled`), from what the tool's own records say.

`reconcile_call` acts only on a call at rung 6 (effect_unknown). Inside one
`BEGIN IMMEDIATE` transaction of the one writer it re-projects the call from its
events (a racing reconciler or runner that committed first is seen), reads the
provider's receipt log, refuses `not_received` while a receipt matches the attempt
(same idempotency key, body hash == request hash), and appends `attempt.reconciled`
on the call's last started attempt. Refusals append nothing. No network.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from codeai_tui.actions.gate import (
    ActionRefused,
    PinnedEvidence,
    UnknownCall,
    UnusableInput,
    gated_write,
    recorded_by,
)
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.ledger.schema import TOOL_ADMITTED, TOOL_RECONCILED, Event
from codeai_tui.ledger.writer import NewEvent, WriteTransaction
from codeai_tui.workstate import CallStage, CallState, NextOperation
from codeai_tui.workstate.evidence import attempt_receipts
from codeai_tui.workstate.receipts import index_for
from codeai_tui.workstate.tool_ops import TOOL_FINDINGS, ToolOpStage, ToolOpState

FINDINGS = ("received", "not_received")


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    call_id: str
    attempt_id: str
    finding: str
    evidence: tuple[str, ...]  # the receipt ids that match the attempt
    seq: int  # of the appended attempt.reconciled
    state: CallState  # the call's verdict after it


def check_reconcilable(state: CallState | None, call_id: str) -> CallState:
    """Raise unless the projection says the call's effect is unknown (rung 6)."""
    if state is None:
        raise UnknownCall(call_id)
    if state.anomalous:
        raise ActionRefused(
            state.next_operation,
            f"call {call_id}: an anomaly names this call; reconcile refuses to guess",
        )
    if state.stage is not CallStage.EFFECT_UNKNOWN:
        raise ActionRefused(
            state.next_operation,
            f"call {call_id} is {state.stage.value}: next operation is "
            f"{state.next_operation.value}, not {NextOperation.RECONCILE_EFFECT.value} "
            f"({state.reason})",
        )
    return state


def reconcile_call(case_dir: str | os.PathLike[str], call_id: str, finding: str,
                   note: str | None = None, *, expected: PinnedEvidence | None = None,
                   expected_last_seq: int | None = None) -> ReconcileResult:
    """Append the finding for the call's last started attempt, through the gate.
    `expected`: the call's evidence when it was shown (the console's dialog); a call
    that moved on since is refused (`expected_last_seq`: the same pin by last seq
    alone). Raises UnknownCall (bad input) or ActionRefused (nothing appended)."""
    if finding not in FINDINGS:
        raise ValueError(f"finding must be one of {FINDINGS}, not {finding!r}")

    def check(state: CallState | None) -> CallState:
        state = check_reconcilable(state, call_id)
        if expected_last_seq is not None and state.last_seq != expected_last_seq:
            raise ActionRefused(
                state.next_operation,
                f"call {call_id}: its evidence changed since it was shown (last seq "
                f"{expected_last_seq}, now {state.last_seq}); look again")
        return state

    matching: list[tuple[str, ...]] = []

    def build(state: CallState, _events: Sequence[Event]) -> list[NewEvent]:
        last = state.evidence.last_attempt()
        assert last is not None  # rung 6 has a started attempt
        # the whole log as it is now: the live projection's view (no as-of cut-off)
        found = tuple(rid for rid, _at in attempt_receipts(
            state.evidence, last, index_for(read_receipts(case_dir))))
        if finding == "not_received" and found:
            raise ActionRefused(
                state.next_operation,
                f"call {call_id}: attempt {last.attempt_id} has matching receipt(s) "
                f"{', '.join(found)} in the provider's log: it was received")
        matching.append(found)
        return [NewEvent("attempt.reconciled", state.task_id,
                         {"finding": finding, "evidence": list(found),
                          "decided_by": recorded_by(), "note": note},
                         call_id=call_id, attempt_id=last.attempt_id)]

    landed = gated_write(case_dir, call_id, check, build, pinned=expected)
    appended = landed.appended[0]
    return ReconcileResult(call_id, appended.attempt_id or "", finding, matching[0],
                           appended.seq, landed.after())


# --------------------------------------------------------------------------- tools


class UnknownOperation(UnusableInput):
    """No admitted tool operation with this key in the case."""


@dataclass(frozen=True, slots=True)
class ToolReconcileResult:
    operation_key: str
    call_id: str
    finding: str
    seq: int  # of the appended tool.reconciled
    state: ToolOpState  # the operation's verdict after it


def operation_in(state: CallState | None, operation_key: str) -> ToolOpState | None:
    """The operation with this key among the call's tool operations, if any."""
    tools = state.tools if state is not None else None
    if tools is None:
        return None
    return next((o for o in tools.operations if o.operation_key == operation_key), None)


def check_tool_reconcilable(call: CallState | None, operation_key: str) -> ToolOpState:
    """Raise unless the projection puts this operation at T2 (effect unknown)."""
    op = operation_in(call, operation_key)
    if call is None or op is None or op.admitted_seq is None:
        raise UnknownOperation(f"no admitted tool operation {operation_key!r}")
    if call.anomalous:
        raise ActionRefused(
            op.next_operation,
            f"operation {operation_key}: an anomaly names call {call.call_id}; reconcile "
            "refuses to guess")
    if op.stage is not ToolOpStage.EFFECT_UNKNOWN:
        raise ActionRefused(
            op.next_operation,
            f"operation {operation_key} is {op.stage.value}: next operation is "
            f"{op.next_operation.value}, not {NextOperation.RECONCILE_EFFECT.value} "
            f"({op.reason})")
    return op


def _planning_call(txn: WriteTransaction, operation_key: str) -> str:
    """The one call whose events admitted this operation, under the write lock."""
    return planning_call_of(txn.events("kind = ?", (TOOL_ADMITTED,)), operation_key)


def planning_call_of(admissions: Iterable[Event], operation_key: str) -> str:
    """The one call among these events' that admitted this operation: none is bad input
    (UnknownOperation), more than one is refused (which would be guessed)."""
    calls = {e.call_id for e in admissions if e.kind == TOOL_ADMITTED
             and (e.payload or {}).get("operation_key") == operation_key and e.call_id}
    if not calls:
        raise UnknownOperation(f"no admitted tool operation {operation_key!r}")
    if len(calls) > 1:
        raise ActionRefused(
            NextOperation.RECONCILE_EFFECT,
            f"operation {operation_key} is admitted under {len(calls)} calls; reconcile "
            "refuses to guess")
    return calls.pop()


def reconcile_operation(case_dir: str | os.PathLike[str], operation_key: str, finding: str,
                        note: str | None = None, *, call_id: str | None = None,
                        expected: PinnedEvidence | None = None,
                        expected_admitted_seq: int | None = None) -> ToolReconcileResult:
    """Append the finding for the operation's admission, through the gate.
    `call_id`: the planning call when the caller knows it (the console), else found from
    the admissions under the write lock. `expected`: the planning call's evidence when it
    was shown; `expected_admitted_seq`: the admission shown. A call or an admission that
    changed since is refused. Raises UnknownOperation (bad input) or ActionRefused
    (nothing appended)."""
    if finding not in TOOL_FINDINGS:
        raise ValueError(f"finding must be one of {TOOL_FINDINGS}, not {finding!r}")
    if not operation_key:
        raise UnknownOperation("no operation key given")

    def check(call: CallState | None) -> tuple[CallState, ToolOpState]:
        op = check_tool_reconcilable(call, operation_key)
        assert call is not None  # check_tool_reconcilable found the operation in it
        if expected_admitted_seq is not None and op.admitted_seq != expected_admitted_seq:
            raise ActionRefused(
                op.next_operation,
                f"operation {operation_key}: its admission changed since it was shown "
                f"(seq {expected_admitted_seq}, now {op.admitted_seq}); look again")
        return call, op

    def build(checked: tuple[CallState, ToolOpState], _events: Sequence[Event]
              ) -> list[NewEvent]:
        call, op = checked
        return [NewEvent(TOOL_RECONCILED, call.task_id,
                         {"operation_key": operation_key, "finding": finding, "note": note,
                          "decided_by": recorded_by()},
                         call_id=call.call_id, attempt_id=op.admitted_attempt_id)]

    landed = gated_write(case_dir, call_id or (lambda txn: _planning_call(txn, operation_key)),
                         check, build, pinned=expected)
    after = operation_in(landed.after(), operation_key)
    assert after is not None
    return ToolReconcileResult(operation_key, landed.call_id, finding, landed.appended[0].seq,
                               after)
