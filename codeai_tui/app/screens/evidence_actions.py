"""The main screen's evidence actions: the receipts beside the
verdict, the call <-> receipt cross-links, and `x` reconcile: of the call's own unknown
effect, else of its first tool operation whose effect is unknown (docs/tools.md).

`EvidenceFlow` is composed by `MainScreen` (not mixed into it), kept in its own module
so the screen stays small: it reads the screen's session (live snapshot, selected call,
case, as-of) through `FlowHost` and owns the actions the registry (`app/actions.py`)
binds, which the screen's thin `action_*` methods delegate to. Planning and recording run in thread workers, never
on the UI thread; every outcome goes to the action log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from textual.message import Message

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.protocol import Decision
from codeai_tui.actions.reconcile import operation_in
from codeai_tui.actions.reconcile_plan import (
    RECONCILE,
    RECONCILE_TOOL,
    ReconcilePlan,
    ToolReconcilePlan,
    tool_effect_unknown,
)
from codeai_tui.app.screens.flow_host import FlowHost
from codeai_tui.app.screens.reconcile import ReconcileDecision, ReconcileModal
from codeai_tui.app.screens.tool_reconcile import ToolReconcileModal
from codeai_tui.app.widgets.receipts_pane import receipt_key
from codeai_tui.console.actions import SELECT_A_CALL, Outcome
from codeai_tui.console.evidence import (
    calls_of_receipt,
    receipts_of_call,
    short_phrase,
    verdict_phrase,
)
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.ledger import LedgerError
from codeai_tui.textsafe import visible

AnyPlan = ReconcilePlan | ToolReconcilePlan


@dataclass
class ReconcilePlanned(Message):
    case: Path
    plan: AnyPlan


@dataclass
class ReconcileNote(Message):
    """A refusal or failure of a plan or a recording (kind: refused | failed)."""

    case: Path
    call_id: str
    text: str
    kind: str


@dataclass
class ReconcileDone(Message):
    case: Path
    call_id: str
    text: str


def _line(text: str, limit: int = 400) -> str:
    return visible(text, one_line=True, limit=limit)


class EvidenceFlow:
    """The evidence actions: a plain object the main screen composes."""

    def __init__(self, host: FlowHost) -> None:
        self.host = host
        self.reconcile_modal: ReconcileModal | ToolReconcileModal | None = None
        self.reconciling = False  # a plan or a recording in flight: one at a time
        self._receipt_cycle: tuple[str | None, int] = (None, -1)

    # ---------------------------------------------------------------- painting

    def paint_links(self, call_id: str | None) -> None:
        """The receipts matching the selected call, marked in Receipts; the verdict's
        evidence on the verdict line (from the shown snapshot: as of, when travelling)."""
        host = self.host
        snap = host.shown
        call = snap.call(call_id) if snap is not None else None
        receipts = host.receipts_pane
        linked = frozenset(receipts_of_call(call, snap)) if call is not None else frozenset()
        receipts.linked = (call.call_id if call is not None else None, linked)
        phrase = verdict_phrase(call, snap) if call is not None else None
        host.verdict_line.log_phrase = (
            (phrase, short_phrase(call, snap)) if phrase and call is not None else None)

    # ---------------------------------------------------------------- cross-links

    def action_goto_receipt(self) -> None:
        """The selected call's matching receipts in Receipts (again: the next one)."""
        host = self.host
        snap = host.shown
        call = snap.call(host.selected_call_id) if snap is not None else None
        if call is None:
            host.notify(SELECT_A_CALL, severity="warning", markup=False)
            return
        ids = receipts_of_call(call, snap)
        if not ids:
            why = verdict_phrase(call, snap) or "no attempt started: nothing was sent"
            host.notify(_line(f"{call.call_id}: no receipt matches ({why})"), markup=False)
            return
        last_call, last_i = self._receipt_cycle
        i = (last_i + 1) % len(ids) if last_call == call.call_id else 0
        self._receipt_cycle = (call.call_id, i)
        pane = host.receipts_pane
        receipt = next((r for r in snap.receipts.receipts if r.receipt_id == ids[i]), None)
        if receipt is None or not pane.select_key(receipt_key(receipt)):
            host.notify(_line(f"receipt {ids[i]} is hidden by the Receipts filter (esc on "
                              "Receipts clears it)"), severity="warning", markup=False)
            return
        host.set_active_pane("receipts")
        pane.focus()
        host.notify(_line(f"{call.call_id}: receipt {i + 1} of {len(ids)} matching it: "
                          f"{ids[i]}"), markup=False)

    def action_goto_call(self) -> None:
        """The call and attempt the selected receipt matches (or: uncovered)."""
        host = self.host
        pane = host.receipts_pane
        receipt = pane.receipt_at_cursor()
        if receipt is None:
            host.notify("select a receipt first (6 focuses Receipts)", severity="warning",
                        markup=False)
            return
        links = calls_of_receipt(receipt, host.shown)
        if not links:
            host.notify(_line(f"receipt {receipt.receipt_id} matches no attempt: uncovered "
                              "effect (no attempt.started with its key and body hash)"),
                        severity="warning", markup=False)
            return
        link = links[0]
        calls = host.calls
        if not calls.select_key(link.call_id):
            host.notify(_line(f"call {link.call_id} is hidden by the Calls filter (esc on "
                              "Calls clears it)"), severity="warning", markup=False)
            return
        host.set_active_pane("calls")
        calls.focus()
        more = f" (and {len(links) - 1} more)" if len(links) > 1 else ""
        host.notify(_line(f"receipt {receipt.receipt_id} matches call {link.call_id}, "
                          f"attempt {link.attempt_id}{more}"), markup=False)

    # ---------------------------------------------------------------- reconcile

    def reconcile_permitted(self) -> bool:
        host = self.host
        call = host.selected_call()
        return (call is not None and not call.anomalous and host.as_of is None
                and not self.reconciling
                and (call.effect_unknown or tool_effect_unknown(call) is not None))

    def action_explain_reconcile(self) -> None:
        """`x` where reconcile is not permitted: say why (kept in the action log)."""
        host = self.host
        if host.explain_read_only("reconcile"):
            return
        if self.reconciling:
            host.notify("a reconcile is already in progress", markup=False)
            return
        if host.as_of is not None:
            host.notify("time travel shows the past: go back to live (t or esc) to "
                        "reconcile", severity="warning", markup=False)
            return
        call = host.selected_call()
        if call is None:
            host.notify(SELECT_A_CALL, severity="warning", markup=False)
            return
        unknown = call.effect_unknown or tool_effect_unknown(call) is not None
        what = ("an anomaly names this call" if call.anomalous and unknown
                else f"the projection says next operation is {call.next_operation.value}")
        text = _line(f"{call.call_id}: reconcile not permitted (only an effect-unknown "
                     f"call or tool operation); {what}: {call.reason}")
        host.refuse(call.call_id, "reconcile", text)

    def action_reconcile(self) -> None:
        host = self.host
        call = host.selected_call()
        if host.read_only or host.case is None or call is None \
                or not self.reconcile_permitted():
            return
        self.reconciling = True
        host.activity = f"reading the evidence for {call.call_id}\u2026"
        host.paint_status()
        host.refresh_bindings()
        case, op, options = host.case, tool_effect_unknown(call), host.options
        action = RECONCILE if call.effect_unknown or op is None else RECONCILE_TOOL
        read: Callable[[], AnyPlan] = partial(action.plan, case, call.call_id, options)
        host.run_worker(partial(self._plan, case, call.call_id, read), name="_plan_reconcile",
                        group="reconcile", exclusive=True, exit_on_error=False, thread=True)

    def _plan(self, case: Path, call_id: str, read: Callable[[], AnyPlan]) -> None:
        """In a worker thread: read the evidence the dialog shows."""
        host = self.host
        try:
            plan = read()
        except ActionRefused as exc:
            op = exc.next_operation.value if exc.next_operation is not None else "none"
            host.post_message(ReconcileNote(case, call_id, f"{call_id}: reconcile refused "
                                            f"(next operation {op}): {exc.reason}", "refused"))
            return
        except (LedgerError, OSError, ValueError) as exc:
            host.post_message(ReconcileNote(case, call_id, f"{call_id}: cannot read the "
                                            f"evidence: {exc}", "failed"))
            return
        host.post_message(ReconcilePlanned(case, plan))

    def on_planned(self, message: ReconcilePlanned) -> None:
        host = self.host
        plan, case = message.plan, message.case
        host.activity = None
        host.paint_status()
        if case != host.case or host.as_of is not None or host.read_only:
            self.reconciling = False
            host.paint_status()
            host.refresh_bindings()
            return  # the operator moved on (another case, time travel) first
        modal = (ToolReconcileModal(plan) if isinstance(plan, ToolReconcilePlan)
                 else ReconcileModal(plan))
        self.reconcile_modal = modal
        if host.live is not None:
            self.check_reconcile_evidence(host.live)

        def decided(decision: ReconcileDecision | None) -> None:
            self.reconcile_modal = None
            if decision is None or not decision.confirmed or decision.finding is None:
                why = modal.refused or "cancelled by the operator"
                outcome = Outcome.REFUSED if modal.refused else Outcome.CANCELLED
                host.record(case, plan.call_id, outcome, _line(f"reconcile: {why}", 300))
                self.reconciling = False
                host.refresh_bindings()
                return
            if host.read_only or host.case != case or modal.refused:
                self.reconciling = False
                host.refresh_bindings()
                return
            host.record(case, plan.call_id, Outcome.CONFIRMED,
                        f"confirmed reconcile: {decision.finding}")
            host.note = None
            host.activity = f"recording {decision.finding} for {plan.call_id}\u2026"
            host.paint_status()
            host.run_worker(partial(self._run, case, plan, decision.finding, decision.note),
                            name="_run_reconcile", group="reconcile", exclusive=True,
                            exit_on_error=False, thread=True)

        host.push_screen(modal, decided)

    def check_reconcile_evidence(self, snap: CaseSnapshot) -> None:
        """The dialog is pinned to the call's last seq it showed (like resume's)."""
        modal = self.reconcile_modal
        if modal is None or modal.refused:
            return
        plan = modal.plan
        call = snap.call(plan.call_id)
        if isinstance(plan, ToolReconcilePlan):
            op = operation_in(call, plan.operation_key)
            if op is None or op.admitted_seq != plan.admitted_seq or not op.effect_unknown:
                now = op.stage.value if op is not None else "operation not found"
                modal.evidence_changed(f"shown admitted at seq {plan.admitted_seq}, now {now}")
            return
        if call is None or call.last_seq != plan.last_seq or not call.effect_unknown:
            now = f"last seq {call.last_seq}, {call.stage.value}" if call else "call not found"
            modal.evidence_changed(f"shown at seq {plan.last_seq}, now {now}")

    def _run(self, case: Path, plan: AnyPlan, finding: str, note: str | None) -> None:
        """In a worker thread: record the finding (pinned to the plan's evidence)."""
        host = self.host
        action = RECONCILE_TOOL if isinstance(plan, ToolReconcilePlan) else RECONCILE
        try:
            done = action.run(plan, Decision(finding=finding, note=note), host.options,
                              lambda _line: None)
        except ActionRefused as exc:
            host.post_message(ReconcileNote(case, plan.call_id, f"{plan.call_id}: reconcile "
                                            f"refused: {exc.reason}", "refused"))
            return
        except (LedgerError, OSError, ValueError) as exc:
            host.post_message(ReconcileNote(case, plan.call_id, f"{plan.call_id}: reconcile "
                                            f"failed: {exc}", "failed"))
            return
        host.post_message(ReconcileDone(case, plan.call_id, done.text))

    def on_note(self, message: ReconcileNote) -> None:
        host = self.host
        self.reconciling = False
        refused = message.kind == "refused"
        host.report_outcome(message.case, message.call_id,
                            Outcome.REFUSED if refused else Outcome.FAILED,
                            _line(message.text), ok=False, title="reconcile " + message.kind,
                            severity="warning" if refused else "error")

    def on_done(self, message: ReconcileDone) -> None:
        self.reconciling = False
        self.host.report_outcome(message.case, message.call_id, Outcome.RECONCILED,
                                 _line(message.text, 300), ok=True, title="reconciled")
