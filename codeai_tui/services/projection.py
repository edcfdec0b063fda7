"""Project a case directory: the fast path when the ledger allows it, else event by event.

Either way the verdicts come from workstate's ladder; `WorkState.gathered` (and the
`path_note` of a streamed document) says which path was taken and why.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, replace

from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.receipts import ReceiptLog, read_receipts
from codeai_tui.services.gather import ALL_SEQS, Gathered
from codeai_tui.workstate import (
    Anomaly,
    CallState,
    CompilationState,
    ReceiptCheck,
    TaskState,
    WorkState,
    project,
)


def fast_path_refusal(sql: EvidenceSQL, as_of: int | None = None) -> str | None:
    """Why this ledger must be read event by event, or None."""
    problem = sql.fast_path_problem()
    if problem is not None:
        return problem
    odd = sql.odd_rows(ALL_SEQS if as_of is None else as_of)
    if odd:
        return f"{odd} row(s) hold cells of types LEDGER.md does not give them"
    return None


def project_events(case_dir: str | os.PathLike[str], as_of: int | None,
                   receipts: ReceiptLog | None, why: str) -> WorkState:
    """The oracle over the ledger, event by event."""
    with LedgerReader(case_dir) as reader:
        state = project(reader.iter_events(0), receipts, as_of)
    return replace(state, gathered=f"events ({why})")


def project_case(case_dir: str | os.PathLike[str], as_of: int | None = None, *,
                 fast: bool = True) -> WorkState:
    """Project one case directory (raises LedgerError)."""
    receipts = read_receipts(case_dir)
    if not fast:
        return project_events(case_dir, as_of, receipts, "asked for")
    with EvidenceSQL(case_dir) as sql:
        why = fast_path_refusal(sql, as_of)
        if why is None:
            return Gathered(sql, as_of, receipts).work_state()
    return project_events(case_dir, as_of, receipts, why)


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
    why = fast_path_refusal(sql, as_of)
    if why is None:
        g = Gathered(sql, as_of, receipts)
        return StreamedCase(g.as_of_seq, g.event_count, g.calls(), "sql", g, None)
    st = project_events(case_dir, as_of, receipts, why)
    return StreamedCase(st.as_of_seq, st.event_count, iter(st.calls), st.gathered, None, st)
