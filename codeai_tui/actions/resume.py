"""resume_call: continue a call from the record alone, or refuse (docs/ledger.md section 6).

Only rungs 4 (requested, no manifest) and 5 (manifest recorded, no attempt) resume; every
other state raises ActionRefused naming the projected next operation and appends nothing.
On rung 5 the request is rebuilt from the manifest's intent under the current
configuration and the stored rendered context; any drift of request hash, context
package or rendered-context hash refuses. The re-projection, `call.resumed` and the new
call's `call.requested` + `call.manifest` commit in ONE `BEGIN IMMEDIATE` transaction, so
two racing resumers cannot both win and a kill cannot leave a superseded call without its
successor. The network is used only after that transaction has committed. The successor
keeps the call's `turn` (docs/tools.md): a tool turn's decision resumed under a new call
id still keys its operations `namespace/thread/turn/tool_call_id`, so `replay` can run
the plan it saves.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from codeai_tui.actions.gate import (
    ActionRefused,
    PinnedEvidence,
    UnknownCall,
    recorded_by,
    through_gate,
)
from codeai_tui.actions.protocol import (
    ActionBase,
    ActionOptions,
    Decision,
    Done,
    Selected,
    not_next,
)
from codeai_tui.actions.sends import check_destination, receipts_warning
from codeai_tui.ledger.artifacts import ArtifactStatus, ArtifactStore, sha256_hex
from codeai_tui.ledger.case import (
    CaseConfig,
    load_case_config,
    read_termination,
)
from codeai_tui.ledger.errors import AppendNotLanded, LedgerError
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.ledger.schema import Event
from codeai_tui.ledger.who import ended_here
from codeai_tui.ledger.writer import LedgerWriter, NewEvent
from codeai_tui.runtime.destination import (
    Destination,
    credential_for,
    resolve_destination,
)
from codeai_tui.runtime.request_bytes import build_request, intent_for
from codeai_tui.runtime.runner import CallRunner
from codeai_tui.workstate import CallStage, CallState, NextOperation, project_call
from codeai_tui.workstate.receipts import parse_time
from codeai_tui.workstate.tool_ops import TURN_KEYS, parse_turn

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ResumePlan:
    """Everything an operator must see before confirming, pinned to the call's evidence."""

    case_dir: Path
    call_id: str
    task_id: str
    idempotency_key: str | None
    purpose: str
    stage: CallStage
    drift_check_possible: bool
    model_recorded: str | None
    model_configured: str
    request_sha256_recorded: str | None
    request_sha256_rebuilt: str | None
    context_package_recorded: str | None
    context_package_now: str | None
    rendered_sha256_recorded: str | None
    rendered_sha256_now: str | None
    drift: tuple[str, ...]
    evidence: tuple[int, int]
    intent: dict[str, Any]
    rendered_context: str | None
    destination: Destination
    # when the call's last event was recorded (as the ledger says): a call that moved
    # seconds ago may still belong to a live process (`still_active`)
    last_recorded_at: str | None = None
    # the turn (namespace, thread, turn) the call's `call.requested` names, None for a
    # call of no turn: fixed for every attempt, so the successor keys the same operations
    turn: tuple[str, str, str] | None = None
    # why the process that wrote the call's last event is known to have ended (an
    # operator's process gone, or the producer's recorded kill), None when unknown
    writer_ended: str | None = None
    next_operation: NextOperation | None = None  # what the projection names (a refusal's)

    def still_active(self, now: datetime) -> str | None:
        """Why the process that requested this call may still be running, when its last
        event is less than ACTIVE_WITHIN_S old at `now` (or later than `now`: a clock
        that cannot be compared is no proof the process stopped); None otherwise.
        Resume is for a process that stopped: resuming a live one's call sends its
        request twice."""
        at = self.last_recorded_at
        recorded = parse_time(at) if isinstance(at, str) else None
        if recorded is None or self.writer_ended is not None:
            return None
        age = (now - recorded).total_seconds()
        if age >= ACTIVE_WITHIN_S:
            return None
        when = (f"{age:.0f} s ago" if age >= 0 else
                f"at {at}, later than this machine's clock")
        return (f"this call's last event (seq {self.evidence[1]:,}) was recorded {when}: "
                "the process that requested it may still be running, and would then send "
                "this request itself. Resume only a call whose process has stopped.")

    @property
    def pinned(self) -> PinnedEvidence:
        """The call's evidence this plan showed: the gate refuses a call that moved."""
        return PinnedEvidence(self.call_id, *self.evidence)

    @property
    def base_url(self) -> str:
        return self.destination.base_url

    def successor_requested(self, key: str, model: str) -> dict[str, Any]:
        """The successor's `call.requested` payload: same key and purpose, the model it is
        sent to, where it came from, and the call's turn (docs/tools.md), so `replay`
        rebuilds the operation keys of the plan the successor's response saves."""
        payload: dict[str, Any] = {"idempotency_key": key, "purpose": self.purpose,
                                   "model": model, "resumed_from": self.call_id,
                                   "recorded_by": recorded_by()}
        if self.turn is not None:
            payload["turn"] = dict(zip(TURN_KEYS, self.turn, strict=True))
        return payload

    @property
    def verdict(self) -> str:
        if not self.drift_check_possible:
            return "no drift check possible"
        return "drift" if self.drift else "match"


