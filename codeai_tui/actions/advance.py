"""Advance a call from its record: reinterpret, redecide, finalize, start the next attempt.

Each action is gated by the projection exactly like resume (codeai_tui/actions/resume.py): inside
one `BEGIN IMMEDIATE` transaction of the one writer it re-projects the call from its
events (a racer that committed first is seen), refuses unless the projected next
operation is the one it performs and no anomaly names the call, then appends its events
with `decided_by` {user, host, pid}; the event's `recorded_at` is the when. A refusal
appends nothing. Only `next_attempt` uses the network, and only after its claim
(`attempt.started`) has committed, through resume's runner (docs/reconcile.md §5).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeai_tui.actions.gate import (
    ActionRefused,
    PinnedEvidence,
    UnknownCall,
    gated_write,
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
from codeai_tui.ledger.artifacts import ArtifactStore
from codeai_tui.ledger.case import load_case_config
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.ledger.schema import Event
from codeai_tui.ledger.writer import LedgerWriter, NewEvent
from codeai_tui.runtime.destination import Destination, credential_for, resolve_destination
from codeai_tui.runtime.interpreter import INTERPRETER_VERSION, interpret_recorded
from codeai_tui.runtime.runner import CallRunner
from codeai_tui.workstate import CallState, NextOperation, project_call
from codeai_tui.workstate.evidence import AttemptEvidence

# The stated retry policy: a retryable outcome is retried while fewer than this many
# attempts of the call have started (the runner's own default).
DEFAULT_MAX_ATTEMPTS = 2
MAX_ATTEMPTS_LIMIT = 20
POLICY_NAME = "retry-retryable-errors"

Progress = Callable[[str], None]
Evidence = tuple[int, int]  # (events of the call, last seq): what a confirmation showed
Shown = PinnedEvidence | Evidence  # (the pair: the command line's and older callers' form)


def pinned_as(call_id: str, shown: Shown | None) -> PinnedEvidence | None:
    """The pin the gate compares, from either form a caller gives."""
    if shown is None or isinstance(shown, PinnedEvidence):
        return shown
    return PinnedEvidence(call_id, *shown)


@dataclass(frozen=True, slots=True)
class AdvanceResult:
    action: str
    call_id: str
    attempt_id: str
    appended: tuple[str, ...]  # kinds, in order
    first_seq: int
    state: CallState  # the call's verdict afterwards
    status: str | None = None  # next-attempt: succeeded | failed | effect_unknown
    receipts_before: int | None = None
    receipts_after: int | None = None
    notes: tuple[str, ...] = ()  # next-attempt: the runner's (a wait, why no whole answer)
    warning: str | None = None  # next-attempt: the receipts did not move (resume's words)

    def summary(self) -> str:
        st = self.state
        what = ", ".join(self.appended) or "nothing"
        line = (f"{self.action} {self.call_id} attempt {self.attempt_id}: appended {what} "
                f"(from seq {self.first_seq}); now {st.stage.value}, next "
                f"{st.next_operation.value}, provider effect {st.provider_effect.value}")
        if self.status is not None:
            line += (f"; {self.status}; receipts {self.receipts_before} -> "
                     f"{self.receipts_after}")
        if self.warning is not None:
            line += f"; warning: {self.warning}"
        return line


def permitted_ops(action: str, accept_duplicate: bool = False) -> tuple[NextOperation, ...]:
    """The projected next operations under which `action` may run."""
    if action == "reinterpret":
        return (NextOperation.REINTERPRET,)
    if action == "redecide":
        return (NextOperation.DECIDE_DUPLICATE,) if accept_duplicate else (NextOperation.REDECIDE,)
    if action == "finalize":
        if accept_duplicate:
            return (NextOperation.DECIDE_DUPLICATE,)
        return (NextOperation.FINALIZE, NextOperation.DECIDE_DUPLICATE)
    if action == "next-attempt":
        return (NextOperation.START_NEXT_ATTEMPT,)
    raise ValueError(f"unknown action {action!r}")


def check_permitted(state: CallState | None, call_id: str, action: str,
                    accept_duplicate: bool = False) -> CallState:
    """Raise unless the projection's next operation is one this action performs."""
    if state is None:
        raise UnknownCall(call_id)
    if state.anomalous:
        raise ActionRefused(state.next_operation,
                             f"call {call_id}: an anomaly names this call; {action} refuses to guess")
    ops = permitted_ops(action, accept_duplicate)
    if state.superseded_by is not None or state.next_operation not in ops:
        wanted = " or ".join(op.value for op in ops)
        raise ActionRefused(
            state.next_operation,
            f"call {call_id} is {state.stage.value}: next operation is "
            f"{state.next_operation.value}, not {wanted} ({state.reason})")
    if state.evidence.last_attempt() is None:
        raise ActionRefused(state.next_operation, f"call {call_id}: no started attempt")
    return state


