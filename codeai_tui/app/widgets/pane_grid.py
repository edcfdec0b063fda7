"""The panes on their grid: every pane at once from 140x40, else one at a time (the active
one), named by a tab strip; the detail view beside them.

The grid composes the panes and feeds them the session's snapshot; the screen feeds the
grid and routes the keys that move between panes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Container
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from codeai_tui.app.widgets.calls_pane import CallsPane
from codeai_tui.app.widgets.cases_pane import CasesPane
from codeai_tui.app.widgets.compilations_pane import CompilationsPane
from codeai_tui.app.widgets.detail_view import DetailView
from codeai_tui.app.widgets.lanes_pane import LanesPane
from codeai_tui.app.widgets.pane import Pane
from codeai_tui.app.widgets.receipts_pane import ReceiptsPane
from codeai_tui.app.widgets.tasks_pane import TasksPane
from codeai_tui.app.widgets.timeline_pane import TimelinePane
from codeai_tui.console.session import CaseSession

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


class PaneGrid(Container):
    """The panes and the detail view (the stylesheet's `#body`)."""

    def __init__(self, root: Path, clock: Callable[[], datetime], read_only: bool, *,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.root, self.clock, self.read_only = root, clock, read_only
        self._rows = ""  # the grid's rows as last set ("": the stylesheet's)

    def compose(self) -> ComposeResult:
        yield CasesPane(self.root, id="cases")
        yield TasksPane(id="tasks")
        yield CompilationsPane(id="compilations")
        yield CallsPane(id="calls")
        yield DetailView(self.clock, self.read_only, id="detail-box")
        yield TimelinePane(id="timeline")
        yield ReceiptsPane(id="receipts")
        yield LanesPane(id="lanes")

    def pane(self, name: str) -> Pane:
        return self.query_one(f"#{name}", Pane)

    def activate(self, name: str) -> None:
        """Show `name` (one pane at a time); the Lanes take the Timeline's and the
        Receipts' row while active (every pane at once)."""
        for pane in PANES:
            self.pane(pane).set_class(pane == name, "-active")
        self.set_class(name == "lanes", "-lanes")

    def show(self, session: CaseSession) -> None:
        """The session's shown snapshot in every pane, the timeline's decoration and the
        Cases row of a case in the past."""
        s, snap = session, session.shown
        for name in ("tasks", "calls", "compilations", "receipts", "lanes"):
            self.pane(name).snapshot = snap
        self.query_one(CallsPane).drift = dict(s.drift)
        timeline = self.query_one(TimelinePane)
        if snap is not None:
            timeline.recent = snap.recent
            timeline.total = max(s.max_seq, snap.max_seq)
        timeline.decoration = (snap, s.as_of)
        # only once the as-of projection is on screen: never a live verdict under "seq N"
        self.query_one(CasesPane).as_of = (snap.as_of, s.shown_verdict) if (
            s.as_of is not None and snap is not None and snap.as_of is not None
            and s.shown_verdict is not None) else None
        detail = self.query_one(DetailView)
        detail.snapshot, detail.drift = snap, dict(s.drift)

    def fit(self, every_pane: bool, session: CaseSession) -> None:
        """With every pane on screen, give rows to what has rows (`grid_rows`); else the
        stylesheet's single row again."""
        if not every_pane:
            if self._rows:
                self._rows = ""
                self.styles.clear_rule("grid_rows")
            return
        if self.size.height <= 0:
            return
        snap, cases = session.shown, len(session.cases)
        longest = max(cases, len(snap.state.tasks), len(snap.state.compilations)) \
            if snap else cases
        rows = grid_rows(self.size.height, longest, len(snap.state.calls) if snap else 0)
        if rows != self._rows:
            self._rows = rows
            self.styles.grid_rows = rows  # type: ignore[assignment]


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
