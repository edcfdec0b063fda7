"""Quiet tasks kept in columns instead of Python objects.

A task whose calls are all kept in columns (settled, or at rest: `columns.rests`), with
no compilation and no fact but its title written (no objective, claim, acceptance or
completion), and no event for a while, keeps only its seqs, its title, its calls' run
of positions and its verdict's next operation here (~40 bytes a task, where its
evidence, verdict and its calls' tally as Python objects cost ~800: a task in ten
calls while following). Its verdict is made when read (`ColumnTaskState`): judged by
the one ladder (`classify_task`) from its evidence made again from these columns and
its calls' verdicts read in theirs. The columns are only appended to and a task's
calls' slots are set once, so a snapshot that reads a task here sees what it saw when
it was taken; the projector takes a task back to objects when an event names it again.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence

from codeai_tui.ledger.blocks import appended
from codeai_tui.ledger.text_column import OptionalTextColumn
from codeai_tui.workstate.calls_view import KeptOrRead
from codeai_tui.workstate.columns import SettledCalls
from codeai_tui.workstate.evidence import TaskEvidence
from codeai_tui.workstate.ladder import TaskRollup, classify_task
from codeai_tui.workstate.verdicts import Reasoned, TaskState
from codeai_tui.workstate.vocab import NextOperation

_OPERATIONS = tuple(NextOperation)


def task_rests(task: TaskEvidence) -> bool:
    """True when the columns hold all of `task`'s own evidence: its title (or none)
    written once, and no objective, claim, acceptance or completion."""
    return not (task.rewritten or task.objective_seq or task.claimed_seq or task.accepted
                or task.completed or task.objective is not None or task.claimed_by is not None)


class RestingTasks:
    """The columns of quiet tasks, by slot (order of resting). `ids`: every task's id by
    task position (the projector's, only appended to); `calls`, `call_slots`: the
    settled calls' columns and each call position's slot there (set once)."""

    __slots__ = ("call_slots", "calls", "counts", "firsts", "ids", "lasts", "operations",
                 "positions", "starts", "title_seqs", "titles")

    def __init__(self, ids: Sequence[str], calls: SettledCalls, call_slots: array[int]
                 ) -> None:
        self.ids = ids
        self.calls = calls
        self.call_slots = call_slots
        self.positions = array("i")  # the task's position (its id in `ids`)
        # seqs: 4 bytes each while they fit, widened where one does not (`blocks.appended`)
        self.firsts: array[int] | list[int] = array("i")
        self.lasts: array[int] | list[int] = array("i")
        self.title_seqs: array[int] | list[int] = array("i")
        self.titles = OptionalTextColumn()
        self.operations = bytearray()  # index into NextOperation
        # the task's calls: positions start, start + 1, ... (count of them)
        self.starts = array("i")
        self.counts = array("i")

    def __len__(self) -> int:
        return len(self.positions)

    def add(self, position: int, task: TaskEvidence, operation: NextOperation, start: int,
            count: int) -> int:
        """Keep `task` (at `position`; `task_rests`), judged `operation`, whose calls are
        the run of `count` positions from `start`, all in `calls`. Returns its slot."""
        slot = len(self.positions)
        self.positions.append(position)
        for column, value in (("firsts", task.first_seq), ("lasts", task.last_seq),
                              ("title_seqs", task.title_seq)):
            setattr(self, column, appended(getattr(self, column), value))
        self.titles.append(task.title)
        self.operations.append(_OPERATIONS.index(operation))
        self.starts.append(start)
        self.counts.append(count)
        return slot

    def evidence(self, slot: int) -> TaskEvidence:
        """The task's own evidence, as it was when it came to rest."""
        return TaskEvidence(self.ids[self.positions[slot]], self.firsts[slot],
                            self.lasts[slot], self.titles[slot], title_seq=self.title_seqs[slot])

    def rollup(self, slot: int) -> TaskRollup | None:
        """What the task's calls give its verdict, read from their columns in first-seq
        order (None: it has no call, so nothing to roll up)."""
        count = self.counts[slot]
        if not count:
            return None
        rollup, state, slots = TaskRollup(), self.calls.state, self.call_slots
        start = self.starts[slot]
        for pos in range(start, start + count):
            rollup.add(state(slots[pos]))
        return rollup

    def state(self, slot: int) -> ColumnTaskState:
        return ColumnTaskState(self, slot)


class ColumnTaskState(TaskState):
    """A quiet task's verdict read from the columns: its id, next operation, title and
    seqs without an object per task; its subject and reason judged by the ladder from
    the columns on first read."""

    __slots__ = ("_made", "_slot", "_tasks")

    def __init__(self, tasks: RestingTasks, slot: int) -> None:  # noqa: D107
        object.__setattr__(self, "_tasks", tasks)
        object.__setattr__(self, "_slot", slot)
        object.__setattr__(self, "_made", None)

    def _judged(self) -> TaskState:
        made = self._made
        if made is None:
            tasks, slot = self._tasks, self._slot
            made = classify_task(tasks.evidence(slot), tasks.rollup(slot))
            object.__setattr__(self, "_made", made)
        return made

    @property  # type: ignore[override]
    def task_id(self) -> str:
        return self._tasks.ids[self._tasks.positions[self._slot]]

    @property  # type: ignore[override]
    def next_operation(self) -> NextOperation:
        return _OPERATIONS[self._tasks.operations[self._slot]]

    @property  # type: ignore[override]
    def subject_id(self) -> str | None:
        return self._judged().subject_id

    @property  # type: ignore[override]
    def because(self) -> str | Reasoned:
        return self._judged().because

    @property  # type: ignore[override]
    def title(self) -> str | None:
        return self._tasks.titles[self._slot]

    @property  # type: ignore[override]
    def first_seq(self) -> int:
        return self._tasks.firsts[self._slot]

    @property  # type: ignore[override]
    def last_seq(self) -> int:
        return self._tasks.lasts[self._slot]

    @property  # type: ignore[override]
    def follow_up_of(self) -> str | None:
        return self._judged().follow_up_of


class TasksView(KeptOrRead[TaskState]):
    """A snapshot's tasks, those not held as objects read from the columns of quiet
    tasks (by task position)."""

    __slots__ = ()

    noun = "tasks"

    def __init__(self, kept: dict[int, TaskState], count: int, tasks: RestingTasks,
                 slots: array[int]) -> None:
        super().__init__(kept, count, tasks.state, slots)


def tasks_of(kept: Mapping[int, TaskState], count: int, tasks: RestingTasks | None,
             slots: array[int]) -> tuple[TaskState, ...] | TasksView:
    """A snapshot's `count` tasks from the verdicts held as objects (`kept`, by task
    position: copied) and the columns: a plain tuple while no task rests there."""
    if tasks is None or not len(tasks):
        return tuple(map(kept.__getitem__, range(count)))
    return TasksView(dict(kept), count, tasks, slots)


__all__ = ["ColumnTaskState", "RestingTasks", "TasksView", "task_rests", "tasks_of"]
