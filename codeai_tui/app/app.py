"""The operator console: could the provider effect have happened?

Threads do all I/O (one follower per active case polls `data_version`; page and
projection workers read by key); the UI thread only draws what they post. Writes exist
only on the resume path, behind the projection, a modal pinned to the evidence shown,
and `check_action` (read-only mode hides and blocks them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Footer, Input, Static
from textual.worker import get_current_worker

from codeai_tui.app import messages as m
from codeai_tui.app.clock import Clock, system_clock
from codeai_tui.app.data import (
    CaseFollower,
    CaseSnapshot,
    PageReader,
    TimeMachine,
    Worst,
    discover_cases,
    summarize_case,
)
from codeai_tui.app.detail import ago, detail_text
from codeai_tui.app.rows import (
    CALL_COLUMNS,
    CASE_COLUMNS,
    COMPILATION_COLUMNS,
    DUPLICATE_TEXT,
    RECEIPT_COLUMNS,
    TASK_COLUMNS,
    TIMELINE_COLUMNS,
    UNCOVERED_TEXT,
    WARN,
    CallSource,
    LazySource,
    call_matches,
    case_rows,
    cell,
    compilation_row,
    filtered,
    receipt_rows,
    task_row,
)
from codeai_tui.app.screens.error import ErrorScreen
from codeai_tui.app.screens.help import HelpScreen
from codeai_tui.app.screens.resume import ResumeModal
from codeai_tui.app.themes import DEFAULT_THEME, load_themes
from codeai_tui.app.timeline import Decorator, FilteredTimeline, TimelineSource
from codeai_tui.app.widgets.table import ListSource, Row, TableView
from codeai_tui.ledger import LEDGER_FORMAT, LedgerError, LedgerProblem
from codeai_tui.textsafe import visible
from codeai_tui.workstate import CallState

POLL_S = 0.1
REOPEN_S = 1.0
FILTER_SCAN_LIMIT = 100_000
PANES = ("cases", "tasks", "calls", "compilations", "timeline", "receipts")
PANE_TITLES = {
    "cases": "1 Cases",
    "tasks": "2 Tasks",
    "calls": "3 Calls",
    "compilations": "4 Compilations",
    "timeline": "5 Timeline",
    "receipts": "6 Receipts",
}

WAY_OUT = {
    LedgerProblem.MISSING: "Check the path: give a case directory (holding ledger.sqlite3), "
    "the ledger file itself, or a bundle directory of cases.",
    LedgerProblem.NOT_A_LEDGER: "Point codeai-tui at a CodeAI case directory or a bundle of them.",
    LedgerProblem.NOT_SQLITE: "This file is not a CodeAI ledger; check you copied the right file.",
    LedgerProblem.WRONG_FORMAT: "This console reads codeai.ledger.v1 only; use a matching "
    "codeai-tui version for this ledger.",
    LedgerProblem.CORRUPT: "Work on a copy: restore the ledger from a backup or the producer's "
    "host, then open it again.",
    LedgerProblem.READONLY_DIR: "Copy the case directory to a writable place and open the copy.",
    LedgerProblem.BUSY: "Another process holds a lock; wait a moment and open it again.",
}


class FilterInput(Input):
    """The `/` filter line; escape gives up and clears."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "give_up", "Clear filter", id="filter.clear"),
    ]

    def action_give_up(self) -> None:
        self.value = ""
        self.app.call_later(self.app.apply_filter, "")  # type: ignore[attr-defined]


