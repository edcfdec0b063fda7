"""The main screen: it composes the widgets, feeds them attributes and routes messages.

It owns the case session (which case, its live and as-of snapshots, the selected call)
and the follow workers; every gated action (resume, advance, reconcile, replay) runs in
the one action flow it composes; each widget owns its own state, timers, workers and CSS. The follow poll is an async worker on aiosqlite (`_watch`); what it
finds is projected by a thread on purpose: the projection is CPU-bound Python (a
1M-event catch-up is seconds of work) that in an async worker would run on the event
loop and freeze the screen. Page reads and filter scans, which only wait on SQLite, go
through aiosqlite in the timeline pane's async workers.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container, Horizontal
from textual.content import Content
from textual.css.query import NoMatches
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import Worker, WorkerState, get_current_worker

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.protocol import ActionOptions, GatedAction
from codeai_tui.actions.replay import follow_up_due
from codeai_tui.actions.resume import RESUME, Resume
from codeai_tui.app import actions
from codeai_tui.app import messages as m
from codeai_tui.app.constants import POLL_S, REOPEN_S, WAY_OUT
from codeai_tui.app.glibc_malloc import release_free_memory
from codeai_tui.app.screens.action_flow import (
    ActionEnded,
    ActionFlow,
    ActionPlanned,
    ActionProgressed,
)
from codeai_tui.app.screens.action_log import ActionLogScreen
from codeai_tui.app.screens.error import ErrorScreen
from codeai_tui.app.screens.evidence_actions import EvidenceFlow
from codeai_tui.app.screens.flow_host import Note
from codeai_tui.app.widgets.banner import Banner, BannerFacts
from codeai_tui.app.widgets.calls_pane import CallsPane
from codeai_tui.app.widgets.cases_pane import CasesPane
from codeai_tui.app.widgets.cells import DUPLICATE_TEXT, WARN
from codeai_tui.app.widgets.compilations_pane import CompilationsPane
from codeai_tui.app.widgets.detail_view import DetailView, Subject
from codeai_tui.app.widgets.filter_bar import FilterBar
from codeai_tui.app.widgets.lanes_pane import LanesPane
from codeai_tui.app.widgets.lifecycle import finish_own_workers
from codeai_tui.app.widgets.pane import Pane
from codeai_tui.app.widgets.pulse import Pulse
from codeai_tui.app.widgets.receipts_pane import ReceiptsPane
from codeai_tui.app.widgets.status_bar import CaseCounts, StatusBar, StatusFacts
from codeai_tui.app.widgets.table import TableView
from codeai_tui.app.widgets.tasks_pane import TasksPane
from codeai_tui.app.widgets.timeline_pane import TimelinePane
from codeai_tui.app.widgets.verdict_line import VerdictLine
from codeai_tui.console.actions import ActionLog, Outcome
from codeai_tui.console.drift import DriftCheck, DriftStatus, check_from_plan
from codeai_tui.console.evidence import warm
from codeai_tui.console.filters import Needle
from codeai_tui.console.head_start import HeadStart
from codeai_tui.console.model import (
    CaseFollower,
    CaseSnapshot,
    Skeleton,
    SkeletonCall,
    TimeMachine,
    discover_cases,
    freeze_heap,
    receipts_stamp,
    release_frozen,
)
from codeai_tui.console.severity import CaseVerdict, case_verdict, fleet_counts
from codeai_tui.ledger import LedgerError, LedgerProblem
from codeai_tui.ledger.areader import AsyncLedgerReader
from codeai_tui.textsafe import visible
from codeai_tui.workstate import CallState

PANES = ("cases", "tasks", "calls", "compilations", "timeline", "receipts", "lanes")
# each pane's key, as its border title names it
PANE_KEYS = {pane.__name__.removesuffix("Pane").lower(): pane.KEY for pane in (
    CasesPane, TasksPane, CallsPane, CompilationsPane, TimelinePane, ReceiptsPane, LanesPane)}
ALERT_AFTER_S = 2.0  # an effect_unknown shorter than this was a call in flight, not news
DRIFT_CHECKS_PER_SNAPSHOT = 50


class PaneTabs(Static):
    """In a narrow or short terminal one pane shows at a time; this names them all."""

    DEFAULT_CSS = "PaneTabs { height: 1; padding: 0 1; display: none; }"

    active: reactive[str] = reactive("calls")

    def render(self) -> Content:
        parts: list[str | tuple[str, str]] = []
        for pane in PANES:
            label = f" {PANE_KEYS[pane]} {pane.capitalize()} "
            parts.append((label, "reverse bold") if pane == self.active else label)
        hint = "  tab: next"
        if sum(len(p) for p in parts) + len(hint) <= self.content_size.width:
            parts.append((hint, "$text-muted"))
        return Content.assemble(*parts)


class MainScreen(Screen[None]):
    """The console's one screen. The one flow of every gated action (`action_flow`)
    and the evidence cross-links (`evidence_flow`) are objects it composes, not mixins:
    they see the screen only through a protocol (`FlowHost`, `LinksHost`), and the
    screen's `action_*` and message handlers below delegate to them."""

    AUTO_FOCUS = "#calls"  # the calls are what an operator opens the console for
    BINDINGS: ClassVar[list[BindingType]] = actions.bindings()  # type: ignore[assignment]
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [
        (0, "-w80"), (100, "-w100"), (140, "-w140")]
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-short"), (40, "-tall")]

    def __init__(self, root: Path, *, path_given: str, read_only: bool,
                 clock: Callable[[], datetime], actions: Mapping[str, GatedAction],
                 log: ActionLog,
                 help_rows: Callable[[], list[tuple[str, str, str]]],
                 provider_note: str | None = None,
                 head_start: HeadStart | None = None) -> None:
        super().__init__()
        # the first case's open and skeleton, begun before Textual loaded (taken once)
        self._head_start = head_start
        self.root = root
        self.path_given = path_given
        self.read_only = read_only
        self.clock = clock
        self.actions = actions  # the registry's gated actions by name
        self.action_log = log
        self.help_rows = help_rows  # the registry with the keymap in use (the app's)
        self.provider_note = provider_note
        self.cases: list[Path] = []
        self.case: Path | None = None
        self.live: CaseSnapshot | None = None
        self.live_verdict: CaseVerdict | None = None
        self._live_base: CaseVerdict | None = None  # the follower's, before drift is known
        self.shown: CaseSnapshot | None = None
        self.shown_verdict: CaseVerdict | None = None
        self.skeleton: Skeleton | None = None  # shown until the first snapshot
        self.as_of: int | None = None
        self.following = True
        self.state = "opening"
        self.trouble: str | None = None
        self.progress: tuple[str, int, int] | None = None
        self.event_count = 0
        self.max_seq = 0
        self.last_commit: str | None = None
        self.selected_call_id: str | None = None
        self.filters: dict[str, Needle] = {}
        self.drift: dict[str, DriftCheck] = {}
        self.note: Note | None = None
        self.activity: str | None = None
        self.jump_to_effect_unknown = False
        self.active_pane = "calls"
        self._wake = threading.Event()
        self._time_machine: TimeMachine | None = None
        self._seen_unknown: set[str] | None = None
        self._seen_duplicates: set[tuple[str, ...]] | None = None
        self._pending_alerts: dict[str, float] = {}
        self._watching = False  # the aiosqlite watcher is polling (else the thread does)
        self._watch_reader: AsyncLedgerReader | None = None
        self._closing = False
        self.evidence_flow = EvidenceFlow(self)
        self.action_flow = ActionFlow(self)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Horizontal(id="header"):
            yield StatusBar(self.clock, id="status")
            yield Pulse(id="pulse")
        yield Banner(id="banner")
        yield VerdictLine(id="verdict")
        yield PaneTabs(id="tabs")
        with Container(id="body"):
            yield CasesPane(self.root, id="cases")
            yield TasksPane(id="tasks")
            yield CompilationsPane(id="compilations")
            yield CallsPane(id="calls")
            yield DetailView(self.clock, self.read_only, id="detail-box")
            yield TimelinePane(id="timeline")
            yield ReceiptsPane(id="receipts")
            yield LanesPane(id="lanes")
        yield FilterBar(id="filter-bar")
        yield Footer()

    def pane(self, name: str) -> Pane:
        return self.query_one(f"#{name}", Pane)

    @property
    def calls(self) -> CallsPane:
        return self.query_one(CallsPane)

    @property
    def timeline(self) -> TimelinePane:
        return self.query_one(TimelinePane)

    @property
    def cases_pane(self) -> CasesPane:
        return self.query_one(CasesPane)

    @property
    def detail(self) -> DetailView:
        return self.query_one(DetailView)

    def on_mount(self) -> None:
        self.query_one(VerdictLine).read_only = self.read_only
        self.set_interval(0.5, self._flush_alerts)
        self.set_active_pane("calls")
        self.calls.focus()
        self.paint_status()
        self._discover()

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

    # ------------------------------------------------------------------ painting

    def fit_grid(self) -> None:
        """With every pane on screen (140x40 and up), give rows to what has rows: the
        top row (Cases, Tasks, Compilations) as tall as its longest list, Calls as tall
        as its calls, the Timeline the rest, each within bounds so none disappears."""
        body = self.query_one("#body")
        if not (self.has_class("-w140") and self.has_class("-tall")):
            if self._grid_rows:  # one pane at a time: the stylesheet's single row again
                self._grid_rows = ""
                body.styles.clear_rule("grid_rows")
            return
        height = body.size.height
        if height <= 0:
            return
        snap = self.shown
        counts = (len(snap.state.tasks), len(snap.state.compilations)) if snap else (0, 0)
        frame = 4  # border top and bottom, the header line, a horizontal scrollbar
        calls = len(snap.state.calls) if snap else 0
        calls_need = max(calls + frame, 6)
        timeline_least = 8
        top = max(7, min(max(len(self.cases), *counts) + frame,
                         height - min(calls_need, height // 3) - timeline_least, height // 2))
        middle = max(6, min(calls_need, (height - top) // 2))
        rows = f"{top} {middle} 1fr"
        if rows != self._grid_rows:
            self._grid_rows = rows
            body.styles.grid_rows = rows

    _grid_rows = ""

    def on_resize(self) -> None:
        # under 110 columns the footer drops its padding, so that the next step's key,
        # e, ? and q stay whole at 80 columns
        self.query_one(Footer).compact = self.size.width < 110
        self.call_after_refresh(self.fit_grid)

    def paint_status(self) -> None:
        self.fit_grid()
        self.query_one(Pulse).follow(self.case, self.live.event_count if self.live else None)
        snap = self.shown
        counts = None
        if snap is not None:
            check = snap.state.receipts
            counts = CaseCounts(len(snap.unknown_ids), len(check.duplicates),
                                len(check.uncovered), len(snap.state.anomalies),
                                snap.state.tool_effect_unknown_count)
        elif self.skeleton is not None and self.as_of is None:
            # final from the skeleton; what needs payloads or receipts is still read
            counts = CaseCounts(len(self.skeleton.effect_unknown_ids), None, None, None,
                                tool_effect_unknown=None)
        fleet = None
        if len(self.cases) > 1:
            verdicts = dict(self.cases_pane.verdicts)
            if self.case is not None and self.live_verdict is not None:
                verdicts[self.case] = self.live_verdict
            fleet = fleet_counts(verdicts.get(c) for c in self.cases)
        note = self.note if self.note is not None and self.note.case == self.case else None
        case_name = None
        if self.case is not None and len(self.cases) > 1:
            case_name = self.case.name
        self.query_one(StatusBar).facts = StatusFacts(
            path=self.path_given, case_name=case_name,
            event_count=snap.event_count if snap is not None else self.event_count,
            state=self.state, as_of=self.as_of, max_seq=self.max_seq,
            last_commit=self.last_commit, counts=counts, fleet=fleet, progress=self.progress,
            activity=self.activity, note=note.text if note else None,
            note_ok=note.ok if note else True, read_only=self.read_only,
            provider=self.provider_note)
        self.query_one(Banner).facts = BannerFacts(
            trouble=self.trouble, state=self.state, as_of=self.as_of,
            shown_as_of=snap.as_of if snap is not None else None, max_seq=self.max_seq)

    def _paint_panes(self) -> None:
        snap = self.shown
        with self.app.batch_update():
            for name in ("tasks", "calls", "compilations", "receipts", "lanes"):
                self.pane(name).snapshot = snap
            self.calls.drift = dict(self.drift)
            timeline = self.timeline
            if snap is not None:
                timeline.recent = snap.recent
                timeline.total = max(self.max_seq, snap.max_seq)
            timeline.decoration = (snap, self.as_of)
            # only once the as-of projection is on screen: never a live verdict under "seq N"
            self.cases_pane.as_of = (snap.as_of, self.shown_verdict) if (
                self.as_of is not None and snap is not None and snap.as_of is not None
                and self.shown_verdict is not None) else None
            detail = self.detail
            detail.snapshot = snap
            detail.drift = dict(self.drift)
            self._paint_verdict()
            self.paint_status()

    def _paint_verdict(self) -> None:
        line = self.query_one(VerdictLine)
        line.drift = dict(self.drift)
        line.as_of = self.as_of
        snap = self.shown
        line.call = call = snap.call(self.selected_call_id) if snap is not None else None
        line.follow_up_due = follow_up_due(snap.state, call) if snap and call else False
        line.early = self._early_call() if snap is None else None
        self.evidence_flow.paint_links(self.selected_call_id)
        self.query_one(LanesPane).selected_call_id = self.selected_call_id

    def _early_call(self) -> SkeletonCall | None:
        """The selected call in the skeleton (shown until the projection arrives)."""
        wanted, skeleton = self.selected_call_id, self.skeleton
        if wanted is None or skeleton is None or self.as_of is not None:
            return None
        early = self.calls.skeleton_call_at_cursor()
        if early is not None and early.call_id == wanted:
            return early
        try:  # selected elsewhere (the timeline): one pass over the ids, once per move
            return skeleton.calls[skeleton.calls.ids.index(wanted)]
        except ValueError:
            return None  # not in the skeleton (a later call: the projection will say)

    # ------------------------------------------------------------------ cases

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
        self.open_case(self.cases[0])
        self.cases_pane.cases = tuple(self.cases)

    def on_cases_pane_cases_changed(self, message: CasesPane.CasesChanged) -> None:
        """The bundle's cases changed on disk: the list, its counts and `e` follow."""
        self.cases = list(message.cases)
        self.cases_pane.cases = message.cases
        self.paint_status()

    def on_open_failed(self, message: m.OpenFailed) -> None:
        self._fail(message.error)

    def _fail(self, error: LedgerError) -> None:
        if isinstance(self.app.screen, ErrorScreen):
            return
        self.app.push_screen(ErrorScreen(str(error), WAY_OUT.get(
            error.problem, WAY_OUT[LedgerProblem.CORRUPT])))

    def on_cases_pane_summarized(self) -> None:
        self.paint_status()  # bundle counts

    def open_case(self, case: Path) -> None:
        """Make `case` the open case: new follower, panes reset, notes of the last go."""
        if case == self.case:
            return
        self.case = case
        self.live = self.shown = None
        self.live_verdict = self.shown_verdict = self._live_base = None
        self.skeleton = None
        self.selected_call_id = None
        self._time_machine = None
        self._set_as_of(None)
        self.trouble = None
        self.state = "opening"
        self.note = None
        self.drift = {}
        self._seen_unknown = None
        self._seen_duplicates = None
        self._pending_alerts.clear()
        self._clear_filters()
        self.workers.cancel_group(self, "as_of")
        self.workers.cancel_group(self, "drift")
        release_frozen()  # the last case's projection, before this one's is frozen
        cases = self.cases_pane
        cases.active = case
        cases.select_case(case)
        self.calls.skeleton = None
        timeline = self.timeline
        timeline.case = case
        timeline.total = 0
        self._wake.set()
        self._wake = threading.Event()
        self._follow(case, self._wake)
        self.run_worker(self._watch(case, self._wake), group="watch", exclusive=True,
                        exit_on_error=False)
        self._paint_panes()
        self.detail.subject = None

    def _clear_filters(self) -> None:
        for pane, _needle in list(self.filters.items()):
            self.pane(pane).needle = None
        self.filters.clear()
        self.query_one(FilterBar).active = {}

    # ------------------------------------------------------------------ following

    @work(thread=True, exit_on_error=False, group="follow", exclusive=True)
    def _follow(self, case: Path, wake: threading.Event) -> None:
        """The one poller of this case's ledger: project in pages, then follow."""
        worker = get_current_worker()

        def stopped() -> bool:  # reads in progress end at once: quit answers in time
            return worker.is_cancelled or self._closing

        follower: CaseFollower | None = None
        ever_opened = False
        frozen = False  # this run froze a projection (a reopened ledger's replaces it)
        identity: tuple[int, int] | None = None  # the file the projection was built from
        last_progress = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last_progress
            now = time.monotonic()
            if now - last_progress >= 0.1:
                last_progress = now
                self.post_message(m.ProjectionProgress(case, done, total))

        def ready(snap: CaseSnapshot) -> None:
            warm(snap)  # the receipts beside the verdicts, indexed here, not when drawn
            self.post_message(m.SnapshotReady(case, snap,
                                              case_verdict(snap.state, snap.event_count)))

        try:
            while not worker.is_cancelled:
                if follower is None:
                    if frozen:
                        release_frozen()
                        frozen = False
                    head_start, self._head_start = self._head_start, None
                    got = None
                    if head_start is not None:
                        got = head_start.take(case, stopped)
                        head_start.close()  # releases what was not taken
                    try:
                        follower = got[0] if got is not None else CaseFollower(case, stopped)
                        if identity is not None and follower.identity != identity:
                            self.post_message(m.LedgerReplaced(case))
                        identity = follower.identity
                        self.post_message(m.CaseOpened(case, follower.event_count,
                                                       follower.max_seq,
                                                       follower.last_recorded_at))
                        skeleton = got[1] if got is not None else follower.skeleton()
                        if skeleton is not None and not stopped():
                            self.post_message(m.SkeletonReady(case, skeleton))
                        # the screen holds the skeleton until the projection replaces it;
                        # this loop runs all session: it must not keep it (~5 MB at 137,000
                        # calls)
                        skeleton = got = None
                        follower.catch_up(progress, stopped)
                        if stopped():
                            return
                        snap = follower.snapshot()
                        # what building it freed, back to the system (app/glibc_malloc.py)
                        release_free_memory()
                        ready(snap)
                        ever_opened = True
                        # The projection is now long-lived; keep the cyclic GC from
                        # re-walking it on every full collection (0.5 s spikes otherwise).
                        freeze_heap()
                        frozen = True
                    except LedgerError as exc:
                        if follower is not None:
                            follower.close()
                            follower = None
                        if stopped():
                            return  # interrupted on purpose: no trouble to report
                        self.post_message(m.LedgerTrouble(case, exc, ever_opened))
                        if not ever_opened and exc.problem is not LedgerProblem.BUSY:
                            return
                        wake.wait(REOPEN_S)
                        continue
                # The async watcher (`_watch`, aiosqlite) wakes this thread when another
                # process commits or the receipt log changes; the timeout is a fallback
                # so a dead watcher cannot stop following.
                woken = wake.wait(REOPEN_S)
                wake.clear()
                if stopped():
                    return
                # unwoken, poll only when the watcher is down, or when a receipt change
                # was left for later (the watcher will not report it again)
                if not self.following or (not woken and self._watching
                                          and not follower.receipts_pending()):
                    continue
                try:
                    snap = follower.poll()
                except LedgerError as exc:
                    follower.close()
                    follower = None
                    if stopped():
                        return
                    self.post_message(m.LedgerTrouble(case, exc, True))
                    wake.wait(REOPEN_S)
                    continue
                if snap is not None:
                    ready(snap)
        finally:
            if follower is not None:
                follower.close()
            if frozen and self._closing:  # frozen after `on_unmount` released: release
                release_frozen(collect=False)

    async def _watch(self, case: Path, wake: threading.Event) -> None:
        """The follow poll, through aiosqlite: `PRAGMA data_version` on its own read-only
        connection and the receipt log's stat, every POLL_S; a change wakes the follower
        thread, which reads the new events and projects. Waiting on SQLite here costs the
        event loop nothing; the projection stays in the thread because it is CPU-bound.

        Where the new events are read was measured (`codeai-tui bench`, "live reads"
        rows: 1,000 events/s for 20 s on a 400,000-event ledger, load average 7-9, two
        runs): read by the follower thread's sync reader, commit to snapshot median/p95
        8/35 and 19/47 ms at 8% of a core; read here through aiosqlite and handed to the
        thread to fold, 13/40 and 14/46 ms at 8-9%. No difference beyond the noise, so
        the thread keeps its reads: one hand-off fewer, and its reads and folds stay
        under the follower's one lock, which time travel reads the projector under."""
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

    def on_case_opened(self, message: m.CaseOpened) -> None:
        if message.case != self.case:
            return
        self.trouble = None
        self.state = "following" if self.following else "paused"
        self.event_count = message.event_count
        self.max_seq = message.max_seq
        self.last_commit = message.last
        self.timeline.total = message.max_seq  # the timeline draws before the projection
        self.paint_status()

    def on_ledger_replaced(self, message: m.LedgerReplaced) -> None:
        """Another file now sits at the ledger's path: say so, and keep nothing read from
        the old one (snapshots, time travel, drift verdicts, alert memory, timeline pages,
        the selection, an open resume dialog's evidence); the follower projects anew."""
        case = message.case
        if case != self.case:
            return
        text = (f"{WARN} ledger file replaced at {self.clock():%H:%M:%S}: everything shown "
                "is re-read from the new file")
        self.live = self.shown = None
        self.live_verdict = self.shown_verdict = self._live_base = None
        self.skeleton = None
        self.calls.skeleton = None
        self._set_as_of(None)
        self._time_machine = None
        self.selected_call_id = None
        self.drift = {}
        self._seen_unknown = None
        self._seen_duplicates = None
        self._pending_alerts.clear()
        self.workers.cancel_group(self, "as_of")
        self.workers.cancel_group(self, "drift")
        self.action_flow.evidence_gone("the ledger file was replaced")
        timeline = self.timeline
        timeline.reload()
        timeline.total = 0
        self.note = Note(case, "", text, ok=False)
        self.action_log.add(self.clock(), self.case_label(case), None, Outcome.ALERT, text)
        self.notify(text, title="ledger replaced", severity="warning", markup=False,
                    timeout=15)
        self._paint_panes()
        self.detail.subject = None
        self.refresh_bindings()

    def on_skeleton_ready(self, message: m.SkeletonReady) -> None:
        if message.case != self.case or self.live is not None:
            return
        self.skeleton = message.skeleton
        self.calls.skeleton = message.skeleton
        self.paint_status()

    def on_projection_progress(self, message: m.ProjectionProgress) -> None:
        if message.case != self.case:
            return
        self.progress = (message.label, message.done, message.total)
        self.paint_status()

    def on_ledger_trouble(self, message: m.LedgerTrouble) -> None:
        self._trouble(message.case, message.error, message.ever_opened)

    def on_timeline_pane_trouble(self, message: TimelinePane.Trouble) -> None:
        self._trouble(message.case, message.error, True)

    def on_timeline_pane_note(self, message: TimelinePane.Note) -> None:
        self.notify(visible(message.text, one_line=True), markup=False)

    def _trouble(self, case: Path, error: LedgerError, ever_opened: bool) -> None:
        if case != self.case:
            return
        if not ever_opened and len(self.cases) <= 1 and self.live is None \
                and error.problem is not LedgerProblem.BUSY:
            self._fail(error)
            return
        gone = error.problem in (LedgerProblem.GONE, LedgerProblem.MISSING)
        self.state = "file gone" if gone else "unreadable"
        self.trouble = str(error)
        self.paint_status()

    def on_snapshot_ready(self, message: m.SnapshotReady) -> None:
        if message.case != self.case:
            return
        snap = message.snapshot
        first = self.live is None
        self._live_base = message.verdict
        self.live, self.live_verdict = snap, self._verdict_with_drift(snap, message.verdict)
        self.skeleton = None  # the projection answers everything from here on
        if self.progress and self.progress[0] == "projecting":
            self.progress = None
        self.trouble = None
        self.state = "following" if self.following else "paused"
        self.event_count = snap.event_count
        self.max_seq = snap.max_seq
        self.last_commit = snap.last_recorded_at
        self.cases_pane.set_verdict(message.case, self.live_verdict)
        self._note_changes(snap, first)
        self.action_flow.check_evidence(snap)
        self._check_drift(snap)
        if self.as_of is None:
            self.shown, self.shown_verdict = snap, self.live_verdict
            self._paint_panes()
            if self.calls.skeleton is not None:
                self.calls.skeleton = None  # drawn from the snapshot now: let it go
            early = self.detail.subject is not None and self.detail.subject.kind == "early call"
            if first and (self.selected_call_id is None or early):
                self._select_from(self.calls)  # the verdict in full where the skeleton's was
            if self.jump_to_effect_unknown and (snap.unknown_ids
                                                or snap.state.tool_effect_unknown_count):
                self.jump_to_effect_unknown = False  # once: never chains to another case
                self.calls.focus()
                self.calls.first_effect_unknown()
        else:
            # Time travel holds the panes still; the timeline still grows.
            self.timeline.recent = snap.recent
            self.timeline.total = snap.max_seq
            self.paint_status()
        self.refresh_bindings()

    # ------------------------------------------------------------------ alerts

    def _note_changes(self, snap: CaseSnapshot, first: bool) -> None:
        """New effect_unknown calls wait ALERT_AFTER_S before they alert (a call in flight
        passes through effect_unknown); duplicate effects alert at once."""
        unknown = set(snap.unknown_ids)
        dups = set(snap.state.receipts.duplicates)
        now = time.monotonic()
        if not first and self._seen_unknown is not None:
            for call_id in unknown - self._seen_unknown:
                self._pending_alerts.setdefault(call_id, now)
        for call_id in list(self._pending_alerts):
            if call_id not in unknown:
                del self._pending_alerts[call_id]  # it moved on: no alert
        if not first and self._seen_duplicates is not None:
            for group in sorted(dups - self._seen_duplicates):
                self._alert(None, f"{DUPLICATE_TEXT}: receipts {', '.join(group)}",
                            "duplicate effect")
        self._seen_unknown = unknown
        self._seen_duplicates = dups

    def _flush_alerts(self) -> None:
        now = time.monotonic()
        live = self.live
        for call_id, since in list(self._pending_alerts.items()):
            if live is None or call_id not in live.unknown_ids:
                del self._pending_alerts[call_id]
            elif now - since >= ALERT_AFTER_S:
                del self._pending_alerts[call_id]
                self._alert(call_id, f"{WARN} call {call_id} entered effect_unknown: "
                            "duplicate risk", "effect unknown")

    def _alert(self, call_id: str | None, text: str, title: str) -> None:
        line = visible(text, one_line=True, limit=200)
        self.action_log.add(self.clock(), self.case_label(), call_id, Outcome.ALERT, line)
        self.notify(line, title=title, severity="error", markup=False, timeout=10)

    def case_label(self, case: Path | None = None) -> str:
        case = case or self.case
        if case is None:
            return "?"
        try:
            return str(case.relative_to(self.root)) if case != self.root else case.name
        except ValueError:
            return str(case)

    # ------------------------------------------------------------------ drift

    def _check_drift(self, snap: CaseSnapshot) -> None:
        todo = [c.call_id for c in snap.state.resumable_calls() if (
            c.call_id not in self.drift or self.drift[c.call_id].last_seq != c.last_seq)]
        if todo and self.case is not None:
            self._run_drift_checks(self.case, todo[:DRIFT_CHECKS_PER_SNAPSHOT])

    @work(thread=True, exit_on_error=False, group="drift", exclusive=True)
    def _run_drift_checks(self, case: Path, call_ids: list[str]) -> None:
        """Read-only: each plan reads the call's events and a few artifacts."""
        checks: list[DriftCheck] = []
        given = self.actions.get("resume")
        resume = given if isinstance(given, Resume) else RESUME  # (the drift read is resume's)
        for call_id in call_ids:
            if get_current_worker().is_cancelled:
                return
            try:
                checks.append(check_from_plan(resume.read(case, call_id, self.options)))
            except ActionRefused as exc:  # e.g. an altered case directory: say so
                checks.append(DriftCheck(call_id, -1, DriftStatus.UNAVAILABLE, (exc.reason,)))
            except (LedgerError, OSError, ValueError) as exc:
                checks.append(DriftCheck(call_id, -1, DriftStatus.UNAVAILABLE,
                                         (f"{type(exc).__name__}: {exc}",)))
        self.post_message(m.DriftChecked(case, checks))

    def on_drift_checked(self, message: m.DriftChecked) -> None:
        if message.case != self.case:
            return
        live = self.live
        for check in message.checks:
            call = live.call(check.call_id) if live is not None else None
            if check.status is DriftStatus.UNAVAILABLE and call is not None:
                check = DriftCheck(check.call_id, call.last_seq, check.status, check.fixes)
            self.drift[check.call_id] = check
        if live is not None and self._live_base is not None:
            # the Cases row says the drift once it is known, as the Calls pane does
            self.live_verdict = self._verdict_with_drift(live, self._live_base)
            self.cases_pane.set_verdict(message.case, self.live_verdict)
            if self.as_of is None:
                self.shown_verdict = self.live_verdict
        self._paint_panes()

    def _verdict_with_drift(self, snap: CaseSnapshot, verdict: CaseVerdict) -> CaseVerdict:
        """The follower's verdict, re-ranked when a drift check refuses a start_call
        (a pass over the calls, only then: drift is rare)."""
        drifted = frozenset(
            call_id for call_id, check in self.drift.items()
            if check.status is DriftStatus.DRIFT and (call := snap.call(call_id)) is not None
            and call.last_seq == check.last_seq)
        if not drifted:
            return verdict
        return case_verdict(snap.state, snap.event_count, drifted)

    # ------------------------------------------------------------------ selection

    def on_table_view_cursor_moved(self, message: TableView.CursorMoved) -> None:
        table = message.table
        if table.has_focus or (table.id == "calls" and self.selected_call_id is None):
            self._select_from(table)
        self.refresh_bindings()

    def on_descendant_focus(self, event: object) -> None:
        widget = getattr(event, "widget", None)
        if isinstance(widget, Pane) and widget.id in PANES:
            self.set_active_pane(widget.id)
            self._select_from(widget)
        self.refresh_bindings()

    def _select_from(self, table: TableView) -> None:
        detail = self.detail
        if isinstance(table, LanesPane):  # a lane selects its call everywhere
            call = table.call_at_cursor()
            if call is not None:
                self.selected_call_id = call.call_id
                self.calls.select_key(call.call_id)
                detail.subject = Subject("call", call)
                self._paint_verdict()
            elif (task := table.task_at_cursor()) is not None:
                detail.subject = Subject("task", task)
        elif isinstance(table, CallsPane):
            call = table.call_at_cursor()
            if call is not None:
                self.selected_call_id = call.call_id
                detail.subject = Subject("call", call)
                self._paint_verdict()
            elif (early := table.skeleton_call_at_cursor()) is not None:
                # before the projection: say what is known, and that the rest is read
                self.selected_call_id = early.call_id
                detail.subject = Subject("early call", early)
                self._paint_verdict()
        elif isinstance(table, TimelinePane):
            ev = table.event_at_cursor()
            if ev is not None:
                if ev.call_id:
                    self.selected_call_id = ev.call_id
                    self._paint_verdict()
                detail.subject = Subject("event", ev)
            elif table.row_count:
                detail.subject = Subject("loading", table.cursor + 1)
        elif isinstance(table, TasksPane):
            task = table.task_at_cursor()
            if task is not None:
                detail.subject = Subject("task", task)
        elif isinstance(table, CompilationsPane):
            comp = table.compilation_at_cursor()
            if comp is not None:
                detail.subject = Subject("compilation", comp)
        elif isinstance(table, ReceiptsPane):
            receipt = table.receipt_at_cursor()
            if receipt is not None:
                detail.subject = Subject("receipt", receipt)
        elif isinstance(table, CasesPane):
            case = table.case_at_cursor()
            if case is not None:
                detail.case_verdicts = dict(table.verdicts)
                detail.subject = Subject("case", case)

    def selected_call(self) -> CallState | None:
        """The operator's selected call, in the live projection (resume acts on live)."""
        live = self.live
        return live.call(self.selected_call_id) if live is not None else None

    def focused_pane(self) -> str | None:
        focused = self.focused
        if isinstance(focused, Pane) and focused.id in PANES:
            return focused.id
        return None

    def set_active_pane(self, name: str) -> None:
        self.active_pane = name
        for pane in PANES:
            self.pane(pane).set_class(pane == name, "-active")
        self.query_one("#body").set_class(name == "lanes", "-lanes")  # (the grid's layout)
        self.query_one(PaneTabs).active = name

    # ------------------------------------------------------------------ actions

    # ---- footer: one redraw per refresh, and only when what it shows changed

    _footer_check_pending = False
    _footer_shown: tuple[object, ...] | None = None

    def refresh_bindings(self) -> None:
        """Redraw the footer if what it shows changed, once after this refresh. Textual's
        Footer rebuilds every key widget on each request (~5 ms at 160 columns), and
        cursor moves, focus changes and live snapshots ask many times a second: most
        requests change nothing it shows."""
        if self._footer_check_pending:
            return
        self._footer_check_pending = self.call_after_refresh(self._publish_bindings)

    def _publish_bindings(self) -> None:
        self._footer_check_pending = False
        shown = (self.app.app_focus, *(
            (key, b.binding.action, b.binding.description, b.binding.key_display,
             b.binding.show, b.enabled, b.tooltip)
            for key, b in self.active_bindings.items()))
        if shown != self._footer_shown:
            self._footer_shown = shown
            super().refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        gated = self.gated_permitted(action)
        if gated is not None:
            return gated
        if action == "open_case":
            return self.focused_pane() == "cases" or None
        if action == "sort_cases":
            return len(self.cases) > 1 or None
        return True

    def gated_permitted(self, action: str) -> bool | None:
        """For a gated write or its explaining companion: whether it answers now (None:
        not such an action). A write answers (and its key shows) only where the selected
        call's next operation is that write; elsewhere, and always in read-only mode,
        the companion answers the same key and says why nothing is written."""
        if action in actions.GATED:
            return not self.read_only and self.action_flow.permitted(actions.key_of(action))
        write = next((w for w, explain in actions.GATED.items() if explain == action),
                     None)
        if write is None:
            return None
        return self.read_only or not self.action_flow.permitted(actions.key_of(write))

    def explain_read_only(self, action: str) -> bool:
        """In read-only mode a write's key says so (and writes nothing)."""
        if not self.read_only:
            return False
        self.notify(f"{action}: this console is read-only (started with --read-only): it "
                    "writes nothing; run it without --read-only to act", title="read-only",
                    severity="warning", markup=False)
        return True

    def action_help(self) -> None:
        from codeai_tui.app.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self.help_rows(), self.read_only))

    def action_action_log(self) -> None:
        self.app.push_screen(ActionLogScreen(self.action_log, self.case, self.as_of))

    def action_quit(self) -> None:
        self.app.exit()

    def action_focus_pane(self, pane: str) -> None:
        if pane in PANES:
            self.set_active_pane(pane)
            self.pane(pane).focus()

    def action_next_pane(self) -> None:
        current = self.focused_pane() or self.active_pane
        nxt = PANES[(PANES.index(current) + 1) % len(PANES)]
        self.action_focus_pane(nxt)

    def action_sort_cases(self) -> None:
        pane = self.cases_pane
        pane.order = pane.order.next()

    def action_filter(self) -> None:
        pane = self.focused_pane() or self.active_pane
        self.query_one(FilterBar).edit(pane, self.pane(pane).TITLE)

    def on_filter_bar_applied(self, message: FilterBar.Applied) -> None:
        self._apply_filter(message.pane, message.needle)

    def _apply_filter(self, pane: str, needle: Needle | None) -> None:
        if needle is None:
            self.filters.pop(pane, None)
        else:
            self.filters[pane] = needle
        self.pane(pane).needle = needle
        self.query_one(FilterBar).active = dict(self.filters)
        self.action_focus_pane(pane)

    def action_next_effect_unknown(self) -> None:
        """Every effect_unknown call of every case in turn: the rest of this case's,
        then the next case that has one (the Cases cursor follows), then around."""
        calls = self.calls
        if (self.as_of is None and len(self.cases) > 1 and calls.is_last_effect_unknown()
                and self._open_next_case_with_effect_unknown()):
            return
        if calls.next_effect_unknown():
            calls.focus()
            return
        self.notify("no call or tool operation is in effect_unknown", markup=False)

    def _open_next_case_with_effect_unknown(self) -> bool:
        pane = self.cases_pane
        wanted = {c for c, v in pane.verdicts.items()
                  if (v.effect_unknown or v.tool_effect_unknown) and c != self.case}
        target = pane.case_after(self.case, wanted)
        if target is None:
            return False
        self.jump_to_effect_unknown = True
        self.open_case(target)
        return True

    def action_toggle_follow(self) -> None:
        self.following = not self.following
        if self.state in ("following", "paused"):
            self.state = "following" if self.following else "paused"
        if self.following:
            self._wake.set()  # poll now rather than at the next tick
        self.paint_status()

    def action_step(self, delta: int) -> None:
        timeline = self.timeline
        self.set_active_pane("timeline")
        timeline.focus()
        timeline.move_to(timeline.cursor + delta)
        if self.as_of is not None:
            seq = timeline.seq_at_cursor()
            if seq is not None and seq != self.as_of:
                self._travel_to(seq)

    def action_call_event(self, direction: int) -> None:
        if self.selected_call_id is None:
            self.notify("select a call first", markup=False)
            return
        self.set_active_pane("timeline")
        self.timeline.jump_to_call_event(self.selected_call_id, direction)

    def on_timeline_pane_seq_chosen(self, message: TimelinePane.SeqChosen) -> None:
        if self.as_of is not None:
            self._travel_to(message.seq)

    def action_time_travel(self) -> None:
        if self.as_of is not None:
            self.action_back_to_live()
            return
        seq = self.timeline.seq_at_cursor()
        if seq is None:
            self.notify("select an event in the timeline (5) first", markup=False)
            return
        self._travel_to(seq)

    def _travel_to(self, seq: int) -> None:
        if self.case is None:
            return
        self._set_as_of(seq)
        self.progress = ("re-projecting", 0, seq)
        self.paint_status()
        self.refresh_bindings()
        self._project_as_of(self.case, seq)

    @work(thread=True, exit_on_error=False, group="as_of", exclusive=True)
    def _project_as_of(self, case: Path, seq: int) -> None:
        worker = get_current_worker()
        last = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last >= 0.1:
                last = now
                self.post_message(m.ProjectionProgress(case, done, total, "re-projecting"))

        release_free_memory()  # (what the screen freed since: time travel reuses it)
        machine = self._time_machine
        if machine is None or machine.case_dir != case:
            machine = self._time_machine = TimeMachine(case)
        try:
            snap = machine.to(seq, progress, lambda: worker.is_cancelled or self._closing)
        except LedgerError as exc:
            if worker.is_cancelled or self._closing:
                return
            self.post_message(m.LedgerTrouble(case, exc, True))
            return
        if snap is not None:
            release_free_memory()
            warm(snap)
            self.post_message(m.AsOfReady(case, snap, case_verdict(snap.state,
                                                                   snap.event_count)))

    def on_as_of_ready(self, message: m.AsOfReady) -> None:
        if message.case != self.case or self.as_of != message.snapshot.as_of:
            return
        self.progress = None
        self.shown, self.shown_verdict = message.snapshot, message.verdict
        self._paint_panes()
        self.refresh_bindings()

    def _set_as_of(self, seq: int | None) -> None:
        """Travel to `seq`, or back to live (None). The timeline grows either way; in
        time travel its cursor stays on the as-of event instead of following new events
        (`[` and `]` step from there); back live it follows new events again once its
        cursor is on the newest (G)."""
        self.as_of = seq
        self.timeline.hold_cursor = seq is not None

    def action_back_to_live(self) -> None:
        if self.as_of is None:
            return
        self._set_as_of(None)
        self.progress = None
        self.shown, self.shown_verdict = self.live, self.live_verdict
        self._time_machine = None
        self.workers.cancel_group(self, "as_of")
        self._paint_panes()
        self.refresh_bindings()

    def action_back(self) -> None:
        if self.as_of is not None:
            self.action_back_to_live()
            return
        pane = self.focused_pane()
        if pane and pane in self.filters:
            self._apply_filter(pane, None)

    def action_toggle_hashes(self) -> None:
        detail = self.detail
        detail.full_hashes = not detail.full_hashes

    def action_open_case(self) -> None:
        case = self.cases_pane.case_at_cursor()
        if case is not None:
            self.open_case(case)

    # ------------------------------------------------------------------ the flows' host

    @property
    def options(self) -> ActionOptions:
        """What the operator gave on the command line, for every gated action."""
        options = getattr(self.app, "options", None)
        return options if isinstance(options, ActionOptions) else ActionOptions()

    @property
    def receipts_pane(self) -> ReceiptsPane:
        return self.query_one(ReceiptsPane)

    @property
    def verdict_line(self) -> VerdictLine:
        return self.query_one(VerdictLine)

    def record(self, case: Path | None, call_id: str | None, outcome: Outcome,
               text: str) -> None:
        """Keep an outcome in the action log (case None: the open case)."""
        self.action_log.add(self.clock(), self.case_label(case), call_id, outcome, text)

    def refuse(self, call_id: str | None, action: str, text: str) -> None:
        """A gated action refused before anything was written: the action log and a
        toast titled "<action> refused" (resume, reconcile, advance and replay alike)."""
        self.record(None, call_id, Outcome.REFUSED, text)
        self.notify(text, title=f"{action} refused", severity="warning", markup=False,
                    timeout=10)

    def wake_follower(self) -> None:
        """Poll the ledger now: the follower shows what an action wrote at once."""
        self._wake.set()

    def report_outcome(self, case: Path, call_id: str, outcome: Outcome, text: str, *,
                       ok: bool, title: str, severity: str | None = None) -> None:
        """An action ended: say it once everywhere it belongs (the action log, the
        header's note, replacing an earlier action's words, and a toast), then poll at
        once so the call's new verdict shows."""
        self.activity = None
        self.record(case, call_id, outcome, text)
        self.note = Note(case, call_id, ("\u2714 " if ok else "\u2716 ") + text, ok=ok)
        self.notify(text, title=title, severity=severity or ("information" if ok else "warning"),
                    markup=False, timeout=15)
        self.wake_follower()
        self.paint_status()
        self.refresh_bindings()

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None]) -> None:
        """Open a flow's confirmation dialog. Toasts still showing go first: at 80x24 one
        covered the dialog's buttons (what they said is in the header and the action log)."""
        self.app.clear_notifications()
        self.app.push_screen(screen, callback)

    def show_drift(self, check: DriftCheck) -> None:
        """A drift check a flow made (resume's plan): keep it and show it in the panes."""
        self.drift[check.call_id] = check
        self._paint_panes()

    # ------------------------------------------------------------------ flows (delegates)

    def action_resume(self) -> None:
        self.action_flow.start("r")

    def action_explain_resume(self) -> None:
        self.action_flow.explain("r")

    def action_reconcile(self) -> None:
        self.action_flow.start("x")

    def action_explain_reconcile(self) -> None:
        self.action_flow.explain("x")

    def action_advance(self) -> None:
        self.action_flow.start("v")

    def action_explain_advance(self) -> None:
        self.action_flow.explain("v")

    def action_replay(self) -> None:
        self.action_flow.start("R")

    def action_explain_replay(self) -> None:
        self.action_flow.explain("R")

    def on_action_planned(self, message: ActionPlanned) -> None:
        self.action_flow.on_planned(message)

    def on_action_progressed(self, message: ActionProgressed) -> None:
        self.action_flow.on_progressed(message)

    def on_action_ended(self, message: ActionEnded) -> None:
        self.action_flow.on_ended(message)

    def action_goto_receipt(self) -> None:
        self.evidence_flow.action_goto_receipt()

    def action_goto_call(self) -> None:
        self.evidence_flow.action_goto_call()

    # ------------------------------------------------------------------ worker bugs

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker died of a bug (ledger problems are messages): say so plainly."""
        if event.state is not WorkerState.ERROR:
            return
        worker = event.worker
        error = worker.error
        what = f"{worker.group or worker.name}: {type(error).__name__}: {error}"
        if worker.group == "follow":
            self.state = "stopped"
            self.trouble = f"live follow stopped by an internal error ({what})"
            try:
                self.paint_status()
            except NoMatches:
                return
        line = visible(f"internal error in {what}", one_line=True, limit=300)
        self.action_log.add(self.clock(), self.case_label(), None, Outcome.ALERT, line)
        self.notify(line, title="internal error", severity="error", markup=False, timeout=15)