def _last(state: CallState) -> AttemptEvidence:
    last = state.evidence.last_attempt()
    assert last is not None  # check_permitted refused otherwise
    return last


def _ids(state: CallState, last: AttemptEvidence) -> dict[str, str]:
    return {"call_id": state.call_id, "attempt_id": last.attempt_id}


Build = Callable[[CallState, Sequence[Event]], list[NewEvent]]


def _claim(case_dir: str | os.PathLike[str], call_id: str, action: str, build: Build, *,
           accept_duplicate: bool = False, expected: Shown | None = None) -> AdvanceResult:
    """Through the gate: re-project, check this action, compare, append (one wins)."""
    landed = gated_write(
        case_dir, call_id, lambda state: check_permitted(state, call_id, action, accept_duplicate),
        build, pinned=pinned_as(call_id, expected))
    assert landed.appended
    return AdvanceResult(action, call_id, _last(landed.checked).attempt_id,
                         tuple(e.kind for e in landed.appended), landed.appended[0].seq,
                         landed.after())


# ---- reinterpret


def _observation(events: Sequence[Event], last: AttemptEvidence) -> dict[str, Any]:
    for ev in events:
        if ev.seq == last.observed_seq and ev.payload is not None:
            return ev.payload
    return {}


def _reinterpret(case: Path) -> Build:
    def build(state: CallState, events: Sequence[Event]) -> list[NewEvent]:
        last = _last(state)
        observed = _observation(events, last)
        transport = observed.get("transport")
        wire = transport if isinstance(transport, dict) else {}
        status = wire.get("status")
        status = status if isinstance(status, int) and not isinstance(status, bool) else None
        sha = observed.get("response_artifact") or observed.get("response_sha256")
        if sha is None and wire.get("bytes") == 0:
            body = b""  # nothing was answered: the transport alone is the evidence
        elif isinstance(sha, str):
            found = ArtifactStore(case).read(sha)
            if found.data is None:
                raise ActionRefused(state.next_operation, f"call {state.call_id}: response "
                                     f"{found.describe(sha)}; nothing to interpret")
            body = found.data
        else:
            raise ActionRefused(state.next_operation, f"call {state.call_id}: the observation "
                                 "names no response artifact; nothing to interpret")
        outcome = interpret_recorded(status, body, wire.get("stream") is True)
        return [NewEvent("attempt.interpreted", state.task_id,
                         {"interpreter": INTERPRETER_VERSION, "outcome": outcome,
                          "response_sha256": sha, "reinterpreted": True,
                          "decided_by": recorded_by()}, **_ids(state, last))]
    return build


def reinterpret(case_dir: str | os.PathLike[str], call_id: str, *,
                expected: Shown | None = None) -> AdvanceResult:
    """Run interpreter v1 over the observed attempt's verified response bytes and append
    `attempt.interpreted`. Refuses when the artifact is missing or its bytes differ."""
    return _claim(case_dir, call_id, "reinterpret", _reinterpret(Path(case_dir)),
                  expected=expected)


