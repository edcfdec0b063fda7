"""The skeleton's two reads, begun as soon as a launch can: the grouped read of every
call's kinds (`call_stage_rows`) and the scan of observations that say nothing was sent.

Both run inside SQLite, outside the GIL, each on a connection and thread of its own. The
console's head start begins them before it imports the projection or counts the events
(a traced launch on a 1M-event ledger began the grouped read at 0.36 s, after those two;
the ledger modules alone load by 0.06 s), and `build_skeleton` takes them over. This
module imports nothing from the projection, so beginning them costs only the ledger's
own imports.
"""

from __future__ import annotations

import threading

from codeai_tui.ledger.evidence_sql import EvidenceSQL, FastPathUnfit
from codeai_tui.ledger.schema import CALL_KINDS, KNOWN_KINDS, TOOL_KINDS

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

StageRow = tuple[str, int, int, int, int | None, int]


class StageReads:
    """Both reads of the ledger as of `limit`, under way in threads from construction:
    `result()` waits for them. Each opens a sibling of `sql` (stopped with it) and closes
    it when done; `sql` itself is free for its owner meanwhile."""

    def __init__(self, sql: EvidenceSQL, limit: int) -> None:
        self.limit = limit
        self._rows: list[StageRow] | None = None
        self._sent: set[str] | None = None
        self._errors: dict[str, BaseException] = {}
        self._threads = [threading.Thread(target=self._run, args=(sql, which), daemon=True,
                                          name=f"codeai-skeleton-{which}")
                         for which in ("grouped", "observations")]
        for thread in self._threads:
            thread.start()

    def _run(self, sql: EvidenceSQL, which: str) -> None:
        # a failure is kept for `result` (a thread's traceback would land on the
        # console's screen)
        try:
            with sql.sibling() as own:
                own.for_one_pass()
                if which == "grouped":
                    self._rows = own.call_stage_rows(self.limit, CODES)
                else:
                    self._sent = own.calls_observed_mentioning(self.limit, "sent")
        except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
            self._errors[which] = exc

    def result(self) -> tuple[list[StageRow], set[str]]:
        """The grouped rows and the calls whose observations mention "sent". Raises the
        grouped read's own error (a LedgerError when interrupted), or FastPathUnfit when
        only the observations could not be read."""
        for thread in self._threads:
            thread.join()
        if self._rows is None:
            raise self._errors.get("grouped") or FastPathUnfit("the grouped read gave nothing")
        if self._sent is None:
            raise FastPathUnfit("the observations could not be read")
        return self._rows, self._sent
