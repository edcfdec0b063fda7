"""The one registry of gated writes, in the order the console offers them.

The console (its keys, its one flow), the command line (cli/gated.py: each gated write
command looks its action up by name) and the reliability harness (races, kills, the
read-only matrix) read this tuple. Adding a write action: one module implementing
`GatedAction` (its plan and its run through actions/gate.py), one dialog in
app/screens/ (registered in app/screens/action_flow.py's DIALOGS), one line here, one
`GatedCommand` in cli/ and one harness entry in lab/reliability/actions.py (each of the
last three is checked against this tuple by a test or at import).
"""

from __future__ import annotations

from collections.abc import Iterator

from codeai_tui.actions.advance import FINALIZE, NEXT_ATTEMPT, REDECIDE, REINTERPRET
from codeai_tui.actions.protocol import GatedAction
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


def keyed(key: str) -> Iterator[GatedAction]:
    """The actions one console key starts, in registry order."""
    return (action for action in ACTIONS if action.key == key)
