"""Each gated action's confirmation dialog, as the one action flow (action_flow.py)
opens it on a plan and reads its answer: one entry in DIALOGS per registered action."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from textual.screen import ModalScreen

from codeai_tui.actions.advance import AdvancePlan
from codeai_tui.actions.protocol import Decision
from codeai_tui.actions.reconcile import operation_in
from codeai_tui.actions.reconcile_plan import ToolReconcilePlan
from codeai_tui.actions.resume import ResumePlan
from codeai_tui.app.screens.advance import AdvanceModal
from codeai_tui.app.screens.flow_host import FlowHost
from codeai_tui.app.screens.reconcile import ReconcileDecision, ReconcileModal
from codeai_tui.app.screens.replay import ReplayModal
from codeai_tui.app.screens.resume import ResumeDecision, ResumeModal
from codeai_tui.app.screens.tool_reconcile import ToolReconcileModal
from codeai_tui.console.drift import check_from_plan
from codeai_tui.workstate import CallState


@runtime_checkable
class PinnedDialog(Protocol):
    """A dialog that refuses itself when the evidence it shows changes."""

    refused: str | None

    def evidence_changed(self, why: str) -> None: ...


@dataclass(frozen=True)
class Dialog:
    """One action's confirmation: how it opens on a plan, what its answer means (None:
    not confirmed), the action log's line for a confirmation, and, where the plan
    itself refuses (resume's drift), why."""

    open: Callable[[Any, datetime], ModalScreen[Any]]
    decision: Callable[[Any, Any], Decision | None]
    confirmed: Callable[[Any, Any], str]
    refused: Callable[[Any], str | None] = lambda _plan: None
    # what else the screen shows of a plan as its dialog opens (resume: the drift check)
    shown: Callable[[FlowHost, Any], None] = lambda _host, _plan: None
    # what the dialog says when the call moved on: what it showed, and what is there now
    moved: Callable[[Any, CallState | None], str] = lambda plan, call: (
        f"shown at seq {plan.pinned.last_seq}, now "
        + (f"last seq {call.last_seq}, {call.stage.value}" if call else "call not found"))


def _operation_moved(plan: ToolReconcilePlan, call: CallState | None) -> str:
    op = operation_in(call, plan.operation_key)
    return (f"shown admitted at seq {plan.admitted_seq}, now "
            f"{op.stage.value if op is not None else 'operation not found'}")


def _resume_decision(_plan: ResumePlan, d: ResumeDecision | None) -> Decision | None:
    if d is None or not d.confirmed:
        return None
    return Decision(reason=d.reason, send_credential=d.send_credential)


def _finding(_plan: Any, d: ReconcileDecision | None) -> Decision | None:
    if d is None or not d.confirmed or d.finding is None:
        return None
    return Decision(finding=d.finding, note=d.note)


def _step(plan: AdvancePlan, step: str | None) -> Decision | None:
    if step is None:
        return None
    # the dialog shows where a next attempt goes and sends the credential only where
    # the destination is trusted (named by the operator or the case)
    trusted = plan.next_attempt.destination.trusted if plan.next_attempt else False
    accept = step == "accept-duplicate"
    return Decision(send_credential=trusted, accept_duplicate=accept,
                    note="accepted in the console" if accept else None)


RESUME_DIALOG = Dialog(
    open=ResumeModal,
    decision=_resume_decision,
    confirmed=lambda plan, _d: f"confirmed resume to {plan.base_url}",
    refused=lambda plan: "drift: " + "; ".join(plan.drift) if plan.drift else None,
    shown=lambda host, plan: host.show_drift(check_from_plan(plan)))
RECONCILE_DIALOG = Dialog(
    open=lambda plan, _now: ReconcileModal(plan), decision=_finding,
    confirmed=lambda _plan, d: f"confirmed reconcile: {d.finding}")
TOOL_RECONCILE_DIALOG = Dialog(
    open=lambda plan, _now: ToolReconcileModal(plan), decision=_finding,
    confirmed=lambda _plan, d: f"confirmed reconcile: {d.finding}", moved=_operation_moved)
ADVANCE_DIALOG = Dialog(
    open=lambda plan, _now: AdvanceModal(plan), decision=_step,
    confirmed=lambda _plan, step: f"confirmed {step}")
REPLAY_DIALOG = Dialog(
    open=lambda shown, _now: ReplayModal(shown.plan),
    decision=lambda _shown, yes: Decision() if yes else None,
    confirmed=lambda shown, _yes: f"confirmed replay of {len(shown.plan.to_run)} operation(s)")

# every registered action's dialog, by the action's name
DIALOGS: Mapping[str, Dialog] = {
    "resume": RESUME_DIALOG,
    "reconcile": RECONCILE_DIALOG,
    "reconcile-tool": TOOL_RECONCILE_DIALOG,
    "reinterpret": ADVANCE_DIALOG,
    "redecide": ADVANCE_DIALOG,
    "finalize": ADVANCE_DIALOG,
    "next-attempt": ADVANCE_DIALOG,
    "replay": REPLAY_DIALOG,
}
