"""The tool reconcile confirmation (docs/tools.md, `tool.reconciled`): did an admitted
tool operation run?

Only the tool's own records can say, so nothing is pre-filled unless the kernel's
receipt file names the operation. Cancel has the focus. `not_executed` lets replay run
the tool again (a second effect if the finding is wrong), so it asks for the tool-call
id typed. Like the other dialogs, the decision is pinned to the admission shown: if the
operation changes while the dialog is open, it says so and refuses.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Button, Input, Static

from codeai_tui.actions.reconcile_plan import ToolReconcilePlan
from codeai_tui.app.screens.reconcile import FindingDialog, ReconcileDecision
from codeai_tui.app.widgets.laid_out import show_laid_out
from codeai_tui.textsafe import visible

TOOL_FINDING_LABELS = {
    "executed": "executed: it ran (never run it again)",
    "not_executed": "not_executed: it did not run (replay may run it again)",
}


def _v(value: object, limit: int = 120) -> str:
    return visible(str(value) if value is not None else "\u2014 none", one_line=True,
                   limit=limit)


class ToolReconcileModal(FindingDialog):
    LABELS = TOOL_FINDING_LABELS
    RECORDED_IN = "tool.reconciled"

    def __init__(self, plan: ToolReconcilePlan) -> None:
        super().__init__()
        self.plan = plan

    def heading(self) -> Content:
        plan = self.plan
        return Content.assemble(
            ("Reconcile tool operation ", "bold"), (_v(plan.tool_call_id), "bold $accent"),
            (f" ({_v(plan.tool, 40)}): did it run?", "bold"))

    def suggested(self) -> str | None:
        return self.plan.suggested

    def inputs(self) -> ComposeResult:
        # the id first: on a narrow terminal the end of a placeholder is cut off
        yield Input(placeholder=f"{_v(self.plan.tool_call_id, 60)}: type this tool-call id "
                    "to record not_executed", id="tool-reconcile-typed-id")

    def evidence(self) -> Content:
        plan = self.plan
        return Content.assemble(
            ("ledger         ", "bold"), ("\u26a0 admitted", "bold $error"),
            f" at seq {plan.admitted_seq} ({_v(plan.admitted_at, 40)}), no tool.completed: "
            "the tool may have acted", "\n",
            ("pre-filled     ", "bold"),
            (plan.suggested, "bold $accent") if plan.suggested else ("nothing", "bold $warning"),
            f": {_v(plan.why_suggested, 300)}",
            *[part for line in plan.records for part in (
                "\n", ("tool's records ", "bold"), _v(line, 300))])

    def facts(self) -> Content:
        plan = self.plan
        return Content.assemble(
            ("operation      ", "bold"), _v(plan.operation_key, 200), "\n",
            ("call / attempt ", "bold"), f"{_v(plan.call_id)} / {_v(plan.attempt_id)}", "\n",
            ("arguments      ", "bold"), f"sha256 {_v(plan.arguments_sha256)}", "\n",
            ("why            ", "bold"), _v(plan.reason, 400), "\n",
            ("records        ", "bold"), "tool.reconciled {operation_key, finding, note, "
            "decided_by}; no tool is run here")

    # ---- decisions

    def _typed_ok(self) -> bool:
        typed = self.query_one("#tool-reconcile-typed-id", Input).value.strip()
        return bool(self.plan.tool_call_id) and typed == self.plan.tool_call_id

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the typed-id field moves to Record once the id is right; a field
        never records by itself."""
        event.stop()
        if event.input.id == "tool-reconcile-typed-id" and self._typed_ok() and not self.refused:
            show_laid_out(self.query_one("#reconcile-refused", Static), Content.assemble(
                ("\u2714 the tool-call id matches: ", "bold $success"),
                "Enter (or y) records the finding"))
            self.query_one("#reconcile-confirm", Button).focus()

    def action_confirm(self) -> None:
        if self.refused:
            return
        finding = self.finding()
        if finding is None:
            self._say("choose a finding first: 1 executed, 2 not_executed; then y")
            return
        if finding == "not_executed" and not self._typed_ok():
            self._say(f"not_executed lets the tool run again: type the tool-call id first: "
                      f"{_v(self.plan.tool_call_id, 60)}")
            self.query_one("#tool-reconcile-typed-id", Input).focus()
            return
        self.dismiss(ReconcileDecision(True, finding, self.note()))
