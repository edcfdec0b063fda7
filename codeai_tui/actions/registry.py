"""The one registry of gated writes, in the order the console offers them.

The console (its keys, its one flow) and the reliability harness (races, kills, the
read-only matrix) read this tuple; the command line will. Adding a write action: one
module implementing `GatedAction` (its plan and its run through actions/gate.py), one
dialog in app/screens/ (registered in app/screens/action_flow.py's DIALOGS), and one
line here.
"""

from __future__ import annotations

from collections.abc import Iterator

from codeai_tui.actions.advance import FINALIZE, NEXT_ATTEMPT, REDECIDE, REINTERPRET
from codeai_tui.actions.protocol import GatedAction, Selected
from codeai_tui.actions.reconcile_plan import RECONCILE, RECONCILE_TOOL
from codeai_tui.actions.replay import REPLAY
from codeai_tui.actions.resume import RESUME

ACTIONS: tuple[GatedAction, ...] = (
    RESUME,
    RECONCILE,
    RECONCILE_TOOL,
    REINTERPRET,
    REDECIDE,
    FINALIZE,
    NEXT_ATTEMPT,
    REPLAY,
)
BY_NAME: dict[str, GatedAction] = {action.name: action for action in ACTIONS}
KEYS: tuple[str, ...] = tuple(dict.fromkeys(action.key for action in ACTIONS))


def keyed(key: str) -> Iterator[GatedAction]:
    """The actions one console key starts, in registry order."""
    return (action for action in ACTIONS if action.key == key)


def for_key(key: str, selected: Selected) -> GatedAction | None:
    """The action `key` starts on the selected call: the first the projection permits
    there (None: none does, and `explain` of the first says why)."""
    return next((a for a in keyed(key) if a.permitted(selected)), None)


def explain_key(key: str, selected: Selected) -> str:
    """Why `key` does nothing on the selected call: the first of its actions says."""
    first = next(keyed(key), None)
    return first.explain(selected) if first is not None else f"no action on {key!r}"
