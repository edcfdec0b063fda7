"""A pane: a TableView that owns what it shows (snapshot, filter) and its title."""

from __future__ import annotations

from typing import ClassVar

from textual.content import Content
from textual.reactive import reactive

from codeai_tui.app.widgets.cells import cell
from codeai_tui.app.widgets.table import TableView
from codeai_tui.console.filters import Needle
from codeai_tui.console.model import CaseSnapshot

TitlePart = str | tuple[str, str]


class Pane(TableView):
    """Set `snapshot` and `needle` from above; the pane repaints itself."""

    TITLE: ClassVar[str] = ""
    KEY: ClassVar[str] = ""

    snapshot: reactive[CaseSnapshot | None] = reactive(None, always_update=True, init=False)
    needle: reactive[Needle | None] = reactive(None, init=False)

    def on_mount(self) -> None:
        self.paint()

    def watch_snapshot(self) -> None:
        self.paint()

    def watch_needle(self) -> None:
        self.paint()

    def paint(self) -> None:
        """Rebuild the source from `snapshot` and `needle`; subclasses fill rows."""
        self.paint_title()

    def title_marks(self) -> list[TitlePart]:
        """Warnings after the count in the border title."""
        return []

    def paint_title(self) -> None:
        parts: list[TitlePart] = [f"{self.KEY} {self.TITLE}", f" ({self.row_count:,})"]
        parts += self.title_marks()
        self.border_title = Content.assemble(*parts)
        if self.needle is not None:
            self.border_subtitle = Content.assemble(
                ("filter: ", "bold $warning"), cell(self.needle.text, 30),
                " \u00b7 esc clears")
        else:
            self.border_subtitle = self.idle_subtitle()

    def idle_subtitle(self) -> Content | None:
        return None
