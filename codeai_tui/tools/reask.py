"""The hazard of asking again, measured: a restart that re-asks the provider for a turn's
decision and runs the tool calls of the new answer, keyed on their ids.

This is what a worker without a response journal does after a crash, and what replay
(`turn.replay_turn`) exists to avoid. A provider asked again can return new tool-call
ids (`codeai-tui provider --fresh-tool-call-ids`); each new id is a new operation key,
so the kernel's rule "one operation key, one admission" admits it and the tool runs a
second time. With ids derived from the request bytes the kernel refuses instead: the
key was admitted before. The demo runs this only on a copy of a killed case, as the
counterfactual of the replay it shows beside it; nothing in the product calls it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from codeai_tui.ledger.artifacts import ArtifactStore
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.runtime.responses import tool_plan
from codeai_tui.runtime.runner import SEND_TIMEOUT_S, send_request
from codeai_tui.tools.kernel import OperationExists, ToolKernel
from codeai_tui.tools.turn import TurnError, TurnSpec, saved_response


@dataclass(frozen=True, slots=True)
class ReaskedOperation:
    tool_call_id: str
    operation_key: str
    outcome: str  # "succeeded" / "failed", or "refused" when the key was admitted before
    detail: str | None = None

    def as_json(self) -> dict[str, str | None]:
        return {"tool_call_id": self.tool_call_id, "operation_key": self.operation_key,
                "outcome": self.outcome, "detail": self.detail}


@dataclass
class ReaskOutcome:
    """What the re-ask did: the decision's request sent again under its key, the ids of
    the saved decision and of the new answer, and each new call as the kernel took it."""

    call_id: str
    idempotency_key: str
    status: int | None
    saved_tool_call_ids: list[str]
    reasked_tool_call_ids: list[str] = field(default_factory=list)
    operations: list[ReaskedOperation] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {"complete": False, "reasked_call_id": self.call_id,
                "idempotency_key": self.idempotency_key, "status": self.status,
                "saved_tool_call_ids": self.saved_tool_call_ids,
                "reasked_tool_call_ids": self.reasked_tool_call_ids,
                "operations": [o.as_json() for o in self.operations]}


def _decision_request(case_dir: Path, call_id: str) -> tuple[str, bytes]:
    """(idempotency key, request bytes) of the call's last manifest, as recorded."""
    with LedgerReader(case_dir) as reader:
        manifests = [e for e in reader.events_for_call(call_id)
                     if e.kind == "call.manifest" and e.payload]
    if not manifests:
        raise TurnError(f"call {call_id}: no call.manifest, nothing to ask again")
    payload = manifests[-1].payload or {}
    body = ArtifactStore(case_dir).get(str(payload.get("request_artifact")))
    if body is None:
        raise TurnError(f"call {call_id}: its request artifact is missing")
    return str(payload.get("idempotency_key")), body


def reask_decision(
    case_dir: str | Path, kernel: ToolKernel, spec: TurnSpec, base_url: str,
    timeout: float = SEND_TIMEOUT_S,
) -> ReaskOutcome:
    """Send the decision's recorded request again (appending no model-call event, as a
    journal-less worker would) and run each tool call of the answer through the kernel
    under its own id, attributed to the saved decision's call and attempt."""
    case = Path(case_dir)
    saved = saved_response(case, spec.decision_call_id)
    key, body = _decision_request(case, spec.decision_call_id)
    transport = send_request(base_url, body, key, None, timeout)
    out = ReaskOutcome(saved.call_id, key, transport.status,
                       [c.tool_call_id for c in saved.plan])
    if transport.completion is None or not (200 <= (transport.status or 0) < 300):
        raise TurnError(f"the provider did not answer the re-ask with a completion "
                        f"(status {transport.status}, {transport.error or 'no error text'})")
    for planned in tool_plan(transport.completion):
        out.reasked_tool_call_ids.append(planned.tool_call_id)
        try:
            admission = kernel.admit(spec.task_id, saved.call_id, saved.attempt_id,
                                     spec.thread, spec.turn, planned)
        except OperationExists as exc:
            out.operations.append(ReaskedOperation(planned.tool_call_id, exc.operation_key,
                                                   "refused", str(exc)))
            continue
        done = kernel.execute(admission, planned.arguments)
        out.operations.append(ReaskedOperation(planned.tool_call_id, done.operation_key,
                                               done.outcome.value))
    return out
