"""The panes on their grid: every pane at once from 140x40, else one at a time (the active
one), named by a tab strip; the detail view beside them.

The grid composes the panes, feeds them the session's snapshot and keeps what their
cursors select in the session (the detail view's subject, the call selected everywhere);
the screen paints the selected call outside the grid (`CallSelected` up) and routes the
keys that move between panes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.containers import Container
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from codeai_tui.app.widgets.calls_pane import CallsPane
from codeai_tui.app.widgets.cases_pane import CasesPane
from codeai_tui.app.widgets.compilations_pane import CompilationsPane
from codeai_tui.app.widgets.detail_view import DetailView
from codeai_tui.app.widgets.lanes_pane import LanesPane
from codeai_tui.app.widgets.pane import Pane
from codeai_tui.app.widgets.receipts_pane import ReceiptsPane
from codeai_tui.app.widgets.selection import selection_in
from codeai_tui.app.widgets.table import TableView
from codeai_tui.app.widgets.tasks_pane import TasksPane
from codeai_tui.app.widgets.timeline_pane import TimelinePane
from codeai_tui.console.filters import Needle
from codeai_tui.console.model import SkeletonCall
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

    @dataclass
    class CallSelected(Message):
        """A pane's cursor selected a call (kept in the session): paint it everywhere."""

        call_id: str

    def __init__(self, root: Path, clock: Callable[[], datetime], read_only: bool,
                 session: CaseSession, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.root, self.clock, self.read_only = root, clock, read_only
        self.session = session
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

    def show(self) -> None:
        """The session's shown snapshot in every pane, the timeline's decoration and the
        Cases row of a case in the past."""
        s = self.session
        snap = s.shown
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
        self.query_one(LanesPane).selected_call_id = s.selected_call_id

    def fit(self, every_pane: bool) -> None:
        """With every pane on screen, give rows to what has rows (`grid_rows`); else the
        stylesheet's single row again."""
        if not every_pane:
            if self._rows:
                self._rows = ""
                self.styles.clear_rule("grid_rows")
            return
        if self.size.height <= 0:
            return
        snap, cases = self.session.shown, len(self.session.cases)
        longest = max(cases, len(snap.state.tasks), len(snap.state.compilations)) \
            if snap else cases
        rows = grid_rows(self.size.height, longest, len(snap.state.calls) if snap else 0)
        if rows != self._rows:
            self._rows = rows
            self.styles.grid_rows = rows  # type: ignore[assignment]


    def filter(self, pane: str, needle: Needle | None) -> dict[str, Needle]:
        """Filter `pane` (None: no more), kept in the session; returns every filter now."""
        filters = self.session.filters
        if needle is None:
            filters.pop(pane, None)
        else:
            filters[pane] = needle
        self.pane(pane).needle = needle
        return dict(filters)

    def open_case(self, case: Path) -> None:
        """`case` is open: its Cases row is marked and selected; the timeline reads it."""
        cases = self.query_one(CasesPane)
        cases.active = case
        cases.select_case(case)
        self.query_one(TimelinePane).case = case

    def forget(self) -> None:
        """The one reset: no filter, no skeleton, a timeline that follows from nothing."""
        for pane in PANES:
            self.pane(pane).needle = None
        self.query_one(CallsPane).skeleton = None
        timeline = self.query_one(TimelinePane)
        timeline.hold_cursor = False
        timeline.total = 0

    # ---- what the cursors select

    def on_table_view_cursor_moved(self, message: TableView.CursorMoved) -> None:
        table = message.table
        if table.has_focus or (table.id == "calls" and self.session.selected_call_id is None):
            self.select_from(table, post=True)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        widget = event.widget
        if isinstance(widget, Pane) and widget.id in PANES:
            self.select_from(widget, post=True)

    def select_from(self, table: TableView, *, post: bool = False) -> bool:
        """What `table`'s cursor selects: the detail view's subject, and the call selected
        everywhere (True; `post`: say so up, as `CallSelected`)."""
        chosen = selection_in(table)
        detail = self.query_one(DetailView)
        if chosen.case_verdicts is not None:
            detail.case_verdicts = chosen.case_verdicts
        if chosen.subject is not None:
            detail.subject = chosen.subject
        if chosen.call_id is None:
            return False
        self.session.selected_call_id = self.query_one(LanesPane).selected_call_id = \
            chosen.call_id
        if isinstance(table, LanesPane):  # a lane selects its call everywhere
            self.query_one(CallsPane).select_key(chosen.call_id)
        if post:
            self.post_message(self.CallSelected(chosen.call_id))
        return True

    def early_call(self) -> SkeletonCall | None:
        """The selected call as the skeleton knows it, until the projection."""
        s, wanted = self.session, self.session.selected_call_id
        if s.shown is not None or wanted is None or s.skeleton is None or s.as_of is not None:
            return None
        early = self.query_one(CallsPane).skeleton_call_at_cursor()
        if early is None or early.call_id != wanted:
            early = s.skeleton_call(wanted)  # selected elsewhere (the timeline)
        return early

    def took_live(self, first: bool) -> bool:
        """A live projection is on screen: the skeleton goes; the first one selects the
        Calls cursor's call (True) where nothing (or the skeleton's call) was; after `e`
        into this case, its first effect_unknown call."""
        s, snap, calls = self.session, self.session.shown, self.query_one(CallsPane)
        if calls.skeleton is not None:
            calls.skeleton = None  # drawn from the snapshot now: let it go
        subject = self.query_one(DetailView).subject
        early = subject is not None and subject.kind == "early call"
        selected = first and (s.selected_call_id is None or early) and self.select_from(calls)
        if snap is not None and s.jump_to_effect_unknown and (
                snap.unknown_ids or snap.state.tool_effect_unknown_count):
            s.jump_to_effect_unknown = False  # once: never chains to another case
            calls.focus()
            calls.first_effect_unknown()
        return selected


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
