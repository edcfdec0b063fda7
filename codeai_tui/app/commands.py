"""The command palette: every action, titled for search."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from textual.app import SystemCommand
from textual.screen import Screen

if TYPE_CHECKING:
    from codeai_tui.app.app import CodeAIApp as _Base
else:
    _Base = object


class Palette(_Base):
    """Command palette entries (mixed into CodeAIApp)."""

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
