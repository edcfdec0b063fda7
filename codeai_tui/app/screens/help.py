"""Every action with the keys it answers to now (the registry plus the keymap in use)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from codeai_tui.app import actions

_DESCRIPTION_WIDTH = 54


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss_help", "Close", id="help.close"),
    ]

    def __init__(self, rows: list[tuple[str, str, str]], read_only: bool = False) -> None:
        super().__init__()
        self.rows = rows
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        parts: list[str | tuple[str, str]] = [("Keys, by what they do", "bold $accent"), "\n"]
        narrow = self.app.size.width < 110  # no id column: it would wrap
        by_group: dict[str, list[tuple[str, str, str]]] = {}
        for row in self.rows:
            spec = actions.BY_ID.get(row[2])
            by_group.setdefault(spec.group if spec else "move", []).append(row)
        for group, heading in actions.GROUPS:
            rows = by_group.get(group, [])
            if not rows:
                continue
            parts += ["\n", (heading, "bold"), "\n"]
            for keys, description, binding_id in rows:
                # the id (what a keymap names) only where it fits beside the description
                # (a description longer than its column puts the id under it)
                fits = not narrow and len(description) <= _DESCRIPTION_WIDTH
                parts += [(f"  {keys:<11}", "bold $primary"),
                          f"{description:<{_DESCRIPTION_WIDTH}}  " if fits else description]
                if binding_id in actions.BY_ID:
                    gap = "" if fits else ("  " if narrow else "\n" + " " * 13)
                    parts += [gap, (f"id: {binding_id}", "$text-muted")]
                parts.append("\n")
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
