"""The live side: discover cases, project in pages, follow appends, page the timeline.

One follower thread per active case polls `PRAGMA data_version`; every other read is a
short thread worker. Workers only post messages; handlers here touch widgets."""

from __future__ import annotations

import gc
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.worker import get_current_worker

from codeai_tui.app import messages as m
from codeai_tui.app.constants import POLL_S, REOPEN_S, WAY_OUT
from codeai_tui.app.rows import (
    DUPLICATE_TEXT,
    WARN,
)
from codeai_tui.app.screens.error import ErrorScreen
from codeai_tui.app.timeline import Decorator, TimelineSource
from codeai_tui.console.model import (
    CaseFollower,
    CaseSnapshot,
    PageReader,
    Worst,
    discover_cases,
    summarize_case,
)
from codeai_tui.ledger import LedgerError, LedgerProblem
from codeai_tui.textsafe import visible

if TYPE_CHECKING:
    from codeai_tui.app.app import CodeAIApp as _Base
else:
    _Base = object


class LiveFollow(_Base):
    """Workers and their message handlers (mixed into CodeAIApp)."""

    @work(thread=True, exit_on_error=False, group="discover")
    def _discover(self) -> None:
        try:
            cases = discover_cases(self.root)
        except LedgerError as exc:
            self.post_message(m.OpenFailed(exc))
            return
        self.post_message(m.CasesFound(cases))

    def on_cases_found(self, message: m.CasesFound) -> None:
        self.cases = message.cases
        self._paint_cases()
        self.open_case(self.cases[0])
        if len(self.cases) > 1:
            self._summarize(list(self.cases[1:]))

    def on_open_failed(self, message: m.OpenFailed) -> None:
        self._fail(message.error)

    def _fail(self, error: LedgerError) -> None:
        if isinstance(self.screen, ErrorScreen):
            return
        self.push_screen(ErrorScreen(str(error), WAY_OUT.get(error.problem, WAY_OUT[
            LedgerProblem.CORRUPT])))

    @work(thread=True, exit_on_error=False, group="summaries")
    def _summarize(self, cases: list[Path]) -> None:
        worker = get_current_worker()
        for case in cases:
            if worker.is_cancelled:
                return
            try:
                summary: tuple[Worst, int] | str = summarize_case(case)
            except LedgerError as exc:
                summary = str(exc)
            self.post_message(m.CaseSummarized(case, summary))

    def on_case_summarized(self, message: m.CaseSummarized) -> None:
        self.summaries[message.case] = message.summary
        self._paint_cases()

    def open_case(self, case: Path) -> None:
        """Make `case` the active case: new follower, new pages, panes reset."""
        if case == self.case:
            return
        self.case = case
        self.live = self.shown = None
        self.selected_call_id = None
        self._detail = None
        self._time_machine = None
        self.as_of = None
        self.trouble = None
        self.status = "opening"
        self._seen_unknown = None
        self._seen_duplicates = None
        self.filters.clear()
        if self._page_reader is not None:
            self._page_reader.close()
        self._page_reader = PageReader(case)
        self.timeline_source = TimelineSource(self._request_page)
        self.timeline_source.decorator = Decorator(None, None)
        self._wake.set()
        self._wake = threading.Event()
        self._follow(case, self._wake)
        self._paint_all()

    @work(thread=True, exit_on_error=False, group="follow", exclusive=True)
    def _follow(self, case: Path, wake: threading.Event) -> None:
        """The one poller of this case's ledger: project in pages, then follow."""
        worker = get_current_worker()
        follower: CaseFollower | None = None
        ever_opened = False
        last_progress = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last_progress
            now = time.monotonic()
            if now - last_progress >= 0.1:
                last_progress = now
                self.post_message(m.ProjectionProgress(case, done, total))

        try:
            while not worker.is_cancelled:
                if follower is None:
                    try:
                        follower = CaseFollower(case)
                        self.post_message(m.CaseOpened(case, follower.event_count,
                                                       follower.max_seq,
                                                       follower.last_recorded_at))
                        follower.catch_up(progress, lambda: worker.is_cancelled)
                        if worker.is_cancelled:
                            return
                        self.post_message(m.SnapshotReady(case, follower.snapshot()))
                        ever_opened = True
                        # The projection is now hundreds of MB of long-lived objects; keep
                        # the cyclic GC from re-walking them on every full collection
                        # (those pauses showed as 0.5 s spikes in commit-to-screen).
                        gc.freeze()
                    except LedgerError as exc:
                        if follower is not None:
                            follower.close()
                            follower = None
                        self.post_message(m.LedgerTrouble(case, exc, ever_opened=ever_opened))
                        if not ever_opened and exc.problem is not LedgerProblem.BUSY:
                            return
                        wake.wait(REOPEN_S)
                        continue
                wake.wait(POLL_S)
                if worker.is_cancelled:
                    return
                if not self.following:
                    continue
                try:
                    snap = follower.poll()
                except LedgerError as exc:
                    follower.close()
                    follower = None
                    self.post_message(m.LedgerTrouble(case, exc, ever_opened=True))
                    wake.wait(REOPEN_S)
                    continue
                if snap is not None:
                    self.post_message(m.SnapshotReady(case, snap))
        finally:
            if follower is not None:
                follower.close()

    def on_case_opened(self, message: m.CaseOpened) -> None:
        if message.case != self.case:
            return
        self.trouble = None
        self.status = "following" if self.following else "paused"
        self.event_count = message.event_count
        self.max_seq = message.max_seq
        self.last_recorded_at = message.last
        # First paint: the timeline can draw from pages before the projection is done.
        self.timeline_source.set_total(message.max_seq)
        self.table("timeline").set_source(self.timeline_source)
        self._paint_titles()
        self._paint_status()

    def on_projection_progress(self, message: m.ProjectionProgress) -> None:
        if message.case != self.case:
            return
        self.progress = (message.label, message.done, message.total)
        self._paint_status()

    def on_ledger_trouble(self, message: m.LedgerTrouble) -> None:
        if message.case != self.case:
            return
        if not message.ever_opened and len(self.cases) <= 1 and self.live is None \
                and message.error.problem is not LedgerProblem.BUSY:
            self._fail(message.error)
            return
        gone = message.error.problem in (LedgerProblem.GONE, LedgerProblem.MISSING)
        self.status = "file gone" if gone else "unreadable"
        self.trouble = str(message.error)
        self._paint_status()

    def on_snapshot_ready(self, message: m.SnapshotReady) -> None:
        if message.case != self.case:
            return
        snap = message.snapshot
        first = self.live is None
        self.live = snap
        self.progress = None if self.progress and self.progress[0] == "projecting" \
            else self.progress
        self.trouble = None
        self.status = "following" if self.following else "paused"
        self.event_count = snap.event_count
        self.max_seq = snap.max_seq
        self.last_recorded_at = snap.last_recorded_at
        self.summaries[self.case] = (snap.worst, snap.event_count)
        self._alert_changes(snap, first)
        if self._modal is not None:
            self._check_modal_evidence(snap)
        if self.as_of is None:
            self.shown = snap
            self._paint_all()
            if self.jump_to_effect_unknown and snap.unknown_ids:
                self.jump_to_effect_unknown = False  # once: never chains to another case
                self.action_next_effect_unknown()
        else:
            # Time travel holds the panes still; the timeline still grows.
            self.timeline_source.set_total(snap.max_seq)
            if "timeline" not in self.filters:
                self.table("timeline").set_source(self.timeline_source)
            self._paint_new_marker()
            self._paint_status()
            self._paint_cases()

    def _alert_changes(self, snap: CaseSnapshot, first: bool) -> None:
        unknown = set(snap.unknown_ids)
        dups = set(snap.state.receipts.duplicates)
        if not first and self._seen_unknown is not None:
            for call_id in sorted(unknown - self._seen_unknown):
                self.notify(visible(f"{WARN} call {call_id} entered effect_unknown: "
                                    "duplicate risk", one_line=True, limit=200),
                            title="effect unknown", severity="error", markup=False,
                            timeout=10)
        if not first and self._seen_duplicates is not None:
            for group in sorted(dups - self._seen_duplicates):
                self.notify(visible(f"{DUPLICATE_TEXT}: receipts {', '.join(group)}",
                                    one_line=True, limit=200),
                            title="duplicate effect", severity="error", markup=False,
                            timeout=10)
        self._seen_unknown = unknown
        self._seen_duplicates = dups

    # ------------------------------------------------------------------ timeline pages

    def _request_page(self, page_no: int) -> None:
        if self.case is not None and self._page_reader is not None:
            self._load_page(self.case, self._page_reader, page_no)

    @work(thread=True, exit_on_error=False, group="pages")
    def _load_page(self, case: Path, reader: PageReader, page_no: int) -> None:
        try:
            events = reader.page(page_no)
        except LedgerError as exc:
            self.post_message(m.LedgerTrouble(case, exc, ever_opened=True))
            events = []
        self.post_message(m.PageLoaded(case, page_no, events))

    def on_page_loaded(self, message: m.PageLoaded) -> None:
        if message.case != self.case:
            return
        self.timeline_source.put_page(message.page_no, message.events)
        if "timeline" not in self.filters:
            self.table("timeline").refresh_rows()
