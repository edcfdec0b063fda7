"""The operator console: could the provider effect have happened?

Threads do all I/O (one follower per active case polls `data_version`; page and
projection workers read by key); the UI thread only draws what they post. Writes exist
only on the resume path, behind the projection, a modal pinned to the evidence shown,
and `check_action` (read-only mode hides and blocks them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Footer, Input, Static
from textual.worker import Worker, WorkerState, get_current_worker

from codeai_tui.app import messages as m
from codeai_tui.app.clock import Clock, system_clock
from codeai_tui.app.commands import Palette
from codeai_tui.app.constants import FILTER_SCAN_LIMIT, PANE_TITLES, PANES
from codeai_tui.app.detail import ago
from codeai_tui.app.detail_pane import DetailPane
from codeai_tui.app.live import LiveFollow
from codeai_tui.app.navigation import Navigation
from codeai_tui.app.resume_flow import ResumeFlow
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
    receipt_builder,
    receipt_key,
    task_row,
)
from codeai_tui.app.screens.help import HelpScreen
from codeai_tui.app.screens.resume import ResumeModal
from codeai_tui.app.themes import DEFAULT_THEME, load_themes
from codeai_tui.app.timeline import Decorator, FilteredTimeline, TimelineSource
from codeai_tui.app.widgets.table import ListSource, Row, TableView
from codeai_tui.console.model import (
    CaseSnapshot,
    PageReader,
    TimeMachine,
    Worst,
)
from codeai_tui.ledger import LEDGER_FORMAT, LedgerError
from codeai_tui.textsafe import visible


class FilterInput(Input):
    """The `/` filter line; escape gives up and clears."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "give_up", "Clear filter", id="filter.clear"),
    ]

    def action_give_up(self) -> None:
        self.value = ""
        self.app.call_later(self.app.apply_filter, "")  # type: ignore[attr-defined]


class CodeAIApp(LiveFollow, DetailPane, Navigation, ResumeFlow, Palette, App[None]):
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
        Binding("ctrl+p", "command_palette", "Commands", show=False, id="command_palette",
                priority=True),
        Binding("colon", "command_palette", "Commands", show=False, id="command_palette.colon"),
    ]

    def __init__(
        self,
        path: str | Path,
        *,
        theme: str | None = None,
        read_only: bool = False,
        model: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__()
        self.path_given = str(path)
        self.root = Path(path)
        self.read_only = read_only
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.clock: Clock = clock or system_clock
        themes, self._theme_problems = load_themes()
        for t in themes:
            self.register_theme(t)
        self._wanted_theme = theme or DEFAULT_THEME
        self.theme = self._wanted_theme if self._wanted_theme in self.available_themes \
            else DEFAULT_THEME
        self.cases: list[Path] = []
        self.summaries: dict[Path, tuple[Worst, int] | str] = {}
        self.jump_to_effect_unknown = False  # set by `e` when it opens another case
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
        self.planning = False  # a plan_resume worker is running
        self.last_result: str | None = None
        self.activity: str | None = None  # a running resume's latest step
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

    # ------------------------------------------------------------------ painting

    def _paint_all(self) -> None:
        self._paint_status()
        self._paint_cases()
        self._paint_panes()

    def _paint_cases(self) -> None:
        rows = case_rows(self.cases, self.summaries, self.root, self.case)
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
                self._set_lazy("receipts", snap.receipts.receipts, receipt_builder(snap),
                               receipt_key)
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
            if self.progress is None:
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
        elif self.activity:
            parts.append(("\u231b " + cell(self.activity, 120), "bold $warning"))
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
        elif self.as_of is not None and (self.shown is None or self.shown.as_of != self.as_of):
            shown = self.shown.as_of if self.shown is not None else None
            banner.update(Content.assemble(
                (f"\u23f2 GOING TO seq {self.as_of:,} of {self.max_seq:,}", "bold"),
                "  \u2014 re-projecting; the panes below still show ",
                ("LIVE" if shown is None else f"seq {shown:,}", "bold"),
                " until it is done.  t or esc: back to live",
            ))
            banner.set_classes("as-of")
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
        """Every binding as currently mapped (a keymap from `set_keymap` shows here)."""
        keys: dict[str, list[str]] = {}
        described: dict[str, str] = {}
        for namespace, bindings in self.screen._binding_chain:
            if namespace is not self and not isinstance(namespace, TableView):
                continue
            for _key, binding in bindings:
                bid = binding.id
                if bid is None or bid == "resume.explain":
                    continue
                if self.read_only and binding.action in ("resume", "explain_resume"):
                    continue
                shown = self.get_key_display(binding)
                if shown not in keys.setdefault(bid, []):
                    keys[bid].append(shown)
                described.setdefault(bid, binding.description)
        rows = [(" ".join(k), described[bid], bid) for bid, k in keys.items()]
        rows.append(("tab", "Next pane", "focus_next (textual)"))
        self.push_screen(HelpScreen(rows, self.read_only))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker died of a bug (not a ledger problem, those are messages): say so
        plainly instead of leaving a pane silently stale."""
        if event.state is not WorkerState.ERROR:
            return
        worker = event.worker
        error = worker.error
        what = f"{worker.group or worker.name}: {type(error).__name__}: {error}"
        if worker.group == "follow":
            self.status = "stopped"
            self.trouble = f"live follow stopped by an internal error ({what})"
            self._paint_status()
        self.notify(visible(f"internal error in {what}", one_line=True, limit=300),
                    title="internal error", severity="error", markup=False, timeout=15)

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
                self.workers.cancel_group(self, "filter")
                if self.progress and self.progress[0] == "filtering":
                    self.progress = None
                self.table("timeline").set_source(self.timeline_source)
        elif pane == "cases":
            self._paint_cases()
        else:
            self._paint_panes()
        self._paint_titles()
        self._paint_status()
        self.table(pane).focus()

    @work(thread=True, exit_on_error=False, group="filter", exclusive=True)
    def _scan_timeline(self, case: Path, reader: PageReader, needle: str) -> None:
        worker = get_current_worker()

        def match(ev: Any) -> bool:
            hay = " ".join((ev.kind, ev.task_id, ev.call_id or "", ev.attempt_id or "",
                            ev.compilation_id or "", str(ev.seq))).lower()
            return needle in hay

        last_note = 0.0

        def progress(done: int, _total: int) -> None:
            nonlocal last_note
            now = time.monotonic()
            if now - last_note >= 0.1:
                last_note = now
                self.post_message(m.ProjectionProgress(case, done, self.max_seq, "filtering"))

        try:
            events, truncated = reader.scan(match, FILTER_SCAN_LIMIT, lambda: worker.is_cancelled,
                                            progress)
        except LedgerError as exc:
            self.post_message(m.LedgerTrouble(case, exc, ever_opened=True))
            return
        self.post_message(m.TimelineFiltered(case, needle, events, truncated))

    def on_timeline_filtered(self, message: m.TimelineFiltered) -> None:
        if message.case != self.case or self.filters.get("timeline") != message.needle:
            if self.progress and self.progress[0] == "filtering" and "timeline" not in self.filters:
                self.progress = None
                self._paint_status()
            return
        self.progress = None
        source = FilteredTimeline(message.events, self.timeline_source.decorator)
        self.table("timeline").set_source(source)
        if message.truncated:
            self.notify(f"showing the first {FILTER_SCAN_LIMIT:,} matches", markup=False)
        self._paint_titles()
        self._paint_status()
