"""The `/` filter: one input, and while a filter is on, a line that says so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, Static

from codeai_tui.app.widgets.cells import cell
from codeai_tui.console.filters import Needle, parse


class FilterInput(Input):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "give_up", "Clear filter", id="filter.clear"),
    ]

    def action_give_up(self) -> None:
        self.value = ""
        self.post_message(Input.Submitted(self, ""))


class FilterBar(Vertical):
    """Shows every active filter and how to clear it; edits one pane's filter."""

    DEFAULT_CSS = """
    FilterBar { height: auto; }
    FilterBar #filter-active { height: auto; padding: 0 1; background: $warning 25%; display: none; }
    FilterBar #filter-active.-on { display: block; }
    FilterBar FilterInput { display: none; }
    FilterBar FilterInput.-editing { display: block; }
    """

    @dataclass
    class Applied(Message):
        pane: str
        needle: Needle | None

    active: reactive[dict[str, Needle]] = reactive(dict, init=False, always_update=True)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.target = "calls"

    def compose(self) -> ComposeResult:
        yield Static(id="filter-active")
        yield FilterInput(id="filter")

    def watch_active(self, active: dict[str, Needle]) -> None:
        line = self.query_one("#filter-active", Static)
        line.set_class(bool(active), "-on")
        if active:
            parts: list[str | tuple[str, str]] = [("filter on: ", "bold")]
            for i, (pane, needle) in enumerate(active.items()):
                if i:
                    parts.append(" \u00b7 ")
                parts += [f"{pane} ", (f"\u201c{cell(needle.text, 30)}\u201d", "bold")]
            parts.append(" \u2014 esc on that pane clears")
            line.update(Content.assemble(*parts))

    def edit(self, pane: str, title: str) -> None:
        self.target = pane
        box = self.query_one(FilterInput)
        box.placeholder = f"filter {title}: words to match (enter applies, esc clears)"
        needle = self.active.get(pane)
        box.value = needle.text if needle else ""
        box.add_class("-editing")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one(FilterInput).remove_class("-editing")
        self.post_message(self.Applied(self.target, parse(event.value)))
