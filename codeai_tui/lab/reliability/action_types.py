"""What a write action is to the harness: its target, its kill boundaries, its audit,
and the action itself. The actions live in `actions.py` and `advance_actions.py`; both
build on these types, and the registry (`actions.REGISTRY`) takes them in the order of
the product's registry of gated writes (codeai_tui/actions/registry.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeai_tui.ledger.schema import Event


@dataclass(frozen=True, slots=True)
class Target:
    """What one run of an action acts on: a case and the subject (a call id)."""

    case: Path
    subject: str


@dataclass(frozen=True, slots=True)
class Boundary:
    """A moment to kill at: when the actor emits `mark` (whose detail contains
    `contains`). With `hold`, the harness lets the actor go on and kills it once the
    provider has written its receipt, while it still holds the request (--latency)."""

    name: str
    mark: str
    contains: str | None = None
    hold: bool = False
    nth: int = 1  # the nth such mark


@dataclass(frozen=True, slots=True)
class Audit:
    """What an action run appended: `claims` times the action's claim was recorded,
    `foreign` events that belong to no recorded claim (a loser that appended)."""

    claims: int
    foreign: int


Setup = Callable[[Path, str], Target]
AuditFn = Callable[[Target, Sequence[Event], Sequence[Event]], Audit]
Permitted = Callable[[Target, dict[str, Any]], bool]


@dataclass(frozen=True, slots=True)
class Action:
    name: str
    setup: Setup  # (case dir, provider URL) -> a target where the action is permitted
    module: str  # run as `python -m MODULE ARGS` (through the instrumented actor)
    args: Callable[[Target], list[str]]
    boundaries: tuple[Boundary, ...]
    audit: AuditFn
    permitted: Permitted  # from `inspect --json`: may the action run on the target now?
    sends: bool = True  # a winning run sends exactly one request to the provider
    warm: tuple[str, ...] = ()
    # exits of a run that won its claim (the call then ended: ok, failed, effect unknown)
    won_codes: frozenset[int] = frozenset({0})
    refused_code: int = 3
    # the event kind that is the action's claim: the racer that commits it is the winner
    claim_kind: str = "call.resumed"
    # exits of a run that found nothing left to do (it must also have committed nothing)
    noop_codes: frozenset[int] = frozenset()
    # event kinds a run that lost the claim may still commit, once per case (the audit
    # counts them): replay's follow-up call, which a replay finding every operation done
    # must record (the run that did them may have died first), so whichever run gets
    # there first records it
    loser_may_record: frozenset[str] = frozenset()
    control: bool = False  # a deliberately broken twin: the harness must catch it
    # invariants of the action's own evidence beyond the ledger's (e.g. tool effects
    # never above admissions); a list of problems, empty when they hold
    invariants: Callable[[Target], list[str]] = lambda _t: []
    # what the evidence shows after a kill, for the table (None: the call's stage)
    landed: Callable[[Target, dict[str, Any]], str] | None = None
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
