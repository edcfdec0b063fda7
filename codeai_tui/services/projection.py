"""Project a case directory: the fast path when the ledger allows it, else event by event.

Either way the verdicts come from workstate's ladder; `WorkState.gathered` (and the
`path_note` of a streamed document) says which path was taken and why.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from codeai_tui.ledger.errors import INDEX_DISAGREES
from codeai_tui.ledger.evidence_sql import EvidenceSQL, FastPathUnfit
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.receipts import ReceiptLog, read_receipts, read_receipts_later
from codeai_tui.services.forked import HelperPlan
from codeai_tui.services.gather import Gathered, Sharing
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
from codeai_tui.workstate.evidence import ReceiptIndex, ledger_anomalies
from codeai_tui.workstate.verdicts import ToolCounts

# A ledger whose index disagrees with its table (ledger/table_check.py): shown first, at
# seq 0 (the whole ledger), above verdicts read from the table itself.
INDEX_ANOMALY = Anomaly(0, INDEX_DISAGREES)


def flag_index(anomalies: list[Anomaly]) -> None:
    """Put the index's disagreement with the table first among a projector's anomalies
    (once)."""
    if INDEX_ANOMALY not in anomalies:
        anomalies.insert(0, INDEX_ANOMALY)


def gather(sql: EvidenceSQL, as_of: int | None, receipts: ReceiptLog | None,
           share: Sharing | None = None, *, plan: HelperPlan | None = None,
           load_receipts: Callable[[], ReceiptLog] | None = None) -> Gathered | str:
    """The fast path's projection, or why this ledger must be read event by event
    (`plan`, `load_receipts`: see Gathered)."""
    try:
        problem = sql.fast_path_problem()
        if problem is not None:
            return problem
        return Gathered(sql, as_of, receipts, share=share, plan=plan,
                        load_receipts=load_receipts)
    except FastPathUnfit as exc:
        return str(exc)


def project_events(case_dir: str | os.PathLike[str], as_of: int | None,
                   receipts: ReceiptLog | None, why: str) -> WorkState:
    """The oracle over the ledger, event by event (the reader pages rows whose seq is
    not an integer once, and stops where paging cannot move)."""
    with building(), LedgerReader(case_dir) as reader:
        state = project(reader.iter_events(0), receipts, as_of)
        flagged = ledger_anomalies(reader.schema.notes)
    if why == INDEX_DISAGREES:
        flagged = (INDEX_ANOMALY, *flagged)
    return replace(state, anomalies=(*flagged, *state.anomalies), gathered=f"events ({why})")


def project_case(case_dir: str | os.PathLike[str], as_of: int | None = None, *,
                 fast: bool = True, receipts: ReceiptLog | None = None) -> WorkState:
    """Project one case directory (raises LedgerError); `receipts`: the case's log when
    the caller has read it already."""
    if receipts is None:
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
    """A projection whose calls are produced one by one (flat memory): iterate `calls`,
    or `call_lines`, to the end before reading `rest()`."""

    as_of_seq: int
    event_count: int
    calls: Iterator[CallState]
    gathered: str
    _gathered: Gathered | None
    _state: WorkState | None
    _counts: ToolCounts = field(default_factory=ToolCounts)
    receipt_log: ReceiptLog | None = None  # the case's log as read (before any cut)

    def call_lines(self, render: Callable[[CallState], str],
                   plan: HelperPlan | None = None) -> Iterator[str]:
        """`render(call)` per call in order, instead of iterating `calls`; on the fast
        path with `plan`, a helper process renders half of them (services/forked.py).
        The tool counts are kept meanwhile (`tool_counts`)."""
        if self._gathered is not None:
            yield from self._gathered.call_lines(render, plan)
            return
        for call in self.calls:
            self._counts.add(call)
            yield render(call)

    @property
    def tool_counts(self) -> ToolCounts:
        """The document's counts over the calls produced so far."""
        return self._gathered.tool_counts if self._gathered is not None else self._counts

    def receipt_index(self) -> ReceiptIndex | None:
        """The receipts as of the cut-off, for the calls' evidence (before `calls`)."""
        if self._gathered is not None:
            return self._gathered.receipt_index()
        assert self._state is not None
        return self._state.receipts.index

    def rest(self) -> tuple[tuple[Anomaly, ...], tuple[TaskState, ...],
                            tuple[CompilationState, ...], ReceiptCheck, dict[str, int]]:
        if self._gathered is not None:
            anomalies, tasks, comps, receipts = self._gathered.finish()
            return anomalies, tasks, comps, receipts, self._gathered.unknown_kinds
        st = self._state
        assert st is not None
        return st.anomalies, st.tasks, st.compilations, st.receipts, st.unknown_kinds


def stream_case(sql: EvidenceSQL, case_dir: str | os.PathLike[str],
                as_of: int | None = None, plan: HelperPlan | None = None) -> StreamedCase:
    """The projection of an open ledger, calls streamed (fast path) or all at once.
    `plan`: this process may fork helpers (see Gathered). The receipt log is read
    before the ledger's prefix is pinned (a receipt's attempt.started is written before
    its request is sent, so each receipt's attempt is in it), and parsed while the fast
    path's first scans run."""
    parse = read_receipts_later(case_dir)
    read: list[ReceiptLog] = []

    def load_receipts() -> ReceiptLog:
        read.append(parse())
        return read[0]

    got = gather(sql, as_of, None, plan=plan, load_receipts=load_receipts)
    if isinstance(got, Gathered):
        return StreamedCase(got.as_of_seq, got.event_count, got.calls(), "sql", got, None,
                            receipt_log=got.receipt_log)
    log = read[0] if read else parse()
    st = project_events(case_dir, as_of, log, got)
    return StreamedCase(st.as_of_seq, st.event_count, iter(st.calls), st.gathered, None, st,
                        receipt_log=log)