# ---- redecide


def policy(max_attempts: int) -> dict[str, Any]:
    return {"name": POLICY_NAME, "max_attempts": max_attempts,
            "interpreter": INTERPRETER_VERSION}


def decide(outcome: str | None, started: int, max_attempts: int) -> tuple[str, str]:
    """The stated policy: (decision, reason). Only a retryable error with attempts left
    is retried; everything else stops (stopping never sends)."""
    if outcome == "retryable_error":
        if started < max_attempts:
            return "retry", f"retryable_error at attempt {started} of at most {max_attempts}"
        return "stop", f"retryable_error, but {started} of at most {max_attempts} attempts used"
    if outcome == "success":
        return "stop", "interpreted as success: adopt this attempt"
    if outcome == "fatal_error":
        return "stop", "fatal_error: not retried"
    return "stop", f"outcome {outcome!r} is not one the policy retries"


def _check_max(max_attempts: int) -> None:
    if not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
        raise ValueError(f"--max-attempts must be 1..{MAX_ATTEMPTS_LIMIT}, not {max_attempts}")


def redecide(case_dir: str | os.PathLike[str], call_id: str, *,
             max_attempts: int = DEFAULT_MAX_ATTEMPTS, accept_duplicate: bool = False,
             note: str | None = None, expected: Shown | None = None) -> AdvanceResult:
    """From the recorded interpretation, under the policy, append `attempt.retry_decided`.
    With `accept_duplicate` (only at decide_duplicate) it records the operator's explicit
    acceptance of a duplicate: {decision: retry, accept_duplicate: true}."""
    _check_max(max_attempts)

    def build(state: CallState, _events: Sequence[Event]) -> list[NewEvent]:
        last = _last(state)
        if accept_duplicate:
            return [_accept(state, last, note)]
        decision, reason = decide(last.outcome, len(state.evidence.started_attempts()),
                                  max_attempts)
        return [NewEvent("attempt.retry_decided", state.task_id,
                         {"decision": decision, "reason": reason, "policy": policy(max_attempts),
                          "decided_by": recorded_by(), "note": note}, **_ids(state, last))]

    return _claim(case_dir, call_id, "redecide", build, accept_duplicate=accept_duplicate,
                  expected=expected)


def _accept(state: CallState, last: AttemptEvidence, note: str | None) -> NewEvent:
    return NewEvent("attempt.retry_decided", state.task_id,
                    {"decision": "retry", "accept_duplicate": True,
                     "reason": "the provider received the attempt and its response is lost: "
                               "the operator accepts a duplicate",
                     "decided_by": recorded_by(), "note": note}, **_ids(state, last))


# ---- finalize


def finalize(case_dir: str | os.PathLike[str], call_id: str, *, accept_duplicate: bool = False,
             note: str | None = None, expected: Shown | None = None) -> AdvanceResult:
    """Append the terminal events the projection asks for. At decide_duplicate: finalize
    as failed (retry_decided stop, attempt.completed and call.completed failed), or with
    `accept_duplicate` record the acceptance instead (the call then needs a next attempt)."""

    def build(state: CallState, _events: Sequence[Event]) -> list[NewEvent]:
        last = _last(state)
        ids = _ids(state, last)
        who = recorded_by()
        if state.next_operation is NextOperation.DECIDE_DUPLICATE:
            if accept_duplicate:
                return [_accept(state, last, note)]
            status = "failed"
            out = [NewEvent("attempt.retry_decided", state.task_id,
                            {"decision": "stop", "reason": "the provider received the attempt "
                             "and its response is lost: finalized as failed, no duplicate",
                             "decided_by": who, "note": note}, **ids)]
        else:
            out = []
        if last.completed_seq is None:
            status = "succeeded" if last.outcome == "success" and last.decision == "stop" \
                else "failed"
            out.append(NewEvent("attempt.completed", state.task_id,
                                {"status": status, "decided_by": who}, **ids))
        else:
            status = last.status if last.status in ("succeeded", "failed") else "failed"
        out.append(NewEvent("call.completed", state.task_id,
                            {"status": status, "adopted_attempt_id": last.attempt_id,
                             "decided_by": who, "note": note}, call_id=state.call_id))
        return out

    return _claim(case_dir, call_id, "finalize", build, accept_duplicate=accept_duplicate,
                  expected=expected)


