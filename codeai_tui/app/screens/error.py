"""One clear sentence and the way out: what the operator sees when a path cannot be read."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from codeai_tui.textsafe import visible


class ErrorScreen(Screen[None]):
    CSS_PATH = "error.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,escape", "app.quit", "Quit", id="error.quit"),
    ]

    def __init__(self, sentence: str, way_out: str) -> None:
        super().__init__()
        self.sentence = sentence
        self.way_out = way_out

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box"):
            yield Static(Content.assemble(("\u2716 Cannot open this ledger", "bold $error")),
                         id="error-title")
            yield Static(Content(visible(self.sentence, one_line=True, limit=400)),
                         id="error-sentence")
            yield Static(Content(self.way_out), id="error-way-out")
            yield Static(Content("Press q to quit."), id="error-quit")
