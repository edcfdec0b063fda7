"""l Lanes: one lane per call, grouped by task, on an axis of seqs or of times.

Each attempt is a bar from its start to its last event; an effect-unknown one runs from
its start to now in the theme's error colour (and its own glyph: words and shapes, not
colour alone); receipts are marks on the attempt they match, tool operations marks on
their call; receipts no attempt covers have a lane of their own. The as-of line marks
where time travel stands. The picture comes from `services/lanes.py`, the report's too.

Drawn with the Line API: the rows are a `LaneIndex` (found by bisection) and a lane is
derived only when its row is drawn, so 10^5 calls cost what a screenful costs. The pane
owns its axis, its zoom, its clock (read by a worker when a case opens, then extended by
the followed events) and its CSS; the screen sets `snapshot` (live or as of) and
`selected_call_id`, and hears the cursor as it hears any pane's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip

from codeai_tui.app.widgets import filter_scan
from codeai_tui.app.widgets.cells import WARN, cell
from codeai_tui.app.widgets.pane import Pane
from codeai_tui.app.widgets.table import Column, Row, fit
from codeai_tui.console.filters import call_fields
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.ledger import LedgerError, LedgerReader
from codeai_tui.services.lanes import (
    SEQ,
    TIME,
    UNCOVERED_KEY,
    Axis,
    Lane,
    LaneIndex,
    SeqClock,
    as_of_column,
    axis_line,
    call_key,
    call_lane,
    fit_axis,
    lane_cells,
    read_clock,
    task_key,
    uncovered_lane,
)
from codeai_tui.workstate import CallState, TaskState

LABEL_MIN, LABEL_MAX = 12, 26  # cells of the lane names
MIN_SEQS = 8  # the narrowest seq window zoom goes to
MIN_MICROS = 1000.0  # the narrowest time window (1 ms)


@dataclass
class ClockRead(Message):
    """A worker read the case's clock (recorded_at samples)."""

    case: Path
    clock: SeqClock


class LaneRows:
    """The pane's RowSource: a row per lane (keys say which lane), drawn by the pane."""

    def __init__(self, index: LaneIndex, snap: CaseSnapshot | None) -> None:
        self.index = index
        self.snap = snap

    def __len__(self) -> int:
        return len(self.index)

    def row(self, index: int) -> Row | None:
        item = self.index.at(index)
        if item is None or self.snap is None:
            return None
        kind, what = item
        if kind == "call":
            return Row(call_key(self.snap.state.calls[what].call_id), ())  # type: ignore[index]
        if kind == "task":
            return Row(task_key(str(what)), (), "dim")
        return Row(UNCOVERED_KEY, (), "error")

    def index_of(self, key: str) -> int | None:
        snap = self.snap
        if snap is None:
            return None
        if key == UNCOVERED_KEY:
            return 0 if self.index.uncovered else None
        if key.startswith("task:"):
            return self.index.row_of_task(key[5:])
        if key.startswith("call:"):
            position = snap.call_index.get(key[5:])
            if position is None:
                return None
            return self.index.row_of_call(snap.state.calls[position].task_id, position)
        return None