# ---- start the next attempt


@dataclass(frozen=True, slots=True)
class NextAttemptPlan:
    """What an operator confirms before the next attempt is sent, pinned to evidence."""

    case_dir: Path
    call_id: str
    task_id: str
    idempotency_key: str
    attempt_no: int
    request_sha256: str
    destination: Destination
    evidence: Evidence
    stage: str
    reason: str

    @property
    def pinned(self) -> PinnedEvidence:
        """The call's evidence this plan showed: the gate refuses a call that moved."""
        return PinnedEvidence(self.call_id, *self.evidence)


def plan_next_attempt(case_dir: str | os.PathLike[str], call_id: str, *,
                      base_url: str | None = None, api_key_env: str | None = None,
                      operator_config: Path | None = None,
                      ask_destination: bool = False) -> NextAttemptPlan:
    """Read-only: gate, find the recorded request bytes, say where they would go (and,
    with `ask_destination`, refuse where the server there is not the case's own).
    Raises ActionRefused, UnknownCall, DestinationError or LedgerError; writes nothing."""
    if not call_id:
        raise UnknownCall(call_id)
    case = Path(case_dir)
    config = load_case_config(case).with_overrides(base_url=base_url)
    destination = resolve_destination(case, config, base_url=base_url, api_key_env=api_key_env,
                                      operator_config=operator_config)
    with LedgerReader(case) as reader:
        events = reader.events_for_call(call_id)
    state = check_permitted(project_call(events, call_id), call_id, "next-attempt")
    sha = state.evidence.request_sha256
    if sha is None:
        raise ActionRefused(state.next_operation,
                             f"call {call_id}: no manifest records the request to send")
    found = ArtifactStore(case).read(sha)
    if found.data is None:
        raise ActionRefused(state.next_operation,
                             f"call {call_id}: request {found.describe(sha)}; nothing to send")
    if ask_destination:
        check_destination(case, destination, state.next_operation)
    return NextAttemptPlan(
        case, call_id, state.task_id, state.idempotency_key or f"key-{call_id}",
        len(state.evidence.started_attempts()) + 1, sha, destination,
        PinnedEvidence.of_events(call_id, events).pair,
        state.stage.value, state.reason)