class CodeAIApp(App[None]):
    """`codeai-tui PATH`: live panes over one case or a bundle of cases."""

    TITLE = "codeai-tui"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = True

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Help", id="help"),
        Binding("q", "quit", "Quit", id="quit"),
        Binding("1", "focus_pane('cases')", "Cases", show=False, id="focus.cases"),
        Binding("2", "focus_pane('tasks')", "Tasks", show=False, id="focus.tasks"),
        Binding("3", "focus_pane('calls')", "Calls", show=False, id="focus.calls"),
        Binding("4", "focus_pane('compilations')", "Compilations", show=False,
                id="focus.compilations"),
        Binding("5", "focus_pane('timeline')", "Timeline", show=False, id="focus.timeline"),
        Binding("6", "focus_pane('receipts')", "Receipts", show=False, id="focus.receipts"),
        Binding("slash", "filter", "Filter", id="filter"),
        Binding("e", "next_effect_unknown", "Next effect unknown", id="next_effect_unknown"),
        Binding("f", "toggle_follow", "Follow", id="toggle_follow"),
        Binding("left_square_bracket", "step(-1)", "Step back", show=False, id="step.back"),
        Binding("right_square_bracket", "step(1)", "Step forward", show=False,
                id="step.forward"),
        Binding("n", "call_event(1)", "Next event of call", show=False, id="call_event.next"),
        Binding("N", "call_event(-1)", "Previous event of call", show=False,
                id="call_event.previous"),
        Binding("t", "time_travel", "Time travel", id="time_travel"),
        Binding("escape", "back", "Back to live", show=False, id="back"),
        Binding("h", "toggle_hashes", "Full hashes", show=False, id="toggle_hashes"),
        Binding("enter", "open_case", "Open case", show=False, id="open_case"),
        Binding("r", "resume", "Resume", id="resume"),
        Binding("r", "explain_resume", "Resume", show=False, id="resume.explain"),
        Binding("colon", "command_palette", "Commands", show=False, id="command_palette"),
    ]

    def __init__(
        self,
        path: str | Path,
        *,
        theme: str | None = None,
        read_only: bool = False,
        model: str | None = None,
        base_url: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__()
        self.path_given = str(path)
        self.root = Path(path)
        self.read_only = read_only
        self.model = model
        self.base_url = base_url
        self.clock: Clock = clock or system_clock
        themes, self._theme_problems = load_themes()
        for t in themes:
            self.register_theme(t)
        self._wanted_theme = theme or DEFAULT_THEME
        self.theme = self._wanted_theme if self._wanted_theme in self.available_themes \
            else DEFAULT_THEME
        self.cases: list[Path] = []
        self.summaries: dict[Path, tuple[Worst, int] | str] = {}
        self.case: Path | None = None
        self.live: CaseSnapshot | None = None
        self.shown: CaseSnapshot | None = None
        self.as_of: int | None = None
        self.following = True
        self.status = "opening"
        self.trouble: str | None = None
        self.progress: tuple[str, int, int] | None = None
        self.event_count = 0
        self.max_seq = 0
        self.last_recorded_at: str | None = None
        self.selected_call_id: str | None = None
        self.full_hashes = False
        self.filters: dict[str, str] = {}
        self.filter_target: str | None = None
        self.resuming = False
        self.last_result: str | None = None
        self._detail: tuple[str, Any] | None = None
        self._wake = threading.Event()
        self._page_reader: PageReader | None = None
        self.timeline_source = TimelineSource(self._request_page)
        self._modal: ResumeModal | None = None
        self._time_machine: TimeMachine | None = None
        self._seen_unknown: set[str] | None = None
        self._seen_duplicates: set[tuple[str, ...]] | None = None

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield Static(id="banner")
        with Horizontal(id="top"):
            yield TableView(CASE_COLUMNS, id="cases", empty_text="looking for cases\u2026")
            yield TableView(TASK_COLUMNS, id="tasks", empty_text="no tasks")
            yield TableView(COMPILATION_COLUMNS, id="compilations", empty_text="no compilations")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield TableView(CALL_COLUMNS, id="calls", empty_text="no calls")
                with Horizontal(id="lower"):
                    yield TableView(TIMELINE_COLUMNS, id="timeline", empty_text="no events",
                                    follow_tail=True)
                    yield TableView(RECEIPT_COLUMNS, id="receipts",
                                    empty_text="no provider receipts")
            with VerticalScroll(id="detail-box"):
                yield Static(id="detail")
        yield FilterInput(placeholder="filter the focused pane (enter applies, esc clears)",
                          id="filter")
        yield Footer()

    def table(self, pane: str) -> TableView:
        return self.query_one(f"#{pane}", TableView)

    def on_mount(self) -> None:
        for pane in PANES:
            self.table(pane).border_title = Content(PANE_TITLES[pane])
        self.query_one("#detail-box").border_title = Content("Detail")
        self.query_one("#banner").display = False
        self.query_one("#filter").display = False
        self.set_interval(1.0, self._tick)
        self._paint_status()
        self._paint_detail_text(Text("Select a row to see its evidence."))
        if self._wanted_theme not in self.available_themes:
            self.notify(visible(f"theme {self._wanted_theme!r} not found; using {self.theme}",
                                one_line=True), severity="warning", markup=False)
        for problem in self._theme_problems:
            self.notify(visible(problem, one_line=True), severity="warning", markup=False)
        self.table("calls").focus()
        self._discover()

    def on_unmount(self) -> None:
        self._wake.set()
        if self._page_reader is not None:
            self._page_reader.close()

    # ------------------------------------------------------------------ workers

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

    # ------------------------------------------------------------------ painting

    def _paint_all(self) -> None:
        self._paint_status()
        self._paint_cases()
        self._paint_panes()

    def _paint_cases(self) -> None:
        rows = case_rows(self.cases, self.summaries, self.root)
        self._set_rows("cases", rows)

    def _set_rows(self, pane: str, rows: list[Row]) -> None:
        needle = self.filters.get(pane)
        if needle:
            rows = [r for r in rows if needle in " ".join(r.cells).lower()]
        self.table(pane).set_source(ListSource(rows))

    def _set_lazy(self, pane: str, items: Any, build: Callable[[Any], Row],
                  key: Callable[[Any], str]) -> None:
        needle = self.filters.get(pane)
        indices = filtered(items, build, needle) if needle else None
        self.table(pane).set_source(LazySource(items, build, key, indices))

    def _paint_panes(self) -> None:
        snap = self.shown
        with self.batch_update():
            if snap is None:
                for pane in ("tasks", "calls", "compilations", "receipts"):
                    self.table(pane).set_source(ListSource([]))
            else:
                self._set_lazy("tasks", snap.state.tasks, task_row, lambda t: t.task_id)
                self._set_lazy("compilations", snap.state.compilations, compilation_row,
                               lambda c: c.compilation_id)
                self._set_rows("receipts", receipt_rows(snap))
                self._paint_calls()
            self.timeline_source.decorator = Decorator(snap, self.as_of)
            if snap is not None:
                self.timeline_source.set_total(max(self.max_seq, snap.max_seq))
            if "timeline" not in self.filters:
                self.table("timeline").set_source(self.timeline_source)
            else:
                self.table("timeline").refresh()
            self._paint_titles()
            self._paint_status()
            self._repaint_detail()

    def _paint_calls(self) -> None:
        snap = self.shown
        needle = self.filters.get("calls")
        indices = None
        if snap is not None and needle:
            indices = [i for i, c in enumerate(snap.state.calls) if call_matches(c, needle)]
        self.table("calls").set_source(CallSource(snap, indices))

    def _paint_titles(self) -> None:
        snap = self.shown
        for pane in PANES:
            table = self.table(pane)
            parts: list[str | tuple[str, str]] = [PANE_TITLES[pane],
                                                  f" ({table.row_count:,})"]
            if pane == "calls" and snap is not None:
                unknown = len(snap.unknown_ids)
                if unknown:
                    parts.append((f" {WARN} {unknown} effect unknown", "bold $error"))
            if pane == "receipts" and snap is not None:
                check = snap.state.receipts
                if check.duplicates:
                    parts.append((f" {DUPLICATE_TEXT} \u00d7{len(check.duplicates)}",
                                  "bold $error"))
                if check.uncovered:
                    parts.append((f" {UNCOVERED_TEXT} \u00d7{len(check.uncovered)}",
                                  "bold $error"))
            table.border_title = Content.assemble(*parts)
            needle = self.filters.get(pane)
            table.border_subtitle = Content.assemble(("/ ", "bold"), cell(needle, 40)) \
                if needle else None
        self._paint_new_marker()

    def _paint_new_marker(self) -> None:
        """toolong's "+N new": the timeline keeps the operator's place, says what arrived."""
        timeline = self.table("timeline")
        if "timeline" in self.filters:
            return
        if timeline.new_below:
            timeline.border_subtitle = Content.assemble(
                (f"+{timeline.new_below:,} new below", "bold $warning"), " \u00b7 end follows")
        else:
            timeline.border_subtitle = None

    def _tick(self) -> None:
        self._paint_status()

    def _paint_status(self) -> None:
        now = self.clock()
        snap = self.shown
        live = self.live
        parts: list[str | tuple[str, str]] = [
            ("codeai-tui ", "bold $accent"),
            (cell(self.path_given, 80), "bold"),
            "  \u00b7  ",
            LEDGER_FORMAT,
        ]
        if self.case is not None and len(self.cases) > 1:
            parts += ["  \u00b7  case ", (cell(self.case.name, 40), "bold")]
        parts += ["  \u00b7  ", f"{self.event_count:,} events", "  \u00b7  "]
        status_style = {"following": "bold $success", "paused": "bold $warning",
                        "opening": "$text-muted"}.get(self.status, "bold $error")
        glyph = {"following": "\u25cf ", "paused": "\u2016 "}.get(self.status, "\u2716 ")
        parts.append((glyph + self.status, status_style))
        if self.last_recorded_at:
            parts += ["  \u00b7  last commit ", ago(self.last_recorded_at, now)]
        parts.append("\n")
        state = (snap or live).state if (snap or live) else None
        if state is None:
            parts.append(("projection pending\u2026", "$text-muted"))
        else:
            unknown = len((snap or live).unknown_ids)  # type: ignore[union-attr]
            dups = len(state.receipts.duplicates)
            uncovered = len(state.receipts.uncovered)
            anomalies = len(state.anomalies)
            for count, label in ((unknown, "effect unknown"), (dups, "duplicate effects"),
                                 (uncovered, "uncovered receipts"), (anomalies, "anomalies")):
                style = "bold $error" if count else "$text-muted"
                mark = f"{WARN} " if count else ""
                parts += [(f"{mark}{count:,} {label}", style), "   "]
        if self.progress is not None:
            label, done, total = self.progress
            pct = (100 * done // total) if total else 100
            parts.append((f"\u231b {label} {done:,}/{total:,} events ({pct}%)", "bold $warning"))
        elif self.last_result:
            parts.append((cell(self.last_result, 120), "$success"))
        if self.read_only:
            parts += ["   ", ("read-only", "bold $warning")]
        self.query_one("#status", Static).update(Content.assemble(*parts))
        self._paint_banner()

    def _paint_banner(self) -> None:
        banner = self.query_one("#banner", Static)
        if self.trouble:
            banner.update(Content.assemble(
                ("\u2716 LEDGER ", "bold"), (self.status.upper(), "bold"), ": ",
                cell(self.trouble, 200),
                "  \u2014 panes show the last state read; retrying every second.",
            ))
            banner.set_classes("trouble")
            banner.display = True
        elif self.as_of is not None:
            banner.update(Content.assemble(
                (f"\u23f2 AS OF seq {self.as_of:,} of {self.max_seq:,}", "bold"),
                "  \u2014 every pane shows the projection up to this event.  "
                "[ / ] step  \u00b7  t or esc: back to live",
            ))
            banner.set_classes("as-of")
            banner.display = True
        else:
            banner.display = False

    # ------------------------------------------------------------------ detail

    def _palette(self) -> dict[str, str]:
        theme = self.current_theme
        return {
            "key": f"bold {theme.primary}",
            "string": theme.success or "green",
            "number": theme.warning or "yellow",
            "literal": theme.accent or "magenta",
            "punct": "dim",
            "note": "dim italic",
            "danger": f"bold {theme.error or 'red'}",
        }

    def _paint_detail_text(self, text: Text) -> None:
        self.query_one("#detail", Static).update(text)

    def _show_detail(self, kind: str, obj: Any) -> None:
        self._detail = (kind, obj)
        self._repaint_detail()

    def _repaint_detail(self) -> None:
        if self._detail is None:
            return
        kind, obj = self._detail
        now = self.clock()
        snap = self.shown
        lines: list[tuple[str, str]] = []
        title = ""
        body: Any = {}
        if kind == "call":
            call: CallState = obj
            current = snap.call(call.call_id) if snap else None
            call = current or call
            title = f"call {call.call_id}"
            verdict = f"stage {call.stage.value}, next operation {call.next_operation.value}"
            if call.effect_unknown:
                lines.append((f"{WARN} verdict", f"effect unknown: duplicate risk ({verdict})"))
            else:
                lines.append(("verdict", verdict))
            lines.append(("provider effect", call.provider_effect.value))
            lines.append(("why", call.reason))
            if call.resumable:
                lines.append(("resume", "permitted by the projection (press r)"
                              if not self.read_only else "permitted, but read-only mode"))
            body = call.as_json()
        elif kind == "event":
            ev = obj
            title = f"event seq {ev.seq}: {ev.kind}"
            lines.append(("recorded", f"{ev.recorded_at} ({ago(ev.recorded_at, now)})"))
            if ev.payload_error:
                lines.append((f"{WARN} payload", ev.payload_error))
            if ev.call_id and snap is not None:
                call = snap.call(ev.call_id)
                if call is not None:
                    label = f"{WARN} call verdict" if call.effect_unknown else "call verdict"
                    lines.append((label, f"{call.stage.value}: {call.reason}"))
            body = {
                "seq": ev.seq, "event_id": ev.event_id, "recorded_at": ev.recorded_at,
                "kind": ev.kind, "task_id": ev.task_id, "call_id": ev.call_id,
                "attempt_id": ev.attempt_id, "compilation_id": ev.compilation_id,
                "payload": ev.payload if ev.payload is not None else ev.payload_text,
            }
        elif kind == "task":
            title = f"task {obj.task_id}"
            lines.append(("next operation", obj.next_operation.value))
            lines.append(("why", obj.reason))
            body = obj.as_json() | {"title": obj.title}
        elif kind == "compilation":
            title = f"compilation {obj.compilation_id}"
            lines.append(("next operation", obj.next_operation.value))
            lines.append(("why", obj.reason))
            body = obj.as_json() | {"package_id": obj.package_id,
                                    "rendered_sha256": obj.rendered_sha256}
        elif kind == "receipt":
            r = obj
            title = f"receipt {r.receipt_id}"
            check = snap.state.receipts if snap else None
            covered = check.covered_by.get(r.receipt_id) if check else None
            dup = bool(check and any(r.receipt_id in g for g in check.duplicates))
            if covered is None:
                lines.append((f"{WARN} coverage", "uncovered effect: no attempt.started with "
                              "this key and request hash"))
            else:
                lines.append(("covered by", f"attempt {covered}"))
            if dup:
                lines.append((f"{WARN} duplicate", "another receipt has the same key and body "
                              "hash: the provider served this request more than once"))
            body = {"receipt_id": r.receipt_id, "received_at": r.received_at,
                    "idempotency_key": r.idempotency_key, "body_sha256": r.body_sha256,
                    "bytes": r.bytes, "line": r.line_no}
        elif kind == "case":
            title = f"case {obj}"
            summary = self.summaries.get(obj)
            if isinstance(summary, tuple):
                lines.append(("worst state", summary[0].label))
            elif isinstance(summary, str):
                lines.append((f"{WARN} unreadable", summary))
            body = {"case": str(obj), "active": obj == self.case}
        elif kind == "loading":
            self._paint_detail_text(Text(f"seq {obj}: loading\u2026"))
            return
        self._paint_detail_text(detail_text(title, lines, body, palette=self._palette(),
                                            now=now, full_hashes=self.full_hashes))

    def on_table_view_cursor_moved(self, message: TableView.CursorMoved) -> None:
        table = message.table
        # The detail pane follows the focused pane; the Calls cursor also defines the
        # selected call before anything has focus.
        if table.has_focus or (table.id == "calls" and self.selected_call_id is None):
            self._detail_from(table, message.index)
        if table.id == "timeline":
            self._paint_new_marker()
        self.refresh_bindings()

    def _detail_from(self, table: TableView, index: int) -> None:
        pane = table.id
        source = table.source
        if pane == "calls":
            if isinstance(source, CallSource):
                call = source.call_at(index)
                if call is not None:
                    self.selected_call_id = call.call_id
                    self._show_detail("call", call)
        elif pane == "timeline":
            ev = source.event_at(index) if isinstance(source, TimelineSource | FilteredTimeline) \
                else None
            if ev is not None:
                if ev.call_id:
                    self.selected_call_id = ev.call_id
                self._show_detail("event", ev)
            elif len(source):
                self._show_detail("loading", index + 1)
        else:
            row = table.current_row()
            if row is not None and pane is not None:
                self._detail_for_key(pane, row.key)

    def _detail_for_key(self, pane: str, key: str) -> None:
        snap = self.shown
        if pane == "cases":
            self._show_detail("case", Path(key))
            return
        if snap is None:
            return
        if pane == "tasks":
            task = snap.state.task(key)
            if task:
                self._show_detail("task", task)
        elif pane == "compilations":
            comp = snap.state.compilation(key)
            if comp:
                self._show_detail("compilation", comp)
        elif pane == "receipts":
            for r in snap.receipts.receipts:
                if f"{r.line_no}:{r.receipt_id}" == key:
                    self._show_detail("receipt", r)
                    break

    def on_descendant_focus(self, event: Any) -> None:
        widget = getattr(event, "widget", None)
        if isinstance(widget, TableView) and widget.id in PANES:
            self._detail_from(widget, widget.cursor)
        self.refresh_bindings()

    # ------------------------------------------------------------------ selection helpers

    def selected_call(self) -> CallState | None:
        """The operator's selected call, in the live projection."""
        snap = self.live
        return snap.call(self.selected_call_id) if snap else None

    def focused_pane(self) -> str | None:
        focused = self.focused
        if isinstance(focused, TableView) and focused.id in PANES:
            return focused.id
        return None

    # ------------------------------------------------------------------ actions

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "resume":
            if self.read_only:
                return False
            call = self.selected_call()
            ok = (call is not None and call.resumable and self.as_of is None
                  and not self.resuming)
            return True if ok else None
        if action == "explain_resume":
            if self.read_only:
                return False
            call = self.selected_call()
            ok = (call is not None and call.resumable and self.as_of is None
                  and not self.resuming)
            return not ok
        if action == "open_case":
            return self.focused_pane() == "cases" or None
        return True

    def action_help(self) -> None:
        rows: list[tuple[str, str, str]] = []
        seen: set[str] = set()
        for binding in self.BINDINGS:
            assert isinstance(binding, Binding)
            if binding.id in seen or binding.id is None:
                continue
            if binding.action in ("resume", "explain_resume") and self.read_only:
                continue
            if binding.id == "resume.explain":
                continue
            seen.add(binding.id)
            rows.append((binding.key_display or binding.key, binding.description, binding.id))
        rows += [("ctrl+p", "Command palette", "command_palette (textual)"),
                 ("tab", "Next pane", "focus_next (textual)"),
                 ("\u2191\u2193 pgup pgdn home end", "Move in a pane", "table.*")]
        self.push_screen(HelpScreen(rows, self.read_only))

    def action_focus_pane(self, pane: str) -> None:
        if pane in PANES:
            self.table(pane).focus()

    def action_filter(self) -> None:
        pane = self.focused_pane() or "calls"
        self.filter_target = pane
        box = self.query_one("#filter", FilterInput)
        box.placeholder = f"filter {PANE_TITLES[pane][2:]} (enter applies, esc clears)"
        box.value = self.filters.get(pane, "")
        box.display = True
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.apply_filter(event.value)

    def apply_filter(self, text: str) -> None:
        pane = self.filter_target or "calls"
        box = self.query_one("#filter", FilterInput)
        box.display = False
        needle = text.strip().lower()
        if needle:
            self.filters[pane] = needle
        else:
            self.filters.pop(pane, None)
        if pane == "timeline":
            if needle and self.case is not None and self._page_reader is not None:
                self.progress = ("filtering", 0, self.max_seq)
                self._scan_timeline(self.case, self._page_reader, needle)
            else:
                self.table("timeline").set_source(self.timeline_source)
        elif pane == "cases":
            self._paint_cases()
        else:
            self._paint_panes()
        self._paint_titles()
        self.table(pane).focus()

    @work(thread=True, exit_on_error=False, group="filter", exclusive=True)
    def _scan_timeline(self, case: Path, reader: PageReader, needle: str) -> None:
        worker = get_current_worker()

        def match(ev: Any) -> bool:
            hay = " ".join((ev.kind, ev.task_id, ev.call_id or "", ev.attempt_id or "",
                            ev.compilation_id or "", str(ev.seq))).lower()
            return needle in hay

        try:
            events, truncated = reader.scan(match, FILTER_SCAN_LIMIT, lambda: worker.is_cancelled)
        except LedgerError as exc:
            self.post_message(m.LedgerTrouble(case, exc, ever_opened=True))
            return
        self.post_message(m.TimelineFiltered(case, needle, events, truncated))

    def on_timeline_filtered(self, message: m.TimelineFiltered) -> None:
        if message.case != self.case or self.filters.get("timeline") != message.needle:
            return
        self.progress = None
        source = FilteredTimeline(message.events, self.timeline_source.decorator)
        self.table("timeline").set_source(source)
        if message.truncated:
            self.notify(f"showing the first {FILTER_SCAN_LIMIT:,} matches", markup=False)
        self._paint_titles()
        self._paint_status()

    def action_next_effect_unknown(self) -> None:
        table = self.table("calls")
        source = table.source
        if not isinstance(source, CallSource) or not len(source):
            self.notify("no calls", markup=False)
            return
        index = source.find(table.cursor, lambda c: c.effect_unknown)
        if index is None:
            self.notify("no call is in effect_unknown", markup=False)
            return
        table.focus()
        table.move_to(index)

    def action_toggle_follow(self) -> None:
        self.following = not self.following
        if self.status in ("following", "paused"):
            self.status = "following" if self.following else "paused"
        self._wake.set() if self.following else None
        self._paint_status()

    def _timeline_seq(self) -> int | None:
        table = self.table("timeline")
        source = table.source
        if isinstance(source, TimelineSource | FilteredTimeline):
            return source.seq_at(table.cursor)
        return None

    def action_step(self, delta: int) -> None:
        table = self.table("timeline")
        table.focus()
        table.move_to(table.cursor + delta)
        if self.as_of is not None:
            seq = self._timeline_seq()
            if seq is not None and seq != self.as_of:
                self._travel_to(seq)

    def action_call_event(self, direction: int) -> None:
        call_id = self.selected_call_id
        if call_id is None or self.case is None or self._page_reader is None:
            self.notify("select a call first", markup=False)
            return
        self._load_call_seqs(self.case, self._page_reader, call_id, direction)

    @work(thread=True, exit_on_error=False, group="call_seqs", exclusive=True)
    def _load_call_seqs(self, case: Path, reader: PageReader, call_id: str,
                        direction: int) -> None:
        try:
            seqs = reader.call_seqs(call_id)
        except LedgerError as exc:
            self.post_message(m.LedgerTrouble(case, exc, ever_opened=True))
            return
        self.post_message(m.CallSeqs(case, call_id, seqs, direction))

    def on_call_seqs(self, message: m.CallSeqs) -> None:
        if message.case != self.case or not message.seqs:
            return
        current = self._timeline_seq() or 0
        if message.direction > 0:
            target = next((s for s in message.seqs if s > current), None)
        else:
            target = next((s for s in reversed(message.seqs) if s < current), None)
        if target is None:
            self.notify(visible(f"no {'later' if message.direction > 0 else 'earlier'} event "
                                f"of call {message.call_id}", one_line=True), markup=False)
            return
        table = self.table("timeline")
        table.focus()
        if not table.select_key(str(target)):
            self.notify(f"seq {target} is hidden by the timeline filter", markup=False)
            return
        if self.as_of is not None:
            self._travel_to(target)

    def action_time_travel(self) -> None:
        if self.as_of is not None:
            self.action_back_to_live()
            return
        seq = self._timeline_seq()
        if seq is None:
            self.notify("select an event in the timeline (5) first", markup=False)
            return
        self._travel_to(seq)

    def _travel_to(self, seq: int) -> None:
        if self.case is None:
            return
        self.as_of = seq
        self.progress = ("re-projecting", 0, seq)
        self._paint_status()
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

        machine = self._time_machine
        if machine is None or machine.case_dir != case:
            machine = self._time_machine = TimeMachine(case)
        try:
            snap = machine.to(seq, progress, lambda: worker.is_cancelled)
        except LedgerError as exc:
            self.post_message(m.LedgerTrouble(case, exc, ever_opened=True))
            return
        if snap is not None:
            self.post_message(m.AsOfReady(case, snap))

    def on_as_of_ready(self, message: m.AsOfReady) -> None:
        if message.case != self.case or self.as_of != message.snapshot.as_of:
            return
        self.progress = None
        self.shown = message.snapshot
        self._paint_panes()
        self.refresh_bindings()

    def action_back_to_live(self) -> None:
        if self.as_of is None:
            return
        self.as_of = None
        self.progress = None
        self.shown = self.live
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
            self.filter_target = pane
            self.apply_filter("")

    def action_toggle_hashes(self) -> None:
        self.full_hashes = not self.full_hashes
        self._repaint_detail()

    def action_open_case(self) -> None:
        row = self.table("cases").current_row()
        if row is not None:
            self.open_case(Path(row.key))

    # ------------------------------------------------------------------ resume

    def action_explain_resume(self) -> None:
        """`r` where resume is not permitted: say why, write nothing."""
        if self.resuming:
            self.notify("a resume is already running", markup=False)
            return
        if self.as_of is not None:
            self.notify("time travel shows the past: go back to live (t or esc) to resume",
                        severity="warning", markup=False)
            return
        call = self.selected_call()
        if call is None:
            self.notify("select a call first (3 focuses Calls)", severity="warning",
                        markup=False)
            return
        self.notify(
            visible(f"{call.call_id}: resume not permitted; the projection says next operation "
                    f"is {call.next_operation.value}: {call.reason}", one_line=True, limit=400),
            title="resume refused", severity="warning", markup=False, timeout=10)

    def action_resume(self) -> None:
        call = self.selected_call()
        if self.read_only or call is None or not call.resumable or self.case is None:
            return
        self._plan(self.case, call.call_id)

    @work(thread=True, exit_on_error=False, group="resume", exclusive=True)
    def _plan(self, case: Path, call_id: str) -> None:
        api = resume_api()
        if api is None:
            self.post_message(m.ResumeNote("resume is not available in this build", kind="failed"))
            return
        try:
            plan = api.plan_resume(case, call_id, model=self.model, base_url=self.base_url)
        except api.ResumeRefused as exc:
            op = exc.next_operation.value if exc.next_operation is not None else "none"
            self.post_message(m.ResumeNote(f"{call_id}: refused (next operation {op}): "
                                           f"{exc.reason}", kind="refused"))
            return
        except LedgerError as exc:
            self.post_message(m.ResumeNote(str(exc), kind="failed"))
            return
        self.post_message(m.PlanReady(plan))

    def on_plan_ready(self, message: m.PlanReady) -> None:
        plan = message.plan
        modal = ResumeModal(plan)
        self._modal = modal
        if self.live is not None:
            self._check_modal_evidence(self.live)

        def decided(confirmed: bool | None) -> None:
            self._modal = None
            if confirmed and not self.read_only and self.case is not None:
                self.resuming = True
                self.last_result = None
                self.progress = ("resuming", 0, 1)
                self._paint_status()
                self.refresh_bindings()
                self._run_resume(self.case, plan, modal.reason)

        self.push_screen(modal, decided)

    def _check_modal_evidence(self, snap: CaseSnapshot) -> None:
        modal = self._modal
        if modal is None or modal.refused:
            return
        plan = modal.plan
        call = snap.call(plan.call_id)
        if call is None or call.last_seq != plan.evidence[1] or not call.resumable:
            now = f"last seq {call.last_seq}, {call.stage.value}" if call else "call not found"
            why = f"shown at seq {plan.evidence[1]}, now {now}"
            if modal.is_mounted:
                modal.evidence_changed(why)
            else:
                modal.refused = why

    @work(thread=True, exit_on_error=False, group="resume", exclusive=True)
    def _run_resume(self, case: Path, plan: Any, reason: str | None) -> None:
        api = resume_api()
        if api is None:
            self.post_message(m.ResumeNote("resume is not available in this build", kind="failed"))
            return

        def progress(text: str) -> None:
            self.post_message(m.ResumeNote(text, kind="progress"))

        try:
            result = api.resume_call(case, plan.call_id, model=self.model,
                                     base_url=self.base_url, reason=reason, expected=plan,
                                     progress=progress)
        except api.ResumeRefused as exc:
            self.post_message(m.ResumeNote(f"{plan.call_id}: refused: {exc.reason}",
                                           kind="refused"))
            return
        except LedgerError as exc:
            self.post_message(m.ResumeNote(str(exc), kind="failed"))
            return
        except Exception as exc:  # noqa: BLE001 - the provider or network failed; say so
            self.post_message(m.ResumeNote(f"{plan.call_id}: resume failed: "
                                           f"{type(exc).__name__}: {exc}", kind="failed"))
            return
        self.post_message(m.ResumeDone(result))

    def on_resume_note(self, message: m.ResumeNote) -> None:
        text = visible(message.text, one_line=True, limit=400)
        if message.kind == "progress":
            self.progress = None
            self.last_result = f"resume: {text}"
            self._paint_status()
            return
        self.resuming = False
        self.progress = None
        self.last_result = None
        self.notify(text, title="resume " + message.kind,
                    severity="warning" if message.kind == "refused" else "error",
                    markup=False, timeout=15)
        self._paint_status()
        self.refresh_bindings()

    def on_resume_done(self, message: m.ResumeDone) -> None:
        r = message.result
        self.resuming = False
        self.progress = None
        text = visible(
            f"resumed {r.old_call_id} as {r.new_call_id} ({r.new_stage.value}); provider "
            f"receipts {r.receipts_before} \u2192 {r.receipts_after}", one_line=True, limit=300)
        self.last_result = "\u2714 " + text
        self.notify(text, title="resume done", markup=False, timeout=15)
        self._wake.set()
        self._paint_status()
        self.refresh_bindings()

    # ------------------------------------------------------------------ palette

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        commands: list[tuple[str, str, str]] = [
            ("Help: all key bindings", "?", "help"),
            ("Focus Cases", "1", "focus_pane('cases')"),
            ("Focus Tasks", "2", "focus_pane('tasks')"),
            ("Focus Calls", "3", "focus_pane('calls')"),
            ("Focus Compilations", "4", "focus_pane('compilations')"),
            ("Focus Timeline", "5", "focus_pane('timeline')"),
            ("Focus Receipts", "6", "focus_pane('receipts')"),
            ("Filter the focused pane", "/", "filter"),
            ("Next effect_unknown call", "e", "next_effect_unknown"),
            ("Toggle follow (live / paused)", "f", "toggle_follow"),
            ("Step back one event", "[", "step(-1)"),
            ("Step forward one event", "]", "step(1)"),
            ("Next event of the selected call", "n", "call_event(1)"),
            ("Previous event of the selected call", "N", "call_event(-1)"),
            ("Time travel to the selected event / back to live", "t", "time_travel"),
            ("Show full / short hashes in Detail", "h", "toggle_hashes"),
        ]
        if not self.read_only:
            commands.append(("Resume the selected call (gated by the projection)", "r",
                             "resume_or_explain"))
        for theme in ("incident-dark", "light", "high-contrast"):
            if theme in self.available_themes:
                commands.append((f"Theme: {theme}", "", f"set_theme('{theme}')"))
        for title, key, action in commands:
            yield SystemCommand(title, f"key: {key}" if key else "", self._runner(action))

    def _runner(self, action: str) -> Callable[[], Any]:
        async def run() -> None:
            await self.run_action(action)

        return run

    def action_resume_or_explain(self) -> None:
        if self.check_action("resume", ()):
            self.action_resume()
        elif not self.read_only:
            self.action_explain_resume()

    def action_set_theme(self, name: str) -> None:
        if name in self.available_themes:
            self.theme = name
            self._repaint_detail()


def resume_api() -> Any:
    """The resume module, imported lazily (tests patch this; a build without it degrades)."""
    try:
        from codeai_tui import resume
    except ImportError:
        return None
    return resume
