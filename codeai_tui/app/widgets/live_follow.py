"""The follow of the open case: its poller, its watcher and its time travel.

A widget with nothing to draw that owns the workers reading the open case's ledger, so
they end with it (timers and workers belong to the widget that uses them). Attributes
down (`following`), calls down (`open`, `wake`, `travel`), small dataclass messages up
(app/messages.py): the screen never reaches into a worker.

The follow poll is an async worker on aiosqlite (`_watch`); what it finds is projected
by a thread on purpose: the projection is CPU-bound Python (a 1M-event catch-up is
seconds of work) that in an async worker would run on the event loop and freeze the
screen.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

from textual import work
from textual.widget import Widget
from textual.worker import Worker, WorkerState, get_current_worker

from codeai_tui.app import messages as m
from codeai_tui.app.constants import POLL_S, REOPEN_S
from codeai_tui.app.widgets.lifecycle import finish_own_workers
from codeai_tui.console.evidence import warm
from codeai_tui.console.head_start import HeadStart
from codeai_tui.console.model import (
    CaseFollower,
    CaseSnapshot,
    Skeleton,
    TimeMachine,
    freeze_heap,
    receipts_stamp,
    release_frozen,
)
from codeai_tui.console.session import CaseSession
from codeai_tui.console.severity import case_verdict
from codeai_tui.ledger import LedgerError, LedgerProblem
from codeai_tui.ledger.areader import AsyncLedgerReader
from codeai_tui.services.glibc_malloc import (
    FOLLOW_MMAP_THRESHOLD,
    fix_mmap_threshold,
    release_free_memory,
)

PROGRESS_EVERY_S = 0.1


class _Held:
    """What one follow run holds: the follower its time machine travels from (None
    while it is closed, between a trouble and the reopen), and which file it read."""

    def __init__(self) -> None:
        self.follower: CaseFollower | None = None
        self.identity: tuple[int, int] | None = None

    def get(self) -> CaseFollower | None:
        return self.follower


class LiveFollow(Widget):
    """The one poller of the open case's ledger, the watcher that wakes it, and the
    projections as of a seq (time travel)."""

    DEFAULT_CSS = "LiveFollow { display: none; }"

    def __init__(self, session: CaseSession, head_start: HeadStart | None = None, *,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.session = session  # follow or pause, and time travel, are kept there
        # the first case's open and skeleton, begun before Textual loaded (taken once)
        self._head_start = head_start
        self.following = True  # (read by the workers: False holds the panes still)
        self.case: Path | None = None
        self._wake = threading.Event()
        self._watching = False  # the aiosqlite watcher is polling (else the thread does)
        self._watch_reader: AsyncLedgerReader | None = None
        self._closing = False

    def open(self, case: Path) -> TimeMachine:
        """Follow `case` from now on (the last case's workers end); returns the time
        machine bound to this case's live follower."""
        self.case = case
        self._wake.set()
        self._wake = threading.Event()
        held = _Held()
        self._follow(case, self._wake, held)
        self.run_worker(self._watch(case, self._wake), group="watch", exclusive=True,
                        exit_on_error=False)
        return TimeMachine(case, held.get)

    def wake(self) -> None:
        """Poll the ledger now (an action wrote, or following resumed)."""
        self._wake.set()

    def toggle(self) -> None:
        """Live or paused, as the session says; following again polls at once."""
        self.session.toggle_follow()
        self.following = self.session.following
        if self.following:
            self.wake()  # poll now rather than at the next tick

    def _stop_for(self, worker: Worker[object]) -> Callable[[], bool]:
        """When reads of `worker` must end: it was cancelled, or the console quits (a
        closure over the worker: the readers may ask from another thread)."""
        return lambda: worker.is_cancelled or self._closing

    async def on_unmount(self) -> None:
        """Stop the follower and let the watcher end by itself, closing its aiosqlite
        connection while the event loop still runs: a worker cancelled inside an
        aiosqlite call leaves a connection that later answers into a closed loop."""
        self._closing = True
        self._wake.set()
        if self._head_start is not None:
            self._head_start.close()  # (nothing to release once the follower took it)
        await finish_own_workers(self, ("watch",))
        reader, self._watch_reader = self._watch_reader, None
        if reader is not None:
            await reader.close()
        # the collector as the console found it: a process that opens another console
        # (the tests do) must not pay a full collection for this one's projection
        release_frozen(collect=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.post_message(m.WorkerFailed(event.worker.group, event.worker.error))

    # ---- following

    def _progress(self, case: Path, label: str = "projecting") -> Callable[[int, int], None]:
        """A progress callback posting at most every PROGRESS_EVERY_S."""
        last = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last >= PROGRESS_EVERY_S:
                last = now
                self.post_message(m.ProjectionProgress(case, done, total, label))
        return progress

    def _ready(self, case: Path, snap: CaseSnapshot) -> None:
        warm(snap)  # the receipts beside the verdicts, indexed here, not when drawn
        self.post_message(m.SnapshotReady(case, snap, case_verdict(snap.state,
                                                                   snap.event_count)))

    def _take_head_start(self, case: Path, stopped: Callable[[], bool]
                         ) -> tuple[CaseFollower, Skeleton | None] | None:
        head_start, self._head_start = self._head_start, None
        if head_start is None:
            return None
        try:
            return head_start.take(case, stopped)
        finally:
            head_start.close()  # releases what was not taken

    def _open_follower(self, case: Path, held: _Held, stopped: Callable[[], bool]
                       ) -> CaseFollower:
        """Open (or take) the follower, post the ledger's first facts and its skeleton,
        then project in pages."""
        got = self._take_head_start(case, stopped)
        follower = got[0] if got is not None else CaseFollower(case, stopped)
        held.follower = follower
        try:
            if held.identity is not None and follower.identity != held.identity:
                self.post_message(m.LedgerReplaced(case))
            held.identity = follower.identity
            self.post_message(m.CaseOpened(case, follower.event_count, follower.max_seq,
                                           follower.last_recorded_at))
            skeleton = got[1] if got is not None else follower.skeleton()
            if skeleton is not None and not stopped():
                self.post_message(m.SkeletonReady(case, skeleton))
            # the screen holds the skeleton until the projection replaces it; this loop
            # runs all session: it must not keep it (~5 MB at 137,000 calls)
            skeleton = got = None
            follower.catch_up(self._progress(case), stopped)
        except BaseException:
            held.follower = None
            follower.close()
            raise
        return follower

    @work(thread=True, exit_on_error=False, group="follow", exclusive=True)
    def _follow(self, case: Path, wake: threading.Event, held: _Held) -> None:
        """The one poller of this case's ledger: project in pages, then follow."""
        stopped = self._stop_for(get_current_worker())
        follower: CaseFollower | None = None
        ever_opened = False
        frozen = False  # this run froze a projection (a reopened ledger's replaces it)
        try:
            while not stopped():
                if follower is None:
                    if frozen:
                        release_frozen()
                        frozen = False
                    fix_mmap_threshold()  # (building: a reopen after following too)
                    try:
                        follower = self._open_follower(case, held, stopped)
                    except LedgerError as exc:
                        if stopped():
                            return  # interrupted on purpose: no trouble to report
                        self.post_message(m.LedgerTrouble(case, exc, ever_opened))
                        if not ever_opened and exc.problem is not LedgerProblem.BUSY:
                            return
                        wake.wait(REOPEN_S)
                        continue
                    if stopped():
                        return
                    snap = follower.snapshot()
                    release_free_memory()  # what building it freed, back to the system
                    # followed from here: its columns' old copies unmapped as they grow
                    fix_mmap_threshold(FOLLOW_MMAP_THRESHOLD)
                    self._ready(case, snap)
                    ever_opened = True
                    # The projection is now long-lived; keep the cyclic GC from re-walking
                    # it on every full collection (0.5 s spikes otherwise).
                    freeze_heap()
                    frozen = True
                follower = self._poll(case, wake, follower, held, stopped)
        finally:
            held.follower = None
            if follower is not None:
                follower.close()
            if frozen and self._closing:  # frozen after `on_unmount` released: release
                release_frozen(collect=False)

    def _poll(self, case: Path, wake: threading.Event, follower: CaseFollower,
              held: _Held, stopped: Callable[[], bool]) -> CaseFollower | None:
        """Wait for the watcher's wake-up (or the fallback timeout), then read what was
        committed; None when the follower had to be closed (it is reopened)."""
        # The watcher (`_watch`, aiosqlite) wakes this thread when another process
        # commits or the receipt log changes; the timeout is a fallback so a dead
        # watcher cannot stop following.
        woken = wake.wait(REOPEN_S)
        wake.clear()
        if stopped():
            return follower
        # unwoken, poll only when the watcher is down, or when a receipt change was left
        # for later (the watcher will not report it again)
        if not self.following or (not woken and self._watching
                                  and not follower.receipts_pending()):
            return follower
        try:
            snap = follower.poll()
        except LedgerError as exc:
            held.follower = None
            follower.close()
            if not stopped():
                self.post_message(m.LedgerTrouble(case, exc, True))
                wake.wait(REOPEN_S)
            return None
        if snap is not None:
            self._ready(case, snap)
        return follower

    async def _watch(self, case: Path, wake: threading.Event) -> None:
        """The follow poll, through aiosqlite: `PRAGMA data_version` on its own read-only
        connection and the receipt log's stat, every POLL_S; a change wakes the follower
        thread, which reads the new events and projects. Waiting on SQLite here costs the
        event loop nothing; the projection stays in the thread because it is CPU-bound.

        Where the new events are read was measured (`codeai-tui bench`, "live reads"
        rows): read by the follower thread's sync reader or read here and handed to the
        thread made no difference beyond the noise, so the thread keeps its reads: one
        hand-off fewer, and its reads and folds stay under the follower's one lock, which
        time travel reads the projector under."""
        reader: AsyncLedgerReader | None = None
        stamp = receipts_stamp(case)
        try:
            while case == self.case and not self._closing:
                await asyncio.sleep(POLL_S)
                if not self.following:
                    continue
                try:
                    if reader is None:
                        reader = await AsyncLedgerReader(case, lambda: self._closing).open()
                        self._watch_reader = reader
                        # its data_version counts commits from now on: one made since the
                        # follower last read (while nothing watched) is polled for now
                        changed = True
                    else:
                        changed = await reader.changed()
                    self._watching = True
                except LedgerError:
                    # the follower thread reports it (it reads the same file); retry
                    self._watching = False
                    if reader is not None:
                        self._watch_reader = None
                        await reader.close()
                        reader = None
                    wake.set()
                    await asyncio.sleep(REOPEN_S)
                    continue
                now = receipts_stamp(case)
                if changed or now != stamp:
                    stamp = now
                    wake.set()
        finally:
            if case == self.case:
                self._watching = False
            if reader is not None:
                if reader is self._watch_reader:
                    self._watch_reader = None
                await reader.close()  # idempotent: on_unmount may have closed it

    # ---- time travel

    def stop_travel(self) -> None:
        self.workers.cancel_group(self, "as_of")

    def travel_to(self, seq: int) -> bool:
        """Project the open case as of `seq` through the time machine it was opened with
        (False: no case is open yet)."""
        s = self.session
        if s.case is None or s.machine is None:
            return False
        s.travel_to(seq)
        self.travel(s.machine, seq)
        return True

    def back_to_live(self) -> None:
        """The live projection again; the as-of one being read is not wanted any more."""
        self.session.back_to_live()
        self.stop_travel()

    @work(thread=True, exit_on_error=False, group="as_of", exclusive=True)
    def travel(self, machine: TimeMachine, seq: int) -> None:
        """Project the case as of `seq` through `machine`; posts AsOfReady."""
        case = machine.case_dir
        stopped = self._stop_for(get_current_worker())
        release_free_memory()  # (what the screen freed since: time travel reuses it)
        try:
            snap = machine.to(seq, self._progress(case, "re-projecting"), stopped)
        except LedgerError as exc:
            if not stopped():
                self.post_message(m.LedgerTrouble(case, exc, True))
            return
        if snap is not None:
            release_free_memory()
            warm(snap)
            self.post_message(m.AsOfReady(case, snap, case_verdict(snap.state,
                                                                   snap.event_count)))
