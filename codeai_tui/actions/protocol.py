"""What every gated write is to its callers (the console, the command line and the
reliability harness, which all read actions/registry.py): one protocol.

An action has a name and the console key that starts it; says whether the projection
permits it on the selected call (`permitted`) and, in one line, why not or what it will
do (`explain`); makes a read-only `plan` (nothing written, nothing sent) pinned to the
call's evidence; and `run`s that plan through the gate (actions/gate.py), returning one
line for the operator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from codeai_tui.actions.gate import PinnedEvidence
from codeai_tui.workstate import CallState, WorkState

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ActionOptions:
    """What the operator gave when starting the console or on the command line, before
    any plan (None: case.json or the runner's documented default decides)."""

    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    kernel_key: Path | None = None  # the tool kernel's signing key (replay runs tools)
    # the limits of a send (resume, next attempt): seconds per exchange, per call, and
    # the longest Retry-After honoured
    timeout: float | None = None
    deadline: float | None = None
    max_retry_wait: float | None = None
    max_attempts: int | None = None  # redecide, next attempt: the retry policy's limit
    # redecide, finalize: the step is "accept a duplicate", chosen before the plan (the
    # console's dialog chooses it after the plan instead, in `Decision`)
    accept_duplicate: bool = False
    # reconcile-tool: the operation named (None: the call's first whose effect is unknown)
    operation_key: str | None = None


@dataclass(frozen=True, slots=True)
class Selected:
    """What an action is asked about: the selected call in the live projection, the
    whole case's projection (None where not at hand) and the operator's options."""

    call: CallState | None
    work: WorkState | None = None
    options: ActionOptions = ActionOptions()


@dataclass(frozen=True, slots=True)
class Decision:
    """What the operator chose in the confirmation; each action reads its own fields."""

    reason: str | None = None  # resume: why, kept in call.resumed
    send_credential: bool = False  # resume, next attempt: decided from the destination
    finding: str | None = None  # reconcile, reconcile-tool
    note: str | None = None  # reconcile, reconcile-tool, redecide, finalize: recorded
    accept_duplicate: bool = False  # redecide, finalize at decide_duplicate: accept it


@dataclass(frozen=True, slots=True)
class Done:
    """How a run ended: one line and a warning said first (the action log), and the
    action's own record of what it did (`result`: the command line prints its fields)."""

    text: str
    ok: bool = True
    warning: str | None = None
    result: Any = None


class ActionPlan(Protocol):
    """What every plan carries: where, which call, and the evidence it showed."""

    @property
    def case_dir(self) -> Path: ...

    @property
    def call_id(self) -> str: ...

    @property
    def pinned(self) -> PinnedEvidence: ...


@runtime_checkable
class GatedAction(Protocol):
    name: str  # as the command line names it
    key: str  # the console key that starts it
    done_word: str  # what the action log calls a run that ended well

    def refusal(self, selected: Selected) -> str | None:
        """Why the projection does not permit this action here (None: it does)."""
        ...

    def permitted(self, selected: Selected) -> bool: ...

    def explain(self, selected: Selected) -> str:
        """One line: why not, or what it will do."""
        ...

    def plan(self, case: Path, call_id: str, options: ActionOptions) -> Any:
        """Read-only: what the dialog shows, pinned to the call's evidence. Raises
        ActionRefused where the ledger (read now) does not permit it."""
        ...

    def run(self, plan: Any, decision: Decision, options: ActionOptions,
            progress: Progress) -> Done:
        """Through the gate: refuses (ActionRefused, nothing appended) a call that
        moved since `plan`, or appends and says what happened."""
        ...


class ActionBase:
    """`permitted` and `explain` from `refusal` and `will`: an action says each once."""

    name = ""
    key = ""
    done_word = ""

    def refusal(self, selected: Selected) -> str | None:
        raise NotImplementedError

    def will(self, selected: Selected) -> str:
        """What a permitted run will do, in one line."""
        raise NotImplementedError

    def permitted(self, selected: Selected) -> bool:
        return self.refusal(selected) is None

    def explain(self, selected: Selected) -> str:
        why = self.refusal(selected)
        return self.will(selected) if why is None else why


def not_next(call: CallState, action: str, what: str) -> str:
    """The refusal every call action says where the projection names another step."""
    return (f"{call.call_id}: {action} not permitted{what}; the projection says next "
            f"operation is {call.next_operation.value}: {call.reason}")
