"""The ladder (docs/ledger.md section 4): one function per entity, evidence in, verdict out.

Both projectors call these and nothing else to decide; the first rung that matches wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeai_tui.workstate.evidence import (
    AttemptEvidence,
    CallEvidence,
    CompilationEvidence,
    TaskEvidence,
    attempt_effect,
)
from codeai_tui.workstate.tool_ops import ToolOpState, ToolsState
from codeai_tui.workstate.verdicts import CallState, CompilationState, TaskState
from codeai_tui.workstate.vocab import CallStage, CompilationStage, NextOperation, ProviderEffect


def _effect_as_completed(call: CallEvidence) -> ProviderEffect:
    """Rung 2's provider effect: happened if a started attempt was observed as sent (or
    reconciled as received), else unknown if one started that nothing settled, else none
    (orphan attempt evidence never counts). Without attempt.reconciled and `sent: false`
    observations this is v1's rule."""
    effects = {attempt_effect(a) for a in call.attempts if a.started_off is not None}
    if "happened" in effects:
        return ProviderEffect.HAPPENED
    if "unknown" in effects:
        return ProviderEffect.UNKNOWN
    return ProviderEffect.NONE


def _reconciled_rung(last: AttemptEvidence
                     ) -> tuple[CallStage, NextOperation, ProviderEffect, bool]:
    """docs/reconcile.md: the rungs of an attempt whose only evidence after
    attempt.started is the operator's finding (and what was decided after it).
    Received: the effect happened and its response is lost; nothing retries it unless
    a retry decision recorded `accept_duplicate: true`."""
    if last.finding == "not_received":
        if last.completed_off is not None:
            return (CallStage.ATTEMPT_COMPLETED, NextOperation.FINALIZE,
                    ProviderEffect.NONE, False)
        return (CallStage.RECONCILED_NOT_RECEIVED, NextOperation.START_NEXT_ATTEMPT,
                ProviderEffect.NONE, False)
    if last.completed_off is not None:
        return (CallStage.ATTEMPT_COMPLETED, NextOperation.FINALIZE,
                ProviderEffect.HAPPENED, False)
    if last.decision == "stop":
        return CallStage.RETRY_DECIDED, NextOperation.FINALIZE, ProviderEffect.HAPPENED, False
    if last.decision == "retry" and last.accept_duplicate:
        return (CallStage.RETRY_DECIDED, NextOperation.START_NEXT_ATTEMPT,
                ProviderEffect.HAPPENED, True)
    # no decision, or a retry that did not accept the duplicate: still to decide
    return (CallStage.RECONCILED_RECEIVED, NextOperation.DECIDE_DUPLICATE,
            ProviderEffect.HAPPENED, True)


def classify_call(call: CallEvidence, *, anomalous: bool = False) -> CallState:
    """The WORK_STATE_V1 ladder for one call. `call` must not be mutated afterwards."""
    effect = ProviderEffect.NONE
    risk = False
    last = call.last_attempt()  # the last *started* attempt
    if call.resumed_seq is not None:
        stage, op = CallStage.SUPERSEDED, NextOperation.NONE
        effect = _effect_as_completed(call)
    elif call.completed_off is not None:
        stage, op = CallStage.COMPLETED, NextOperation.NONE
        effect = _effect_as_completed(call)
    elif call.preparation_failed_seq is not None:
        stage, op = CallStage.PREPARATION_FAILED, NextOperation.FIX_INPUTS
    elif call.manifest_off is None and last is None:
        stage, op = CallStage.REQUESTED, NextOperation.START_CALL
    elif last is None:
        stage, op = CallStage.MANIFEST_RECORDED, NextOperation.START_CALL
    elif last.finding is not None and last.observed_off is None:
        stage, op, effect, risk = _reconciled_rung(last)
    elif not last.has_later_evidence:
        stage, op = CallStage.EFFECT_UNKNOWN, NextOperation.RECONCILE_EFFECT
        effect, risk = ProviderEffect.UNKNOWN, True
    else:
        # v1: happened. An observation that says nothing was sent (docs/reconcile.md section
        # 4) makes this attempt's effect none; earlier attempts still count.
        effect = _effect_as_completed(call) if last.not_sent else ProviderEffect.HAPPENED
        if last.interpreted_off is None:
            stage, op = CallStage.OBSERVED, NextOperation.REINTERPRET
        elif last.retry_decided_seq is None and last.completed_off is None:
            stage, op = CallStage.INTERPRETED, NextOperation.REDECIDE
        elif last.completed_off is None:
            stage = CallStage.RETRY_DECIDED
            retry = last.decision == "retry"
            op = NextOperation.START_NEXT_ATTEMPT if retry else NextOperation.FINALIZE
        else:
            stage, op = CallStage.ATTEMPT_COMPLETED, NextOperation.FINALIZE
    return CallState(stage, op, effect, risk, anomalous, call)


