"""The one write path: `r` -> projection gate -> plan -> modal -> pinned resume.

Resume is offered only where the projection says start_call; the modal shows the plan
and the worker passes `expected=plan`, so a ledger that moved refuses instead of acting."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work

from codeai_tui.app import messages as m
from codeai_tui.app.screens.resume import ResumeModal
from codeai_tui.console.model import (
    CaseSnapshot,
)
from codeai_tui.ledger import LedgerError
from codeai_tui.textsafe import visible

if TYPE_CHECKING:
    from codeai_tui.app.app import CodeAIApp as _Base
else:
    _Base = object


class ResumeFlow(_Base):
    """Resume actions and their workers (mixed into CodeAIApp)."""

    def action_explain_resume(self) -> None:
        """`r` where resume is not permitted: say why, write nothing."""
        if self.resuming:
            self.notify("a resume is already running", markup=False)
            return
        if self.as_of is not None:
            self.notify("time travel shows the past: go back to live (t or esc) to resume",
                        severity="warning", markup=False)
            return
        call = self.selected_call()
        if call is None:
            self.notify("select a call first (3 focuses Calls)", severity="warning",
                        markup=False)
            return
        self.notify(
            visible(f"{call.call_id}: resume not permitted; the projection says next operation "
                    f"is {call.next_operation.value}: {call.reason}", one_line=True, limit=400),
            title="resume refused", severity="warning", markup=False, timeout=10)

    def action_resume(self) -> None:
        call = self.selected_call()
        if self.read_only or call is None or not call.resumable or self.case is None:
            return
        if self.planning:
            return  # one plan at a time: a second `r` must not stack two modals
        self.planning = True
        self._plan(self.case, call.call_id)

    @work(thread=True, exit_on_error=False, group="resume", exclusive=True)
    def _plan(self, case: Path, call_id: str) -> None:
        api = resume_api()
        if api is None:
            self.post_message(m.ResumeNote("resume is not available in this build", kind="failed"))
            return
        try:
            plan = api.plan_resume(case, call_id, model=self.model, base_url=self.base_url,
                                   api_key_env=self.api_key_env)
        except api.ResumeRefused as exc:
            op = exc.next_operation.value if exc.next_operation is not None else "none"
            self.post_message(m.ResumeNote(f"{call_id}: refused (next operation {op}): "
                                           f"{exc.reason}", kind="refused"))
            return
        except LedgerError as exc:
            self.post_message(m.ResumeNote(str(exc), kind="failed"))
            return
        except Exception as exc:  # noqa: BLE001 - an unreadable artifact etc.: say so, stay up
            self.post_message(m.ResumeNote(f"{call_id}: cannot plan a resume: "
                                           f"{type(exc).__name__}: {exc}", kind="failed"))
            return
        self.post_message(m.PlanReady(plan, case))

    def on_plan_ready(self, message: m.PlanReady) -> None:
        self.planning = False
        plan = message.plan
        case = message.case
        if case != self.case or self.as_of is not None or self.read_only:
            return  # the operator moved on (another case, time travel) before it was ready
        modal = ResumeModal(plan)
        self._modal = modal
        if self.live is not None:
            self._check_modal_evidence(self.live)

        def decided(confirmed: bool | None) -> None:
            self._modal = None
            if confirmed and not self.read_only and self.case == case and not modal.refused:
                self.resuming = True
                self.last_result = None
                self.activity = f"resuming {plan.call_id}\u2026"
                self._paint_status()
                self.refresh_bindings()
                self._run_resume(case, plan, modal.reason)

        self.push_screen(modal, decided)

    def _check_modal_evidence(self, snap: CaseSnapshot) -> None:
        modal = self._modal
        if modal is None or modal.refused:
            return
        plan = modal.plan
        call = snap.call(plan.call_id)
        if call is None or call.last_seq != plan.evidence[1] or not call.resumable:
            now = f"last seq {call.last_seq}, {call.stage.value}" if call else "call not found"
            why = f"shown at seq {plan.evidence[1]}, now {now}"
            if modal.is_mounted:
                modal.evidence_changed(why)
            else:
                modal.refused = why

    @work(thread=True, exit_on_error=False, group="resume", exclusive=True)
    def _run_resume(self, case: Path, plan: Any, reason: str | None) -> None:
        api = resume_api()
        if api is None:
            self.post_message(m.ResumeNote("resume is not available in this build", kind="failed"))
            return

        def progress(text: str) -> None:
            self.post_message(m.ResumeNote(text, kind="progress"))

        try:
            # the credential goes only where the operator vouched for the destination;
            # the dialog said which (an untrusted one is confirmed from the CLI today)
            result = api.resume_call(case, plan.call_id, model=self.model,
                                     base_url=self.base_url, api_key_env=self.api_key_env,
                                     send_credential=plan.destination.trusted, reason=reason,
                                     expected=plan, progress=progress)
        except api.ResumeRefused as exc:
            self.post_message(m.ResumeNote(f"{plan.call_id}: refused: {exc.reason}",
                                           kind="refused"))
            return
        except LedgerError as exc:
            self.post_message(m.ResumeNote(str(exc), kind="failed"))
            return
        except Exception as exc:  # noqa: BLE001 - the provider or network failed; say so
            self.post_message(m.ResumeNote(f"{plan.call_id}: resume failed: "
                                           f"{type(exc).__name__}: {exc}", kind="failed"))
            return
        self.post_message(m.ResumeDone(result))

    def on_resume_note(self, message: m.ResumeNote) -> None:
        text = visible(message.text, one_line=True, limit=400)
        if message.kind != "progress":
            self.planning = False
        if message.kind == "progress":
            self.activity = f"resume: {text}"
            self._paint_status()
            return
        self.resuming = False
        self.activity = None
        self.last_result = None
        self.notify(text, title="resume " + message.kind,
                    severity="warning" if message.kind == "refused" else "error",
                    markup=False, timeout=15)
        self._paint_status()
        self.refresh_bindings()

    def on_resume_done(self, message: m.ResumeDone) -> None:
        r = message.result
        self.resuming = False
        self.activity = None
        text = visible(
            f"resumed {r.old_call_id} as {r.new_call_id} ({r.new_stage.value}); provider "
            f"receipts {r.receipts_before} \u2192 {r.receipts_after}", one_line=True, limit=300)
        self.last_result = "\u2714 " + text
        self.notify(text, title="resume done", markup=False, timeout=15)
        self._wake.set()
        self._paint_status()
        self.refresh_bindings()


def resume_api() -> Any:
    """The resume module, imported lazily (tests patch this; a build without it degrades)."""
    try:
        from codeai_tui import resume
    except ImportError:
        return None
    return resume
