"""What a console flow (resume, advance, reconcile and cross-links, replay) may ask of
its screen.

The flows are plain objects the main screen composes (not mixins of it): each talks to
the screen only through this protocol, so what a flow reads and writes of the session
is listed here and nowhere else. The screen's message handlers and `action_*` methods
delegate to the flows; the flows' workers run on the screen (`run_worker`), so they end
with it and report through its worker-state handler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker

from codeai_tui.actions.protocol import ActionOptions
from codeai_tui.app.widgets.calls_pane import CallsPane
from codeai_tui.app.widgets.receipts_pane import ReceiptsPane
from codeai_tui.app.widgets.verdict_line import VerdictLine
from codeai_tui.console.actions import Outcome
from codeai_tui.console.drift import DriftCheck
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.console.resume_service import ResumeService
from codeai_tui.workstate import CallState


@dataclass(frozen=True)
class Note:
    """The last action's outcome: it belongs to one case and one call."""

    case: Path
    call_id: str
    text: str
    ok: bool


class FlowHost(Protocol):
    """The main screen, as the flows see it."""

    # the session (read)
    read_only: bool
    case: Path | None
    as_of: int | None
    live: CaseSnapshot | None
    shown: CaseSnapshot | None
    selected_call_id: str | None
    service: ResumeService
    clock: Callable[[], datetime]  # now, as the console shows it (frozen in tests)

    # what the status bar shows and the one-action-at-a-time flags (read and written)
    activity: str | None
    note: Note | None
    planning: bool
    resuming: bool

    def selected_call(self) -> CallState | None:
        """The selected call in the live projection (actions act on live)."""
        ...

    @property
    def options(self) -> ActionOptions:
        """What the operator gave on the command line, for every gated action."""
        ...

    @property
    def calls(self) -> CallsPane: ...

    @property
    def receipts_pane(self) -> ReceiptsPane: ...

    @property
    def verdict_line(self) -> VerdictLine: ...

    def record(self, case: Path | None, call_id: str | None, outcome: Outcome,
               text: str) -> None:
        """Keep an outcome in the action log (case None: the open case)."""
        ...

    def explain_read_only(self, action: str) -> bool:
        """In read-only mode: say that `action` writes nothing here, and return True."""
        ...

    def refuse(self, call_id: str | None, action: str, text: str) -> None:
        """A gated action refused before anything was written: the action log and a
        toast titled "<action> refused"."""
        ...

    def paint_status(self) -> None: ...

    def wake_follower(self) -> None:
        """Poll the ledger now: the follower shows what an action wrote at once."""
        ...

    def report_outcome(self, case: Path, call_id: str, outcome: Outcome, text: str, *,
                       ok: bool, title: str, severity: str | None = None) -> None:
        """An action ended: the action log, the header's note and a toast, then a poll."""
        ...

    def show_drift(self, check: DriftCheck) -> None:
        """Keep a drift check a flow made and show it in the panes."""
        ...

    def set_active_pane(self, name: str) -> None: ...

    def refresh_bindings(self) -> None: ...

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None]) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def run_worker(self, work: Any, name: str | None = "", group: str = "default",
                   description: str = "", exit_on_error: bool = True, start: bool = True,
                   exclusive: bool = False, thread: bool = False) -> Worker[Any]: ...
