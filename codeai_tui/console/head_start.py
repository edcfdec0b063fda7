"""A case's first open and skeleton read, begun before the console has loaded.

Launching the console on a 1M-event ledger spends ~0.5 s importing Textual and mounting
the screen, and only then does the follower thread open the ledger (its event count,
~0.3 s) and read the skeleton (one grouped read, 1.2-2 s). Both reads run inside
SQLite, which lets go of the GIL, so on a second core they overlap the imports and the
mount: `create_app` begins a HeadStart before it imports Textual, and the follower
thread takes what it made instead of opening the case again.

Within the head start the skeleton's reads come first (services/stage_reads.py, which
needs only the ledger's modules): importing the model and counting the events would
otherwise delay them by ~0.3 s. A failed head start reports nothing: the follower then
opens the case the usual way, which says what is wrong in the console's own words. This
module imports nothing heavy at load; the rest is imported in the head start's thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from codeai_tui.ledger.case import named_case

if TYPE_CHECKING:
    from codeai_tui.console.model import CaseFollower, Skeleton
    from codeai_tui.services.stage_reads import StageReads


def single_case(path: str | os.PathLike[str]) -> Path | None:
    """The case directory `path` names when it names one case (find_cases' own rule),
    else None: a bundle opens its cases one at a time, later."""
    try:
        return named_case(Path(path))
    except OSError:  # (a directory it may not search): the console's own open says so
        return None


class HeadStart:
    """Opens `case` and reads its skeleton in a thread of its own; `take` hands the
    follower and skeleton over once, `close` releases them if no one took them."""

    def __init__(self, case: Path) -> None:
        self.case = case
        self._lock = threading.Lock()
        self._cancelled = False
        self._taker_stop: Callable[[], bool] | None = None
        self._made: tuple[CaseFollower, Skeleton | None] | None = None
        self._taken = False
        self._thread = threading.Thread(target=self._run, name="codeai-head-start",
                                        daemon=True)
        self._thread.start()

    def _stopped(self) -> bool:
        """Reads end within a millisecond once this is true (CaseFollower's `stop`):
        on `close`, or when the thread that takes the result is told to stop."""
        if self._cancelled:
            return True
        taker = self._taker_stop
        return taker is not None and taker()

    def _run(self) -> None:
        # whatever goes wrong here, the follower thread meets again when it opens the
        # case itself, and reports it there; a thread's traceback would land on the
        # terminal under the screen
        reads = self._begin_reads()
        from codeai_tui.console.model import CaseFollower

        try:
            follower = CaseFollower(self.case, self._stopped)
        except Exception:  # noqa: BLE001 - see above
            if reads is not None:
                reads.close()
            return
        try:
            skeleton = follower.skeleton(reads)
        except Exception:  # noqa: BLE001 - see above
            follower.close()
            return
        with self._lock:
            if self._cancelled:
                follower.close()
                return
            self._made = (follower, skeleton)

    def _begin_reads(self) -> StageReads | None:
        """The skeleton's reads, begun before the projection's modules load and the
        events are counted (services/stage_reads.py); None if the ledger will not open."""
        from codeai_tui.ledger.evidence_sql import EvidenceSQL
        from codeai_tui.services.stage_reads import StageReads

        try:
            with EvidenceSQL(self.case, self._stopped) as sql:
                return StageReads(sql, sql.max_seq())  # (each read opens its own)
        except Exception:  # noqa: BLE001 - see _run
            return None

    def take(self, case: Path, stop: Callable[[], bool]
             ) -> tuple[CaseFollower, Skeleton | None] | None:
        """The follower (stopped by `stop` from now on) and skeleton for `case`, once;
        None when this head start is for another case, failed, was stopped or was
        taken already. Waits for the head start to finish; `stop` ends that wait."""
        if os.path.abspath(case) != os.path.abspath(self.case):
            return None
        with self._lock:
            if self._taken:
                return None
            self._taken = True
            self._taker_stop = stop
        self._thread.join()
        with self._lock:
            made, self._made = self._made, None
        if made is None:
            return None
        follower, skeleton = made
        follower.stop = stop
        if stop():
            follower.close()
            return None
        return follower, skeleton

    def close(self) -> None:
        """Stop the head start and release what no one took (its connections)."""
        with self._lock:
            self._cancelled = True
            self._taken = True
            made, self._made = self._made, None
        if made is not None:
            made[0].close()