@dataclass(frozen=True, slots=True)
class ResumeResult:
    old_call_id: str
    new_call_id: str
    new_stage: CallStage
    receipts_before: int
    receipts_after: int
    drift_check_possible: bool
    status: str
    notes: tuple[str, ...] = ()  # what the runner waited for, or why it stopped early
    # the provider's receipts did not move where they should have (`receipts_warning`)
    warning: str | None = None


# a call whose last event is younger than this may belong to a process still running
ACTIVE_WITHIN_S = 120.0


def check_resumable(state: CallState | None, call_id: str) -> CallState:
    """Raise ActionRefused unless the projection permits resuming this call."""
    if state is None:
        raise UnknownCall(call_id)
    if state.superseded_by is not None or state.stage is CallStage.SUPERSEDED:
        raise ActionRefused(
            state.next_operation, f"call {call_id} is already superseded by {state.superseded_by}"
        )
    if state.anomalous:
        raise ActionRefused(
            state.next_operation,
            f"call {call_id}: an anomaly names this call; resume refuses to guess ({state.reason})",
        )
    if not state.resumable:
        raise ActionRefused(
            state.next_operation,
            f"call {call_id} is {state.stage.value}: next operation is "
            f"{state.next_operation.value} ({state.reason})",
        )
    return state


def _payload(events: Sequence[Event], kind: str) -> dict[str, Any]:
    for ev in events:
        if ev.kind == kind and ev.payload is not None:
            return ev.payload
    return {}


def _latest_package(task_events: Sequence[Event]) -> tuple[str | None, str | None]:
    """The task's current context package: its last completed compilation."""
    for ev in reversed(task_events):
        if ev.kind == "context.compilation_completed" and ev.payload:
            pkg, sha = ev.payload.get("package_id"), ev.payload.get("rendered_sha256")
            return (pkg if isinstance(pkg, str) else None, sha if isinstance(sha, str) else None)
    return None, None


