"""Text put in a `Static` whose height may change with it (Detail, a modal's refusal)."""

from __future__ import annotations

from textual.visual import VisualType
from textual.widgets import Static


def show_laid_out(static: Static, content: VisualType) -> None:
    """`static.update(content)`, its layout asked for again once that refresh is done.
    Textual counts a layout request only when none is pending, and keeps each widget's
    size by that count: a layout of the screen between a pending request and the update
    kept the earlier text's height (Detail stayed one line tall after `l` selected a
    lane, about one opening in 40 at 160x48; none in 120 asked again)."""
    static.update(content)
    static.call_after_refresh(static.refresh, layout=True)
