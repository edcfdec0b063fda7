"""Replay a saved tool plan as a gated action (the console's `R`; docs/tools.md).

The tools layer reads the saved plan and each operation's state and runs the tools
(codeai_tui/tools/replay.py: `plan_replay`, `run_replay`, `record_follow_up`). Here:
whether the projection permits a replay of the selected call (`refusal`), the plan the
dialog shows pinned to the planning call's evidence, and the run: through the gate (a
planning call that moved since the dialog, or whose operations changed state, is
refused before any tool runs), then the never-admitted operations under their original
tool-call ids (each re-checked inside its own admission by the kernel), then the
follow-up call recorded (not sent: resume sends it). Never contacts a provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codeai_tui.actions.gate import ActionRefused, PinnedEvidence, through_gate
from codeai_tui.actions.protocol import (
    ActionBase,
    ActionOptions,
    Decision,
    Done,
    Progress,
    Selected,
)
from codeai_tui.ledger.reader import LedgerReader
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


def follow_up_due(state: WorkState, call: CallState) -> bool:
    """The call's tool operations are all done and its turn goes on with a follow-up
    call not recorded yet: replay records it. A task lookup only for such calls."""
    tools = call.tools
    if tools is None or not tools.adopted or not tools.all_done:
        return False
    task = state.task(call.task_id)
    return task is not None and task.follow_up_of == call.call_id


def gate(call: CallState | None, *, kernel_key: Path | None,
         state: WorkState | None = None) -> str | None:
    """Why the projection (or the console's setup) does not permit replaying `call`.
    Given the case's `state`, a call whose operations are all done and whose turn
    already went on has nothing to replay."""
    if call is None:
        return "no call selected"
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


@dataclass(frozen=True, slots=True)
class ReplayShown:
    """What the replay dialog shows: the saved plan and each operation's state, pinned
    to the planning call's evidence."""

    case_dir: Path
    plan: ReplayPlan
    pinned: PinnedEvidence

    @property
    def call_id(self) -> str:
        return self.plan.saved.call_id

    @property
    def states(self) -> tuple[tuple[str, str], ...]:
        return tuple((o.operation_key, o.state.value) for o in self.plan.operations)


def preview(case: Path, call_id: str) -> ReplayShown:
    """Read-only: the saved plan (through a resumed call's successor), refused where an
    operation's effect is unknown or where there is nothing left to do."""
    try:
        plan = plan_replay(case, call_id)
    except (UnknownCall, TurnError) as exc:
        raise ActionRefused(None, str(exc)) from None
    if plan.refusal is not None:
        raise ActionRefused(NextOperation.RECONCILE_EFFECT, plan.refusal)
    if not plan.to_run and plan.follow_up_recorded:
        raise ActionRefused(None, "nothing to run, and the turn already went on: its "
                            "follow-up call is recorded (Calls shows its own next operation)")
    with LedgerReader(case) as reader:
        events = reader.events_for_call(plan.saved.call_id)
    return ReplayShown(case, plan, PinnedEvidence.of_events(plan.saved.call_id, events))


def _outcome_words(done: Completed) -> str:
    return ("found to have run (not run again)" if done.outcome is Outcome.UNKNOWN
            else done.outcome.value)


def _known(state: CallState | None) -> CallState:
    if state is None:
        raise ActionRefused(None, "the planning call is gone from the ledger")
    return state


class Replay(ActionBase):
    """Run a saved tool plan's never-admitted operations, then record the follow-up."""

    name, key, done_word = "replay", "R", "replayed"

    def refusal(self, selected: Selected) -> str | None:
        why = gate(selected.call, kernel_key=selected.options.kernel_key,
                   state=selected.work)
        return None if why is None else f"replay refused: {why}"

    def will(self, selected: Selected) -> str:
        return (f"{selected.call.call_id if selected.call else ''}: replay runs the saved "
                "plan's never-admitted operations, then records the follow-up call")

    def plan(self, case: Path, call_id: str, options: ActionOptions) -> ReplayShown:
        return preview(case, call_id)

    def run(self, plan: ReplayShown, decision: Decision, options: ActionOptions,
            progress: Progress) -> Done:
        if options.kernel_key is None:
            raise ActionRefused(None, "no kernel key: start the console with --kernel-key PATH")
        case = plan.case_dir
        fresh = preview(case, plan.call_id)
        if fresh.states != plan.states:
            raise ActionRefused(None, "the operations changed since the dialog showed them; "
                                "nothing was run (look again)")
        try:
            with LedgerWriter.open(case) as writer:
                # the gate: the planning call is as the dialog showed it, under the lock
                through_gate(writer, plan.call_id, _known, lambda _s, _e: [],
                             pinned=plan.pinned)
                progress(f"running {len(fresh.plan.to_run)} operation(s) of {plan.call_id}")
                kernel = ToolKernel.open(case, writer, options.kernel_key,
                                         {PUBLISH_REPORT: PublishReport(case)},
                                         namespace=fresh.plan.namespace)
                done = run_replay(fresh.plan, kernel)
                follow_up = record_follow_up(case, writer, fresh.plan, done)
        except (KeyProblem, TurnError) as exc:
            raise ActionRefused(None, str(exc)) from None
        ran = ", ".join(f"{c.operation_key}: {_outcome_words(c)}" for c in done) \
            or "nothing to run"
        follow = f"; follow-up {follow_up} recorded (resume sends it)" if follow_up else ""
        return Done(f"replayed {plan.call_id}: {ran}{follow}")


REPLAY = Replay()