def plan_resume(
    case_dir: str | os.PathLike[str],
    call_id: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    operator_config: Path | None = None,
    ask_destination: bool = False,
) -> ResumePlan:
    """Read-only: project the call, rebuild its request, compare, and say where it would
    go. Raises ActionRefused (not resumable; with `ask_destination`, also where the server
    there is not the one the case names: `check_destination`), UnknownCall,
    DestinationError (unusable URL) or LedgerError (cannot read). Writes nothing; sends
    nothing but, with `ask_destination`, the identity question (the console's drift
    checks plan every resumable call as it shows them, and ask nobody)."""
    if not call_id:
        raise UnknownCall(call_id)
    case = Path(case_dir)
    config: CaseConfig = load_case_config(case).with_overrides(model=model, base_url=base_url)
    destination = resolve_destination(
        case, config, base_url=base_url, api_key_env=api_key_env, operator_config=operator_config
    )
    with LedgerReader(case) as reader:
        events = reader.events_for_call(call_id)
        state = check_resumable(project_call(events, call_id), call_id)
        task_events = reader.events_for_task(
            state.task_id, ("task.objective", "context.compilation_completed")
        )
    requested = _payload(events, "call.requested")
    manifest = _payload(events, "call.manifest")
    purpose = str(requested.get("purpose") or "")
    turn = _turn(requested, call_id)
    store = ArtifactStore(case)
    pkg_now, rendered_ref = _latest_package(task_events)
    rendered_now_text: str | None = None
    rendered_sha_now: str | None = None
    rendered_problem: str | None = None
    if rendered_ref is not None:
        found = store.read(rendered_ref)
        if found.data is not None:
            rendered_sha_now = sha256_hex(found.data)
            rendered_now_text = found.data.decode("utf-8", "replace")
        else:
            rendered_problem = found.describe(rendered_ref)
    drift: list[str] = []
    drift_check_possible = state.stage is CallStage.MANIFEST_RECORDED
    if drift_check_possible:
        intent = manifest.get("intent")
        if not isinstance(intent, dict):
            raise ActionRefused(None, f"call {call_id}: manifest has no intent object to rebuild from")
        recorded = manifest
        if manifest.get("context_package_id") is None and manifest.get("rendered_context_sha256") is None:
            # the call was prepared without context: rebuild without it
            pkg_now, rendered_sha_now, rendered_now_text = None, None, None
    else:
        # Rung 4: nothing recorded to compare against; prepare anew from the task.
        objective = _payload(task_events, "task.objective").get("objective")
        intent = intent_for(purpose, objective if isinstance(objective, str) else None)
        recorded = {"model": requested.get("model")}
    rebuilt = sha256_hex(build_request(intent, config.provider.model, rendered_now_text))

    def text(key: str) -> str | None:
        value = recorded.get(key)
        return value if isinstance(value, str) else None

    req_rec, pkg_rec, sha_rec = (
        text("request_sha256"), text("context_package_id"), text("rendered_context_sha256")
    )
    if drift_check_possible:
        if text("model") != config.provider.model:
            drift.append(f"model: recorded {text('model')}, configured {config.provider.model}")
        if rebuilt != req_rec:
            drift.append(f"request hash: recorded {req_rec}, rebuilt {rebuilt}")
        if pkg_now != pkg_rec:
            drift.append(f"context package: recorded {pkg_rec}, now {pkg_now}")
        if rendered_sha_now != sha_rec:
            now = rendered_sha_now or f"({rendered_problem or 'no rendered context now'})"
            drift.append(f"rendered context: recorded {sha_rec}, now {now}")
        if req_rec is not None:
            stored = store.read(req_rec)
            if stored.status not in (ArtifactStatus.OK, ArtifactStatus.MISSING):
                # the case's copy of the request was replaced (a link, other bytes): the
                # directory was tampered with; resume sends only bytes it rebuilt and
                # verified, but an operator must look at this case before anything runs
                raise ActionRefused(
                    None, f"call {call_id}: request {stored.describe(req_rec)}; "
                    "the case directory was altered, refusing")
    if ask_destination and not drift:
        check_destination(case, destination, state.next_operation)
    return ResumePlan(
        case_dir=case, call_id=call_id, task_id=state.task_id,
        idempotency_key=state.idempotency_key, purpose=purpose, stage=state.stage,
        drift_check_possible=drift_check_possible,
        model_recorded=text("model"), model_configured=config.provider.model,
        request_sha256_recorded=req_rec, request_sha256_rebuilt=rebuilt,
        context_package_recorded=pkg_rec, context_package_now=pkg_now,
        rendered_sha256_recorded=sha_rec, rendered_sha256_now=rendered_sha_now,
        drift=tuple(drift), evidence=PinnedEvidence.of_events(call_id, events).pair, intent=intent,
        rendered_context=rendered_now_text, destination=destination,
        last_recorded_at=events[-1].recorded_at if events else None, turn=turn,
        writer_ended=_writer_ended(case, events),
        next_operation=state.next_operation,
    )


