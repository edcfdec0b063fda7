"""Project a case directory: the fast path when the ledger allows it, else event by event.

Either way the verdicts come from workstate's ladder; `WorkState.gathered` (and the
`path_note` of a streamed document) says which path was taken and why.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

from codeai_tui.ledger.evidence_sql import EvidenceSQL, FastPathUnfit
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.receipts import ReceiptLog, read_receipts
from codeai_tui.ledger.schema import Event
from codeai_tui.services.gather import Gathered
from codeai_tui.services.heap import building
from codeai_tui.workstate import (
    Anomaly,
    CallState,
    CompilationState,
    ReceiptCheck,
    TaskState,
    WorkState,
    project,
)


def gather(sql: EvidenceSQL, as_of: int | None, receipts: ReceiptLog | None
           ) -> Gathered | str:
    """The fast path's projection, or why this ledger must be read event by event."""
    problem = sql.fast_path_problem()
    if problem is not None:
        return problem
    try:
        return Gathered(sql, as_of, receipts)
    except FastPathUnfit as exc:
        return str(exc)


def advancing(reader: LedgerReader, after: int = 0, stop_note: list[int] | None = None
              ) -> Iterator[Event]:
    """The ledger's events by key, stopping (never looping) when a page makes no progress:
    seqs that are not integers (a table whose seq is not the INTEGER PRIMARY KEY) can
    read back as a seq at or before the last one. `stop_note` gets the last seq read."""
    last = after
    while True:
        page = reader.read_after(last)
        moved = False
        for ev in page:
            if ev.seq > last:
                last = ev.seq
                moved = True
                yield ev
        if not moved:
            if page and stop_note is not None:
                stop_note.append(last)
            return


def project_events(case_dir: str | os.PathLike[str], as_of: int | None,
                   receipts: ReceiptLog | None, why: str) -> WorkState:
    """The oracle over the ledger, event by event."""
    stopped: list[int] = []
    with building(), LedgerReader(case_dir) as reader:
        state = project(advancing(reader, 0, stopped), receipts, as_of)
    if stopped:
        note = Anomaly(stopped[0], f"reading stopped after seq {stopped[0]}: the next rows' "
                                   "seqs are not integers after it")
        state = replace(state, anomalies=(*state.anomalies, note))
        why += f"; stopped after seq {stopped[0]}"
    return replace(state, gathered=f"events ({why})")


def project_case(case_dir: str | os.PathLike[str], as_of: int | None = None, *,
                 fast: bool = True) -> WorkState:
    """Project one case directory (raises LedgerError)."""
    receipts = read_receipts(case_dir)
    if not fast:
        return project_events(case_dir, as_of, receipts, "asked for")
    with building(), EvidenceSQL(case_dir) as sql:
        got = gather(sql, as_of, receipts)
        if isinstance(got, Gathered):
            try:
                return got.work_state()
            except FastPathUnfit as exc:
                got = str(exc)
    return project_events(case_dir, as_of, receipts, got)


@dataclass(slots=True)
class StreamedCase:
    """A projection whose calls are produced one by one (flat memory): iterate `calls`
    to the end before reading `rest()`."""

    as_of_seq: int
    event_count: int
    calls: Iterator[CallState]
    gathered: str
    _gathered: Gathered | None
    _state: WorkState | None

    def rest(self) -> tuple[tuple[Anomaly, ...], tuple[TaskState, ...],
                            tuple[CompilationState, ...], ReceiptCheck, dict[str, int]]:
        if self._gathered is not None:
            anomalies, tasks, comps, receipts = self._gathered.finish()
            return anomalies, tasks, comps, receipts, self._gathered.unknown_kinds
        st = self._state
        assert st is not None
        return st.anomalies, st.tasks, st.compilations, st.receipts, st.unknown_kinds


def stream_case(sql: EvidenceSQL, case_dir: str | os.PathLike[str],
                as_of: int | None = None) -> StreamedCase:
    """The projection of an open ledger, calls streamed (fast path) or all at once."""
    receipts = read_receipts(case_dir)
    got = gather(sql, as_of, receipts)
    if isinstance(got, Gathered):
        return StreamedCase(got.as_of_seq, got.event_count, got.calls(), "sql", got, None)
    st = project_events(case_dir, as_of, receipts, got)
    return StreamedCase(st.as_of_seq, st.event_count, iter(st.calls), st.gathered, None, st)
