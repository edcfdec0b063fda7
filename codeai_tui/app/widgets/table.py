"""A Line-API table: draws only the visible rows, so it scales to a million of them.

`DataTable` rebuilds a list as tall as the table on every change; this view
asks a `RowSource` for row i only when row i is on screen. Cells are plain text that
has already been through `textsafe.visible` (see `cells.py`): nothing here parses markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.events import Click
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

ELLIPSIS = "\u2026"
# an id up to this many cells shows whole even where the pane must then scroll sideways
ID_WHOLE = 24


@dataclass(frozen=True, slots=True)
class Column:
    """`width` is the least the column gets. An `ident` column holds ids: it grows to the
    longest id seen on screen while the pane has room, and an id cut anyway keeps its
    head and its tail (where ids like call-0049-0001 and call-0049-0002 differ)."""

    title: str
    width: int
    ident: bool = False
    most: int = 64  # an ident column grows to at most this many cells


@dataclass(frozen=True, slots=True)
class Row:
    """One row: a stable key (for keeping the selection), sanitised cells, a tone."""

    key: str
    cells: tuple[str, ...]
    tone: str = ""  # "" | "error" | "warn" | "dim" | "ok"


class RowSource(Protocol):
    def __len__(self) -> int: ...

    def row(self, index: int) -> Row | None:
        """The row, or None while it is being loaded."""
        ...

    def index_of(self, key: str) -> int | None: ...


class ListSource:
    """Rows already built (small panes)."""

    def __init__(self, rows: Sequence[Row]) -> None:
        self.rows = list(rows)
        self._index: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self.rows)

    def row(self, index: int) -> Row | None:
        return self.rows[index] if 0 <= index < len(self.rows) else None

    def index_of(self, key: str) -> int | None:
        if self._index is None:
            self._index = {r.key: i for i, r in enumerate(self.rows)}
        return self._index.get(key)


def fit(text: str, width: int, middle: bool = False) -> str:
    """Pad or cut `text` to exactly `width` cells, marking a cut with an ellipsis: at the
    end, or (`middle`) between the head and the tail, so that ids differing at their end
    stay apart."""
    if width <= 0:
        return ""
    if cell_len(text) <= width:
        return set_cell_size(text, width)
    if middle and width >= 5 and len(text) == cell_len(text):  # one cell per character
        tail = (width - 1) // 2
        return text[: width - 1 - tail] + ELLIPSIS + text[len(text) - tail:]
    return set_cell_size(text, width - 1) + ELLIPSIS


class TableView(ScrollView, can_focus=True):
    """Columns, a fixed header line, a cursor row; rows drawn on demand."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="table.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="table.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="table.page_up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="table.page_down"),
        Binding("home,g", "edge(0)", "First", show=False, id="table.first"),
        Binding("end,G", "edge(1)", "Last", show=False, id="table.last"),
        Binding("left", "pan(-8)", "Scroll left", show=False, id="table.left"),
        Binding("right", "pan(8)", "Scroll right", show=False, id="table.right"),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "table--header",
        "table--cursor",
        "table--error",
        "table--warn",
        "table--dim",
        "table--ok",
        "table--empty",
    }

    class CursorMoved(Message):
        """The cursor landed on a row (posted after a move or a data change)."""

        def __init__(self, table: TableView, index: int, row: Row | None) -> None:
            super().__init__()
            self.table = table
            self.index = index
            self.row = row

        @property
        def control(self) -> TableView:
            return self.table

    def __init__(
        self,
        columns: Sequence[Column],
        *,
        empty_text: str = "nothing here",
        follow_tail: bool = False,
        name: str | None = None,
        id: str | None = None,  # noqa: A002 - Textual's name
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.columns = list(columns)
        self.source: RowSource = ListSource([])
        self.cursor = 0
        self.empty_text = empty_text
        self.follow_tail = follow_tail
        # set from above while the cursor must stay where it is (time travel): rows still
        # arrive and count as new below, but the cursor does not follow them
        self.hold_cursor = False
        # each column's width now: its least, grown for the ids seen (see `_fit_columns`)
        self.widths = [c.width for c in self.columns]
        # the longest id each ident column has drawn (cells); the widths follow it
        self._seen = [c.width for c in self.columns]
        self.total_width = sum(self.widths) + len(self.columns)
        self._last_key: str | None = None
        self._known_count = 0
        self.new_below = 0  # rows appended below while the operator looks elsewhere
        # row index -> what its line shows (the row, whether it is the cursor's), as last
        # drawn: a new source redraws only the visible lines whose entry differs
        self._drawn: dict[int, tuple[Row | None, bool] | None] = {}

    # ---- data

    @property
    def row_count(self) -> int:
        return len(self.source)

    def current_row(self) -> Row | None:
        return self.source.row(self.cursor) if self.row_count else None

    def set_source(self, source: RowSource, *, keep: bool = True) -> None:
        """Swap the rows, keeping the selected key and the scroll position."""
        old_count = self._known_count  # the source may be the same object, grown
        at_tail = self.follow_tail and not self.hold_cursor and (
            old_count == 0 or self.cursor >= old_count - 1)
        key = self._last_key
        same = source is self.source
        self.source = source
        count = len(source)
        if self.follow_tail and not at_tail and same and count > old_count:
            self.new_below += count - old_count
        elif not same:
            self.new_below = 0
        self._known_count = count
        index: int | None = None
        if at_tail and count:
            index = count - 1
        elif keep and key is not None:
            index = self._place_of(source, key)
        if index is None:
            index = min(self.cursor, max(0, count - 1))
        self.virtual_size = Size(self.total_width, count + 1)
        if (old_count == 0) != (count == 0):
            self.refresh()  # the empty text comes or goes
        self._move(index, force_message=True, scroll=at_tail)
        if at_tail:
            # the new virtual size reaches the scrollbars on the next refresh
            self.call_after_refresh(self._scroll_to_cursor)

    def _place_of(self, source: RowSource, key: str) -> int | None:
        """Where the selected key sits in `source`: at the cursor when it is still there
        (rows keep their places as a case grows), else found by the source (a pass that
        builds an index of every row for some: once a snapshot, it kept ~100 bytes a
        task while following)."""
        at = self.cursor
        if 0 <= at < len(source):
            row = source.row(at)
            if row is not None and row.key == key:
                return at
        return source.index_of(key)

    def refresh_rows(self) -> None:
        """Rows arrived for a loading source: redraw, re-announce the cursor row."""
        self.refresh()
        row = self.current_row()
        if row is not None and row.key != self._last_key:
            self._last_key = row.key
            self.post_message(self.CursorMoved(self, self.cursor, row))

    # ---- cursor

    def _move(self, index: int, *, force_message: bool = False, scroll: bool = True) -> None:
        count = self.row_count
        index = max(0, min(index, count - 1)) if count else 0
        changed = index != self.cursor
        self.cursor = index
        if scroll:
            self._scroll_to_cursor()
        if self.row_count and index == self.row_count - 1:
            self.new_below = 0
        row = self.current_row()
        key = row.key if row is not None else None
        if changed or force_message or key != self._last_key:
            self._last_key = key if key is not None else self._last_key
            self.post_message(self.CursorMoved(self, index, row))
        self.redraw_changed()

    def redraw_changed(self) -> None:
        """Redraw the visible lines whose row or cursor mark changed since drawn, only
        those: a live snapshot changes few, and redrawing every line of every pane on
        each one took most of the console's CPU on a big ledger. (A scroll redraws the
        whole pane by itself: Textual's ScrollView does.)"""
        count = self.row_count
        if not count:
            return  # `set_source` redraws when the empty text comes or goes
        top = int(self.scroll_offset.y)
        height = self._page_height()
        drawn = self._drawn
        for index in range(top, top + height):
            shown = (self.source.row(index), index == self.cursor) if index < count else None
            if index not in drawn or drawn[index] != shown:
                self.refresh_lines(index + 1)
        if len(drawn) > 4 * height + 16:  # lines scrolled away long ago
            self._drawn = {i: v for i, v in drawn.items() if top <= i < top + height}

    def move_to(self, index: int) -> None:
        self._move(index)

    def select_key(self, key: str) -> bool:
        index = self.source.index_of(key)
        if index is None:
            return False
        self._move(index)
        return True

    def _page_height(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_to_cursor(self) -> None:
        top = int(self.scroll_offset.y)
        height = self._page_height()
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def action_cursor(self, delta: int) -> None:
        self._move(self.cursor + delta)

    def action_pan(self, delta: int) -> None:
        self.scroll_to(x=max(0, int(self.scroll_offset.x) + delta), animate=False)

    def action_page(self, direction: int) -> None:
        self._move(self.cursor + direction * self._page_height())

    def action_edge(self, end: int) -> None:
        self._move(self.row_count - 1 if end else 0)

    def on_click(self, event: Click) -> None:
        y = event.y
        if y <= 0:
            return
        self.focus()
        self._move(int(self.scroll_offset.y) + y - 1, scroll=False)

    def _fit_columns(self) -> None:
        """Widen each ident column towards the longest id it has drawn (up to its `most`
        and half the pane). Where the pane has room for that, every column shows; where
        it has not, an id still gets up to ID_WHOLE cells before the columns after it
        (which the pane scrolls to sideways): an id is what tells rows apart. Only an id
        longer than its width is cut, in the middle."""
        region = self.scrollable_content_region.width
        half = max(8, region // 2)
        least = [c.width for c in self.columns]
        target = [max(c.width, min(seen, c.most, half)) if c.ident else c.width
                  for c, seen in zip(self.columns, self._seen, strict=True)]
        room = region - sum(least) - len(least)
        if sum(target) - sum(least) > room:  # not enough room: share it, ids first
            idents = [i for i, c in enumerate(self.columns) if c.ident]
            share = max(0, room) // max(1, len(idents))
            for i in idents:
                target[i] = min(target[i], max(least[i] + share, min(target[i], ID_WHOLE)))
        if target != self.widths:
            self.widths = target
            self.total_width = sum(target) + len(target)
            self.virtual_size = Size(self.total_width, self.row_count + 1)
            self._drawn.clear()
            self.refresh()

    def _note_widths(self, cells: Sequence[str]) -> None:
        """Remember ids longer than their column; refit once after this refresh."""
        grew = False
        for i, (col, text) in enumerate(zip(self.columns, cells, strict=False)):
            if col.ident and len(text) > self._seen[i] and self._seen[i] < col.most:
                self._seen[i] = min(len(text), col.most)
                grew = True
        if grew:
            self.call_after_refresh(self._fit_columns)

    def on_resize(self) -> None:
        self._fit_columns()
        self.virtual_size = Size(self.total_width, self.row_count + 1)
        # Grown wide enough again: a horizontal scroll from the narrow size would
        # otherwise stay and hide the first columns.
        if self.scrollable_content_region.width >= self.total_width and self.scroll_offset.x:
            self.scroll_to(x=0, animate=False, immediate=True)
        self._scroll_to_cursor()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.refresh()

    # ---- drawing

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name, partial=True)

    def _line(self, cells: Sequence[str], style: Style) -> list[Segment]:
        segments: list[Segment] = []
        for col, width, text in zip(self.columns, self.widths, cells, strict=False):
            segments.append(Segment(fit(text, width, col.ident) + " ", style))
        return segments

    def empty_message(self) -> str:
        """What the table says when it has no rows."""
        return self.empty_text

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x = int(self.scroll_offset.x)
        base = self.rich_style
        if y == 0:
            style = base + self._style("table--header")
            segments = self._line([c.title for c in self.columns], style)
            return self._finish(segments, scroll_x, width, style)
        index = int(self.scroll_offset.y) + y - 1
        count = self.row_count
        if count == 0:
            if y == 1:
                style = base + self._style("table--empty")
                return self._finish([Segment(" " + self.empty_message(), style)], 0, width,
                                    style)
            return Strip.blank(width, base)
        if index >= count:
            self._drawn[index] = None
            return Strip.blank(width, base)
        row = self.source.row(index)
        at_cursor = index == self.cursor
        self._drawn[index] = (row, at_cursor)
        style = base
        if row is None:
            style = base + self._style("table--dim")
            segments = [Segment(fit(f"{index + 1:>7}", self.widths[0]) + " \u2026 loading", style)]
        else:
            if row.tone:
                style = base + self._style(f"table--{row.tone}")
            self._note_widths(row.cells)
            segments = self._line(row.cells, style)
        if at_cursor:
            style = style + self._style("table--cursor")
            segments = [Segment(s.text, s.style + self._style("table--cursor") if s.style else style)
                        for s in segments]
        return self._finish(segments, scroll_x, width, style)

    @staticmethod
    def _finish(segments: list[Segment], scroll_x: int, width: int, style: Style) -> Strip:
        strip = Strip(segments).crop(scroll_x, scroll_x + width)
        return strip.extend_cell_length(width, style).simplify()
