"""The main screen's evidence actions (issue 11, sections 1-2): the receipts beside the
verdict, the call <-> receipt cross-links, and `x` reconcile.

A mixin of `MainScreen`, kept in its own module so the screen stays small: it reads
the screen's session (live snapshot, selected call, case, as-of) and adds actions the
registry (`app/actions.py`) binds. Planning and recording run in thread workers, never
on the UI thread; every outcome goes to the action log.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.message import Message

from codeai_tui.app.screens.reconcile import ReconcileDecision, ReconcileModal
from codeai_tui.app.widgets.receipts_pane import ReceiptsPane, receipt_key
from codeai_tui.app.widgets.verdict_line import VerdictLine
from codeai_tui.console.actions import Outcome
from codeai_tui.console.evidence import (
    calls_of_receipt,
    receipts_of_call,
    short_phrase,
    verdict_phrase,
)
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.console.reconcile_service import (
    LedgerReconcileService,
    ReconcilePlan,
    ReconcileService,
)
from codeai_tui.ledger import LedgerError
from codeai_tui.reconcile import ReconcileResult
from codeai_tui.resume import ResumeRefused
from codeai_tui.textsafe import visible

if TYPE_CHECKING:
    from codeai_tui.app.screens.main import MainScreen


@dataclass
class ReconcilePlanned(Message):
    case: Path
    plan: ReconcilePlan


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
    result: ReconcileResult


def _line(text: str, limit: int = 400) -> str:
    return visible(text, one_line=True, limit=limit)


class EvidenceActions:
    """Mixed into MainScreen (which provides the session attributes used here)."""

    reconcile_service: ReconcileService = LedgerReconcileService()
    reconcile_modal: ReconcileModal | None = None
    reconciling: bool = False  # a plan or a recording in flight: one at a time
    _receipt_cycle: tuple[str | None, int] = (None, -1)

    # ---------------------------------------------------------------- painting

    def paint_links(self: MainScreen, call_id: str | None) -> None:
        """The receipts matching the selected call, marked in Receipts; the verdict's
        evidence on the verdict line (from the shown snapshot: as of, when travelling)."""
        snap = self.shown
        call = snap.call(call_id) if snap is not None else None
        receipts = self.query_one(ReceiptsPane)
        linked = frozenset(receipts_of_call(call, snap)) if call is not None else frozenset()
        receipts.linked = (call.call_id if call is not None else None, linked)
        phrase = verdict_phrase(call, snap) if call is not None else None
        self.query_one(VerdictLine).log_phrase = (
            (phrase, short_phrase(call, snap)) if phrase and call is not None else None)

    # ---------------------------------------------------------------- cross-links

    def action_goto_receipt(self: MainScreen) -> None:
        """The selected call's matching receipts in Receipts (again: the next one)."""
        snap = self.shown
        call = snap.call(self.selected_call_id) if snap is not None else None
        if call is None:
            self.notify("select a call first (3 focuses Calls)", severity="warning",
                        markup=False)
            return
        ids = receipts_of_call(call, snap)
        if not ids:
            why = verdict_phrase(call, snap) or "no attempt started: nothing was sent"
            self.notify(_line(f"{call.call_id}: no receipt matches ({why})"), markup=False)
            return
        last_call, last_i = self._receipt_cycle
        i = (last_i + 1) % len(ids) if last_call == call.call_id else 0
        self._receipt_cycle = (call.call_id, i)
        pane = self.query_one(ReceiptsPane)
        receipt = next((r for r in snap.receipts.receipts if r.receipt_id == ids[i]), None)
        if receipt is None or not pane.select_key(receipt_key(receipt)):
            self.notify(_line(f"receipt {ids[i]} is hidden by the Receipts filter (esc on "
                              "Receipts clears it)"), severity="warning", markup=False)
            return
        self._set_active_pane("receipts")
        pane.focus()
        self.notify(_line(f"{call.call_id}: receipt {i + 1} of {len(ids)} matching it: "
                          f"{ids[i]}"), markup=False)

    def action_goto_call(self: MainScreen) -> None:
        """The call and attempt the selected receipt matches (or: uncovered)."""
        pane = self.query_one(ReceiptsPane)
        receipt = pane.receipt_at_cursor()
        if receipt is None:
            self.notify("select a receipt first (6 focuses Receipts)", severity="warning",
                        markup=False)
            return
        links = calls_of_receipt(receipt, self.shown)
        if not links:
            self.notify(_line(f"receipt {receipt.receipt_id} matches no attempt: uncovered "
                              "effect (no attempt.started with its key and body hash)"),
                        severity="warning", markup=False)
            return
        link = links[0]
        calls = self.calls
        if not calls.select_key(link.call_id):
            self.notify(_line(f"call {link.call_id} is hidden by the Calls filter (esc on "
                              "Calls clears it)"), severity="warning", markup=False)
            return
        self._set_active_pane("calls")
        calls.focus()
        more = f" (and {len(links) - 1} more)" if len(links) > 1 else ""
        self.notify(_line(f"receipt {receipt.receipt_id} matches call {link.call_id}, "
                          f"attempt {link.attempt_id}{more}"), markup=False)

    # ---------------------------------------------------------------- reconcile

    def reconcile_permitted(self: MainScreen) -> bool:
        call = self.selected_call()
        return (call is not None and call.effect_unknown and not call.anomalous
                and self.as_of is None and not self.reconciling)

    def action_explain_reconcile(self: MainScreen) -> None:
        """`x` where reconcile is not permitted: say why (kept in the action log)."""
        if self.reconciling:
            self.notify("a reconcile is already in progress", markup=False)
            return
        if self.as_of is not None:
            self.notify("time travel shows the past: go back to live (t or esc) to "
                        "reconcile", severity="warning", markup=False)
            return
        call = self.selected_call()
        if call is None:
            self.notify("select a call first (3 focuses Calls)", severity="warning",
                        markup=False)
            return
        what = ("an anomaly names this call" if call.anomalous and call.effect_unknown
                else f"the projection says next operation is {call.next_operation.value}")
        text = _line(f"{call.call_id}: reconcile not permitted (only an effect-unknown "
                     f"call); {what}: {call.reason}")
        self.action_log.add(self.clock(), self._case_label(), call.call_id, Outcome.REFUSED,
                            text)
        self.notify(text, title="reconcile refused", severity="warning", markup=False,
                    timeout=10)

    def action_reconcile(self: MainScreen) -> None:
        call = self.selected_call()
        if self.read_only or self.case is None or call is None \
                or not self.reconcile_permitted():
            return
        self.reconciling = True
        self.activity = f"reading the evidence for {call.call_id}\u2026"
        self._paint_status()
        self.refresh_bindings()
        self._plan_reconcile(self.case, call.call_id)

    @work(thread=True, exit_on_error=False, group="reconcile", exclusive=True)
    def _plan_reconcile(self: MainScreen, case: Path, call_id: str) -> None:
        try:
            plan = self.reconcile_service.plan(case, call_id)
        except ResumeRefused as exc:
            op = exc.next_operation.value if exc.next_operation is not None else "none"
            self.post_message(ReconcileNote(case, call_id, f"{call_id}: reconcile refused "
                                            f"(next operation {op}): {exc.reason}", "refused"))
            return
        except (LedgerError, OSError, ValueError) as exc:
            self.post_message(ReconcileNote(case, call_id, f"{call_id}: cannot read the "
                                            f"evidence: {exc}", "failed"))
            return
        self.post_message(ReconcilePlanned(case, plan))

    def on_reconcile_planned(self: MainScreen, message: ReconcilePlanned) -> None:
        plan, case = message.plan, message.case
        self.activity = None
        self._paint_status()
        if case != self.case or self.as_of is not None or self.read_only:
            self.reconciling = False
            self._paint_status()
            self.refresh_bindings()
            return  # the operator moved on (another case, time travel) first
        modal = ReconcileModal(plan)
        self.reconcile_modal = modal
        if self.live is not None:
            self.check_reconcile_evidence(self.live)

        def decided(decision: ReconcileDecision | None) -> None:
            self.reconcile_modal = None
            label = self._case_label(case)
            if decision is None or not decision.confirmed or decision.finding is None:
                why = modal.refused or "cancelled by the operator"
                outcome = Outcome.REFUSED if modal.refused else Outcome.CANCELLED
                self.action_log.add(self.clock(), label, plan.call_id, outcome,
                                    _line(f"reconcile: {why}", 300))
                self.reconciling = False
                self.refresh_bindings()
                return
            if self.read_only or self.case != case or modal.refused:
                self.reconciling = False
                self.refresh_bindings()
                return
            self.action_log.add(self.clock(), label, plan.call_id, Outcome.CONFIRMED,
                                f"confirmed reconcile: {decision.finding}")
            self.note = None
            self.activity = f"recording {decision.finding} for {plan.call_id}\u2026"
            self._paint_status()
            self._run_reconcile(case, plan, decision.finding, decision.note)

        self.app.push_screen(modal, decided)

    def check_reconcile_evidence(self: MainScreen, snap: CaseSnapshot) -> None:
        """The dialog is pinned to the call's last seq it showed (like resume's)."""
        modal = self.reconcile_modal
        if modal is None or modal.refused:
            return
        plan = modal.plan
        call = snap.call(plan.call_id)
        if call is None or call.last_seq != plan.last_seq or not call.effect_unknown:
            now = f"last seq {call.last_seq}, {call.stage.value}" if call else "call not found"
            modal.evidence_changed(f"shown at seq {plan.last_seq}, now {now}")

    @work(thread=True, exit_on_error=False, group="reconcile", exclusive=True)
    def _run_reconcile(self: MainScreen, case: Path, plan: ReconcilePlan, finding: str,
                       note: str | None) -> None:
        try:
            result = self.reconcile_service.run(plan, finding, note)
        except ResumeRefused as exc:
            self.post_message(ReconcileNote(case, plan.call_id, f"{plan.call_id}: reconcile "
                                            f"refused: {exc.reason}", "refused"))
            return
        except (LedgerError, OSError, ValueError) as exc:
            self.post_message(ReconcileNote(case, plan.call_id, f"{plan.call_id}: reconcile "
                                            f"failed: {exc}", "failed"))
            return
        self.post_message(ReconcileDone(case, result))

    def on_reconcile_note(self: MainScreen, message: ReconcileNote) -> None:
        from codeai_tui.app.screens.main import Note

        text = _line(message.text)
        self.reconciling = False
        self.activity = None
        outcome = Outcome.REFUSED if message.kind == "refused" else Outcome.FAILED
        self.action_log.add(self.clock(), self._case_label(message.case), message.call_id,
                            outcome, text)
        self.note = Note(message.case, message.call_id, f"\u2716 {text}", ok=False)
        self.notify(text, title="reconcile " + message.kind,
                    severity="warning" if message.kind == "refused" else "error",
                    markup=False, timeout=15)
        self._paint_status()
        self.refresh_bindings()

    def on_reconcile_done(self: MainScreen, message: ReconcileDone) -> None:
        from codeai_tui.app.screens.main import Note

        r = message.result
        self.reconciling = False
        self.activity = None
        named = f" (receipt {', '.join(r.evidence)})" if r.evidence else ""
        text = _line(f"reconciled {r.call_id} attempt {r.attempt_id}: {r.finding}{named} "
                     f"at seq {r.seq}; now {r.state.stage.value}, next "
                     f"{r.state.next_operation.value}", 300)
        self.action_log.add(self.clock(), self._case_label(message.case), r.call_id,
                            Outcome.RECONCILED, text)
        self.note = Note(message.case, r.call_id, "\u2714 " + text, ok=True)
        self.notify(text, title="reconciled", markup=False, timeout=15)
        self._wake.set()  # the follower shows the new verdict at once
        self._paint_status()
        self.refresh_bindings()
