"""The panes' names and keys, the tab strip that names them in a small terminal, and the
grid's rows when every pane is on screen."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from codeai_tui.app.widgets.calls_pane import CallsPane
from codeai_tui.app.widgets.cases_pane import CasesPane
from codeai_tui.app.widgets.compilations_pane import CompilationsPane
from codeai_tui.app.widgets.lanes_pane import LanesPane
from codeai_tui.app.widgets.receipts_pane import ReceiptsPane
from codeai_tui.app.widgets.tasks_pane import TasksPane
from codeai_tui.app.widgets.timeline_pane import TimelinePane

PANES = ("cases", "tasks", "calls", "compilations", "timeline", "receipts", "lanes")
# each pane's key, as its border title names it
PANE_KEYS = {pane.__name__.removesuffix("Pane").lower(): pane.KEY for pane in (
    CasesPane, TasksPane, CallsPane, CompilationsPane, TimelinePane, ReceiptsPane, LanesPane)}


class PaneTabs(Static):
    """In a narrow or short terminal one pane shows at a time; this names them all."""

    DEFAULT_CSS = "PaneTabs { height: 1; padding: 0 1; display: none; }"

    active: reactive[str] = reactive("calls")

    def render(self) -> Content:
        parts: list[str | tuple[str, str]] = []
        for pane in PANES:
            label = f" {PANE_KEYS[pane]} {pane.capitalize()} "
            parts.append((label, "reverse bold") if pane == self.active else label)
        hint = "  tab: next"
        if sum(len(p) for p in parts) + len(hint) <= self.content_size.width:
            parts.append((hint, "$text-muted"))
        return Content.assemble(*parts)


def grid_rows(height: int, top_rows: int, calls: int) -> str:
    """With every pane on screen, rows to what has rows: the top row (Cases, Tasks,
    Compilations) as tall as its longest list (`top_rows`), Calls as tall as its
    `calls`, the Timeline the rest, each within bounds so none disappears."""
    frame = 4  # border top and bottom, the header line, a horizontal scrollbar
    calls_need = max(calls + frame, 6)
    timeline_least = 8
    top = max(7, min(top_rows + frame, height - min(calls_need, height // 3) - timeline_least,
                     height // 2))
    middle = max(6, min(calls_need, (height - top) // 2))
    return f"{top} {middle} 1fr"
