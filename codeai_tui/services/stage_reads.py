"""The skeleton's two reads, begun as soon as a launch can: the grouped read of every
call's kinds (`call_stage_rows`) and the scan of observations that say nothing was sent.

Both run inside SQLite, outside the GIL, each on a connection and thread of its own; on
a big ledger the grouped read is split in two by call id, each part read by a child
process (two threads' grouped reads barely overlap: ledger/grouped_worker.py). The
console's head start begins them before it imports the projection or counts the events
(a traced launch on a 1M-event ledger began the grouped read at 0.36 s, after those two;
the ledger modules alone load by 0.06 s), and `build_skeleton` takes them over. This
module imports nothing from the projection, so beginning them costs only the ledger's
own imports.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

from codeai_tui.ledger.errors import INDEX_DISAGREES
from codeai_tui.ledger.evidence_sql import ODD_KIND, EvidenceSQL, FastPathUnfit
from codeai_tui.ledger.grouped_worker import GroupedChild
from codeai_tui.ledger.schema import CALL_KINDS, KNOWN_KINDS, TOOL_KINDS
from codeai_tui.ledger.stage_columns import StageColumns

CALL_EVENT_KINDS = tuple(sorted(CALL_KINDS | TOOL_KINDS
                                | {k for k in KNOWN_KINDS if k.startswith("attempt.")}))

# one bit per kind whose presence a rung reads (call.requested and attempt.started: 0,
# the started seq is its own column); attempt kinds below 32 (evidence_sql relies on
# observed = 1 and reconciled = 16), call kinds from 32
OBS, INT, RD, COMP, REC = 1, 2, 4, 8, 16
RESUMED, CALL_DONE, PREP, MANIFEST = 32, 64, 128, 256
CODES: tuple[tuple[str, int], ...] = tuple(
    (k, {"attempt.observed": OBS, "attempt.interpreted": INT,
         "attempt.retry_decided": RD, "attempt.completed": COMP,
         "attempt.reconciled": REC, "call.resumed": RESUMED,
         "call.completed": CALL_DONE, "call.preparation_failed": PREP,
         "call.manifest": MANIFEST}.get(k, 0))
    for k in CALL_EVENT_KINDS)

# from this many events on, the grouped read is split in two by call id, each part read
# by a child process (ledger/grouped_worker.py): 1.3-1.5 s instead of 2.1-2.6 s on the
# 1M-event ledger; starting one costs ~0.1 s, more than a small ledger's whole read
SPLIT_MIN_EVENTS = 200_000


class StageReads:
    """Both reads of the ledger as of `limit`, under way from construction: `result()`
    waits for them. The observation scan and an unsplit grouped read run in threads,
    each on a sibling of `sql` (stopped with it); a split grouped read runs in two child
    processes, whose rows `result()` unpickles in its caller's thread. `sql` itself is
    free for its owner meanwhile (and may be closed). `close()` kills children whose
    rows are not wanted (they are killed too when this object is collected)."""

    def __init__(self, sql: EvidenceSQL, limit: int) -> None:
        self.limit = limit
        self._sql = sql  # (for siblings: its path and stop; its own connection is not used)
        self._sent: set[str] | None = None
        self._table_print: tuple[int, int, int] | None = None
        self._rows: StageColumns | None = None
        self._errors: dict[str, BaseException] = {}
        self._parts: list[tuple[object, object]] = []
        if limit >= SPLIT_MIN_EVENTS:
            try:
                middle = sql.middle_call_id(limit)
            except Exception:  # noqa: BLE001 - (an id not UTF-8...): one read, as before
                middle = None
            if middle is not None:
                self._parts = [(None, middle), (middle, None)]
        self._children = [GroupedChild.start(sql.path, limit, CODES, ids)
                          for ids in self._parts]
        weakref.finalize(self, _close_all, list(self._children))
        jobs = [("observations", self._observations)]
        if not self._parts:
            jobs.append(("grouped", self._unsplit))
        self._threads = [threading.Thread(target=self._run, args=(which, job), daemon=True,
                                          name=f"codeai-skeleton-{which}")
                         for which, job in jobs]
        for thread in self._threads:
            thread.start()

    def _run(self, which: str, job: Callable[[], None]) -> None:
        # a failure is kept for `result` (a thread's traceback would land on the
        # console's screen)
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
            self._errors[which] = exc

    def _observations(self) -> None:
        """The observation scan, which also takes the table's print of the call events
        (ledger/table_check.py): `result` compares it with the grouped read's."""
        with self._sql.sibling() as own:
            own.for_one_pass()
            self._sent, self._table_print = own.observed_with_table_print(
                self.limit, "sent", CALL_EVENT_KINDS)

    def _unsplit(self) -> None:
        self._rows = self._grouped((None, None))

    def _grouped(self, ids: tuple[object, object]) -> StageColumns:
        with self._sql.sibling() as own:
            own.for_one_pass()
            return StageColumns.of(own.call_stage_rows(self.limit, CODES, ids))

    def _split_rows(self) -> StageColumns:
        """The children's rows joined (read in first-seq order); a part a child could
        not give is read here (on a sibling connection), where any error of the
        ledger's is met."""
        parts: list[StageColumns] = []
        for i, ids in enumerate(self._parts):
            child, self._children[i] = self._children[i], None
            part = child.columns(self._sql.stop_requested) if child is not None else None
            parts.append(part if part is not None else self._grouped(ids))
        return StageColumns.joined(parts)

    def result(self) -> tuple[StageColumns, set[str]]:
        """The grouped rows and the calls whose observations mention "sent". Raises the
        grouped read's own error (a LedgerError when interrupted), or FastPathUnfit when
        only the observations could not be read, or the index disagrees with the table
        (its stages would be the index's, not the ledger's)."""
        try:
            rows = self._split_rows() if self._parts else None
        finally:
            self.close()
        for thread in self._threads:
            thread.join()
        if rows is None:
            if self._rows is None:
                raise self._errors.get("grouped") or FastPathUnfit(
                    "the grouped read gave nothing")
            rows = self._rows
        if self._sent is None:
            raise FastPathUnfit("the observations could not be read")
        if not rows.odd & ODD_KIND and rows.index_print != self._table_print:
            # (an odd cell: the skeleton refuses the ledger anyway)
            raise FastPathUnfit(INDEX_DISAGREES)
        return rows, self._sent

    def close(self) -> None:
        """Kill the children still reading (their rows are not wanted)."""
        _close_all(self._children)
        self._children = [None] * len(self._children)


def _close_all(children: list[GroupedChild | None]) -> None:
    for child in children:
        if child is not None:
            child.close()
