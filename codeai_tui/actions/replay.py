"""Replay a saved tool plan as a gated action (`codeai-tui replay`, the console's `R`;
docs/tools.md), without the provider.

The call named is the one whose saved response holds the plan (a resumed call is
replayed through its successor). The plan, the turn's identity (`turn` in its
`call.requested`) and each operation's state come from the ledger alone (`plan_replay`,
read-only). Operations never admitted (or found not to have run) run under their
original tool-call ids, each re-checked inside its own admission by the tool kernel;
completed ones resolve from their receipts; an operation admitted without an outcome
refuses the whole replay before anything is written (its effect is unknown: running it
again could be a second effect).

The run goes through the gate twice: first the planning call must be as the plan showed
it (before any tool runs), then the follow-up model call is recorded (`call.requested` +
`call.manifest`, the tool results in its request; not sent: `resume` sends it, with its
drift check and destination rules) only where the turn has not gone on, re-checked under
the write lock. The tools layer only runs tools (codeai_tui/tools/turn.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeai_tui.actions.gate import (
    ActionRefused,
    PinnedEvidence,
    UnusableInput,
    recorded_by,
    through_gate,
)
from codeai_tui.actions.protocol import (
    ActionBase,
    ActionOptions,
    Decision,
    Done,
    Progress,
    Selected,
)
from codeai_tui.ledger.case import CaseConfig, ProviderConfig
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.schema import Event
from codeai_tui.ledger.writer import LedgerWriter, NewEvent, WriteTransaction
from codeai_tui.runtime.request_bytes import CONVERSATION
from codeai_tui.runtime.runner import CallRunner
from codeai_tui.tools import PUBLISH_REPORT, KeyProblem, PublishReport, ToolKernel
from codeai_tui.tools.kernel import Completed, Outcome
from codeai_tui.tools.turn import (
    OperationState,
    PlannedOperation,
    SavedResponse,
    TurnError,
    current_call,
    follow_up_call_id,
    follow_up_conversation,
    operation_states,
    resave_missing_receipts,
    run_operations,
    saved_response,
)
from codeai_tui.workstate import CallState, NextOperation, WorkState
from codeai_tui.workstate.tool_ops import parse_turn

# ---------------------------------------------------------------- the plan (read-only)


def went_on(requested: Sequence[Event], turn: tuple[str, str, str], decided_seq: int) -> bool:
    """The turn went on: a call requested after the decision was recorded names the same
    turn (the follow-up a replay records, or one any other writer made under its own id;
    a superseded original of the planning call was requested before it)."""
    return any(e.seq > decided_seq and parse_turn((e.payload or {}).get("turn")) == turn
               for e in requested)


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    saved: SavedResponse
    task_id: str
    namespace: str
    thread: str
    turn: str
    operations: tuple[PlannedOperation, ...]
    intent: dict[str, object]  # the planning call's manifest intent
    model: str
    purpose: str
    decided_seq: int = 0  # the planning call's call.completed: the turn goes on after it
    follow_up_recorded: bool = False  # a later call of the turn exists: it went on

    @property
    def follow_up_call_id(self) -> str:
        return follow_up_call_id(self.turn)

    @property
    def refusal(self) -> str | None:
        """Why replay must not run (None when it may)."""
        for op in self.operations:
            if op.state is OperationState.EFFECT_UNKNOWN:
                return (f"operation {op.operation_key} is admitted without an outcome: its "
                        "effect is unknown; reconcile it, never replay it")
        return None

    @property
    def to_run(self) -> tuple[PlannedOperation, ...]:
        return tuple(o for o in self.operations
                     if o.state in (OperationState.NOT_ADMITTED, OperationState.RUN_AGAIN))


def plan_replay(case_dir: str | Path, call_id: str) -> ReplayPlan:
    """What a replay of `call_id` would do; reads only. A call that was resumed is
    replayed through its successor (the last of its resume chain), which saved the
    response. UnusableInput for no such call; ActionRefused where that call has no saved
    complete response (its plan is unknown: nothing may make up another one) or names
    no turn to key its operations by."""
    with LedgerReader(case_dir) as reader:
        if not reader.events_for_call(call_id):
            raise UnusableInput(f"no call {call_id!r} in {case_dir}")
    call_id = current_call(case_dir, call_id)
    with LedgerReader(case_dir) as reader:
        events = reader.events_for_call(call_id)
        requested = [e for e in events if e.kind == "call.requested"]
        # the task's model calls, to know whether the turn already went on
        task_calls = (reader.events_for_task(requested[0].task_id, ("call.requested",))
                      if requested else [])
    try:
        saved = saved_response(case_dir, call_id)
    except TurnError as exc:
        raise ActionRefused(None, f"{exc}: there is no saved plan to replay") from None
    parts = parse_turn((requested[0].payload or {}).get("turn")) if requested else None
    if parts is None:
        raise ActionRefused(None, f"call {call_id} names no turn (namespace, thread, turn), "
                            "so its operation keys cannot be rebuilt")
    namespace, thread, turn_id = parts
    task_id = requested[0].task_id
    manifest = next((e.payload for e in events if e.kind == "call.manifest"), None) or {}
    intent, model = manifest.get("intent"), manifest.get("model")
    if not isinstance(intent, dict) or not isinstance(model, str):
        raise ActionRefused(None, f"call {call_id} has no manifest intent to continue the "
                            "turn from")
    purpose = (requested[0].payload or {}).get("purpose")
    ops = operation_states(case_dir, saved, namespace, thread, turn_id)
    decided = min((e.seq for e in events if e.kind == "call.completed"), default=events[-1].seq)
    follow_up = went_on(task_calls, (namespace, thread, turn_id), decided)
    return ReplayPlan(saved, task_id, namespace, thread, turn_id, ops, intent, model,
                      purpose if isinstance(purpose, str) else "follow-up", decided, follow_up)


# ---------------------------------------------------------------- the run


def run_replay(plan: ReplayPlan, kernel: ToolKernel) -> list[Completed]:
    """Run what `plan` showed, re-checking every operation inside its admission."""
    if kernel.namespace != plan.namespace:
        raise ActionRefused(None, f"kernel namespace {kernel.namespace!r} is not the turn's "
                            f"{plan.namespace!r}")
    if plan.refusal is not None:
        raise ActionRefused(NextOperation.RECONCILE_EFFECT, plan.refusal)
    missing = sorted({o.planned.name for o in plan.to_run} - set(kernel.tools))
    if missing:
        raise ActionRefused(None, f"no tool here named {', '.join(missing)}; nothing was run")
    resave_missing_receipts(kernel, plan.saved.call_id)
    return run_operations(kernel, plan.task_id, plan.saved, plan.thread, plan.turn)


def _known(state: CallState | None) -> CallState:
    if state is None:
        raise ActionRefused(None, "the planning call is gone from the ledger")
    return state


def record_follow_up(case_dir: str | Path, writer: LedgerWriter, plan: ReplayPlan,
                     done: list[Completed]) -> str | None:
    """Record the follow-up call (requested + manifest, not sent) unless the turn went
    on; its request is the planning call's intent plus the tool results, under the same
    model. Returns the call id recorded, or None when the turn already has a follow-up.

    Through the gate on the planning call. Its pin is not the plan's: the tools just run
    added their own events to it. What must hold under the write lock is the turn's:
    no call of the turn requested after the decision (two replays of a turn, one of them
    finding "nothing to run", must not both record its follow-up)."""
    call_id = plan.follow_up_call_id
    ids = (plan.namespace, plan.thread, plan.turn)
    with LedgerReader(case_dir) as reader:  # no request bytes stored for a turn gone on
        if plan.follow_up_recorded or reader.events_for_call(call_id) or went_on(
                reader.events_for_task(plan.task_id, ("call.requested",)), ids,
                plan.decided_seq):
            return None
    runner = CallRunner(case_dir, writer, CaseConfig(ProviderConfig(model=plan.model)))
    key = f"{plan.namespace}/{plan.thread}/{plan.turn}/model-2"
    intent = {**plan.intent, CONVERSATION: follow_up_conversation(plan.saved, done)}
    manifest = runner.manifest_payload(key, intent, None)  # stores the request bytes first
    requested = {"idempotency_key": key, "purpose": plan.purpose, "model": plan.model,
                 "turn": dict(zip(("namespace", "thread", "turn"), ids, strict=True)),
                 "recorded_by": recorded_by()}
    turn_open: list[bool] = []  # what the gate's look at the turn found, under the lock

    def planning_call(txn: WriteTransaction) -> str:
        turn_open.append(not txn.events_for_call(call_id) and not went_on(
            txn.events("task_id = ? AND kind = ?", (plan.task_id, "call.requested")), ids,
            plan.decided_seq))
        return plan.saved.call_id

    def build(_state: CallState, _events: Sequence[Event]) -> list[NewEvent]:
        if not turn_open[0]:
            return []
        return [NewEvent("call.requested", plan.task_id, requested, call_id=call_id),
                NewEvent("call.manifest", plan.task_id, manifest, call_id=call_id)]

    landed = through_gate(writer, planning_call, _known, build, pinned=None)
    return call_id if landed.appended else None


# ---------------------------------------------------------------- as a gated action


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
    """What a replay shows before it runs: the saved plan and each operation's state,
    pinned to the planning call's evidence."""

    case_dir: Path
    plan: ReplayPlan
    pinned: PinnedEvidence

    @property
    def call_id(self) -> str:
        return self.plan.saved.call_id

    @property
    def states(self) -> tuple[tuple[str, str], ...]:
        return tuple((o.operation_key, o.state.value) for o in self.plan.operations)


