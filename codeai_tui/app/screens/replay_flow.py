"""The console's replay action (`R`), a mixin of the main screen kept in its own module.

Gated by the projection (console/replay_service.gate): where it does not permit, `R`
says why, writes nothing, and the refusal is kept in the action log. Where it does, the
saved plan is read in a worker, a ReplayModal previews each operation (Cancel focused),
and after `y` the service runs in a worker pinned to the states the dialog showed.
Every outcome goes to the action log.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from textual import work
from textual.message import Message
from textual.screen import Screen

from codeai_tui.app.screens.replay import ReplayModal
from codeai_tui.console.actions import ActionLog, Outcome
from codeai_tui.console.replay_service import ReplayRefused, ReplayResult, ReplayService, gate
from codeai_tui.ledger import LedgerError
from codeai_tui.textsafe import visible
from codeai_tui.tools.replay import ReplayPlan
from codeai_tui.workstate import CallState


@dataclass
class ReplayPreviewed(Message):
    case: Path
    plan: ReplayPlan


@dataclass
class ReplayNote(Message):
    case: Path
    call_id: str
    text: str
    outcome: Outcome
    result: ReplayResult | None = None


class ReplayFlow(Screen[None]):
    """The main screen's replay action; the screen provides the session it reads."""

    read_only: bool
    case: Path | None
    as_of: int | None
    action_log: ActionLog
    clock: Callable[[], datetime]
    activity: str | None
    _wake: threading.Event
    replaying = False

    def selected_call(self) -> CallState | None:
        raise NotImplementedError  # the main screen's

    def _case_label(self, case: Path | None = None) -> str:
        raise NotImplementedError  # the main screen's

    def _paint_status(self) -> None:
        raise NotImplementedError  # the main screen's

    @property
    def replay_service(self) -> ReplayService | None:
        return getattr(self.app, "replay_service", None)

    def action_replay(self) -> None:
        if self.read_only or self.case is None:
            return
        if self.replaying or getattr(self, "resuming", False) or getattr(self, "planning", False):
            self.notify("another action is running; replay waits for it", markup=False)
            return
        call = self.selected_call()
        service = self.replay_service
        why = ("time travel shows the past: go back to live (t or esc) to replay"
               if self.as_of is not None else
               gate(call, kernel_key=service.kernel_key if service else None))
        if why is not None or call is None or service is None:
            text = visible(f"replay refused: {why}", one_line=True, limit=400)
            self.action_log.add(self.clock(), self._case_label(),
                                call.call_id if call else None, Outcome.REFUSED, text)
            self.notify(text, title="replay refused", severity="warning", markup=False,
                        timeout=10)
            return
        self.replaying = True
        self._preview_replay(service, self.case, call.call_id)

    @work(thread=True, exit_on_error=False, group="replay", exclusive=True)
    def _preview_replay(self, service: ReplayService, case: Path, call_id: str) -> None:
        try:
            plan = service.preview(case, call_id)
        except (ReplayRefused, LedgerError) as exc:
            self.post_message(ReplayNote(case, call_id, f"replay refused: {exc}",
                                         Outcome.REFUSED))
            return
        self.post_message(ReplayPreviewed(case, plan))

    def on_replay_previewed(self, message: ReplayPreviewed) -> None:
        plan, case = message.plan, message.case
        service = self.replay_service
        if case != self.case or self.as_of is not None or self.read_only or service is None:
            self.replaying = False
            return  # the operator moved on first

        def decided(confirmed: bool | None) -> None:
            label = self._case_label(case)
            if not confirmed:
                self.replaying = False
                self.action_log.add(self.clock(), label, plan.saved.call_id, Outcome.CANCELLED,
                                    "replay cancelled by the operator")
                return
            self.action_log.add(self.clock(), label, plan.saved.call_id, Outcome.CONFIRMED,
                                f"confirmed replay of {len(plan.to_run)} operation(s)")
            self.activity = f"replaying {plan.saved.call_id}\u2026"
            self._paint_status()
            self._run_replay(service, case, plan)

        self.app.push_screen(ReplayModal(plan), decided)

    @work(thread=True, exit_on_error=False, group="replay", exclusive=True)
    def _run_replay(self, service: ReplayService, case: Path, plan: ReplayPlan) -> None:
        call_id = plan.saved.call_id
        try:
            result = service.run(case, plan)
        except ReplayRefused as exc:
            self.post_message(ReplayNote(case, call_id, f"replay refused: {exc}",
                                         Outcome.REFUSED))
            return
        except (LedgerError, OSError) as exc:
            self.post_message(ReplayNote(case, call_id, f"replay failed: {exc}", Outcome.FAILED))
            return
        ran = ", ".join(f"{key}: {outcome}" for key, outcome in result.ran) or "nothing to run"
        follow = (f"; follow-up {result.follow_up} recorded (resume sends it)"
                  if result.follow_up else "")
        self.post_message(ReplayNote(case, call_id, f"replayed {call_id}: {ran}{follow}",
                                     Outcome.REPLAYED, result))

    def on_replay_note(self, message: ReplayNote) -> None:
        self.replaying = False
        self.activity = None
        text = visible(message.text, one_line=True, limit=400)
        self.action_log.add(self.clock(), self._case_label(message.case), message.call_id,
                            message.outcome, text)
        ok = message.outcome is Outcome.REPLAYED
        self.notify(text, title="replay done" if ok else "replay " + message.outcome.value,
                    severity="information" if ok else "warning", markup=False, timeout=15)
        self._wake.set()
        self._paint_status()
