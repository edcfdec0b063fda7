"""reconcile, reinterpret, redecide, finalize and next-attempt as harness actions.

Each setup makes a case whose call stopped where the action is the projected next step
(reliability/cases.py: a 503 answer recorded up to a named commit); each claim is the
event the action's one write transaction appends. Registered from actions.py, so races,
kills, the read-only matrix and the stateful test cover them like resume.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codeai_tui.lab.reliability.action_types import Action, Audit, Boundary, Target
from codeai_tui.lab.reliability.cases import make_advance_case
from codeai_tui.ledger.schema import Event

CLAIM_BOUNDARIES = (
    Boundary("planned, before BEGIN", "txn.begin"),
    Boundary("in the transaction, before COMMIT", "txn.before_commit", "{claim}"),
    Boundary("after COMMIT", "txn.after_commit", "{claim}"),
)


def _setup(upto: str) -> Any:
    def setup(case: Path, provider_url: str) -> Target:
        return Target(case, make_advance_case(case, provider_url, upto))
    return setup


def _stage(target: Target, doc: dict[str, Any]) -> dict[str, Any]:
    return next((c for c in doc.get("calls") or []
                 if isinstance(c, dict) and c.get("call_id") == target.subject), {})


def _permitted(*ops: str) -> Any:
    def permitted(target: Target, doc: dict[str, Any]) -> bool:
        return _stage(target, doc).get("next_operation") in ops
    return permitted


def _landed(target: Target, doc: dict[str, Any]) -> str:
    call = _stage(target, doc)
    return f"{call.get('stage')}, next {call.get('next_operation')}"


def _audit(claim: str) -> Any:
    def audit(target: Target, before: Sequence[Event], after: Sequence[Event]) -> Audit:
        new = list(after[len(before):])
        claims = sum(1 for e in new if e.kind == claim and e.call_id == target.subject
                     and "decided_by" in (e.payload or {}))
        foreign = sum(1 for e in new if e.call_id != target.subject)
        return Audit(claims, foreign)
    return audit


def _action(name: str, upto: str, ops: tuple[str, ...], claim: str, extra_args: tuple[str, ...] = (),
            *, sends: bool = False, boundaries: tuple[Boundary, ...] | None = None,
            won: frozenset[int] = frozenset({0})) -> Action:
    bounds = boundaries or tuple(
        Boundary(b.name, b.mark, b.contains.format(claim=claim) if b.contains else None)
        for b in CLAIM_BOUNDARIES)
    return Action(
        name=name, setup=_setup(upto), module="codeai_tui",
        args=lambda t: [name, str(t.case), t.subject, *extra_args, "--yes"],
        boundaries=bounds, audit=_audit(claim), permitted=_permitted(*ops), sends=sends,
        warm=("codeai_tui.cli.main", "codeai_tui.cli.advance", "codeai_tui.actions.advance",
              "codeai_tui.actions.reconcile"),
        won_codes=won, claim_kind=claim, landed=_landed,
        description=f"codeai-tui {name} CASE CALL {' '.join(extra_args)} --yes".replace("  ", " "),
    )


# `received` is a finding permitted at every effect_unknown call (not_received is refused
# once a receipt matches): what follows it is decide_duplicate, where only finalize runs
RECONCILE = _action("reconcile", "effect_unknown", ("reconcile_effect",), "attempt.reconciled",
                    ("--finding", "received"))
REINTERPRET = _action("reinterpret", "observed", ("reinterpret",), "attempt.interpreted")
REDECIDE = _action("redecide", "interpreted", ("redecide",), "attempt.retry_decided")
# finalize also ends a received effect as failed (decide_duplicate)
FINALIZE = _action("finalize", "decided_stop", ("finalize", "decide_duplicate"),
                   "call.completed")
NEXT_ATTEMPT = _action(
    "next-attempt", "retry_decided", ("start_next_attempt",), "attempt.started", sends=True,
    won=frozenset({0, 4, 5}),  # succeeded, failed, effect unknown: the claim was made
    boundaries=(
        Boundary("planned, before BEGIN", "txn.begin"),
        Boundary("in the transaction, before COMMIT", "txn.before_commit", "attempt.started"),
        Boundary("after attempt.started", "txn.after_commit", "attempt.started"),
        Boundary("provider holds the request", "net.connect", None, hold=True),
        Boundary("after attempt.observed", "txn.after_commit", "attempt.observed"),
    ))

ADVANCE_ACTIONS = (RECONCILE, REINTERPRET, REDECIDE, FINALIZE, NEXT_ATTEMPT)