class LanesPane(Pane):
    TITLE = "Lanes"
    KEY = "l"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "axis", "Seq / time axis", show=False, id="lanes.axis"),
        Binding("plus,equals_sign", "zoom(1)", "Zoom in", show=False, id="lanes.zoom_in"),
        Binding("minus", "zoom(-1)", "Zoom out", show=False, id="lanes.zoom_out"),
        Binding("0", "fit", "Whole case", show=False, id="lanes.fit"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "lanes--axis", "lanes--task", "lanes--as-of", "lanes--extent", "lanes--attempt",
        "lanes--unknown", "lanes--receipt", "lanes--duplicate", "lanes--uncovered",
        "lanes--tool", "lanes--tool_unknown", "lanes--label-unknown",
    }

    DEFAULT_CSS = """
    LanesPane > .lanes--axis { color: $text-muted; background: $panel; text-style: bold; }
    LanesPane > .lanes--task { color: $text-muted; text-style: bold; }
    LanesPane > .lanes--as-of { color: $accent; text-style: bold; }
    LanesPane > .lanes--extent { color: $text-disabled; }
    LanesPane > .lanes--attempt { color: $primary; }
    LanesPane > .lanes--unknown { color: $error; text-style: bold; }
    LanesPane > .lanes--receipt { color: $success; text-style: bold; }
    LanesPane > .lanes--duplicate { color: $error; text-style: bold reverse; }
    LanesPane > .lanes--uncovered { color: $error; text-style: bold; }
    LanesPane > .lanes--tool { color: $warning; text-style: bold; }
    LanesPane > .lanes--tool_unknown { color: $error; text-style: bold reverse; }
    LanesPane > .lanes--label-unknown { color: $error; text-style: bold; }
    """

    # the call selected everywhere (the screen's); the cursor goes to its lane
    selected_call_id: reactive[str | None] = reactive(None, init=False, repaint=False)

    def __init__(self, **kwargs: object) -> None:
        super().__init__([Column("call", 1)], empty_text="no calls", **kwargs)  # type: ignore[arg-type]
        self.axis_kind = SEQ
        self.window: tuple[float, float] | None = None  # zoomed; None: the whole case
        self.clock: SeqClock | None = None
        self._clock_case: Path | None = None
        self._index = LaneIndex()
        self._index_case: Path | None = None
        self._index_needle: object = None
        self._stale = True  # a snapshot arrived while hidden: index it when shown
        self._lanes: dict[int, Lane | None] = {}  # row -> its lane, for this snapshot
        self._task_states: dict[str, TaskState] | None = None

    # ---- what the screen sets

    def watch_selected_call_id(self, call_id: str | None) -> None:
        if call_id is not None:
            self.select_key(call_key(call_id))

    def paint(self) -> None:
        snap = self.snapshot
        if snap is not None:
            self._follow_clock(snap)
        else:  # no case, another case, or a ledger replaced: its clock is read anew
            self._clock_case, self.clock = None, None
        if not self.display:
            self._stale = True  # indexed when shown: a hidden pane costs nothing
            super().paint()
            return
        self._stale = False
        fresh = self._reindex(snap)
        self._lanes.clear()
        self._task_states = None
        self.set_source(LaneRows(self._index, snap))
        # at the selected call when first drawn, and whenever the operator is elsewhere
        # (a call selected while this pane was hidden may have had no lane yet)
        if self.selected_call_id is not None and (fresh or not self.has_focus):
            self.select_key(call_key(self.selected_call_id))
        self.refresh()
        super().paint()

    def on_show(self) -> None:
        if self._stale:
            self.paint()

    def _reindex(self, snap: CaseSnapshot | None) -> bool:
        """Extend the index with the calls that arrived; a new one for another case, an
        earlier as-of, or another filter. True when the rows were laid out anew."""
        needle = self.needle
        calls = snap.state.calls if snap is not None else ()
        uncovered = bool(snap is not None and snap.state.receipts.uncovered)
        same = (snap is not None and snap.case_dir == self._index_case
                and needle == self._index_needle)
        empty = len(self._index) == 0
        if same and self._index.update(calls, uncovered):
            return empty
        keep = (lambda c: needle.matches(call_fields(c))) if needle is not None else None
        self._index = LaneIndex(keep)
        if needle is not None and snap is not None and len(calls) >= filter_scan.IN_THREAD_FROM:
            # matching every call (~5 us each; 0.7 s at 137,000, the header still for
            # 1.2 s) is the pane's filter scan, off the screen's thread: the index begins
            # from the positions it kept, the calls since matched by `keep`
            self.filtered(calls, lambda i: needle.matches(call_fields(calls[i])),
                          self.snapshot_scope())  # (begins a scan when none will do)
            last = self.last_scan()
            if last is None or last.length > len(calls):
                self._index_case = None  # (the scan's end paints again)
                return True
            self.settle_scans()  # (no rescan: the calls after it are matched as they come)
            self._index.start_from(calls, last.indices, last.length, uncovered)
        else:
            self.drop_scans()  # (a scan still running is no longer wanted: it stops)
            self._index.update(calls, uncovered)
        self._index_case = snap.case_dir if snap is not None else None
        self._index_needle = needle
        return True

    # ---- the clock (for the time axis and for placing receipts)

    def _follow_clock(self, snap: CaseSnapshot) -> None:
        if snap.case_dir != self._clock_case:
            self._clock_case = snap.case_dir
            self.clock = None
            self.run_worker(lambda: self._read_clock(snap.case_dir, snap.max_seq),
                            thread=True, group="lanes-clock", exclusive=True,
                            exit_on_error=False)
        elif self.clock is not None and snap.as_of is None and snap.recent:
            self.clock.add((ev.seq, ev.recorded_at) for ev in snap.recent)

    def _read_clock(self, case: Path, max_seq: int) -> None:
        try:
            with LedgerReader(case) as reader:
                clock = read_clock(reader, max_seq)
        except (LedgerError, OSError):
            return  # the seq axis needs none; the time axis says it has none
        self.post_message(ClockRead(case, clock))

    def on_clock_read(self, message: ClockRead) -> None:
        message.stop()
        if message.case != self._clock_case:
            return
        self.clock = message.clock
        snap = self.snapshot
        if snap is not None and snap.recent:
            self.clock.add((ev.seq, ev.recorded_at) for ev in snap.recent)
        self._lanes.clear()
        self.refresh()
        self.paint_title()

    # ---- the axis

    def whole_axis(self) -> Axis:
        snap = self.snapshot
        last = snap.max_seq if snap is not None else 0
        return fit_axis(self.axis_kind, 1, max(last, 1), self.clock)

    def axis(self) -> Axis:
        whole = self.whole_axis()
        if self.window is None or whole.kind != self.axis_kind:
            return whole
        return Axis(whole.kind, *self.window)

    def action_axis(self) -> None:
        self.axis_kind = TIME if self.axis_kind == SEQ else SEQ
        self.window = None
        if self.axis_kind == TIME and (self.clock is None or not len(self.clock)):
            self.notify("no times read from this ledger yet: the time axis shows seqs",
                        severity="warning", markup=False)
        self._redraw()

    def action_fit(self) -> None:
        self.window = None
        self._redraw()

    def action_zoom(self, direction: int) -> None:
        whole, now = self.whole_axis(), self.axis()
        span = (now.hi - now.lo) / (2.0 if direction > 0 else 0.5)
        least = MIN_SEQS if whole.kind == SEQ else MIN_MICROS
        span = max(span, least)
        if span >= whole.hi - whole.lo:
            self.window = None
            self._redraw()
            return
        centre = self._centre(now)
        lo = min(max(centre - span / 2, whole.lo), whole.hi - span)
        self.window = (lo, lo + span)
        self._redraw()

    def _centre(self, now: Axis) -> float:
        """Zoom keeps the as-of line in view (else the middle of the window)."""
        snap = self.snapshot
        if snap is not None and snap.as_of is not None:
            value = now.value(snap.as_of, self.clock)
            if value is not None:
                return value
        return (now.lo + now.hi) / 2

    def action_pan(self, delta: int) -> None:
        """left / right move a zoomed window (a whole case has nowhere to go)."""
        if self.window is None:
            return
        whole, now = self.whole_axis(), self.axis()
        width = max(1, self._plot_width())
        shift = delta * (now.hi - now.lo) / width
        span = now.hi - now.lo
        lo = min(max(now.lo + shift, whole.lo), whole.hi - span)
        self.window = (lo, lo + span)
        self._redraw()

    def _redraw(self) -> None:
        self.refresh()
        self.paint_title()

    # ---- titles

    def title_count(self) -> int:
        return self._index.call_count

    def title_marks(self) -> list[str | tuple[str, str]]:
        snap = self.snapshot
        if snap is not None and snap.unknown_ids:
            return [(f" {WARN} {len(snap.unknown_ids)} effect unknown", "bold $error")]
        return []

    def idle_subtitle(self) -> Content | None:
        kind = self.axis_kind
        if kind == TIME and (self.clock is None or not len(self.clock)):
            kind = "seq (no times yet)"
        zoom = " \u00b7 zoomed, 0 whole" if self.window is not None else ""
        return Content(f"{kind} axis \u00b7 s switches \u00b7 +/- zoom{zoom}")

    # ---- what the cursor is on

    def call_at_cursor(self) -> CallState | None:
        item = self._index.at(self.cursor)
        snap = self.snapshot
        if item is None or snap is None or item[0] != "call":
            return None
        return snap.state.calls[item[1]]  # type: ignore[index]

    def task_at_cursor(self) -> TaskState | None:
        item = self._index.at(self.cursor)
        if item is None or item[0] != "task":
            return None
        return self.task_state(str(item[1]))

    def lane_at(self, row: int) -> Lane | None:
        """The lane drawn on a row (None for a task's header)."""
        if row in self._lanes:
            return self._lanes[row]
        lane = self._derive(row)
        if len(self._lanes) > 512:
            self._lanes.clear()
        self._lanes[row] = lane
        return lane

    def _derive(self, row: int) -> Lane | None:
        snap = self.snapshot
        item = self._index.at(row)
        if snap is None or item is None:
            return None
        now = snap.as_of if snap.as_of is not None else snap.max_seq
        if item[0] == "call":
            call = snap.state.calls[item[1]]  # type: ignore[index]
            return call_lane(call, now, snap.state.receipts.index, clock=self.clock)
        if item[0] == "uncovered":
            return uncovered_lane(snap.state.receipts, now, self.clock)
        return None

    def task_state(self, task_id: str) -> TaskState | None:
        snap = self.snapshot
        if snap is None:
            return None
        if self._task_states is None:
            self._task_states = {t.task_id: t for t in snap.state.tasks}
        return self._task_states.get(task_id)

    # ---- drawing

    def _label_width(self, width: int) -> int:
        return max(LABEL_MIN, min(LABEL_MAX, width // 5))

    def _plot_width(self) -> int:
        width = self.scrollable_content_region.width
        return max(0, width - self._label_width(width) - 1)

    def _lane_style(self, name: str) -> Style:
        return self.get_component_rich_style(f"lanes--{name}", partial=True)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        snap = self.snapshot
        if snap is None or not self.row_count:
            return super().render_line(y)  # the empty message
        label_w = self._label_width(width)
        plot_w = max(0, width - label_w - 1)
        axis = self.axis()
        if axis.kind != self.axis_kind or (self.window is not None and
                                           axis.kind == TIME and self.clock is None):
            axis = self.whole_axis()
        as_of = (as_of_column(axis, snap.as_of, plot_w, self.clock)
                 if snap.as_of is not None else None)
        if y == 0:
            return self._axis_strip(axis, label_w, plot_w, as_of, base, width)
        row = int(self.scroll_offset.y) + y - 1
        if row >= self.row_count:
            return Strip.blank(width, base)
        at_cursor = row == self.cursor
        self._drawn[row] = (self.source.row(row), at_cursor)
        cursor = self._style("table--cursor") if at_cursor else None
        item = self._index.at(row)
        if item is not None and item[0] == "task":
            return self._task_strip(str(item[1]), width, base, cursor)
        lane = self.lane_at(row)
        if lane is None:
            return Strip.blank(width, base)
        label_style = base + (self._lane_style("label-unknown") if lane.effect_unknown else Style())
        if cursor is not None:
            label_style = label_style + cursor
        label = fit(("\u26a0 uncovered" if lane.call_id is None else cell(lane.label)),
                    label_w, middle=True)
        segments = [Segment(label + " ", label_style)]
        segments += self._plot_segments(lane, axis, plot_w, as_of, base, cursor)
        return Strip(segments).extend_cell_length(width, base).crop(0, width)

    def _plot_segments(self, lane: Lane, axis: Axis, plot_w: int, as_of: int | None,
                       base: Style, cursor: Style | None) -> list[Segment]:
        cells = lane_cells(lane, axis, plot_w, self.clock)
        highlight = Style(bgcolor=cursor.bgcolor) if cursor is not None and cursor.bgcolor else None
        segments: list[Segment] = []
        for col, (glyph, kind) in enumerate(cells):
            if col == as_of and not glyph:
                glyph, style = "\u2502", base + self._lane_style("as-of")
            elif glyph:
                style = base + self._lane_style(kind)
            else:
                glyph, style = " ", base
            if highlight is not None:
                style = style + highlight
            if segments and segments[-1].style == style:
                segments[-1] = Segment(segments[-1].text + glyph, style)
            else:
                segments.append(Segment(glyph, style))
        return segments

    def _axis_strip(self, axis: Axis, label_w: int, plot_w: int, as_of: int | None,
                    base: Style, width: int) -> Strip:
        style = base + self._lane_style("axis")
        name = "seq \u25b8" if axis.kind == SEQ else "time \u25b8"
        line = list(axis_line(axis, plot_w))
        if as_of is not None and 0 <= as_of < len(line):
            line[as_of] = "\u25bc"
        text = fit(name, label_w) + " " + "".join(line)
        return Strip([Segment(text, style)]).extend_cell_length(width, style).crop(0, width)

    def _task_strip(self, task_id: str, width: int, base: Style, cursor: Style | None) -> Strip:
        task = self.task_state(task_id)
        title = f" \u00b7 {cell(task.title)}" if task is not None and task.title else ""
        nxt = (f" \u00b7 next: {task.next_operation.value}"
               if task is not None else "")
        style = base + self._lane_style("task") + (cursor or Style())
        text = fit(f"\u25be task {cell(task_id)}{title}{nxt}", width)
        return Strip([Segment(text, style)])
