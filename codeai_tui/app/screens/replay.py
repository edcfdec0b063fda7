"""The replay confirmation: the saved tool plan and each operation's
state, Cancel focused; `y` confirms, `n` / escape cancel.

What replay will do is said in words before the plan: run only the never-admitted
operations, under their original tool-call ids, without the provider; completed ones
resolve from their receipts. Arguments come from the saved response and are shown as
text through `textsafe.visible` (never markup).
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from codeai_tui.actions.replay import ReplayPlan
from codeai_tui.textsafe import visible
from codeai_tui.tools.turn import OperationState

STATE_TEXT = {
    OperationState.NOT_ADMITTED: ("\u25b7 not admitted: runs now", "bold $warning"),
    OperationState.COMPLETED: ("\u2714 completed: resolved from its receipt", "$success"),
    OperationState.EFFECT_UNKNOWN: ("\u26a0 effect unknown: duplicate risk", "bold $error"),
    OperationState.RAN_UNRECORDED: ("\u2714 found to have run: not run again", "$success"),
    OperationState.RUN_AGAIN: ("\u25b7 found not to have run: runs again", "bold $warning"),
}


def _v(value: Any, limit: int = 120) -> str:
    return visible(value if value is not None else "\u2014", one_line=True, limit=limit)


class ReplayModal(ModalScreen[bool]):
    CSS_PATH = "replay.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="replay.cancel_escape"),
        Binding("n", "cancel", "Cancel", id="replay.cancel"),
        Binding("y", "confirm", "Replay", id="replay.confirm"),
    ]

    def __init__(self, plan: ReplayPlan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        plan = self.plan
        with Vertical(id="replay-dialog"):
            yield Static(Content.assemble(("Replay the tool plan of call ", "bold"),
                                          (_v(plan.saved.call_id), "bold $accent"),
                                          ("?", "bold")), id="replay-title")
            with VerticalScroll(id="replay-body"):
                n = len(plan.to_run)
                runs = (f"runs {n} operation(s) never admitted or found not to have run, "
                        "under their original tool-call ids" if n else
                        "runs no tool: every operation completed or was found to have run")
                yield Static(Content.assemble(
                    (f"{runs}; never contacts the provider", "bold"), "\n",
                    "then records the follow-up call ", (_v(plan.follow_up_call_id), "bold"),
                    " (not sent: resume sends it through its own gate)"), id="replay-what")
                yield Static(Content.assemble(
                    ("turn ", "bold"), _v("/".join((plan.namespace, plan.thread, plan.turn))),
                    ("  attempt ", "bold"), _v(plan.saved.attempt_id)), id="replay-turn")
                for op in plan.operations:
                    words, style = STATE_TEXT[op.state]
                    yield Static(Content.assemble(
                        (_v(op.planned.tool_call_id, 60), "bold"), "  ",
                        _v(op.planned.name, 40), "  ", (words, style), "\n",
                        ("  arguments ", "$text-muted"), _v(op.planned.arguments, 300)),
                        classes="replay-op")
            with Horizontal(id="replay-buttons"):
                yield Button("Cancel (n / esc)", id="replay-cancel", variant="primary")
                label = (f"Replay {len(plan.to_run)} (y)" if plan.to_run
                         else "Record the follow-up (y)")
                yield Button(label, id="replay-confirm", variant="error")

    def on_mount(self) -> None:
        self.query_one("#replay-cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "replay-confirm")

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_confirm(self) -> None:
        self.dismiss(True)
