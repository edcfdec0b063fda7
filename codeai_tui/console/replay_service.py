"""Replay from the console, Textual-free.

The gate is the projection's (workstate/tool_ops.py, the rule `codeai-tui replay` uses):
`gate()` says why not, from the verdict on screen, before anything is read; `preview()`
reads the saved plan (codeai_tui/tools/replay.py) for the dialog; `run()` re-reads it
and refuses unless each operation is still in the state the dialog showed (pinned to the
evidence), then runs the never-admitted operations under their original tool-call ids
and records the follow-up call. Never contacts a provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from codeai_tui.console.actions import SELECT_A_CALL
from codeai_tui.console.tools import follow_up_due
from codeai_tui.ledger.writer import LedgerWriter
from codeai_tui.tools import PUBLISH_REPORT, KeyProblem, PublishReport, ToolKernel
from codeai_tui.tools.kernel import Completed, Outcome
from codeai_tui.tools.replay import (
    ReplayPlan,
    UnknownCall,
    plan_replay,
    record_follow_up,
    run_replay,
)
from codeai_tui.tools.turn import TurnError
from codeai_tui.workstate import CallState, NextOperation, WorkState


class ReplayRefused(Exception):
    """Replay is not permitted (nothing was written); the message says why."""


@dataclass(frozen=True, slots=True)
class ReplayResult:
    call_id: str
    ran: tuple[tuple[str, str], ...]  # (operation key, outcome) of every operation resolved
    follow_up: str | None  # the follow-up call recorded (None: the turn already had one)


def gate(call: CallState | None, *, kernel_key: Path | None,
         state: WorkState | None = None) -> str | None:
    """Why the projection (or the console's setup) does not permit replaying `call`.
    Given the case's `state`, a call whose operations are all done and whose turn
    already went on has nothing to replay."""
    if call is None:
        return SELECT_A_CALL
    tools = call.tools
    if tools is None or tools.plan is None:
        return (f"{call.call_id} has no saved tool plan (no complete response was saved); "
                "nothing may make one up")
    unknown = [o for o in tools.operations if o.effect_unknown]
    if unknown:
        return (f"operation {unknown[0].subject} is admitted without an outcome: its effect "
                "is unknown; reconcile it, never replay it (duplicate risk)")
    if not tools.adopted:
        return f"{call.call_id}'s response is not finished: its own next operation comes first"
    if not tools.all_done and not any(
            o.next_operation is NextOperation.START_TOOL for o in tools.operations):
        return f"{call.call_id}: no operation is waiting to run (next operation none)"
    if tools.all_done and state is not None and not follow_up_due(state, call):
        return (f"nothing to replay: every tool operation of {call.call_id} is done and the "
                "turn already went on")
    if kernel_key is None:
        return "no kernel key: start the console with --kernel-key PATH to run tools"
    return None


def _states(plan: ReplayPlan) -> tuple[tuple[str, str], ...]:
    return tuple((o.operation_key, o.state.value) for o in plan.operations)


class ReplayService(Protocol):
    kernel_key: Path | None

    def preview(self, case: Path, call_id: str) -> ReplayPlan: ...

    def run(self, case: Path, shown: ReplayPlan) -> ReplayResult: ...


class LedgerReplayService:
    """Replays through the project's kernel with the operator's signing key."""

    def __init__(self, kernel_key: Path | None) -> None:
        self.kernel_key = kernel_key

    def preview(self, case: Path, call_id: str) -> ReplayPlan:
        try:
            plan = plan_replay(case, call_id)
        except (UnknownCall, TurnError) as exc:
            raise ReplayRefused(str(exc)) from None
        if plan.refusal is not None:
            raise ReplayRefused(plan.refusal)
        if not plan.to_run and plan.follow_up_recorded:
            raise ReplayRefused(
                "nothing to run, and the turn already went on: its follow-up call is "
                "recorded (Calls shows its own next operation)")
        return plan

    def run(self, case: Path, shown: ReplayPlan) -> ReplayResult:
        if self.kernel_key is None:
            raise ReplayRefused("no kernel key: start the console with --kernel-key PATH")
        fresh = self.preview(case, shown.saved.call_id)
        if _states(fresh) != _states(shown):
            raise ReplayRefused("the operations changed since the dialog showed them; "
                                "nothing was run (look again)")
        try:
            with LedgerWriter.open(case) as writer:
                kernel = ToolKernel.open(case, writer, self.kernel_key,
                                         {PUBLISH_REPORT: PublishReport(case)},
                                         namespace=fresh.namespace)
                done = run_replay(fresh, kernel)
                follow_up = record_follow_up(case, writer, fresh, done)
        except (KeyProblem, TurnError) as exc:
            raise ReplayRefused(str(exc)) from None
        return ReplayResult(fresh.saved.call_id,
                            tuple((c.operation_key, _outcome_words(c)) for c in done), follow_up)


def _outcome_words(done: Completed) -> str:
    return ("found to have run (not run again)" if done.outcome is Outcome.UNKNOWN
            else done.outcome.value)