def classify_compilation(comp: CompilationEvidence) -> CompilationState:
    missing: tuple[str, ...] = ()
    if comp.completed_seq is not None:
        stage, op = CompilationStage.COMPLETED, NextOperation.NONE
        reason = f"context.compilation_completed at seq {comp.completed_seq}: package {comp.package_id}"
    elif comp.failed_seq is not None:
        stage, op = CompilationStage.FAILED, NextOperation.FIX_INPUTS
        offered_ids = {str(o.get("id")) for o in comp.offered}
        missing = tuple(sorted((set(comp.required_ids) - offered_ids) | set(comp.missing_ids)))
        err = comp.error or {}
        reason = (
            f"context.compilation_failed at seq {comp.failed_seq} "
            f"({err.get('type', 'error')}: {err.get('message', '')}); "
            f"missing required: {', '.join(missing) or 'none derived'}"
        )
    else:
        stage, op = CompilationStage.REQUESTED, NextOperation.RECOMPILE
        reason = (
            f"context.compilation_requested at seq {comp.requested_seq or comp.first_seq}, "
            f"never finished: recompile ({len(comp.offered)} offered inputs recorded; "
            "no external effect)"
        )
    return CompilationState(
        compilation_id=comp.compilation_id,
        task_id=comp.task_id,
        stage=stage,
        next_operation=op,
        offered=tuple(comp.offered),
        required_ids=tuple(comp.required_ids),
        missing_required=missing,
        error=comp.error,
        package_id=comp.package_id,
        rendered_sha256=comp.rendered_sha256,
        reason=reason,
        first_seq=comp.first_seq,
        last_seq=comp.last_seq,
    )


Unresolved = CallState | CompilationState | ToolOpState


# What one call or compilation gives its task's verdict (`contribution`): unresolved
# (itself or its worst tool operation), or (done seq, call id) as a call that succeeded,
# or as a planning call whose tool operations are all done; at most one is set.
Contribution = tuple[Unresolved | None, tuple[int, str] | None, tuple[int, str] | None]
NO_CONTRIBUTION: Contribution = (None, None, None)


def contribution(st: CallState | CompilationState,
                 tools_judged: ToolsState | None = None) -> Contribution:
    """What `st` gives its task's rollup (see TaskRollup). `tools_judged`: a call's
    `st.tools` where the caller judged them already (judging costs a pass over them)."""
    if type(st) is CallState:  # (most of a ledger: read from the verdict directly)
        verdict, ev = st.verdict, st.evidence
        if verdict.next_operation is not NextOperation.NONE:
            return (st, None, None)
        if ev.tools is None:
            if verdict.stage is CallStage.COMPLETED and ev.status == "succeeded":
                off = ev.completed_off
                done = ev.first_seq + off if off is not None else 0
                return (None, (done or ev.first_seq + ev.last_off, ev.call_id), None)
            return NO_CONTRIBUTION
    pending: Unresolved | None = None
    if st.next_operation is not NextOperation.NONE:
        pending = st
    elif isinstance(st, CallState) and st.has_tools:
        tools = tools_judged if tools_judged is not None else st.tools
        pending = tools.unresolved() if tools is not None else None
        if pending is None and tools is not None and tools.adopted and tools.plan:
            if tools.all_done:
                return (None, None, (st.completed_seq or st.last_seq, st.call_id))
            return NO_CONTRIBUTION
    if pending is not None:
        return (pending, None, None)
    if isinstance(st, CallState) and st.stage is CallStage.COMPLETED and st.status == "succeeded":
        return (None, (st.completed_seq or st.last_seq, st.call_id), None)
    return NO_CONTRIBUTION