def _writer_ended(case: Path, events: Sequence[Event]) -> str | None:
    """Why no process is still writing this call, where the case says so: its last
    events were recorded by an operator's process that has ended (or by this one), or
    the producer that wrote them was killed, as the case's termination record (written
    by whoever killed it, the demo harness here) says, at or after the call's last seq."""
    if not events:
        return None
    requested = _payload(events, "call.requested")
    if events[-1].kind in ("call.requested", "call.manifest"):
        ended = ended_here(requested.get("recorded_by"))
        if ended is not None:
            return ended
    record = read_termination(case)
    if record is not None and record.get("returncode") is not None:
        seq = record.get("seq")
        if type(seq) is int and seq >= events[-1].seq:
            return (f"its producer (pid {record.get('pid')}) was stopped after seq {seq} "
                    f"(termination.json: {record.get('signal') or 'exit'})")
    return None


def _turn(requested: dict[str, Any], call_id: str) -> tuple[str, str, str] | None:
    """The call's turn, carried to its successor; a `turn` that cannot key operations
    refuses (a successor under it would plan tools that no replay could address)."""
    raw = requested.get("turn")
    if raw is None:
        return None
    turn = parse_turn(raw)
    if turn is None:
        raise ActionRefused(None, f"call {call_id}: its call.requested names a turn that "
                            "cannot key tool operations (namespace, thread and turn must be "
                            "non-empty text without '/'); refusing to resume it")
    return turn


def resume_call(
    case_dir: str | os.PathLike[str],
    call_id: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    send_credential: bool = False,
    reason: str | None = None,
    expected: ResumePlan | None = None,
    progress: Progress | None = None,
    new_call_id: str | None = None,
    operator_config: Path | None = None,
    timeout: float | None = None,
    max_retry_wait: float | None = None,
    deadline: float | None = None,
) -> ResumeResult:
    """Resume one call or raise ActionRefused having appended nothing.

    The credential (the value of the destination's variable) is sent only when
    `send_credential` is True: the caller decides that from `plan.destination.trusted` or
    an explicit confirmation that showed the URL and the variable's name."""
    say = progress or (lambda _msg: None)
    case = Path(case_dir)
    say(f"projecting {call_id}")
    plan = plan_resume(case, call_id, model=model, base_url=base_url, api_key_env=api_key_env,
                       operator_config=operator_config, ask_destination=True)
    shown = expected or plan
    shown.pinned.check(plan.pinned)  # before anything is stored: a call that moved refuses
    if plan.drift:
        raise ActionRefused(None, f"call {call_id}: drift, refusing: " + "; ".join(plan.drift))
    if expected is not None and expected.request_sha256_rebuilt != plan.request_sha256_rebuilt:
        raise ActionRefused(None, f"call {call_id}: the rebuilt request differs from the one shown")
    if expected is not None and expected.destination != plan.destination:
        raise ActionRefused(None, f"call {call_id}: the destination changed since it was shown")
    config = load_case_config(case).with_overrides(model=model, base_url=plan.destination.base_url)
    receipts_before = len(read_receipts(case).receipts)
    key = plan.idempotency_key or f"key-{call_id}"
    new_id = new_call_id or f"call-{uuid.uuid4().hex[:12]}"
    say("writing call.resumed and the new call")
    with LedgerWriter.open(case) as writer:
        limits = {k: v for k, v in (("timeout", timeout), ("max_retry_wait", max_retry_wait),
                                    ("deadline", deadline))
                  if v is not None}  # the runner's documented defaults otherwise
        runner = CallRunner(
            case, writer, config, credential=credential_for(plan.destination, send_credential),
            **limits,
        )
        package = (
            (plan.context_package_now, plan.rendered_sha256_now)
            if plan.context_package_now and plan.rendered_sha256_now
            else None
        )
        manifest = runner.manifest_payload(key, plan.intent, package)  # stores request bytes
        through_gate(writer, call_id, lambda state: check_resumable(state, call_id),
                     lambda _state, _events: [
                         NewEvent("call.resumed", plan.task_id,
                                  {"resumed_as": new_id, "idempotency_key": key,
                                   "request_sha256": plan.request_sha256_recorded,
                                   "by": recorded_by(), "reason": reason or None},
                                  call_id=call_id),
                         NewEvent("call.requested", plan.task_id,
                                  plan.successor_requested(key, config.provider.model),
                                  call_id=new_id),
                         NewEvent("call.manifest", plan.task_id, manifest, call_id=new_id)],
                     pinned=shown.pinned)
        say(f"sending {new_id} to {plan.destination.base_url}")
        try:
            status = runner.execute(plan.task_id, new_id, key, manifest["request_sha256"])
        except (AppendNotLanded, LedgerError) as exc:
            # the resume itself is recorded; what the runner could not write says itself
            # what happened (an attempt.started that did not land: nothing was sent)
            raise LedgerError(exc.problem, f"{call_id} was resumed as {new_id} (recorded), "
                              f"then {exc}") from None
    with LedgerReader(case) as reader:
        new_state = project_call(reader.events_for_call(new_id), new_id)
    receipts_after = len(read_receipts(case).receipts)
    say(f"{new_id}: {status}")
    return ResumeResult(
        old_call_id=call_id, new_call_id=new_id,
        new_stage=new_state.stage if new_state else CallStage.REQUESTED,
        receipts_before=receipts_before, receipts_after=receipts_after,
        drift_check_possible=plan.drift_check_possible, status=status,
        notes=tuple(runner.notes),
        warning=receipts_warning(case, plan.destination, status, receipts_before,
                                 receipts_after),
    )


