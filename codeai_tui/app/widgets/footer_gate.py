"""The console's footer, and one footer redraw per refresh, only when what it shows
changed.

Textual's Footer rebuilds every key widget on each request (~5 ms at 160 columns), and
cursor moves, focus changes and live snapshots ask many times a second: most requests
change nothing it shows.
"""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Footer


class ConsoleFooter(Footer):
    """Textual's footer that, under 110 columns, drops its padding, so that the next
    step's key, e, ? and q stay whole at 80 columns. Compact, Textual gives every key a
    margin on its right, the palette's too, which is docked right over keys that did not
    fit: that column showed the letter of a key beneath it ("^p palettel")."""

    DEFAULT_CSS = """
    ConsoleFooter.-compact FooterKey.-command-palette {
        margin-right: 0;
        padding-right: 1;
    }
    """

    def on_resize(self) -> None:
        self.compact = self.size.width < 110


class FooterGate:
    """What a screen's `refresh_bindings` asks goes through here."""

    def __init__(self, screen: Screen[Any]) -> None:
        self.screen = screen
        self._pending = False
        self._shown: tuple[object, ...] | None = None

    def request(self) -> None:
        """Redraw the footer if what it shows changed, once after this refresh."""
        if not self._pending:
            self._pending = self.screen.call_after_refresh(self._publish)

    def _publish(self) -> None:
        self._pending = False
        screen = self.screen
        shown = (screen.app.app_focus, *(
            (key, b.binding.action, b.binding.description, b.binding.key_display,
             b.binding.show, b.enabled, b.tooltip)
            for key, b in screen.active_bindings.items()))
        if shown != self._shown:
            self._shown = shown
            Screen.refresh_bindings(screen)