def pending_order(pending: Unresolved) -> tuple[int, str]:
    """Which unresolved entity a task names first: the earliest by first seq."""
    return (pending.first_seq, _subject(pending))


@dataclass(slots=True)
class TaskRollup:
    """What a task's verdict needs from its calls and compilations: the first unresolved
    one (by first seq) and the last call that completed with status succeeded. Fed in
    first-seq order, one verdict at a time, so a streaming projector keeps no list; on
    ties the first fed wins.

    docs/tools.md: a finished call whose tool operations are not all done is
    unresolved through its worst operation (effect unknown before start_tool), and a
    call whose saved plan chose tools is not the answer to accept: its turn goes on with
    the follow-up call."""

    first_unresolved: Unresolved | None = None
    succeeded: tuple[int, str] | None = None
    tools_done: tuple[int, str] | None = None  # a planning call whose operations are all done

    def add(self, st: CallState | CompilationState) -> None:
        self.take(contribution(st))

    def take(self, given: Contribution) -> None:
        pending, succeeded, tools_done = given
        if pending is not None:
            first = self.first_unresolved
            if first is None or pending_order(pending) < pending_order(first):
                self.first_unresolved = pending
        if succeeded is not None and (self.succeeded is None or succeeded[0] > self.succeeded[0]):
            self.succeeded = succeeded
        if tools_done is not None and (self.tools_done is None
                                       or tools_done[0] > self.tools_done[0]):
            self.tools_done = tools_done


def _subject(st: Unresolved) -> str:
    if isinstance(st, ToolOpState):
        return st.subject
    return st.call_id if isinstance(st, CallState) else st.compilation_id


def classify_task(task: TaskEvidence, rollup: TaskRollup | None = None) -> TaskState:
    def state(op: NextOperation, subject: str | None, reason: str | Unresolved,
              follow_up_of: str | None = None) -> TaskState:
        return TaskState(task.task_id, op, subject, reason, task.title, task.first_seq,
                         task.last_seq, follow_up_of)

    if task.completed:
        seq, acc = task.completed[-1]
        return state(NextOperation.NONE, None, f"task.completed at seq {seq} (acceptance {acc})")
    if task.accepted:
        completed_accs = {acc for _, acc in task.completed}
        for seq, acc, _call in task.accepted:
            if acc not in completed_accs:
                return state(
                    NextOperation.REPEAT_ACCEPTANCE,
                    acc,
                    f"task.accepted {acc} at seq {seq} has no matching task.completed",
                )
    if rollup is None:  # (nothing unresolved, nothing succeeded: no rollup to make)
        return TaskState(task.task_id, NextOperation.START_CALL, None, _NOTHING_YET,
                         task.title, task.first_seq, task.last_seq)
    first = rollup.first_unresolved
    if first is not None:
        subject = _subject(first)
        return state(first.next_operation, subject, first)  # (reason: f"{subject}: ...")
    done = rollup.tools_done
    if done is not None and (rollup.succeeded is None or rollup.succeeded[0] < done[0]):
        return state(
            NextOperation.START_CALL,
            None,
            f"call {done[1]}'s tool operations all completed or found to have run (seq {done[0]}): the turn goes "
            "on with its follow-up model call (replay records it; resume sends it)",
            done[1],
        )
    if rollup.succeeded is not None:
        seq, call_id = rollup.succeeded
        return state(
            NextOperation.CHECK_AND_ACCEPT,
            call_id,
            f"call {call_id} succeeded (seq {seq}) and nothing is unresolved: check and accept",
        )
    return state(NextOperation.START_CALL, None, _NOTHING_YET)


_NOTHING_YET = "no call has succeeded and none is pending"
