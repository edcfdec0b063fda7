"""What every command shares: a command's record, the exit codes, the one-line error, the
one confirmation a write asks for, and the one mapping of how a command ended (a bad input,
a refusal, an outcome, a failing disk) to its exit code. Every command module builds on
this; nothing here imports a command."""

from __future__ import annotations

import argparse
import errno
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from codeai_tui.ledger.errors import LedgerError, LedgerProblem
from codeai_tui.textsafe import visible

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_REFUSED = 0, 1, 2, 3
# An action that ran reports how its call ended, the same for every action: the exit code
# alone must tell a script whether to look again (an unknown effect is never "ok").
EXIT_CALL_FAILED = 4  # the request was sent and answered; the call ended failed
EXIT_EFFECT_UNKNOWN = 5  # the request may have reached the provider; no answer recorded
OUTCOME_EXIT = {"succeeded": EXIT_OK, "failed": EXIT_CALL_FAILED,
                "effect_unknown": EXIT_EFFECT_UNKNOWN}
EXIT_INTERNAL = 70  # EX_SOFTWARE
EXIT_IO = 74  # EX_IOERR: the disk is full (the ledger stays consistent; the line says what)
EXIT_INTERRUPTED = 130  # Ctrl-C: the shell's convention for SIGINT
# the last paragraph of every command's --help (a command with codes of its own says so
# in its record)
EXIT_CODES_HELP = (
    "exit codes: 0 ok; 1 verification failed; 2 bad input (one line, nothing written); "
    "3 refused: the projection does not name this step (nothing written); 4 the call "
    "ended failed; 5 the effect is unknown (the request may have reached the provider); "
    "74 the disk is full; 70 an internal error"
)

# an OSError naming a path with one of these is a bad path, not a failing disk
_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ENOENT, errno.ENOTDIR, errno.EISDIR,
                          errno.EACCES, errno.EPERM, errno.ELOOP})


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand, registered once in the module of its group: the parser and the
    dispatch are both built from these records."""

    name: str
    help: str  # the one line in `codeai-tui --help`
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    exit_codes: str | None = None  # its own exit-code line in --help, where not the common one


class CliError(Exception):
    """A bad input: printed as one line, exit 2."""


class Refused(Exception):
    """Nothing was written: the projection said no, or the operator did not confirm.
    `line` goes to stderr as it is, and the command ends with exit 3."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def say(message: str) -> None:
    """One line on stderr, prefixed with the program's name: an error or a note."""
    print(f"codeai-tui: {visible(message, one_line=True)}", file=sys.stderr)


def refusal(reason: str, next_operation: str | None = None) -> Refused:
    """A gated action said no: one line naming the projected next operation (drift or a
    changed call have none to name) and why; nothing was written."""
    why = f" (next operation: {next_operation})" if next_operation else ""
    return Refused(f"codeai-tui: refused{why}: {visible(reason, one_line=True)}")


def outcome_exit(status: str | None) -> int:
    """How an action that sent ended, as an exit code: anything not known to have
    succeeded or failed is an unknown effect (exit 5), never "ok"."""
    return OUTCOME_EXIT.get(status or "", EXIT_EFFECT_UNKNOWN)


@contextmanager
def write_action() -> Iterator[None]:
    """Around a write action: an unknown call or operation, a destination or a key that
    cannot be used is a bad input (CliError: one line, exit 2); a refusal by the projection
    (or by a tool turn that could repeat an effect) is Refused (one line, exit 3). Any
    other error goes on as it is."""
    try:
        yield
    except Exception as exc:
        said = _said_by_action(exc)
        if said is None:
            raise
        raise said from None


def _said_by_action(exc: Exception) -> CliError | Refused | None:
    """What an action's exception means to the command line, or None. (Imported here, on
    the way out: no command pays for the action modules it does not use.) One family of
    refusals: ActionRefused, of which UnusableInput (no such call or operation, a kernel
    key that is not the case's) is bad input; and what the runtime says of a destination
    or a key before an action can refuse anything."""
    from codeai_tui.actions.gate import ActionRefused, UnusableInput
    from codeai_tui.runtime.destination import DestinationError
    from codeai_tui.tools.receipts import KeyProblem

    if isinstance(exc, UnusableInput | DestinationError | KeyProblem):
        return CliError(str(exc))
    if isinstance(exc, ActionRefused):
        return refusal(exc.reason, exc.next_operation.value if exc.next_operation else None)
    return None


def ask(question: str, typed: str | None = None) -> bool:
    """Ask on the terminal: yes when the operator types `typed` (an id), or, where there
    is none to type, y or yes."""
    answer = input(visible(question, one_line=True)).strip()
    return answer == typed if typed is not None else answer.lower() in ("y", "yes")


def need_confirmation_terminal(verb: str) -> None:
    """A write that was not given --yes asks; off a terminal no one can answer, so it is
    a bad input (exit 2, nothing written) rather than a prompt read from a pipe."""
    if not sys.stdin.isatty():
        raise CliError(f"refusing to {verb} without confirmation: run on a terminal or "
                       "pass --yes")


def confirm(yes: bool, verb: str, question: str, *, typed: str | None, declined: str,
            shown: Sequence[str] = ()) -> None:
    """The one confirmation every write command asks before it runs: nothing with --yes;
    else the lines `shown` (what would be done, shown inert) and the question, answered
    by typing the id `typed` (or y, where None). Any other answer raises Refused with the
    line `declined`: exit 3, nothing written."""
    if yes:
        return
    need_confirmation_terminal(verb)
    for line in shown:
        print(visible(line, one_line=True), file=sys.stderr)
    if not ask(question, typed):
        raise Refused(declined)


def plan_line(label: str, value: str) -> str:
    """One row of what a write would do, as the confirmation shows it."""
    return f"  {label:<17} {visible(value, one_line=True)}"


def exit_code(exc: Exception) -> int | None:
    """How a command that raised `exc` ends: its one line on stderr, and the exit code;
    None for an error no command expects (a bug: the caller says so)."""
    if isinstance(exc, Refused):
        print(exc.line, file=sys.stderr)
        return EXIT_REFUSED
    if isinstance(exc, CliError):
        say(str(exc))
        return EXIT_BAD_INPUT
    if isinstance(exc, LedgerError):
        say(str(exc))
        return EXIT_IO if exc.problem is LedgerProblem.DISK_FULL else EXIT_BAD_INPUT
    if isinstance(exc, BrokenPipeError):  # the reader went away: nothing more to say
        return EXIT_OK
    if isinstance(exc, OSError) and exc.filename is not None:
        # a path that cannot be looked at (a name too long, a directory not searchable,
        # a file that is not a directory): the path and why, as for a missing one
        say(f"{exc.filename}: {exc.strerror or exc}")
        return EXIT_BAD_INPUT if exc.errno in _PATH_ERRNOS else EXIT_IO
    return None
