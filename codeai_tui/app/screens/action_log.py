"""The action log: every resume, refusal, cancellation and alert of this session."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from codeai_tui.console.actions import ActionLog, Outcome
from codeai_tui.textsafe import visible

STYLE = {Outcome.RESUMED: "bold $success", Outcome.REPLAYED: "bold $success",
         Outcome.REFUSED: "bold $warning",
         Outcome.FAILED: "bold $error", Outcome.ALERT: "bold $error",
         Outcome.CANCELLED: "$text-muted", Outcome.CONFIRMED: "bold",
         Outcome.ADVANCED: "bold $success",
         Outcome.RECONCILED: "bold $success"}


class ActionLogScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ActionLogScreen { align: center middle; background: $background 60%; }
    #log-box { width: 100%; max-width: 140; height: 90%; border: thick $primary;
               padding: 0 1; background: $surface; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,a", "close", "Close", id="action_log.close"),
    ]

    def __init__(self, log: ActionLog) -> None:
        super().__init__()
        self.log_model = log

    def compose(self) -> ComposeResult:
        parts: list[str | tuple[str, str]] = [
            ("Action log", "bold $accent"), " \u2014 this session; esc closes\n",
            (self.log_model.summary(), "$text-muted"), "\n\n"]
        if not self.log_model.entries:
            parts.append(("nothing yet: resumes, refusals and alerts appear here", "italic"))
        for e in self.log_model.entries:
            parts += [e.at.strftime("%H:%M:%S"), "  ",
                      (f"{e.outcome.value:<9}", STYLE.get(e.outcome, "bold")), "  ",
                      visible(e.case, one_line=True, limit=40), "  ",
                      (visible(e.call_id or "\u2014", one_line=True, limit=40), "bold"), "\n",
                      "          ", visible(e.text, one_line=True, limit=300), "\n"]
        with VerticalScroll(id="log-box"):
            yield Static(Content.assemble(*parts), id="log-text")

    def action_close(self) -> None:
        self.dismiss(None)
