"""Time travel in proportion to what was in flight.

`Projector.snapshot_as_of` decides from each entity's first and last seq; only entities
whose events straddle the target seq are re-derived, each from its own events read
through an index (`events_call`, `events_compilation`, `events_task`). No second
projection is built or held.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.ledger.receipts import ReceiptLog
from codeai_tui.ledger.schema import COMPILATION_KINDS, TASK_KINDS, parse_payload
from codeai_tui.services.gather import fold_call_rows
from codeai_tui.workstate import (
    CallEvidence,
    CompilationEvidence,
    Projector,
    TaskEvidence,
    WorkState,
    fold_compilation_event,
    fold_task_event,
    receipts_before,
)
from codeai_tui.workstate.evidence import task_as_of


def _ignore(_problem: str) -> None:
    """Anomalies of a re-derived entity are already in the live projection, with seqs."""


class EntityHistory:
    """One entity's evidence as of a seq, from its own events (index reads). `tasks`: the
    live projection's task evidence, from which a task's own facts as of a seq are a
    filter (`task_as_of`): its events are read only where that cannot be (a task of
    10^4 calls in flight cost a table read per event of its calls: ~2 ms)."""

    def __init__(self, sql: EvidenceSQL,
                 tasks: Mapping[str, TaskEvidence] | None = None) -> None:
        self.sql = sql
        self.tasks = tasks if tasks is not None else {}

    def call(self, call_id: str, n: int, position: int) -> CallEvidence | None:
        return fold_call_rows(call_id, self.sql.call_rows(call_id, n), position)

    def compilation(self, comp_id: str, n: int) -> CompilationEvidence | None:
        comp: CompilationEvidence | None = None
        for seq, kind, task_id, payload in self.sql.compilation_rows(comp_id, n,
                                                                     sorted(COMPILATION_KINDS)):
            is_new = comp is None
            if comp is None:
                comp = CompilationEvidence(comp_id, task_id, seq)
            fold_compilation_event(comp, is_new, kind, seq, parse_payload(payload)[0] or {},
                                   _ignore)
        return comp

    def task(self, task_id: str, n: int) -> TaskEvidence:
        first, last = self.sql.task_span(task_id, n)
        live = self.tasks.get(task_id)
        derived = task_as_of(live, n, first, last) if live is not None else None
        if derived is not None:
            return derived
        task = TaskEvidence(task_id, first, last)
        for seq, kind, payload in self.sql.task_rows(task_id, n, sorted(TASK_KINDS)):
            fold_task_event(task, kind, seq, parse_payload(payload)[0] or {}, _ignore)
        return task


class CallHistory:
    """One call's evidence as of a seq from its own events, on a connection of its own
    behind a lock: what a verdict kept in columns derives its reason and evidence from,
    asked from any thread (the screen's, the follower's). Opened on first use, and again
    in a process forked since (a filter's scan): a connection and lock of its own there,
    the parent's left untouched."""

    def __init__(self, path: Path, stop: Callable[[], bool] | None = None) -> None:
        self._path = path
        self._stop = stop
        self._sql: EvidenceSQL | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._inherited: EvidenceSQL | None = None

    def __call__(self, call_id: str, n: int, position: int) -> CallEvidence | None:
        if self._pid != os.getpid():  # (a forked child runs one thread: no race here)
            # the parent's connection is kept, never closed here: only its process may
            self._inherited, self._sql = self._sql, None
            self._pid, self._lock = os.getpid(), threading.Lock()
        with self._lock:
            if self._sql is None:
                self._sql = EvidenceSQL(self._path, self._stop)
            return fold_call_rows(call_id, self._sql.call_rows(call_id, n), position)

    def close(self) -> None:
        with self._lock:
            if self._sql is not None:
                self._sql.close()
                self._sql = None


def state_as_of(projector: Projector, sql: EvidenceSQL, n: int,
                receipts: ReceiptLog) -> tuple[WorkState, ReceiptLog]:
    """The projection as of seq `n` from a live projector that has seen at least `n`,
    and the receipt log as of `n` it was checked against (cut once: the console shows
    that same log)."""
    history = EntityHistory(sql, projector.tasks)
    if projector.seq_dense:  # 1, 2, 3 ...: the count as of n is the last seq by n
        as_of_seq = min(n, projector.last_seq)
        count = as_of_seq
    else:
        count, as_of_seq = sql.count_upto(n)
    cut = receipts_before(receipts, sql.next_recorded_at(n))
    state = projector.snapshot_as_of(
        n, event_count=count, as_of_seq=as_of_seq, call_before=history.call,
        compilation_before=history.compilation, task_before=history.task, receipt_log=cut)
    return state, cut
