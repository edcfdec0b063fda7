"""The main screen: it composes the widgets, paints the session and routes keys and
messages.

What the console knows of the open case is one Textual-free `CaseSession`
(console/session.py) with one reset; the ledger's follow, its watcher and time travel
are the `LiveFollow` widget's workers (app/widgets/live_follow.py), which post small
messages up; every gated action (resume, advance, reconcile, replay) runs in the one
action flow it composes. Each widget owns its own state, timers, workers and CSS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.css.query import NoMatches
from textual.screen import Screen

from codeai_tui.actions.protocol import ActionOptions, GatedAction
from codeai_tui.app import actions
from codeai_tui.app import messages as m
from codeai_tui.app.constants import WAY_OUT
from codeai_tui.app.screens.action_flow import ActionFlow
from codeai_tui.app.screens.action_log import ActionLogScreen
from codeai_tui.app.screens.error import ErrorScreen
from codeai_tui.app.screens.evidence_actions import EvidenceFlow
from codeai_tui.app.widgets.banner import Banner, session_banner
from codeai_tui.app.widgets.calls_pane import CallsPane
from codeai_tui.app.widgets.case_watch import CaseWatch, resume_read
from codeai_tui.app.widgets.cases_pane import CasesPane
from codeai_tui.app.widgets.detail_view import DetailView
from codeai_tui.app.widgets.filter_bar import FilterBar
from codeai_tui.app.widgets.footer_gate import ConsoleFooter, FooterGate
from codeai_tui.app.widgets.live_follow import LiveFollow
from codeai_tui.app.widgets.pane import Pane
from codeai_tui.app.widgets.pane_grid import PANES, PaneGrid, PaneTabs
from codeai_tui.app.widgets.status_bar import Header
from codeai_tui.app.widgets.timeline_pane import TimelinePane
from codeai_tui.app.widgets.verdict_line import VerdictLine
from codeai_tui.console.actions import ActionLog, Outcome
from codeai_tui.console.drift import DriftCheck
from codeai_tui.console.filters import Needle
from codeai_tui.console.head_start import HeadStart
from codeai_tui.console.model import CaseSnapshot, TimeMachine, release_frozen
from codeai_tui.console.session import CaseSession, InSession, Note
from codeai_tui.ledger import LedgerError, LedgerProblem
from codeai_tui.workstate import CallState


class MainScreen(Screen[None]):
    """The console's one screen. The one flow of every gated action (`action_flow`, a
    widget) and the evidence cross-links (`evidence_flow`) are composed, not mixed in:
    they see the screen only through a protocol (`FlowHost`, `LinksHost`), and the
    screen's `action_*` for their keys delegate to them."""

    AUTO_FOCUS = "#calls"  # the calls are what an operator opens the console for
    BINDINGS: ClassVar[list[BindingType]] = actions.bindings()  # type: ignore[assignment]
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [
        (0, "-w80"), (100, "-w100"), (140, "-w140")]
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-short"), (40, "-tall")]

    # the session as the flows see it (FlowHost)
    case: InSession[Path | None] = InSession()
    as_of: InSession[int | None] = InSession()
    live: InSession[CaseSnapshot | None] = InSession()
    shown: InSession[CaseSnapshot | None] = InSession()
    selected_call_id: InSession[str | None] = InSession()
    activity: InSession[str | None] = InSession()
    note: InSession[Note | None] = InSession()

    def __init__(self, root: Path, *, path_given: str, read_only: bool,
                 clock: Callable[[], datetime], actions: Mapping[str, GatedAction],
                 log: ActionLog,
                 help_rows: Callable[[], list[tuple[str, str, str]]],
                 provider_note: str | None = None,
                 head_start: HeadStart | None = None) -> None:
        self._footer = FooterGate(self)
        super().__init__()
        self.session = CaseSession(root)
        self._head_start = head_start  # handed to the follow widget
        self.root, self.path_given, self.read_only = root, path_given, read_only
        self.clock, self.action_log = clock, log
        self.actions = actions  # the registry's gated actions by name
        self.help_rows = help_rows  # the registry with the keymap in use (the app's)
        self.provider_note = provider_note
        self.active_pane = "calls"
        self.evidence_flow = EvidenceFlow(self)
        self.action_flow = ActionFlow(self, id="flow")

    def compose(self) -> ComposeResult:
        yield Header(self.clock, path=self.path_given, read_only=self.read_only,
                     provider=self.provider_note, id="header")
        yield Banner(id="banner")
        yield VerdictLine(id="verdict")
        yield PaneTabs(id="tabs")
        yield PaneGrid(self.root, self.clock, self.read_only, self.session, id="body")
        yield FilterBar(id="filter-bar")
        yield LiveFollow(self.session, self._head_start, id="follow")
        yield self.action_flow
        yield CaseWatch(self.session, self.action_log, self.clock,
                        resume_read(self.actions, lambda: self.options), id="watch")
        yield ConsoleFooter()

    def pane(self, name: str) -> Pane:
        return self.query_one(PaneGrid).pane(name)

    @property
    def calls(self) -> CallsPane:
        return self.query_one(CallsPane)

    @property
    def options(self) -> ActionOptions:
        """What the operator gave on the command line, for every gated action."""
        options = getattr(self.app, "options", None)
        return options if isinstance(options, ActionOptions) else ActionOptions()

    def on_mount(self) -> None:
        self.query_one(VerdictLine).read_only = self.read_only
        self.set_active_pane("calls")
        self.calls.focus()
        self.paint_status()
        self.query_one(CasesPane).discover()

    # ------------------------------------------------------------------ painting

    def fit_grid(self) -> None:
        self.query_one(PaneGrid).fit(self.has_class("-w140") and self.has_class("-tall"))

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_grid)

    def paint_status(self) -> None:
        self.fit_grid()
        self.query_one(Header).show(self.session, self.query_one(CasesPane).verdicts)
        self.query_one(Banner).facts = session_banner(self.session)

    def _paint_panes(self) -> None:
        with self.app.batch_update():
            self.query_one(PaneGrid).show()
            self._paint_verdict()
            self.paint_status()

    def _paint_verdict(self) -> None:
        """The selected call outside the grid: the verdict line and its evidence."""
        s = self.session
        self.query_one(VerdictLine).show_selected(s, self.query_one(PaneGrid).early_call())
        self.evidence_flow.paint_links(s.selected_call_id)

    # ------------------------------------------------------------------ cases

    def on_cases_pane_cases_changed(self, message: CasesPane.CasesChanged) -> None:
        """The bundle's cases, found or changed on disk: the list, its counts and `e`
        follow; the first discovery opens the first case."""
        self.session.cases = list(message.cases)
        if message.first:
            self.open_case(message.cases[0])
        self.query_one(CasesPane).cases = message.cases
        self.paint_status()

    def on_open_failed(self, message: m.OpenFailed) -> None:
        self._fail(message.error)

    def _fail(self, error: LedgerError) -> None:
        if not isinstance(self.app.screen, ErrorScreen):
            self.app.push_screen(ErrorScreen(str(error), WAY_OUT.get(
                error.problem, WAY_OUT[LedgerProblem.CORRUPT])))

    def on_cases_pane_summarized(self) -> None:
        self.paint_status()  # bundle counts

    def open_case(self, case: Path) -> None:
        """Make `case` the open case: a new follower, and the one reset."""
        if case == self.session.case:
            return
        release_frozen()  # the last case's projection, before this one's is frozen
        self.query_one(PaneGrid).open_case(case)
        self._reset(case, self.query_one(LiveFollow).open(case))

    def _reset(self, case: Path, machine: TimeMachine | None) -> None:
        """The one reset (a case opened, or another file at its path): the session forgets
        what was read, and the widgets that showed it let it go."""
        self.session.reset(case, machine)
        self.query_one(LiveFollow).stop_travel()
        self.query_one(CaseWatch).stop()
        self.query_one(PaneGrid).forget()
        self.query_one(FilterBar).active = {}
        self._paint_panes()
        self.query_one(DetailView).subject = None

    # ------------------------------------------------------------------ the follow's news

    def on_case_opened(self, message: m.CaseOpened) -> None:
        if message.case == self.session.case:
            self.session.opened(message.event_count, message.max_seq, message.last)
            # the timeline draws before the projection
            self.query_one(TimelinePane).total = message.max_seq
            self.paint_status()

    def on_ledger_replaced(self, message: m.LedgerReplaced) -> None:
        """Another file now sits at the ledger's path: say so, and keep nothing read from
        the old one (the one reset; an open dialog's evidence goes too); the follower
        projects anew."""
        case, s = message.case, self.session
        if case != s.case:
            return
        self.query_one(TimelinePane).reload()
        self._reset(case, s.machine.fresh() if s.machine is not None else None)
        self.action_flow.evidence_gone("the ledger file was replaced")
        self.query_one(CaseWatch).replaced(case)
        self.paint_status()
        self.refresh_bindings()

    def on_skeleton_ready(self, message: m.SkeletonReady) -> None:
        if message.case == self.session.case and self.session.live is None:
            self.session.skeleton = self.calls.skeleton = message.skeleton
            self.paint_status()

    def on_projection_progress(self, message: m.ProjectionProgress) -> None:
        if message.case == self.session.case:
            self.session.progress = (message.label, message.done, message.total)
            self.paint_status()

    def on_ledger_trouble(self, message: m.LedgerTrouble) -> None:
        """A read of the ledger failed (the follower's, or the timeline's)."""
        if message.case != self.session.case:
            return
        if self.session.fatal(message.error, message.ever_opened):
            self._fail(message.error)
            return
        self.session.troubled(message.error)
        self.paint_status()

    def on_snapshot_ready(self, message: m.SnapshotReady) -> None:
        s, snap = self.session, message.snapshot
        if message.case != s.case:
            return
        first = s.take_live(snap, message.verdict)
        self.query_one(CasesPane).set_verdict(message.case, s.live_verdict)
        self.query_one(CaseWatch).saw(message.case, snap, first)
        self.action_flow.check_evidence(snap)
        timeline = self.query_one(TimelinePane)
        if s.as_of is not None:  # time travel holds the panes still; the timeline grows
            timeline.recent, timeline.total = snap.recent, snap.max_seq
            self.paint_status()
            self.refresh_bindings()
            return
        self._paint_panes()
        if self.query_one(PaneGrid).took_live(first):
            self._paint_verdict()  # the verdict in full where the skeleton's was
        self.refresh_bindings()

    # ------------------------------------------------------------------ drift

    def on_drift_checked(self, message: m.DriftChecked) -> None:
        s = self.session
        if message.case != s.case:
            return
        if s.take_drift(message.checks) and s.live_verdict is not None:
            self.query_one(CasesPane).set_verdict(message.case, s.live_verdict)
        self._paint_panes()

    # ------------------------------------------------------------------ selection

    def on_table_view_cursor_moved(self) -> None:
        self.refresh_bindings()  # (the grid keeps what the cursor selects)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        if isinstance(event.widget, Pane) and event.widget.id in PANES:
            self.set_active_pane(event.widget.id)
        self.refresh_bindings()

    def on_pane_grid_call_selected(self) -> None:
        self._paint_verdict()

    def selected_call(self) -> CallState | None:
        """The operator's selected call, in the live projection (resume acts on live)."""
        return self.session.selected_call()

    def focused_pane(self) -> str | None:
        focused = self.focused
        return focused.id if isinstance(focused, Pane) and focused.id in PANES else None

    def set_active_pane(self, name: str) -> None:
        self.active_pane = name
        self.query_one(PaneGrid).activate(name)
        self.query_one(PaneTabs).active = name

    # ------------------------------------------------------------------ keys

    def refresh_bindings(self) -> None:
        """Redraw the footer only if what it shows changed (widgets/footer_gate.py)."""
        self._footer.request()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        gated = actions.gated_answer(action, self.read_only, self.action_flow.permitted)
        if gated is not None:
            return gated
        if action == "open_case":
            return self.focused_pane() == "cases" or None
        if action == "sort_cases":
            return len(self.session.cases) > 1 or None
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
        self.action_focus_pane(PANES[(PANES.index(current) + 1) % len(PANES)])

    def action_sort_cases(self) -> None:
        pane = self.query_one(CasesPane)
        pane.order = pane.order.next()

    def action_toggle_hashes(self) -> None:
        detail = self.query_one(DetailView)
        detail.full_hashes = not detail.full_hashes

    def action_open_case(self) -> None:
        case = self.query_one(CasesPane).case_at_cursor()
        if case is not None:
            self.open_case(case)

    def action_filter(self) -> None:
        pane = self.focused_pane() or self.active_pane
        self.query_one(FilterBar).edit(pane, self.pane(pane).TITLE)

    def on_filter_bar_applied(self, message: FilterBar.Applied) -> None:
        self._apply_filter(message.pane, message.needle)

    def _apply_filter(self, pane: str, needle: Needle | None) -> None:
        self.query_one(FilterBar).active = self.query_one(PaneGrid).filter(pane, needle)
        self.action_focus_pane(pane)

    def action_next_effect_unknown(self) -> None:
        """Every effect_unknown call of every case in turn: the rest of this case's,
        then the next case that has one (the Cases cursor follows), then around."""
        s, calls = self.session, self.calls
        if s.as_of is None and len(s.cases) > 1 and calls.is_last_effect_unknown():
            target = self.query_one(CasesPane).next_with_effect_unknown(s.case)
            if target is not None:
                s.jump_to_effect_unknown = True
                self.open_case(target)
                return
        if calls.next_effect_unknown():
            calls.focus()
            return
        if calls.needle is not None:  # (the case may have many: the filter hides them)
            self.notify("no call the Calls filter keeps is in effect_unknown "
                        "(escape on Calls clears the filter)", markup=False)
            return
        self.notify("no call or tool operation is in effect_unknown", markup=False)

    def action_toggle_follow(self) -> None:
        self.query_one(LiveFollow).toggle()
        self.paint_status()

    # ---- time travel: the panes as of an event of the timeline

    def action_step(self, delta: int) -> None:
        self.set_active_pane("timeline")
        seq = self.query_one(TimelinePane).step(delta)
        if self.session.as_of is not None and seq is not None and seq != self.session.as_of:
            self._travel_to(seq)

    def action_call_event(self, direction: int) -> None:
        if self.session.selected_call_id is None:
            self.notify("select a call first", markup=False)
            return
        self.set_active_pane("timeline")
        self.query_one(TimelinePane).jump_to_call_event(self.session.selected_call_id,
                                                        direction)

    def on_timeline_pane_seq_chosen(self, message: TimelinePane.SeqChosen) -> None:
        if self.session.as_of is not None:
            self._travel_to(message.seq)

    def action_time_travel(self) -> None:
        if self.session.as_of is not None:
            self.action_back_to_live()
            return
        seq = self.query_one(TimelinePane).seq_at_cursor()
        if seq is None:
            self.notify("select an event in the timeline (5) first", markup=False)
            return
        self._travel_to(seq)

    def _travel_to(self, seq: int) -> None:
        """Project as of `seq` (the follow's time travel). The timeline grows meanwhile;
        its cursor stays on the as-of event (`[` and `]` step from there) instead of
        following new events."""
        if self.query_one(LiveFollow).travel_to(seq):
            self.query_one(TimelinePane).hold_cursor = True
            self.paint_status()
            self.refresh_bindings()

    def on_as_of_ready(self, message: m.AsOfReady) -> None:
        if self.session.take_as_of(message.case, message.snapshot, message.verdict):
            self._paint_panes()
            self.refresh_bindings()

    def action_back_to_live(self) -> None:
        """Live again; the timeline follows new events once its cursor is on the newest
        (G)."""
        if self.session.as_of is None:
            return
        self.query_one(LiveFollow).back_to_live()
        self.query_one(TimelinePane).hold_cursor = False
        self._paint_panes()
        self.refresh_bindings()

    def action_back(self) -> None:
        if self.session.as_of is not None:
            self.action_back_to_live()
            return
        pane = self.focused_pane()
        if pane and pane in self.session.filters:
            self._apply_filter(pane, None)

    # ------------------------------------------------------------------ the flows' host

    def record(self, case: Path | None, call_id: str | None, outcome: Outcome,
               text: str) -> None:
        """Keep an outcome in the action log (case None: the open case)."""
        self.action_log.add(self.clock(), self.session.case_label(case), call_id, outcome, text)

    def wake_follower(self) -> None:
        """Poll the ledger now: the follower shows what an action wrote at once."""
        self.query_one(LiveFollow).wake()

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None]) -> None:
        """Open a flow's confirmation dialog. Toasts still showing go first: at 80x24 one
        covered the dialog's buttons (what they said is in the header and the action log)."""
        self.app.clear_notifications()
        self.app.push_screen(screen, callback)

    def show_drift(self, check: DriftCheck) -> None:
        """A drift check a flow made (resume's plan): keep it and show it in the panes."""
        self.session.drift[check.call_id] = check
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

    def action_goto_receipt(self) -> None:
        self.evidence_flow.action_goto_receipt()

    def action_goto_call(self) -> None:
        self.evidence_flow.action_goto_call()

    # ------------------------------------------------------------------ worker bugs

    def on_worker_failed(self, message: m.WorkerFailed) -> None:
        self.query_one(CaseWatch).worker_failed(message.group, message.error)
        with suppress(NoMatches):  # (the screen may be closing)
            self.paint_status()
