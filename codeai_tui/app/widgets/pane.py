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

# what an empty pane says before its case is projected: "no calls" under a header that
# counts 400,000 events would read as a verdict (and the ledger may be unreadable, so
# not "reading…" either)
NOT_PROJECTED = "not projected yet"


class Pane(TableView):
    """Set `snapshot` and `needle` from above; the pane repaints itself."""

    TITLE: ClassVar[str] = ""
    KEY: ClassVar[str] = ""

    snapshot: reactive[CaseSnapshot | None] = reactive(None, always_update=True, init=False,
                                                        repaint=False)
    needle: reactive[Needle | None] = reactive(None, init=False, repaint=False)

    _title_parts: list[TitlePart] | None = None
    _subtitle: Content | None = None
    _known_drawn: bool | None = None  # `rows_known()` when last painted

    def on_mount(self) -> None:
        self.paint()

    def watch_snapshot(self) -> None:
        self.paint()

    def watch_needle(self) -> None:
        self.paint()

    def paint(self) -> None:
        """Rebuild the source from `snapshot` and `needle`; subclasses fill rows."""
        known = self.rows_known()
        if known != self._known_drawn:  # an empty pane's message changes with it
            self._known_drawn = known
            self.refresh()
        self.paint_title()

    def empty_message(self) -> str:
        return self.empty_text if self.rows_known() else NOT_PROJECTED

    def rows_known(self) -> bool:
        """Whether the rows shown are the case's (else an empty pane says so)."""
        return self.snapshot is not None

    def title_count(self) -> int:
        """The count in the border title: the rows (a pane whose rows are not all
        items, such as Lanes with its task headers, counts its items)."""
        return self.row_count

    def title_marks(self) -> list[TitlePart]:
        """Warnings after the count in the border title."""
        return []

    def paint_title(self) -> None:
        """Set the border's title and subtitle where they changed: Textual redraws the
        whole pane on every set, which a live snapshot would otherwise cause in every
        pane."""
        count = f"{self.title_count():,}" if self.rows_known() else "\u2026"  # not 0: not known
        parts: list[TitlePart] = [f"{self.KEY} {self.TITLE}", f" ({count})"]
        parts += self.title_marks()
        if parts != self._title_parts:
            self._title_parts = parts
            self.border_title = Content.assemble(*parts)
        subtitle = self.subtitle()
        if not _same_content(subtitle, self._subtitle):
            self._subtitle = subtitle
            self.border_subtitle = subtitle

    def subtitle(self) -> Content | None:
        """The border's subtitle: the filter when one is set, else `idle_subtitle`."""
        if self.needle is not None:
            return Content.assemble(("filter: ", "bold $warning"), cell(self.needle.text, 30),
                                    " \u00b7 esc clears")
        return self.idle_subtitle()

    def idle_subtitle(self) -> Content | None:
        return None


def _same_content(a: Content | None, b: Content | None) -> bool:
    """Same text and same spans (Content's own equality compares the text alone)."""
    if a is None or b is None:
        return a is b
    return a.plain == b.plain and list(a.spans) == list(b.spans)
