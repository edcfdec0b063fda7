"""The one gate every gated write goes through.

An operator decides on what a plan showed: a call's evidence at one moment. Between
the plan and the write another process may have moved the call on (a racing operator,
a producer still running). So every gated write, whatever it appends, does the same
five things in ONE `BEGIN IMMEDIATE` transaction of the ledger's one writer:

1. take the write lock (a racer that committed first is seen; one that comes later
   waits, then sees this one's events);
2. re-project the target call from its own events;
3. ask the action whether the projection permits it (`check`, which raises
   `ActionRefused` naming the projected next operation);
4. compare the call's evidence with the `PinnedEvidence` the operator was shown
   (`EvidenceChanged` otherwise);
5. append the action's events, each checked by the writer to have landed
   (`AppendNotLanded` otherwise), and commit.

A refusal anywhere rolls back: nothing is appended. What the actions share is public
here: who is recording (`recorded_by`), the pinned evidence, and the one family of
refusals (`ActionRefused`; `UnusableInput` where the input itself cannot be used).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from codeai_tui.ledger.schema import Event
from codeai_tui.ledger.who import who
from codeai_tui.ledger.writer import LedgerWriter, NewEvent, WriteTransaction
from codeai_tui.workstate import CallState, NextOperation, project_call

T = TypeVar("T")


def recorded_by() -> dict[str, Any]:
    """The operator's identity in the events a gated write appends: user, host, pid
    (`decided_by`, `by`, `recorded_by`), so a reader can tell an operator's writes from a
    producer's."""
    return who()


class ActionRefused(Exception):
    """A gated write is not permitted; nothing was appended. `reason` is one operator
    line; `next_operation` is what the projection names instead (None where the refusal
    is not the projection's: drift, a changed call, a missing artifact)."""

    def __init__(self, next_operation: NextOperation | None, reason: str) -> None:
        super().__init__(reason)
        self.next_operation = next_operation
        self.reason = reason


class UnusableInput(ActionRefused):
    """What the operator named cannot be acted on (no such call or operation, a kernel
    key that is not the case's): bad input, not the projection's refusal. Nothing was
    appended; the command line says it as a bad input (exit 2)."""

    def __init__(self, reason: str) -> None:
        super().__init__(None, reason)


class UnknownCall(UnusableInput):
    """The call id names no call in this ledger."""

    def __init__(self, call_id: str) -> None:
        shown = call_id[:80] if call_id else "(empty)"
        super().__init__(f"no call {shown!r} in this ledger")


@dataclass(frozen=True, slots=True)
class PinnedEvidence:
    """A call's evidence as the operator was shown it: how many events the call had and
    its last seq. Made at plan time; any event on the call since (an attempt, a finding,
    a tool admission, a resume) changes it."""

    call_id: str
    event_count: int
    last_seq: int

    @classmethod
    def of_events(cls, call_id: str, events: Sequence[Event]) -> PinnedEvidence:
        return cls(call_id, len(events), events[-1].seq if events else 0)

    @classmethod
    def of_state(cls, state: CallState) -> PinnedEvidence:
        """The same pin, from a projection (the console's live snapshot)."""
        return cls(state.call_id, state.evidence.event_count, state.last_seq)

    @property
    def pair(self) -> tuple[int, int]:
        """(events, last seq): how plans print it."""
        return (self.event_count, self.last_seq)

    def describe(self) -> str:
        return f"{self.event_count} events to seq {self.last_seq}"

    def moved(self, now: PinnedEvidence) -> str | None:
        """Why `now` is not what was shown (None when it is)."""
        if now == self:
            return None
        return (f"call {self.call_id}: its evidence changed since it was shown "
                f"({self.describe()}, now {now.describe()}); look again")

    def check(self, now: PinnedEvidence) -> None:
        """Raise EvidenceChanged unless `now` is what was shown."""
        why = self.moved(now)
        if why is not None:
            raise EvidenceChanged(why)


class EvidenceChanged(ActionRefused):
    """The call moved on since its evidence was shown; nothing was appended."""

    def __init__(self, reason: str) -> None:
        super().__init__(None, reason)


Check = Callable[[CallState | None], T]
Build = Callable[[T, Sequence[Event]], Sequence[NewEvent]]


@dataclass(frozen=True, slots=True)
class Landed(Generic[T]):
    """What went through the gate: what the check returned, the call's events before
    the write, and the events appended (each checked to have landed)."""

    call_id: str
    checked: T
    before: tuple[Event, ...]
    appended: tuple[Event, ...]

    def after(self) -> CallState:
        """The call's verdict with the appended events."""
        state = project_call([*self.before, *self.appended], self.call_id)
        assert state is not None  # the check found the call
        return state


Target = str | Callable[[WriteTransaction], str]


def through_gate(writer: LedgerWriter, target: Target, check: Check[T], build: Build[T], *,
                 pinned: PinnedEvidence | None) -> Landed[T]:
    """Re-project the target call, check, compare with `pinned`, append what `build`
    returns: all in one write transaction (module docstring). `target` is a call id, or
    finds one under the write lock (a tool operation's planning call). `build` may refuse
    too; an empty build appends nothing and only checks."""
    if not target:
        raise UnknownCall("")
    with writer.transaction() as txn:
        call_id = target if isinstance(target, str) else target(txn)
        events = txn.events_for_call(call_id)
        checked = check(project_call(events, call_id))
        if pinned is not None:
            pinned.check(PinnedEvidence.of_events(call_id, events))
        appended = tuple(txn.append(e) for e in build(checked, events))
    return Landed(call_id, checked, tuple(events), appended)


def gated_write(case_dir: str | os.PathLike[str], target: Target, check: Check[T],
                build: Build[T], *, pinned: PinnedEvidence | None) -> Landed[T]:
    """`through_gate` on the case's own writer, opened for this one write."""
    with LedgerWriter.open(Path(case_dir)) as writer:
        return through_gate(writer, target, check, build, pinned=pinned)