class _GatedRunner(CallRunner):
    """Resume's runner, whose first append must be the gated claim: `attempt.started`
    appended in the transaction that re-projected the call and found it permitted.
    Anything else before the claim is refused (nothing written); after it, the runner
    records observation, interpretation and decision as it does for resume."""

    def __init__(self, *args: Any, plan: NextAttemptPlan, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plan = plan
        self._claimed = False

    def append(self, kind: str, task_id: str, payload: dict[str, Any], **ids: str | None) -> Event:
        if self._claimed:
            return super().append(kind, task_id, payload, **ids)
        plan = self._plan
        if kind != "attempt.started":
            raise ActionRefused(None, f"call {plan.call_id}: {kind} before the attempt was "
                                 "claimed; nothing sent")
        attempt_id = ids.get("attempt_id")

        def check(state: CallState | None) -> CallState:
            state = check_permitted(state, plan.call_id, "next-attempt")
            if any(a.attempt_id == attempt_id for a in state.evidence.attempts):
                raise ActionRefused(None, f"call {plan.call_id}: attempt id {attempt_id} "
                                    "is already recorded")
            return state

        landed = through_gate(
            self.writer, plan.call_id, check,
            lambda _state, _events: [NewEvent(kind, task_id,
                                              {**payload, "decided_by": recorded_by()},
                                              call_id=ids.get("call_id"),
                                              attempt_id=attempt_id)],
            pinned=plan.pinned)
        event = landed.appended[0]
        self._claimed = True
        if self.on_commit is not None:
            self.on_commit(event)
        return event


def next_attempt(case_dir: str | os.PathLike[str], call_id: str, *,
                 base_url: str | None = None, api_key_env: str | None = None,
                 send_credential: bool = False, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                 expected: NextAttemptPlan | None = None, progress: Progress | None = None,
                 operator_config: Path | None = None, timeout: float | None = None,
                 deadline: float | None = None) -> AdvanceResult:
    """Start the call's next attempt: claim (attempt.started committed), then send the
    recorded request bytes, then record what came back, under the retry policy. The
    credential goes only where `send_credential` says (decided from the destination).
    `timeout` and `deadline` bound each exchange as for resume (runner.send_request)."""
    _check_max(max_attempts)
    say = progress or (lambda _msg: None)
    case = Path(case_dir)
    plan = plan_next_attempt(case, call_id, base_url=base_url, api_key_env=api_key_env,
                             operator_config=operator_config, ask_destination=True)
    if expected is not None:
        expected.pinned.check(plan.pinned)
        if expected.destination != plan.destination:
            raise ActionRefused(None, f"call {call_id}: its destination changed since it "
                                "was shown; look again")
    config = load_case_config(case).with_overrides(base_url=plan.destination.base_url)
    receipts_before = len(read_receipts(case).receipts)
    with LedgerWriter.open(case) as writer:
        limits = {k: v for k, v in (("timeout", timeout), ("deadline", deadline))
                  if v is not None}  # the runner's documented defaults otherwise
        runner = _GatedRunner(case, writer, config, plan=plan,
                              credential=credential_for(plan.destination, send_credential),
                              **limits)
        say(f"claiming attempt {plan.attempt_no} of {call_id}, then sending to "
            f"{plan.destination.base_url}")
        status = runner.execute(plan.task_id, call_id, plan.idempotency_key, plan.request_sha256,
                                max_attempts=max(plan.attempt_no, max_attempts),
                                first_attempt=plan.attempt_no)
    with LedgerReader(case) as reader:
        events = reader.events_for_call(call_id)
    after = project_call(events, call_id)
    assert after is not None
    first = next(e for e in events if e.kind == "attempt.started"
                 and e.attempt_id == f"{call_id}-a{plan.attempt_no}")
    kinds = tuple(e.kind for e in events if e.seq >= first.seq)
    say(f"{call_id}: {status}")
    receipts_after = len(read_receipts(case).receipts)
    return AdvanceResult("next-attempt", call_id, f"{call_id}-a{plan.attempt_no}", kinds,
                         first.seq, after, status, receipts_before, receipts_after,
                         tuple(runner.notes),
                         receipts_warning(case, plan.destination, status, receipts_before,
                                          receipts_after))


# ---- as gated actions (the console's `v`, the registry)

# what each step appends, for the dialog and `explain`
APPENDS = {
    "reinterpret": "attempt.interpreted (interpreter v1 over the stored response bytes; "
                   "the provider is not contacted)",
    "redecide": f"attempt.retry_decided under the policy: retryable errors retried while "
                f"fewer than {DEFAULT_MAX_ATTEMPTS} attempts started",
    "finalize": "attempt.completed / call.completed (at decide_duplicate: retry_decided "
                "stop, then completed as failed: no duplicate)",
    "next-attempt": "attempt.started (committed before sending), then sends the recorded "
                    "request once and records what comes back",
    "accept-duplicate": "attempt.retry_decided {decision: retry, accept_duplicate: true}: "
                        "the effect happened; a next attempt will repeat it",
}


@dataclass(frozen=True, slots=True)
class AdvancePlan:
    """What the advance dialog shows, pinned to the call's evidence: the step (two at
    decide_duplicate: finalize as failed, or accept a duplicate) and, for a next
    attempt, where the request goes."""

    case_dir: Path
    call_id: str
    stage: str
    next_operation: str
    reason: str
    steps: tuple[str, ...]
    evidence: Evidence
    next_attempt: NextAttemptPlan | None = None

    @property
    def pinned(self) -> PinnedEvidence:
        return PinnedEvidence(self.call_id, *self.evidence)


class Advance(ActionBase):
    """One of reinterpret, redecide, finalize, next-attempt, as the registry holds it."""

    key, done_word = "v", "advanced"

    def __init__(self, name: str) -> None:
        self.name = name

    def refusal(self, selected: Selected) -> str | None:
        call = selected.call
        if call is None:
            return "no call selected"
        ops = permitted_ops(self.name)
        if call.anomalous or call.superseded_by is not None or call.next_operation not in ops:
            return not_next(call, "advance", f" ({self.name})")
        return None

    def will(self, selected: Selected) -> str:
        return (f"{selected.call.call_id if selected.call else ''}: {self.name} appends "
                f"{APPENDS[self.name]}")

    def plan(self, case: Path, call_id: str, options: ActionOptions) -> AdvancePlan:
        """Read-only: the step the projection names now (refused where it names another:
        with `options.accept_duplicate`, only decide_duplicate)."""
        next_plan = None
        if self.name == "next-attempt":
            next_plan = plan_next_attempt(case, call_id, base_url=options.base_url,
                                          api_key_env=options.api_key_env,
                                          ask_destination=True)
        with LedgerReader(case) as reader:
            events = reader.events_for_call(call_id)
        state = check_permitted(project_call(events, call_id), call_id, self.name,
                                options.accept_duplicate)
        at_duplicate = state.next_operation is NextOperation.DECIDE_DUPLICATE
        steps = ("finalize", "accept-duplicate") if at_duplicate else (self.name,)
        return AdvancePlan(case, call_id, state.stage.value, state.next_operation.value,
                           state.reason, steps, PinnedEvidence.of_events(call_id, events).pair,
                           next_plan)

    def run(self, plan: AdvancePlan, decision: Decision, options: ActionOptions,
            progress: Progress) -> Done:
        """Through the gate, pinned to the plan's evidence; a next attempt then sends."""
        case, call_id, pinned = plan.case_dir, plan.call_id, plan.pinned
        accept, note = decision.accept_duplicate, decision.note
        max_attempts = options.max_attempts or DEFAULT_MAX_ATTEMPTS
        if self.name == "reinterpret":
            result = reinterpret(case, call_id, expected=pinned)
        elif self.name == "redecide":
            result = redecide(case, call_id, expected=pinned, max_attempts=max_attempts,
                              accept_duplicate=accept, note=note)
        elif self.name == "finalize":
            result = finalize(case, call_id, expected=pinned, accept_duplicate=accept,
                              note=note)
        else:
            assert plan.next_attempt is not None  # plan() made it
            result = next_attempt(case, call_id, base_url=options.base_url,
                                  api_key_env=options.api_key_env,
                                  send_credential=decision.send_credential,
                                  max_attempts=max_attempts, expected=plan.next_attempt,
                                  progress=progress, timeout=options.timeout,
                                  deadline=options.deadline)
            return Done(result.summary(), ok=result.status == "succeeded",
                        warning=result.warning, result=result)
        return Done(result.summary(), result=result)


REINTERPRET = Advance("reinterpret")
REDECIDE = Advance("redecide")
FINALIZE = Advance("finalize")
NEXT_ATTEMPT = Advance("next-attempt")
