"""The console's replay action (`R`): a flow the main screen composes, in its own module.

Gated by the projection (the registry's replay action, actions/replay.py): where it
does not permit, `R`
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

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.protocol import Decision, Selected
from codeai_tui.actions.replay import REPLAY, ReplayShown
from codeai_tui.app.screens.flow_host import FlowHost
from codeai_tui.app.screens.replay import ReplayModal
from codeai_tui.console.actions import SELECT_A_CALL, Outcome
from codeai_tui.ledger import LedgerError
from codeai_tui.textsafe import visible


@dataclass
class ReplayPreviewed(Message):
    case: Path
    plan: ReplayShown


@dataclass
class ReplayNote(Message):
    case: Path
    call_id: str
    text: str
    outcome: Outcome


class ReplayFlow:
    """The main screen's replay action: a plain object the screen composes."""

    def __init__(self, host: FlowHost) -> None:
        self.host = host
        self.replaying = False

    def _selected(self) -> Selected:
        host = self.host
        return Selected(host.selected_call(), host.live.state if host.live else None,
                        host.options)

    def replay_permitted(self) -> bool:
        """The gate permits replaying the selected call, live, and no other action runs:
        then `R` shows in the footer and opens the preview."""
        host = self.host
        return (host.as_of is None and not self.replaying
                and not host.resuming and not host.planning
                and REPLAY.permitted(self._selected()))

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
        why = ("time travel shows the past: go back to live (t or esc) to replay"
               if host.as_of is not None else
               SELECT_A_CALL if call is None else REPLAY.refusal(self._selected()))
        if why is not None or call is None:
            text = visible(f"replay refused: {why}", one_line=True, limit=400)
            host.refuse(call.call_id if call else None, "replay", text)
            return
        self.replaying = True
        host.run_worker(partial(self._preview, host.case, call.call_id),
                        name="_preview_replay", group="replay", exclusive=True,
                        exit_on_error=False, thread=True)

    def _preview(self, case: Path, call_id: str) -> None:
        """In a worker thread: read the saved plan the dialog previews."""
        try:
            plan = REPLAY.plan(case, call_id, self.host.options)
        except (ActionRefused, LedgerError) as exc:
            self.host.post_message(ReplayNote(case, call_id, f"replay refused: {exc}",
                                              Outcome.REFUSED))
            return
        self.host.post_message(ReplayPreviewed(case, plan))

    def on_previewed(self, message: ReplayPreviewed) -> None:
        host = self.host
        plan, case = message.plan, message.case
        if case != host.case or host.as_of is not None or host.read_only:
            self.replaying = False
            return  # the operator moved on first

        def decided(confirmed: bool | None) -> None:
            if not confirmed:
                self.replaying = False
                host.record(case, plan.call_id, Outcome.CANCELLED,
                            "replay cancelled by the operator")
                return
            host.record(case, plan.call_id, Outcome.CONFIRMED,
                        f"confirmed replay of {len(plan.plan.to_run)} operation(s)")
            host.activity = f"replaying {plan.call_id}\u2026"
            host.paint_status()
            host.run_worker(partial(self._run, case, plan), name="_run_replay",
                            group="replay", exclusive=True, exit_on_error=False, thread=True)

        host.push_screen(ReplayModal(plan.plan), decided)

    def _run(self, case: Path, plan: ReplayShown) -> None:
        """In a worker thread: run the plan, pinned to the evidence the dialog showed."""
        host = self.host
        call_id = plan.call_id
        try:
            done = REPLAY.run(plan, Decision(), host.options, lambda _line: None)
        except ActionRefused as exc:
            host.post_message(ReplayNote(case, call_id, f"replay refused: {exc}",
                                         Outcome.REFUSED))
            return
        except (LedgerError, OSError) as exc:
            host.post_message(ReplayNote(case, call_id, f"replay failed: {exc}", Outcome.FAILED))
            return
        host.post_message(ReplayNote(case, call_id, done.text, Outcome.REPLAYED))

    def on_note(self, message: ReplayNote) -> None:
        host = self.host
        self.replaying = False
        ok = message.outcome is Outcome.REPLAYED
        host.report_outcome(message.case, message.call_id, message.outcome,
                            visible(message.text, one_line=True, limit=400), ok=ok,
                            title="replay done" if ok else "replay " + message.outcome.value)
