"""One turn with tools, the seed's four durable moments in order, as library functions.

`run_turn`: the model call that decides (request journaled before sending, the complete
response and its tool plan journaled before any tool runs) -> each planned tool call
admitted, run and completed with a signed receipt -> the follow-up model call carrying
the tool results -> acceptance. The plan is always read back from the journal
(`saved_response`), never taken from memory, so a fresh run and a later replay act on
the same bytes. `replay_turn` continues a turn whose decision is saved without asking
the provider again: completed operations resolve from their receipts, operations never
admitted run under their original tool-call ids, and an operation admitted without an
outcome stops it (its effect is unknown; running it again could be a second effect).
A decision an operator resumed (`codeai-tui resume`) is found through its resume chain:
the successor keeps the turn, so a replacement worker addresses the same operations.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from codeai_tui.ledger.artifacts import ArtifactStore
from codeai_tui.ledger.case import CaseConfig
from codeai_tui.ledger.jsontypes import JsonObject, JsonValue
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.schema import TOOL_ADMITTED, TOOL_COMPLETED, Event
from codeai_tui.ledger.writer import LedgerWriter
from codeai_tui.runtime.request_bytes import CONVERSATION, REQUEST_OPTIONS, intent_for
from codeai_tui.runtime.responses import (
    ParsedJson,
    PlannedToolCall,
    TextCallback,
    parse_response,
    tool_plan,
)
from codeai_tui.runtime.runner import SEND_TIMEOUT_S, CallRunner
from codeai_tui.services.projection import project_case
from codeai_tui.tools.kernel import Completed, OperationExists, Outcome, ToolKernel, operation_key
from codeai_tui.tools.receipts import canonical_bytes, read_receipt_lines
from codeai_tui.workstate import project_call
from codeai_tui.workstate.tool_ops import ToolOpStage, ToolOpState, parse_turn

CommitHook = Callable[[Event], None]


class TurnError(ValueError):
    """The turn cannot go on from what is recorded (one operator line)."""


class TurnRefused(TurnError):
    """Going on could repeat an effect: an operation is admitted without an outcome."""


def follow_up_call_id(turn: str) -> str:
    """The call id of a turn's follow-up model call (the one after its tools ran): the
    worker's and a replay's are the same call."""
    return f"{turn}-m2"


@dataclass(frozen=True, slots=True)
class TurnSpec:
    """What fixes a turn for every attempt: a replacement worker addresses the same one."""

    task_id: str
    thread: str
    turn: str
    purpose: str
    tools: tuple[JsonObject, ...]
    stream: bool = False

    @property
    def decision_call_id(self) -> str:
        return f"{self.turn}-m1"

    @property
    def follow_up_call_id(self) -> str:
        return follow_up_call_id(self.turn)

    def idempotency_key(self, namespace: str, n: int) -> str:
        return f"{namespace}/{self.thread}/{self.turn}/model-{n}"


@dataclass(frozen=True, slots=True)
class SavedResponse:
    """A call's journaled answer: the adopted attempt's response, read back verified."""

    call_id: str
    attempt_id: str
    completion: ParsedJson
    plan: tuple[PlannedToolCall, ...]

    @property
    def text(self) -> str | None:
        message = self.completion["choices"][0].get("message")
        content = message.get("content") if isinstance(message, dict) else None
        return content if isinstance(content, str) else None


@dataclass
class TurnOutcome:
    """`complete` only when the follow-up answered and the turn was accepted; otherwise
    `stopped_at` says which moment the turn did not get past."""

    complete: bool
    stopped_at: str | None
    operations: list[Completed] = field(default_factory=list)
    text: str | None = None
    provider_calls_made: int = 0


def current_call(case_dir: str | Path, call_id: str) -> str:
    """The call that carries `call_id`'s work now: itself, or the last call of its resume
    chain (each `call.resumed` names the successor: the projection's `superseded_by`,
    from each call's own events). A turn's decision resumed by an operator saved its
    response under the successor's id."""
    seen = {call_id}
    current = call_id
    with LedgerReader(case_dir) as reader:
        while True:
            state = project_call(reader.events_for_call(current), current)
            successor = state.superseded_by if state is not None else None
            if successor is None or successor in seen or not reader.events_for_call(successor):
                return current
            seen.add(successor)
            current = successor


def named_turn(case_dir: str | Path, call_id: str) -> tuple[str, str, str] | None:
    """The turn (namespace, thread, turn) a call's `call.requested` names, if valid."""
    with LedgerReader(case_dir) as reader:
        requested = next((e for e in reader.events_for_call(call_id)
                          if e.kind == "call.requested"), None)
    return parse_turn((requested.payload or {}).get("turn")) if requested else None


def saved_response(case_dir: str | Path, call_id: str) -> SavedResponse:
    """The plan as journaled, checked against the ledger's own tool_plan."""
    with LedgerReader(case_dir) as reader:  # (only the kinds it reads: the call's
        # tool operations' events can be many)
        events = reader.events_for_call(call_id, ("call.completed", "attempt.observed"))
    adopted = None
    for e in events:
        if e.kind == "call.completed" and (e.payload or {}).get("status") == "succeeded":
            adopted = (e.payload or {}).get("adopted_attempt_id")
    if not isinstance(adopted, str):
        raise TurnError(f"call {call_id}: no succeeded call.completed, so no saved response")
    observed = [e for e in events if e.kind == "attempt.observed" and e.attempt_id == adopted]
    if not observed or observed[-1].payload is None:
        raise TurnError(f"call {call_id}: attempt {adopted} has no attempt.observed")
    payload = observed[-1].payload
    sha = payload.get("response_artifact")
    transport = payload.get("transport")
    stream = isinstance(transport, dict) and transport.get("stream") is True
    found = ArtifactStore(case_dir).read(sha if isinstance(sha, str) else "")
    if found.data is None:
        raise TurnError(f"call {call_id}: {found.describe(str(sha))}")
    completion = parse_response(found.data, stream)
    if completion is None:
        raise TurnError(f"call {call_id}: the saved response is not a complete chat completion")
    plan = tuple(tool_plan(completion))
    recorded = payload.get("tool_plan")
    if recorded is not None and recorded != [c.as_ledger() for c in plan]:
        raise TurnError(f"call {call_id}: the saved response does not match its recorded tool plan")
    return SavedResponse(call_id, adopted, completion, plan)


def _operation_events(case_dir: str | Path, call_id: str) -> dict[str, dict[str, Event]]:
    """operation_key -> {kind: first event} for the tool events of one planning call."""
    with LedgerReader(case_dir) as reader:
        events = reader.events_for_call(call_id)
    out: dict[str, dict[str, Event]] = {}
    for e in events:
        key = (e.payload or {}).get("operation_key")
        if e.kind in (TOOL_ADMITTED, TOOL_COMPLETED) and isinstance(key, str):
            out.setdefault(key, {}).setdefault(e.kind, e)
    return out


def _completed_from_event(key: str, event: Event) -> Completed:
    payload = event.payload or {}
    receipt = str(payload.get("receipt", ""))
    try:
        result = json.loads(receipt)["body"]["result"]
    except (ValueError, KeyError, TypeError):
        result = {}
    outcome = Outcome.SUCCEEDED if payload.get("outcome") == "succeeded" else Outcome.FAILED
    return Completed(key, outcome, result if isinstance(result, dict) else {}, receipt)


class OperationState(StrEnum):
    NOT_ADMITTED = "not_admitted"  # safe: run it from the saved response, no provider
    EFFECT_UNKNOWN = "effect_unknown"  # admitted without outcome: never run it again
    COMPLETED = "completed"  # resolved from its receipt
    RAN_UNRECORDED = "reconciled_executed"  # found to have run: never again, no result
    RUN_AGAIN = "reconciled_not_executed"  # found not to have run: runs again, re-admitted


@dataclass(frozen=True, slots=True)
class PlannedOperation:
    planned: PlannedToolCall
    operation_key: str
    state: OperationState
    completed: Completed | None = None


def operation_states(
    case_dir: str | Path, saved: SavedResponse, namespace: str, thread: str, turn: str
) -> tuple[PlannedOperation, ...]:
    """Each tool call of a saved plan, in order, in the state the projection gives it
    (workstate/tool_ops.py): one rule for replay, the worker, inspect and the console."""
    state = project_case(case_dir)
    call = state.call(saved.call_id)
    tools = call.tools if call is not None else None
    by_key = {o.operation_key: o for o in tools.operations} if tools is not None else {}
    out: list[PlannedOperation] = []
    for planned in saved.plan:
        key = operation_key(namespace, thread, turn, planned.tool_call_id)
        op = by_key.get(key)
        if op is not None and op.stage is ToolOpStage.COMPLETED:
            done = _completed_from_op(key, op)
            out.append(PlannedOperation(planned, key, OperationState.COMPLETED, done))
        elif op is not None and op.stage is ToolOpStage.RECONCILED_EXECUTED:
            out.append(PlannedOperation(planned, key, OperationState.RAN_UNRECORDED,
                                        Completed.ran_unrecorded(key)))
        elif op is not None and op.stage is ToolOpStage.EFFECT_UNKNOWN:
            out.append(PlannedOperation(planned, key, OperationState.EFFECT_UNKNOWN))
        elif op is not None and op.stage is ToolOpStage.RECONCILED_NOT_EXECUTED:
            out.append(PlannedOperation(planned, key, OperationState.RUN_AGAIN))
        else:
            out.append(PlannedOperation(planned, key, OperationState.NOT_ADMITTED))
    return tuple(out)


def _completed_from_op(key: str, op: ToolOpState) -> Completed:
    receipt = op.receipt or ""
    try:
        result = json.loads(receipt)["body"]["result"]
    except (ValueError, KeyError, TypeError):
        result = {}
    outcome = Outcome.SUCCEEDED if op.outcome == "succeeded" else Outcome.FAILED
    return Completed(key, outcome, result if isinstance(result, dict) else {}, receipt)


def run_operations(
    kernel: ToolKernel, task_id: str, saved: SavedResponse, thread: str, turn: str
) -> list[Completed]:
    """Each planned call in order: resolved from its receipt when completed (or as run,
    outcome unknown, when the operator found it ran), run under its original tool-call id
    when never admitted or found not to have run; refused before anything runs when one
    is admitted without an outcome or a finding. Never calls a provider."""
    ops = operation_states(kernel.case_dir, saved, kernel.namespace, thread, turn)
    unknown = [o for o in ops if o.state is OperationState.EFFECT_UNKNOWN]
    if unknown:
        raise TurnRefused(f"operation {unknown[0].operation_key} is admitted without an "
                          "outcome: its effect is unknown; reconcile it before going on")
    done: list[Completed] = []
    for op in ops:
        if op.completed is not None:
            done.append(op.completed)
            continue
        try:
            admission = kernel.admit(task_id, saved.call_id, saved.attempt_id, thread, turn,
                                     op.planned)
        except OperationExists as exc:  # another worker got there first
            raise TurnRefused(str(exc)) from None
        done.append(kernel.execute(admission, op.planned.arguments))
    return done


def follow_up_conversation(saved: SavedResponse, done: list[Completed]) -> list[JsonValue]:
    """The messages after the user's in the follow-up call: the saved assistant message
    with its original tool calls, then each result under its original tool-call id."""
    message = saved.completion["choices"][0]["message"]
    assistant: JsonObject = {k: message[k] for k in ("role", "content", "tool_calls")
                             if k in message}
    results: list[JsonValue] = [
        {"role": "tool", "tool_call_id": planned.tool_call_id,
         "content": canonical_bytes(_tool_message(c)).decode()}
        for planned, c in zip(saved.plan, done, strict=True)
    ]
    return [assistant, *results]


def _tool_message(done: Completed) -> JsonObject:
    """What the model is told of one operation: its outcome and result, or that it ran
    and its result is not known (docs/tools.md, reconciled executed)."""
    if done.outcome is Outcome.UNKNOWN:
        return {"outcome": "unknown", "reconciled": "executed", "result": None}
    return {"outcome": done.outcome.value, "result": done.result}


class _Turn:
    def __init__(
        self, case_dir: str | Path, writer: LedgerWriter, config: CaseConfig, kernel: ToolKernel,
        spec: TurnSpec, on_commit: CommitHook | None, on_text: TextCallback | None,
        credential: str | None, timeout: float,
    ) -> None:
        self.case_dir = Path(case_dir)
        self.kernel = kernel
        self.spec = spec
        self.runner = CallRunner(case_dir, writer, config, on_commit=on_commit, timeout=timeout,
                                 credential=credential, on_text=on_text)
        self.calls = 0

    def model_call(self, call_id: str, n: int, conversation: list[JsonValue] | None) -> str:
        spec = self.spec
        options: JsonObject = {"tools": list(spec.tools)}
        if spec.stream:
            options["stream"] = True
        extra: JsonObject = {REQUEST_OPTIONS: options}
        if conversation is not None:
            extra[CONVERSATION] = conversation
        key = spec.idempotency_key(self.kernel.namespace, n)
        turn = {"namespace": self.kernel.namespace, "thread": spec.thread, "turn": spec.turn}
        self.runner.request(spec.task_id, call_id, key, spec.purpose, turn=turn)
        manifest = self.runner.manifest(spec.task_id, call_id, key,
                                        intent_for(spec.purpose, None, extra), None)
        assert manifest.payload is not None
        self.calls += 1
        return self.runner.execute(spec.task_id, call_id, key, manifest.payload["request_sha256"])

    def run_operations(self, saved: SavedResponse) -> list[Completed]:
        return run_operations(self.kernel, self.spec.task_id, saved, self.spec.thread,
                              self.spec.turn)

    def follow_up(self, saved: SavedResponse, done: list[Completed]) -> str:
        return self.model_call(self.spec.follow_up_call_id, 2, follow_up_conversation(saved, done))

    def accept(self, call_id: str) -> None:
        acceptance = f"{self.spec.turn}-accepted"
        self.runner.append("task.accepted", self.spec.task_id,
                           {"acceptance_id": acceptance, "call_id": call_id})
        self.runner.append("task.completed", self.spec.task_id, {"acceptance_id": acceptance})

    def finish(self, saved: SavedResponse) -> TurnOutcome:
        done = self.run_operations(saved)
        status = self.follow_up(saved, done)
        if status != "succeeded":
            return TurnOutcome(False, f"follow_up_{status}", done, None, self.calls)
        answer = saved_response(self.case_dir, self.spec.follow_up_call_id)
        self.accept(answer.call_id)
        return TurnOutcome(True, None, done, answer.text, self.calls)


def run_turn(
    case_dir: str | Path,
    writer: LedgerWriter,
    config: CaseConfig,
    kernel: ToolKernel,
    spec: TurnSpec,
    *,
    on_commit: CommitHook | None = None,
    on_text: TextCallback | None = None,
    credential: str | None = None,
    timeout: float = SEND_TIMEOUT_S,
) -> TurnOutcome:
    """Run a new turn from its first model call to acceptance."""
    turn = _Turn(case_dir, writer, config, kernel, spec, on_commit, on_text, credential, timeout)
    status = turn.model_call(spec.decision_call_id, 1, None)
    if status != "succeeded":
        # effect_unknown (e.g. a stream cut off): no plan was journaled, so no tool runs
        # and nothing asks the model for a different plan.
        return TurnOutcome(False, f"decision_{status}", [], None, turn.calls)
    return turn.finish(saved_response(case_dir, spec.decision_call_id))


def replay_turn(
    case_dir: str | Path,
    writer: LedgerWriter,
    config: CaseConfig,
    kernel: ToolKernel,
    spec: TurnSpec,
    *,
    on_commit: CommitHook | None = None,
    on_text: TextCallback | None = None,
    credential: str | None = None,
    timeout: float = SEND_TIMEOUT_S,
) -> TurnOutcome:
    """Continue a turn from its saved decision, never asking the provider for the plan
    again. A receipt the ledger holds but `receipts.ndjson` lacks is saved again."""
    turn = _Turn(case_dir, writer, config, kernel, spec, on_commit, on_text, credential, timeout)
    saved = saved_response(case_dir, decision_call(case_dir, kernel.namespace, spec))
    with LedgerReader(case_dir) as reader:
        if reader.events_for_call(spec.follow_up_call_id):
            raise TurnRefused(f"the follow-up call {spec.follow_up_call_id} was already started; "
                              "resume it instead of replaying the turn")
    resave_missing_receipts(kernel, saved.call_id)
    return turn.finish(saved)


def decision_call(case_dir: str | Path, namespace: str, spec: TurnSpec) -> str:
    """The call holding the turn's saved decision: the spec's decision call, or the
    successor an operator resumed it as. A successor must name the spec's turn: its
    operations are keyed by it, and another turn's keys would address other operations."""
    call_id = current_call(case_dir, spec.decision_call_id)
    if call_id != spec.decision_call_id:
        named = named_turn(case_dir, call_id)
        if named != (namespace, spec.thread, spec.turn):
            shown = "/".join(named) if named else "no turn"
            raise TurnError(f"call {spec.decision_call_id} was resumed as {call_id}, which "
                            f"names {shown}, not {namespace}/{spec.thread}/{spec.turn}")
    return call_id


def resave_missing_receipts(kernel: ToolKernel, call_id: str) -> int:
    """Append the original receipt of every operation the ledger completed for `call_id`
    that `receipts.ndjson` lacks (killed between the ledger commit and the file append)."""
    path = kernel.receipts_path
    saved_lines = {text for _, text in read_receipt_lines(path)} if path.exists() else set()
    added = 0
    for key, kinds in _operation_events(kernel.case_dir, call_id).items():
        completed = kinds.get(TOOL_COMPLETED)
        receipt = _completed_from_event(key, completed).receipt if completed else None
        if receipt and receipt not in saved_lines:
            kernel.save_receipt(receipt)
            added += 1
    return added
