"""`codeai-tui replay CASE CALL_ID`: run a saved tool plan without the provider.

CALL_ID is the call whose saved response holds the plan. The plan, the turn's identity
(`turn` in its `call.requested`) and each operation's state come from the ledger alone:
operations never admitted run under their original tool-call ids; completed ones
resolve from their receipts; any operation admitted without an outcome refuses the
whole replay before anything is written (its effect is unknown; running it again could
be a second effect). The follow-up model call is not sent here: replay records it
(`call.requested` + `call.manifest`, the tool results in its request) so that it goes
through the normal gate, `codeai-tui resume`, with its drift check and destination rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codeai_tui.ledger.case import CaseConfig, ProviderConfig
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.schema import Event
from codeai_tui.ledger.who import who
from codeai_tui.ledger.writer import LedgerWriter, NewEvent
from codeai_tui.runtime.request_bytes import CONVERSATION
from codeai_tui.runtime.runner import CallRunner
from codeai_tui.tools.kernel import Completed, ToolKernel
from codeai_tui.tools.turn import (
    OperationState,
    PlannedOperation,
    SavedResponse,
    TurnError,
    TurnRefused,
    current_call,
    follow_up_conversation,
    operation_states,
    resave_missing_receipts,
    run_operations,
    saved_response,
)
from codeai_tui.workstate.tool_ops import parse_turn


def went_on(requested: Sequence[Event], turn: tuple[str, str, str], decided_seq: int) -> bool:
    """The turn went on: a call requested after the decision was recorded names the same
    turn (the follow-up a replay records, or one any other writer made under its own id;
    a superseded original of the planning call was requested before it)."""
    return any(e.seq > decided_seq and parse_turn((e.payload or {}).get("turn")) == turn
               for e in requested)


def follow_up_call_id(turn: str) -> str:
    """The call id a replay records the turn's follow-up model call under."""
    return f"{turn}-m2"


class UnknownCall(ValueError):
    """No call with this id in the case (bad input, exit 2)."""


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
    response. TurnRefused when that call has no saved complete response (its plan is
    unknown: nothing may make up another one)."""
    with LedgerReader(case_dir) as reader:
        if not reader.events_for_call(call_id):
            raise UnknownCall(f"no call {call_id!r} in {case_dir}")
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
        raise TurnRefused(f"{exc}: there is no saved plan to replay") from None
    parts = parse_turn((requested[0].payload or {}).get("turn")) if requested else None
    if parts is None:
        raise TurnRefused(f"call {call_id} names no turn (namespace, thread, turn), so its "
                          "operation keys cannot be rebuilt")
    namespace, thread, turn_id = parts
    task_id = requested[0].task_id
    manifest = next((e.payload for e in events if e.kind == "call.manifest"), None) or {}
    intent, model = manifest.get("intent"), manifest.get("model")
    if not isinstance(intent, dict) or not isinstance(model, str):
        raise TurnRefused(f"call {call_id} has no manifest intent to continue the turn from")
    purpose = (requested[0].payload or {}).get("purpose")
    ops = operation_states(case_dir, saved, namespace, thread, turn_id)
    decided = min((e.seq for e in events if e.kind == "call.completed"), default=events[-1].seq)
    follow_up = went_on(task_calls, (namespace, thread, turn_id), decided)
    return ReplayPlan(saved, task_id, namespace, thread, turn_id, ops, intent, model,
                      purpose if isinstance(purpose, str) else "follow-up", decided, follow_up)


def run_replay(plan: ReplayPlan, kernel: ToolKernel) -> list[Completed]:
    """Run what `plan` showed, re-checking every operation inside its admission."""
    if kernel.namespace != plan.namespace:
        raise TurnRefused(f"kernel namespace {kernel.namespace!r} is not the turn's "
                          f"{plan.namespace!r}")
    if plan.refusal is not None:
        raise TurnRefused(plan.refusal)
    missing = sorted({o.planned.name for o in plan.to_run} - set(kernel.tools))
    if missing:
        raise TurnRefused(f"no tool here named {', '.join(missing)}; nothing was run")
    resave_missing_receipts(kernel, plan.saved.call_id)
    return run_operations(kernel, plan.task_id, plan.saved, plan.thread, plan.turn)


def record_follow_up(case_dir: str | Path, writer: LedgerWriter, plan: ReplayPlan,
                     done: list[Completed]) -> str | None:
    """Record the follow-up call (requested + manifest, not sent) unless one exists; its
    request is the planning call's intent plus the tool results, under the same model.
    Returns the call id recorded, or None when the turn already has a follow-up."""
    call_id = plan.follow_up_call_id
    turn = {"namespace": plan.namespace, "thread": plan.thread, "turn": plan.turn}
    ids = (plan.namespace, plan.thread, plan.turn)
    with LedgerReader(case_dir) as reader:
        if plan.follow_up_recorded or reader.events_for_call(call_id) or went_on(
                reader.events_for_task(plan.task_id, ("call.requested",)), ids,
                plan.decided_seq):
            return None
    runner = CallRunner(case_dir, writer, CaseConfig(ProviderConfig(model=plan.model)))
    key = f"{plan.namespace}/{plan.thread}/{plan.turn}/model-2"
    intent = {**plan.intent, CONVERSATION: follow_up_conversation(plan.saved, done)}
    manifest = runner.manifest_payload(key, intent, None)  # stores the request bytes first
    requested = {"idempotency_key": key, "purpose": plan.purpose, "model": plan.model,
                 "turn": turn, "recorded_by": who()}
    # Re-check and append in ONE write transaction: two replays of a turn (one of them
    # finding "nothing to run") must not both record its follow-up.
    with writer.transaction() as txn:
        if txn.events_for_call(call_id) or went_on(
                txn.events("task_id = ? AND kind = ?", (plan.task_id, "call.requested")),
                ids, plan.decided_seq):
            return None
        txn.append(NewEvent("call.requested", plan.task_id, requested, call_id=call_id))
        txn.append(NewEvent("call.manifest", plan.task_id, manifest, call_id=call_id))
    return call_id
