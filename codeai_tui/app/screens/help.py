"""Every action with the keys it answers to now (the registry plus the keymap in use)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

_DESCRIPTION_WIDTH = 54


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss_help", "Close", id="help.close"),
    ]

    def __init__(self, rows: list[tuple[str, str, str]], read_only: bool = False) -> None:
        super().__init__()
        self.rows = rows
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        parts: list[str | tuple[str, str]] = [("Keys", "bold $accent"), "\n\n"]
        narrow = self.app.size.width < 110  # no padded id column: it would wrap
        for keys, description, binding_id in self.rows:
            # a description longer than its column puts the id on the next line, under it
            # (it ran into "id:" and wrapped mid-word)
            fits = not narrow and len(description) <= _DESCRIPTION_WIDTH
            gap = ("  " if narrow else "\n" + " " * 10) if not fits else ""
            parts += [(f"{keys:<10}", "bold $primary"),
                      f"{description:<{_DESCRIPTION_WIDTH}}  " if fits else description,
                      gap, (f"id: {binding_id}", "$text-muted"), "\n"]
        parts += ["\nThe question this console answers: could the provider effect have "
                  "happened?\n", ("\u26a0 effect unknown: duplicate risk", "bold $error"),
                  " marks a call whose request may have reached the provider.\n"
                  "Resume is offered only where the projection says start_call and the "
                  "rebuilt request matches the recorded one.\n"
                  "Reconcile records what happened to an effect-unknown call's attempt, "
                  "pre-filled from the provider's own receipt log, or whether a tool "
                  "operation admitted without an outcome ran, from the tool's own "
                  "records.\n"]
        if self.read_only:
            parts.append(("Read-only mode: every write action is unavailable.", "$warning"))
        with VerticalScroll(id="help-box"):
            yield Static(Content.assemble(*parts))

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
