"""What the one action flow (action_flow.py) may ask of its screen.

The flow is a widget the main screen composes (not a mixin of it): it talks to the
screen only through this protocol, so what it reads and writes of the session is listed
here and nowhere else. Its workers are its own, so they end with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from textual.screen import Screen

from codeai_tui.actions.protocol import ActionOptions, GatedAction
from codeai_tui.console.actions import Outcome
from codeai_tui.console.drift import DriftCheck
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.console.session import Note
from codeai_tui.workstate import CallState


class FlowHost(Protocol):
    """The main screen, as the action flow sees it."""

    # the session (read)
    read_only: bool
    case: Path | None
    as_of: int | None
    live: CaseSnapshot | None
    clock: Callable[[], datetime]  # now, as the console shows it (frozen in tests)

    # what the status bar shows (written)
    activity: str | None
    note: Note | None

    @property
    def actions(self) -> Mapping[str, GatedAction]:
        """The registry's gated actions by name, as this console runs them."""
        ...

    @property
    def options(self) -> ActionOptions:
        """What the operator gave on the command line, for every gated action."""
        ...

    def selected_call(self) -> CallState | None:
        """The selected call in the live projection (actions act on live)."""
        ...

    def record(self, case: Path | None, call_id: str | None, outcome: Outcome,
               text: str) -> None:
        """Keep an outcome in the action log (case None: the open case)."""
        ...

    def paint_status(self) -> None: ...

    def wake_follower(self) -> None:
        """Poll the ledger now: the follower shows what an action wrote at once."""
        ...

    def show_drift(self, check: DriftCheck) -> None:
        """Keep a drift check a flow made and show it in the panes."""
        ...

    def refresh_bindings(self) -> None: ...

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None]) -> None: ...
