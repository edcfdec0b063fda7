"""The advance confirmation (`v`): reinterpret, redecide, finalize, start the next
attempt, or (at decide_duplicate) finalize as failed / accept a duplicate.

codeai_tui/actions/advance.py does the work through the gate. Here: a dialog that shows
the step, what it appends, and (for a next attempt) where the request goes, with Cancel
focused; accepting a duplicate needs the call id typed. The one action flow
(action_flow.py) opens it on the action's plan and runs the step it answers, pinned to
the evidence shown.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from codeai_tui.actions import advance
from codeai_tui.app.widgets.laid_out import show_laid_out
from codeai_tui.textsafe import visible

APPENDS = advance.APPENDS
LABELS = {"reinterpret": "Reinterpret (y)", "redecide": "Redecide (y)",
          "finalize": "Finalize (y)", "next-attempt": "Send next attempt (y)",
          "accept-duplicate": "Accept duplicate"}


def _v(value: object) -> str:
    return visible(value if value is not None else "\u2014", one_line=True, limit=160)


class AdvanceModal(ModalScreen[str | None]):
    """Cancel focused; `y` takes the single step; accepting a duplicate needs the typed id."""

    DEFAULT_CSS = """
    AdvanceModal { align: center middle; background: $background 60%; }
    #advance-dialog { width: 100%; max-width: 110; height: auto; max-height: 100%;
                      border: thick $warning; background: $surface; padding: 0 1; }
    #advance-title { height: 1; }
    #advance-body { height: auto; max-height: 60vh; }
    #advance-body Static { height: auto; }
    #advance-say { height: auto; }
    #advance-buttons { height: auto; align-horizontal: right; }
    #advance-buttons Button { margin-left: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="advance.cancel_escape"),
        Binding("n", "cancel", "Cancel", id="advance.cancel"),
        Binding("y", "confirm", "Confirm", id="advance.confirm"),
        # with two choices `y` is ambiguous: `f` chooses finalize (it focuses that
        # button and says so); `y` or Enter then takes it. No single key both chooses
        # and writes.
        Binding("f", "choose_finalize", "Choose finalize", id="advance.finalize"),
    ]

    def __init__(self, view: advance.AdvancePlan) -> None:
        super().__init__()
        self.view = view
        self.chosen: str | None = None  # the step `f` chose; `y` takes it

    @property
    def single(self) -> str | None:
        """The one step `y` takes (none at decide_duplicate: press a button)."""
        return self.view.steps[0] if len(self.view.steps) == 1 else None

    def compose(self) -> ComposeResult:
        v = self.view
        with Vertical(id="advance-dialog"):
            yield Static(Content.assemble(("Advance call ", "bold"),
                                          (_v(v.call_id), "bold $accent"),
                                          (f": {v.next_operation}", "bold")), id="advance-title")
            with VerticalScroll(id="advance-body"):
                yield Static(Content.assemble(("stage      ", "bold"), _v(v.stage), "\n",
                                              ("evidence   ", "bold"),
                                              f"{v.evidence[0]} events to seq {v.evidence[1]}",
                                              "\n", ("why        ", "bold"),
                                              visible(v.reason, one_line=True, limit=300)))
                for step in v.steps:
                    yield Static(Content.assemble((f"{step:<17}", "bold"),
                                                  ("appends " + APPENDS[step], "")))
                if v.next_attempt is not None:
                    dest = v.next_attempt.destination
                    yield Static(Content.assemble(
                        ("request goes to  ", "bold"), (_v(dest.base_url), "bold"),
                        f"  (from {dest.base_url_from}); attempt {v.next_attempt.attempt_no}", "\n",
                        ("credential       ", "bold"),
                        _v(dest.credential_line(send=dest.trusted))), id="advance-destination")
                if "accept-duplicate" in v.steps:
                    yield Input(placeholder="type the call id to accept a duplicate",
                                id="advance-typed-id")
            yield Static("", id="advance-say")
            with Horizontal(id="advance-buttons"):
                yield Button("Cancel (n / esc)", id="advance-cancel", variant="primary")
                for step in v.steps:
                    label = LABELS[step] if self.single else (
                        "Finalize as failed (f)" if step == "finalize" else LABELS[step])
                    yield Button(label, id=f"advance-{step}", variant="error",
                                 disabled=step == "accept-duplicate")

    def on_mount(self) -> None:
        self.query_one("#advance-cancel", Button).focus()

    def _typed(self) -> bool:
        inputs = self.query("#advance-typed-id")
        return bool(inputs) and inputs.first(Input).value.strip() == self.view.call_id

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_one("#advance-accept-duplicate", Button).disabled = not self._typed()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the typed-id field moves to Accept duplicate once the id is right (a
        second Enter confirms): the field itself never records anything."""
        event.stop()
        if self._typed():
            self.chosen = "accept-duplicate"
            self.query_one("#advance-accept-duplicate", Button).focus()
        else:
            self._say("type the call id to accept a duplicate: " + _v(self.view.call_id))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        step = (event.button.id or "").removeprefix("advance-")
        if step == "accept-duplicate" and not self._typed():
            self._say("type the call id first")
        elif step in self.view.steps:
            self.dismiss(step)
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_confirm(self) -> None:
        step = self.single or self.chosen
        if step is None:
            self._say("two choices here: f chooses finalize (as failed), or type the call "
                      "id to accept a duplicate; then y")
            return
        if step == "accept-duplicate" and not self._typed():
            self._say("type the call id first")
            return
        self.dismiss(step)

    def action_choose_finalize(self) -> None:
        """Choose, never write: the button takes the focus and the dialog says how to
        confirm."""
        if "finalize" not in self.view.steps or self.single is not None:
            return
        self.chosen = "finalize"
        self.query_one("#advance-finalize", Button).focus()
        self._say("finalize as failed chosen: y or Enter records it, n or esc cancels")

    def _say(self, text: str) -> None:
        show_laid_out(self.query_one("#advance-say", Static),
            Content.assemble(("\u26a0 ", "bold $warning"), (text, "bold $warning")))