def done_line(result: ResumeResult) -> str:
    """What a resume did, in one line: the successor, its stage, the receipts, and what
    the runner waited for or why no whole answer came (`resume` prints the same)."""
    notes = "".join(f"; {note}" for note in result.notes)
    warning = f"; \u26a0 {result.warning}" if result.warning is not None else ""
    return (f"resumed {result.old_call_id} as {result.new_call_id} "
            f"({result.new_stage.value}); provider receipts {result.receipts_before} "
            f"\u2192 {result.receipts_after}{warning}{notes}")


class Resume(ActionBase):
    """Continue a call from the record alone (rungs 4 and 5), as a successor call."""

    name, key, done_word = "resume", "r", "resumed"

    def refusal(self, selected: Selected) -> str | None:
        call = selected.call
        if call is None or call.resumable:
            return None if call is not None else "no call selected"
        return not_next(call, "resume", "")

    def will(self, selected: Selected) -> str:
        return (f"{selected.call.call_id if selected.call else ''}: resume records "
                "call.resumed and a successor, then sends the rebuilt request once")

    def read(self, case: Path, call_id: str, options: ActionOptions) -> ResumePlan:
        """The plan with its drift check, asking nobody: what the console's drift checks
        show for every resumable call."""
        return plan_resume(case, call_id, model=options.model, base_url=options.base_url,
                           api_key_env=options.api_key_env)

    def plan(self, case: Path, call_id: str, options: ActionOptions) -> ResumePlan:
        """The plan the dialog shows (`read`); where it does not drift, the server at
        the destination must be the case's own before the dialog offers to send
        (`check_destination`)."""
        plan = self.read(case, call_id, options)
        if not plan.drift:
            check_destination(plan.case_dir, plan.destination, plan.next_operation)
        return plan

    def run(self, plan: ResumePlan, decision: Decision, options: ActionOptions,
            progress: Progress) -> Done:
        # the caller decides the credential: plan.destination.trusted, or the operator
        # confirmed this URL and variable in the dialog (never a default)
        result = resume_call(plan.case_dir, plan.call_id, model=options.model,
                             base_url=options.base_url, api_key_env=options.api_key_env,
                             send_credential=decision.send_credential,
                             reason=decision.reason, expected=plan, progress=progress,
                             timeout=options.timeout, max_retry_wait=options.max_retry_wait,
                             deadline=options.deadline)
        return Done(done_line(result), ok=True, warning=result.warning, result=result)


RESUME = Resume()