@dataclass(frozen=True, slots=True)
class Replayed:
    """What a replay did: each planned operation's completion, and the follow-up call
    recorded (None: the turn already had one)."""

    completed: tuple[Completed, ...]
    follow_up: str | None


def _outcome_words(done: Completed) -> str:
    return ("found to have run (not run again)" if done.outcome is Outcome.UNKNOWN
            else done.outcome.value)


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

    def read(self, case: Path, call_id: str, options: ActionOptions) -> ReplayShown:
        """Read-only: the saved plan and each operation's state as the ledger says now,
        refused only where there is no plan to show (the command line shows it before
        saying why it will not run)."""
        try:
            plan = plan_replay(case, call_id)
        except TurnError as exc:
            raise ActionRefused(None, str(exc)) from None
        with LedgerReader(case) as reader:
            events = reader.events_for_call(plan.saved.call_id)
        return ReplayShown(case, plan, PinnedEvidence.of_events(plan.saved.call_id, events))

    def plan(self, case: Path, call_id: str, options: ActionOptions) -> ReplayShown:
        """`read`, refused where an operation's effect is unknown or where there is
        nothing left to confirm (no operation to run, the follow-up recorded)."""
        shown = self.read(case, call_id, options)
        if shown.plan.refusal is not None:
            raise ActionRefused(NextOperation.RECONCILE_EFFECT, shown.plan.refusal)
        if not shown.plan.to_run and shown.plan.follow_up_recorded:
            raise ActionRefused(None, "nothing to run, and the turn already went on: its "
                                "follow-up call is recorded (Calls shows its own next "
                                "operation)")
        return shown

    def run(self, plan: ReplayShown, decision: Decision, options: ActionOptions,
            progress: Progress) -> Done:
        """Refused before any tool runs where the operations' states or the planning
        call moved since `plan`; then the tools, then the follow-up (module docstring)."""
        if options.kernel_key is None:
            raise ActionRefused(None, "no kernel key: start the console with --kernel-key PATH")
        case = plan.case_dir
        fresh = self.read(case, plan.call_id, options)
        if fresh.states != plan.states:
            raise ActionRefused(None, "the operations changed since they were shown; "
                                "nothing was run (look again)")
        if fresh.plan.refusal is not None:
            raise ActionRefused(NextOperation.RECONCILE_EFFECT, fresh.plan.refusal)
        try:
            with LedgerWriter.open(case) as writer:
                # the gate: the planning call is as the plan showed it, under the lock
                through_gate(writer, plan.call_id, _known, lambda _s, _e: [],
                             pinned=plan.pinned)
                progress(f"running {len(fresh.plan.to_run)} operation(s) of {plan.call_id}")
                kernel = ToolKernel.open(case, writer, options.kernel_key,
                                         {PUBLISH_REPORT: PublishReport(case)},
                                         namespace=fresh.plan.namespace)
                done = run_replay(fresh.plan, kernel)
                follow_up = record_follow_up(case, writer, fresh.plan, done)
        except KeyProblem as exc:
            raise UnusableInput(str(exc)) from None
        except TurnError as exc:
            raise ActionRefused(None, str(exc)) from None
        ran = ", ".join(f"{c.operation_key}: {_outcome_words(c)}" for c in done) \
            or "nothing to run"
        follow = f"; follow-up {follow_up} recorded (resume sends it)" if follow_up else ""
        return Done(f"replayed {plan.call_id}: {ran}{follow}",
                    result=Replayed(tuple(done), follow_up))


REPLAY = Replay()
