"""The console's replay action (`R`): a flow the main screen composes, in its own module.

Gated by the projection (console/replay_service.gate): where it does not permit, `R`
says why, writes nothing, and the refusal is kept in the action log. Where it does, the
saved plan is read in a worker, a ReplayModal previews each operation (Cancel focused),
and after `y` the service runs in a worker pinned to the states the dialog showed.
Every outcome goes to the action log.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from textual.message import Message

from codeai_tui.app.screens.flow_host import FlowHost
from codeai_tui.app.screens.replay import ReplayModal
from codeai_tui.console.actions import Outcome
from codeai_tui.console.replay_service import ReplayRefused, ReplayResult, ReplayService, gate
from codeai_tui.ledger import LedgerError
from codeai_tui.textsafe import visible
from codeai_tui.tools.replay import ReplayPlan


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


class ReplayFlow:
    """The main screen's replay action: a plain object the screen composes."""

    def __init__(self, host: FlowHost) -> None:
        self.host = host
        self.replaying = False

    def replay_permitted(self) -> bool:
        """The gate permits replaying the selected call, live, and no other action runs:
        then `R` shows in the footer and opens the preview."""
        host = self.host
        service = host.replay_service
        return (service is not None and host.as_of is None and not self.replaying
                and not host.resuming and not host.planning
                and gate(host.selected_call(), kernel_key=service.kernel_key,
                         state=host.live.state if host.live else None) is None)

    def action_explain_replay(self) -> None:
        """`R` where replay is not permitted: say why (in read-only mode, that the
        console writes nothing); the gate's reason otherwise."""
        if not self.host.explain_read_only("replay"):
            self.action_replay()

    def action_replay(self) -> None:
        host = self.host
        if host.read_only or host.case is None:
            return
        if self.replaying or host.resuming or host.planning:
            host.notify("another action is running; replay waits for it", markup=False)
            return
        call = host.selected_call()
        service = host.replay_service
        why = ("time travel shows the past: go back to live (t or esc) to replay"
               if host.as_of is not None else
               gate(call, kernel_key=service.kernel_key if service else None,
                    state=host.live.state if host.live else None))
        if why is not None or call is None or service is None:
            text = visible(f"replay refused: {why}", one_line=True, limit=400)
            host.refuse(call.call_id if call else None, "replay", text)
            return
        self.replaying = True
        host.run_worker(partial(self._preview, service, host.case, call.call_id),
                        name="_preview_replay", group="replay", exclusive=True,
                        exit_on_error=False, thread=True)

    def _preview(self, service: ReplayService, case: Path, call_id: str) -> None:
        """In a worker thread: read the saved plan the dialog previews."""
        try:
            plan = service.preview(case, call_id)
        except (ReplayRefused, LedgerError) as exc:
            self.host.post_message(ReplayNote(case, call_id, f"replay refused: {exc}",
                                              Outcome.REFUSED))
            return
        self.host.post_message(ReplayPreviewed(case, plan))

    def on_previewed(self, message: ReplayPreviewed) -> None:
        host = self.host
        plan, case = message.plan, message.case
        service = host.replay_service
        if case != host.case or host.as_of is not None or host.read_only or service is None:
            self.replaying = False
            return  # the operator moved on first

        def decided(confirmed: bool | None) -> None:
            if not confirmed:
                self.replaying = False
                host.record(case, plan.saved.call_id, Outcome.CANCELLED,
                            "replay cancelled by the operator")
                return
            host.record(case, plan.saved.call_id, Outcome.CONFIRMED,
                        f"confirmed replay of {len(plan.to_run)} operation(s)")
            host.activity = f"replaying {plan.saved.call_id}\u2026"
            host.paint_status()
            host.run_worker(partial(self._run, service, case, plan), name="_run_replay",
                            group="replay", exclusive=True, exit_on_error=False, thread=True)

        host.push_screen(ReplayModal(plan), decided)

    def _run(self, service: ReplayService, case: Path, plan: ReplayPlan) -> None:
        """In a worker thread: run the plan, pinned to the states the dialog showed."""
        host = self.host
        call_id = plan.saved.call_id
        try:
            result = service.run(case, plan)
        except ReplayRefused as exc:
            host.post_message(ReplayNote(case, call_id, f"replay refused: {exc}",
                                         Outcome.REFUSED))
            return
        except (LedgerError, OSError) as exc:
            host.post_message(ReplayNote(case, call_id, f"replay failed: {exc}", Outcome.FAILED))
            return
        ran = ", ".join(f"{key}: {outcome}" for key, outcome in result.ran) or "nothing to run"
        follow = (f"; follow-up {result.follow_up} recorded (resume sends it)"
                  if result.follow_up else "")
        host.post_message(ReplayNote(case, call_id, f"replayed {call_id}: {ran}{follow}",
                                     Outcome.REPLAYED, result))

    def on_note(self, message: ReplayNote) -> None:
        host = self.host
        self.replaying = False
        ok = message.outcome is Outcome.REPLAYED
        host.report_outcome(message.case, message.call_id, message.outcome,
                            visible(message.text, one_line=True, limit=400), ok=ok,
                            title="replay done" if ok else "replay " + message.outcome.value)
