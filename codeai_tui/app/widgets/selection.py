"""What a pane's cursor selects: the detail view's subject, and the call it selects
everywhere (the Calls pane, the verdict line, the lanes), pane by pane in one place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeai_tui.app.widgets.calls_pane import CallsPane
from codeai_tui.app.widgets.cases_pane import CasesPane
from codeai_tui.app.widgets.compilations_pane import CompilationsPane
from codeai_tui.app.widgets.detail_view import Subject
from codeai_tui.app.widgets.lanes_pane import LanesPane
from codeai_tui.app.widgets.receipts_pane import ReceiptsPane
from codeai_tui.app.widgets.table import TableView
from codeai_tui.app.widgets.tasks_pane import TasksPane
from codeai_tui.app.widgets.timeline_pane import TimelinePane
from codeai_tui.console.severity import CaseVerdict


@dataclass(frozen=True)
class Selection:
    """`subject`: what the detail view shows (None: what it shows stays); `call_id`: the
    call selected everywhere (None: the last one stays); `case_verdicts`: the Cases
    pane's verdicts, for a case's detail."""

    subject: Subject | None = None
    call_id: str | None = None
    case_verdicts: dict[Path, CaseVerdict] | None = None


def selection_in(table: TableView) -> Selection:
    """What `table`'s cursor row selects."""
    if isinstance(table, (LanesPane, CallsPane)):
        call = table.call_at_cursor()
        if call is not None:
            return Selection(Subject("call", call), call.call_id)
        if isinstance(table, LanesPane):
            task = table.task_at_cursor()
            return Selection(Subject("task", task) if task is not None else None)
        early = table.skeleton_call_at_cursor()
        # before the projection: say what is known, and that the rest is read
        return Selection(Subject("early call", early), early.call_id) \
            if early is not None else Selection()
    if isinstance(table, TimelinePane):
        ev = table.event_at_cursor()
        if ev is not None:
            return Selection(Subject("event", ev), ev.call_id or None)
        return Selection(Subject("loading", table.cursor + 1) if table.row_count else None)
    if isinstance(table, CasesPane):
        case = table.case_at_cursor()
        return Selection(Subject("case", case), case_verdicts=dict(table.verdicts)) \
            if case is not None else Selection()
    item: object = None
    kind = ""
    if isinstance(table, TasksPane):
        item, kind = table.task_at_cursor(), "task"
    elif isinstance(table, CompilationsPane):
        item, kind = table.compilation_at_cursor(), "compilation"
    elif isinstance(table, ReceiptsPane):
        item, kind = table.receipt_at_cursor(), "receipt"
    return Selection(Subject(kind, item) if item is not None else None)
