"""The versioned response interpreter, over what the ledger recorded.

`attempt.interpreted` names the interpreter that produced its outcome, so a later
reinterpretation (codeai_tui/actions/advance.py) can say which rules it applied. Version "v1" is
the runner's own rule (runner.interpret) restated over a recorded observation: the
transport status and the stored response bytes, never the network. A change to these
rules must get a new version string, so old and new interpretations stay distinguishable.
"""

from __future__ import annotations

from typing import Literal

from codeai_tui.runtime.responses import parse_response
from codeai_tui.runtime.runner import RETRYABLE_STATUSES

INTERPRETER_VERSION = "v1"

Outcome = Literal["success", "retryable_error", "fatal_error"]


def interpret_recorded(status: int | None, body: bytes, stream: bool) -> Outcome:
    """Interpreter v1: no status (nothing answered) and the retryable statuses are
    retryable; a 2xx is a success only when its bytes hold a complete chat.completion
    (a streamed one assembled through its finish_reason and [DONE]); all else is fatal."""
    if status is None or status in RETRYABLE_STATUSES:
        return "retryable_error"
    if 200 <= status < 300:
        return "success" if parse_response(body, stream) is not None else "fatal_error"
    return "fatal_error"
