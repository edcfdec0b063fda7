"""2 Tasks: each task's next operation and the subject that decides it."""

from __future__ import annotations

from codeai_tui.app.widgets.cells import cell
from codeai_tui.app.widgets.pane import Pane
from codeai_tui.app.widgets.sources import LazySource
from codeai_tui.app.widgets.table import Column, Row
from codeai_tui.workstate import NextOperation, TaskState

TASK_COLUMNS = [Column("task", 10, ident=True), Column("next operation", 17), Column("subject", 10, ident=True),
                Column("title", 30)]


def task_row(task: TaskState) -> Row:
    tone = "" if task.next_operation is NextOperation.NONE else "warn"
    return Row(task.task_id, (cell(task.task_id), task.next_operation.value,
                              cell(task.subject_id or ""), cell(task.title or "")), tone)


class TasksPane(Pane):
    TITLE = "Tasks"
    KEY = "2"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(TASK_COLUMNS, empty_text="no tasks", **kwargs)  # type: ignore[arg-type]

    def paint(self) -> None:
        tasks = self.snapshot.state.tasks if self.snapshot else ()
        self.set_source(LazySource(tasks, task_row, lambda t: t.task_id,
                                   self.rows_filtered(tasks, task_row)))
        super().paint()

    def task_at_cursor(self) -> TaskState | None:
        source = self.source
        return source.item_at(self.cursor) if isinstance(source, LazySource) else None
