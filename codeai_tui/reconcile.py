"""Reconcile an unknown effect (ledger/RECONCILE.md): record the operator's finding.

`reconcile_call` acts only on a call at rung 6 (effect_unknown). Inside one
`BEGIN IMMEDIATE` transaction of the one writer it re-projects the call from its
events (a racing reconciler or runner that committed first is seen), reads the
provider's receipt log, refuses `not_received` while a receipt matches the attempt
(same idempotency key, body hash == request hash), and appends `attempt.reconciled`
on the call's last started attempt. Refusals append nothing. No network.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.ledger.writer import LedgerWriter, NewEvent
from codeai_tui.resume import ResumeRefused, UnknownCall, _project_call, _who
from codeai_tui.workstate import CallStage, CallState, NextOperation
from codeai_tui.workstate.evidence import attempt_receipts
from codeai_tui.workstate.receipts import index_for

FINDINGS = ("received", "not_received")


class ReconcileRefused(ResumeRefused):
    """The projection (or the receipt log) does not permit this finding; nothing written."""


@dataclass(frozen=True, slots=True)
class ReconcileResult:
    call_id: str
    attempt_id: str
    finding: str
    evidence: tuple[str, ...]  # the receipt ids that match the attempt
    seq: int  # of the appended attempt.reconciled
    state: CallState  # the call's verdict after it


def check_reconcilable(state: CallState | None, call_id: str) -> CallState:
    """Raise unless the projection says the call's effect is unknown (rung 6)."""
    if state is None:
        raise UnknownCall(call_id)
    if state.anomalous:
        raise ReconcileRefused(
            state.next_operation,
            f"call {call_id}: an anomaly names this call; reconcile refuses to guess",
        )
    if state.stage is not CallStage.EFFECT_UNKNOWN:
        raise ReconcileRefused(
            state.next_operation,
            f"call {call_id} is {state.stage.value}: next operation is "
            f"{state.next_operation.value}, not {NextOperation.RECONCILE_EFFECT.value} "
            f"({state.reason})",
        )
    return state


def reconcile_call(case_dir: str | os.PathLike[str], call_id: str, finding: str,
                   note: str | None = None, *,
                   expected_last_seq: int | None = None) -> ReconcileResult:
    """Append the finding for the call's last started attempt, gated as described above.
    `expected_last_seq`: the call's last seq when its evidence was shown (the console's
    dialog); a call that moved on since is refused. Raises UnknownCall (bad input) or
    ReconcileRefused (nothing appended)."""
    if finding not in FINDINGS:
        raise ValueError(f"finding must be one of {FINDINGS}, not {finding!r}")
    if not call_id:
        raise UnknownCall(call_id)
    with LedgerWriter.open(Path(case_dir)) as writer, writer.transaction() as txn:
        events = txn.events_for_call(call_id)
        state = check_reconcilable(_project_call(events, call_id), call_id)
        if expected_last_seq is not None and state.last_seq != expected_last_seq:
            raise ReconcileRefused(
                state.next_operation,
                f"call {call_id}: its evidence changed since it was shown (last seq "
                f"{expected_last_seq}, now {state.last_seq}); look again",
            )
        last = state.evidence.last_attempt()
        assert last is not None  # rung 6 has a started attempt
        # the whole log as it is now: the live projection's view (no as-of cut-off)
        log = read_receipts(case_dir)
        matching = tuple(rid for rid, _at in attempt_receipts(state.evidence, last, index_for(log)))
        if finding == "not_received" and matching:
            raise ReconcileRefused(
                state.next_operation,
                f"call {call_id}: attempt {last.attempt_id} has matching receipt(s) "
                f"{', '.join(matching)} in the provider's log: it was received",
            )
        appended = txn.append(NewEvent(
            "attempt.reconciled", state.task_id,
            {"finding": finding, "evidence": list(matching), "decided_by": _who(),
             "note": note},
            call_id=call_id, attempt_id=last.attempt_id,
        ))
        after = _project_call([*events, appended], call_id)
    assert after is not None
    return ReconcileResult(call_id, last.attempt_id, finding, matching, appended.seq, after)
