"""The console's resume action (`r`): a flow the main screen composes, in its own module.

Gated by the projection: where the selected call is not resumable (or time travel shows
the past), `r` says why, writes nothing, and the refusal is kept in the action log.
Where it is, the resume plan (with its drift check) is read in a worker, a ResumeModal
shows it pinned to the call's evidence (Cancel focused), and after confirmation the
service runs in a worker. Progress lines go to the status bar; every ending goes to the
action log through the screen's `report_outcome`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from textual.message import Message

from codeai_tui.actions.resume import ResumePlan, ResumeRefused, ResumeResult, check_destination
from codeai_tui.app.screens.flow_host import FlowHost
from codeai_tui.app.screens.resume import ResumeDecision, ResumeModal
from codeai_tui.console.actions import SELECT_A_CALL, Outcome
from codeai_tui.console.drift import check_from_plan
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.ledger import LedgerError
from codeai_tui.textsafe import visible


@dataclass
class PlanReady(Message):
    case: Path
    plan: ResumePlan


@dataclass
class ResumeNote(Message):
    """A refusal, failure or progress line from the resume path, about one call."""

    case: Path
    call_id: str
    text: str
    kind: str  # "refused" | "failed" | "progress"


@dataclass
class ResumeDone(Message):
    case: Path
    result: ResumeResult


class ResumeFlow:
    """The main screen's resume action: a plain object the screen composes. The
    one-action-at-a-time flags (`planning`, `resuming`) stay on the host: the other
    flows read them."""

    def __init__(self, host: FlowHost) -> None:
        self.host = host
        self.modal: ResumeModal | None = None  # the open dialog, pinned to its evidence

    def resume_permitted(self) -> bool:
        host = self.host
        call = host.selected_call()
        return call is not None and call.resumable and host.as_of is None and not host.resuming

    def action_explain_resume(self) -> None:
        """`r` where resume is not permitted: say why (kept in the action log)."""
        host = self.host
        if host.explain_read_only("resume"):
            return
        if host.resuming:
            host.notify("a resume is already running", markup=False)
            return
        if host.as_of is not None:
            host.notify("time travel shows the past: go back to live (t or esc) to resume",
                        severity="warning", markup=False)
            return
        call = host.selected_call()
        if call is None:
            host.notify(SELECT_A_CALL, severity="warning", markup=False)
            return
        text = visible(f"{call.call_id}: resume not permitted; the projection says next "
                       f"operation is {call.next_operation.value}: {call.reason}",
                       one_line=True, limit=400)
        host.refuse(call.call_id, "resume", text)

    def action_resume(self) -> None:
        host = self.host
        call = host.selected_call()
        if host.read_only or call is None or not call.resumable or host.case is None:
            return
        if host.planning:
            return  # one plan at a time: a second `r` must not stack two modals
        host.planning = True
        host.activity = f"checking {call.call_id} for drift\u2026"
        host.paint_status()
        host.run_worker(partial(self._plan, host.case, call.call_id), name="_plan",
                        group="resume", exclusive=True, exit_on_error=False, thread=True)

    def _plan(self, case: Path, call_id: str) -> None:
        """In a worker thread: the plan the dialog shows, with its drift check."""
        host = self.host
        try:
            plan = host.service.plan(case, call_id)
            if not plan.drift:  # (a drifted plan's dialog refuses it anyway)
                # the server there must be the case's own before the dialog offers to send
                check_destination(plan.case_dir, plan.destination, plan.next_operation)
        except ResumeRefused as exc:
            op = exc.next_operation.value if exc.next_operation is not None else "none"
            host.post_message(ResumeNote(case, call_id, f"{call_id}: refused (next "
                                         f"operation {op}): {exc.reason}", "refused"))
            return
        except LedgerError as exc:
            host.post_message(ResumeNote(case, call_id, str(exc), "failed"))
            return
        except Exception as exc:  # noqa: BLE001 - an unreadable artifact etc.: say so
            host.post_message(ResumeNote(case, call_id, f"{call_id}: cannot plan a "
                                         f"resume: {type(exc).__name__}: {exc}", "failed"))
            return
        host.post_message(PlanReady(case, plan))

    def on_plan_ready(self, message: PlanReady) -> None:
        host = self.host
        host.planning = False
        host.activity = None
        plan, case = message.plan, message.case
        if case != host.case or host.as_of is not None or host.read_only:
            host.paint_status()
            return  # the operator moved on (another case, time travel) first
        host.show_drift(check_from_plan(plan))
        modal = ResumeModal(plan, host.clock())
        self.modal = modal
        if host.live is not None:
            self.check_evidence(host.live)

        def decided(decision: ResumeDecision | None) -> None:
            self.modal = None
            if decision is None or not decision.confirmed:
                why = modal.refused or ("drift: " + "; ".join(plan.drift) if plan.drift
                                        else "cancelled by the operator")
                outcome = Outcome.REFUSED if modal.refused or plan.drift else Outcome.CANCELLED
                host.record(case, plan.call_id, outcome, visible(why, one_line=True, limit=300))
                return
            if host.read_only or host.case != case or modal.refused:
                return
            host.record(case, plan.call_id, Outcome.CONFIRMED,
                        f"confirmed resume to {plan.base_url}")
            host.resuming = True
            host.note = None
            host.activity = f"resuming {plan.call_id}\u2026"
            host.paint_status()
            host.refresh_bindings()
            host.run_worker(partial(self._run, case, plan, decision), name="_run_resume",
                            group="resume", exclusive=True, exit_on_error=False, thread=True)

        host.push_screen(modal, decided)

    def check_evidence(self, snap: CaseSnapshot) -> None:
        """The open dialog is pinned to the call's last seq it showed: a new event on the
        call (or the call no longer resumable) refuses it."""
        modal = self.modal
        if modal is None or modal.refused:
            return
        plan = modal.plan
        call = snap.call(plan.call_id)
        if call is None or call.last_seq != plan.evidence[1] or not call.resumable:
            now = f"last seq {call.last_seq}, {call.stage.value}" if call else "call not found"
            modal.evidence_changed(f"shown at seq {plan.evidence[1]}, now {now}")

    def evidence_gone(self, why: str) -> None:
        """What the open dialog showed was read from a file that is no longer there."""
        if self.modal is not None:
            self.modal.evidence_changed(why)

    def _run(self, case: Path, plan: ResumePlan, decision: ResumeDecision) -> None:
        """In a worker thread: send the resume, pinned to the plan the dialog showed."""
        host = self.host

        def progress(text: str) -> None:
            host.post_message(ResumeNote(case, plan.call_id, text, "progress"))

        try:
            result = host.service.run(case, plan, reason=decision.reason,
                                      send_credential=decision.send_credential,
                                      progress=progress)
        except ResumeRefused as exc:
            host.post_message(ResumeNote(case, plan.call_id, f"{plan.call_id}: refused: "
                                         f"{exc.reason}", "refused"))
            return
        except LedgerError as exc:
            host.post_message(ResumeNote(case, plan.call_id, str(exc), "failed"))
            return
        except Exception as exc:  # noqa: BLE001 - the provider or network failed; say so
            host.post_message(ResumeNote(case, plan.call_id, f"{plan.call_id}: resume "
                                         f"failed: {type(exc).__name__}: {exc}", "failed"))
            return
        host.post_message(ResumeDone(case, result))

    def on_note(self, message: ResumeNote) -> None:
        host = self.host
        text = visible(message.text, one_line=True, limit=400)
        if message.kind == "progress":
            if message.case == host.case:
                host.activity = f"resume: {text}"
                host.paint_status()
            return
        host.planning = False
        host.resuming = False
        refused = message.kind == "refused"
        host.report_outcome(message.case, message.call_id,
                            Outcome.REFUSED if refused else Outcome.FAILED, text, ok=False,
                            title="resume " + message.kind,
                            severity="warning" if refused else "error")

    def on_done(self, message: ResumeDone) -> None:
        host = self.host
        r = message.result
        host.resuming = False
        # what the runner waited for, or why no whole answer came (a timeout, a stream
        # cut off, the deadline): `resume` prints the same notes
        notes = "".join(f"; {note}" for note in r.notes)
        # receipts that did not move where they should have: said first, as a warning
        warning = f"; \u26a0 {r.warning}" if r.warning is not None else ""
        text = visible(f"resumed {r.old_call_id} as {r.new_call_id} ({r.new_stage.value}); "
                       f"provider receipts {r.receipts_before} \u2192 {r.receipts_after}"
                       f"{warning}{notes}", one_line=True, limit=500)
        host.report_outcome(message.case, r.old_call_id, Outcome.RESUMED, text, ok=True,
                            title="resume done" if r.warning is None
                            else "resume done: receipts did not move",
                            severity=None if r.warning is None else "warning")
