"""What every command shares: the exit codes, the one-line error, and how a refusal by
the projection is said. The commands (cli.py, advance_cli.py) build on this; nothing here
imports a command."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from codeai_tui.textsafe import visible

if TYPE_CHECKING:
    from codeai_tui.actions.resume import ResumeRefused

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_REFUSED = 0, 1, 2, 3
# An action that ran reports how its call ended, the same for every action: the exit code
# alone must tell a script whether to look again (an unknown effect is never "ok").
EXIT_CALL_FAILED = 4  # the request was sent and answered; the call ended failed
EXIT_EFFECT_UNKNOWN = 5  # the request may have reached the provider; no answer recorded
OUTCOME_EXIT = {"succeeded": EXIT_OK, "failed": EXIT_CALL_FAILED,
                "effect_unknown": EXIT_EFFECT_UNKNOWN}
EXIT_INTERNAL = 70  # EX_SOFTWARE
EXIT_IO = 74  # EX_IOERR: the disk is full (the ledger stays consistent; the line says what)


class CliError(Exception):
    """A bad input: printed as one line, exit 2."""


def refused(exc: ResumeRefused) -> int:
    """A gated action said no: one line naming the projected next operation (drift or a
    changed call have none to name) and why; nothing was written."""
    why = f" (next operation: {exc.next_operation.value})" if exc.next_operation else ""
    print(f"codeai-tui: refused{why}: {visible(exc.reason, one_line=True)}", file=sys.stderr)
    return EXIT_REFUSED


def _err(message: str) -> None:
    print(f"codeai-tui: {visible(message, one_line=True)}", file=sys.stderr)
