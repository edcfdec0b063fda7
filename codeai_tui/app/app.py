"""The operator console: could the provider effect have happened?

The app is thin: themes, the keymap in use, the action log, the command palette, and
one `MainScreen` that composes the widgets. Writes exist only on the resume path,
behind the projection, the drift check, a dialog pinned to the evidence shown, and
`check_action` (read-only mode hides and blocks them).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from codeai_tui.actions.protocol import ActionOptions, GatedAction
from codeai_tui.actions.registry import BY_NAME
from codeai_tui.app import actions
from codeai_tui.app.clock import Clock, system_clock
from codeai_tui.app.screens.main import MainScreen
from codeai_tui.app.themes import DEFAULT_THEME, load_themes
from codeai_tui.app.widgets.detail_view import DetailView
from codeai_tui.console.actions import ActionLog
from codeai_tui.console.head_start import HeadStart
from codeai_tui.textsafe import visible


class CodeAIApp(App[None]):
    """`codeai-tui PATH`: live panes over one case or a bundle of cases."""

    TITLE = "codeai-tui"
    # The main screen's layout lives beside it; a default screen's own CSS_PATH is not
    # loaded by Textual, so the app loads it.
    CSS_PATH = "screens/main.tcss"
    ENABLE_COMMAND_PALETTE = True

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
        actions: Mapping[str, GatedAction] | None = None,
        provider_note: str | None = None,
        kernel_key: Path | None = None,
        head_start: HeadStart | None = None,
    ) -> None:
        super().__init__()
        self.path_given = str(path)
        self.root = Path(path)
        self.read_only = read_only
        self.clock: Clock = clock or system_clock
        self.action_log = ActionLog()
        self.keymap_in_use: dict[str, str] = {}
        # what the operator gave on the command line, for every gated action; replay
        # signs tool receipts with the operator's kernel key (never in a case)
        self.options = ActionOptions(model=model, base_url=base_url,
                                     api_key_env=api_key_env, kernel_key=kernel_key)
        # the registry's gated actions by name; a test may stand in for some of them
        self.actions: dict[str, GatedAction] = {**BY_NAME, **(actions or {})}
        self.provider_note = provider_note
        themes, self._theme_problems = load_themes()
        for t in themes:
            self.register_theme(t)
        self._wanted_theme = theme or DEFAULT_THEME
        self.theme = self._wanted_theme if self._wanted_theme in self.available_themes \
            else DEFAULT_THEME
        self._main: MainScreen | None = None
        self._head_start = head_start  # handed to the main screen, which takes it

    def get_default_screen(self) -> Screen[Any]:
        self._main = MainScreen(self.root, path_given=self.path_given,
                                read_only=self.read_only, clock=self.clock,
                                actions=self.actions, log=self.action_log,
                                help_rows=self.help_rows, provider_note=self.provider_note,
                                head_start=self._head_start)
        return self._main

    @property
    def main(self) -> MainScreen:
        """The main screen (also while a dialog is on top of it)."""
        assert self._main is not None, "the app is not running"
        return self._main

    def on_mount(self) -> None:
        self._end_on_signals()
        if self._wanted_theme not in self.available_themes:
            self.notify(visible(f"theme {self._wanted_theme!r} not found; using {self.theme}",
                                one_line=True), severity="warning", markup=False)
        for problem in self._theme_problems:
            self.notify(visible(problem, one_line=True), severity="warning", markup=False)

    # ---- ending cleanly when told to

    ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
    # after a signal the app gets this long to restore the terminal and return; a closed
    # terminal can stall the restore, and a console left behind holds a read connection
    # on the ledger, so the process then ends anyway
    SIGNAL_GRACE_S = 5.0

    def _end_on_signals(self) -> None:
        """SIGTERM or SIGHUP (a closed terminal, `kill`, a supervisor) end the app the way
        `q` does, so Textual restores the terminal: without this the default action killed
        the process in the alternate screen with mouse reporting on and the tty raw."""
        self.ended_by: int | None = None
        loop = asyncio.get_running_loop()
        for sig in self.ENDING_SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._signalled, sig)

    def _signalled(self, sig: signal.Signals) -> None:
        self.ended_by = int(sig)
        watchdog = threading.Timer(self.SIGNAL_GRACE_S, os._exit, args=(128 + int(sig),))
        watchdog.daemon = True
        watchdog.start()
        self.exit()

    # ---- the keymap, recorded so help and the palette show remapped keys

    def set_keymap(self, keymap: Mapping[str, str]) -> None:
        self.keymap_in_use = actions.with_companions(keymap)
        super().set_keymap(self.keymap_in_use)

    def update_keymap(self, keymap: Mapping[str, str]) -> None:
        self.keymap_in_use = {**self.keymap_in_use, **actions.with_companions(keymap)}
        super().update_keymap(self.keymap_in_use)

    def key_display(self, spec: actions.ActionSpec) -> str:
        return " ".join(self.get_key_display(_probe(key))
                        for key in actions.keys_for(spec, self.keymap_in_use))

    def help_rows(self) -> list[tuple[str, str, str]]:
        # the long form for every action (r and x showed only their footer word)
        rows = [(self.key_display(s), s.title, s.id)
                for s in actions.visible_actions(self.read_only)]
        # keys every pane answers to, not remappable actions of the registry
        rows += [("j / k", "Down / up a row (also the arrow keys)", "table.cursor"),
                 ("g / G", "First / last row (also home / end)", "table.first / table.last"),
                 ("pgup pgdn", "A page up / down", "table.page"),
                 ("shift+tab", "Previous pane or field (tab: the next)", "focus.previous"),
                 ("ctrl+p", "Command palette (also :)", "app.command_palette")]
        return rows

    # ---- the command palette: the same registry

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for spec in actions.visible_actions(self.read_only):
            if not spec.palette:
                continue
            yield SystemCommand(spec.title, f"key: {self.key_display(spec)}",
                                self._runner(spec.action))
        if not self.read_only:  # a gated write runs, or says why not, as its key does
            for gated in actions.GATED:
                spec = actions.BY_ID[gated]
                yield SystemCommand(spec.title, f"key: {self.key_display(spec)}",
                                    self._runner(f"{gated}_or_explain"))
        for theme in ("incident-dark", "light", "high-contrast"):
            if theme in self.available_themes:
                yield SystemCommand(f"Theme: {theme}", "", self._runner(
                    f"app.set_theme('{theme}')"))

    def _runner(self, action: str) -> Callable[[], Any]:
        async def run() -> None:
            gated = action.removesuffix("_or_explain")
            if gated in actions.GATED:
                main = self.main
                await self.run_action(
                    gated if main.check_action(gated, ()) else actions.GATED[gated], main)
                return
            await self.run_action(action, self.main)

        return run

    def action_set_theme(self, name: str) -> None:
        if name in self.available_themes:
            self.theme = name
            self.main.query_one(DetailView).repaint()


def _probe(key: str) -> Binding:
    """A binding only for `get_key_display` (it formats a binding's key for this app)."""
    return Binding(key, "")
