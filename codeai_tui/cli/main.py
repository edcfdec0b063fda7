"""The command line: `codeai-tui PATH` opens the console; subcommands do the rest.

Each subcommand is one record (common.Command) in the module of its group: console,
read, actions, advance, demo, lab. This module builds the parser from those records,
puts every value through one check, completes every --help, and runs the command named.

Every bad input ends in one line on stderr and exit 2, never a traceback and never a
write. Exit codes: 0 ok, 1 verification failed, 2 bad input, 3 refused (resume,
reconcile: nothing appended), 4 the
action ran and its call ended failed, 5 it ran and the effect is unknown, 74 the
disk is full (nothing half-written; the line says what was not recorded), 70 an
internal error (one line; CODEAI_TUI_DEBUG=1 shows the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from codeai_tui import __version__
from codeai_tui.cli import actions, advance, console, demo, lab, read
from codeai_tui.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_CODES_HELP,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    CliError,
    Command,
    exit_code,
    say,
)
from codeai_tui.textsafe import visible

# every subcommand, in the order `codeai-tui --help` lists them: the console, what reads,
# what writes, then the demo and the lab
REGISTRY: tuple[Command, ...] = (*console.COMMANDS, *read.COMMANDS, *actions.COMMANDS,
                                 *advance.COMMANDS, *demo.COMMANDS, *lab.COMMANDS)


# The longest argument taken, in UTF-8 bytes: PATH_MAX, so every path that can be opened
# fits, and no id, name or note anyone types comes near it. (Linux itself refuses one
# argument of 128 KiB or more before the program runs: E2BIG, "Argument list too long".)
ARGUMENT_LIMIT = 4096
ERROR_LIMIT = 600  # characters of one error line: a long value is cut, never echoed whole


def argument_problem(text: str) -> str | None:
    """Why `text` cannot be an argument's value, or None. A value arrives as the bytes the
    shell passed; Python keeps bytes that are not UTF-8 as lone surrogates, which every
    later encode (SQLite, a JSON payload, stdout) fails on: named here, before any use."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raw = os.fsencode(text)
        try:
            raw.decode("utf-8")
            at = 0
        except UnicodeDecodeError as exc:
            at = exc.start
        return f"not UTF-8 text (byte 0x{raw[at]:02x} at offset {at})"
    if size > ARGUMENT_LIMIT:
        return f"{size:,} bytes long; at most {ARGUMENT_LIMIT:,}"
    return None


def _text_first(convert: Callable[[str], object] | None) -> Callable[[str], object]:
    """An argument's type behind the one check every value passes: UTF-8 text, at most
    ARGUMENT_LIMIT bytes, and not empty (an unset `$VAR` is never a value). The type's
    own check comes after, so its message ("the path is empty") is kept."""

    def parse(text: str) -> object:
        problem = argument_problem(text)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        if convert is None:
            if not text:
                raise argparse.ArgumentTypeError("empty")
            return text
        return convert(text)

    # argparse names the type in its message for a ValueError ("invalid int value")
    parse.__name__ = getattr(convert, "__name__", "text")
    return parse


def _check_every_value(parser: argparse.ArgumentParser) -> None:
    """Put every value of every command (paths, ids, names, notes, numbers) through
    `_text_first`: the one place where bad bytes, empty and huge arguments are refused,
    with exit 2 and one line naming the argument, before any command runs."""
    for action in parser._actions:  # (argparse keeps its actions there; no public list)
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():
                _check_every_value(sub)
        elif action.nargs != 0:
            action.type = _text_first(action.type)


# what an argument is, where its command gave it no help of its own (one line each in
# every subcommand's --help)
ARGUMENT_HELP = {
    "case": "a case directory (or its ledger file)",
    "path": "a case directory, a ledger file, or a bundle of cases",
    "call_id": "the call, as inspect names it",
    "operation_key": "the tool operation, as inspect names it (namespace/thread/turn/id)",
    "out": "where the copy goes (a new directory)",
    "out_dir": "where the bundle goes (default: a new temporary directory)",
    "yes": "confirm without asking (needed off a terminal)",
    "note": "a note recorded with the finding (at most 300 characters)",
    "reason": "a reason recorded in call.resumed",
    "model": "the model the request names (default: case.json's)",
    "base_url": "where the request goes (default: case.json's, else the built-in "
                "loopback address)",
    "api_key_env": "the environment variable holding the provider credential",
    "max_attempts": "retry while fewer attempts than this started (default 2)",
    "accept_duplicate": "at decide_duplicate: record the explicit acceptance of a duplicate",
    "kernel_key": "the tool kernel's signing key (a file outside the case)",
    "trusted_key": "the kernel's public key to trust (default: the case's tools/kernel.pub)",
    "finding": "what the evidence says happened",
    "help": "show this help and exit",
    "host": "the loopback address to listen on",
    "port": "the port to listen on (0: one the system gives)",
}

def _complete_help(parser: argparse.ArgumentParser, exit_codes: str) -> None:
    """Every argument of a command says what it is, and its --help (and each of its own
    subcommands') ends with its exit codes."""
    parser.epilog = f"{parser.epilog}\n\n{exit_codes}" if parser.epilog else exit_codes
    for action in parser._actions:  # (argparse keeps its actions there; no public list)
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():
                _complete_help(sub, exit_codes)
        elif not action.help and action.help is not argparse.SUPPRESS:
            action.help = ARGUMENT_HELP.get(action.dest)


class _Parser(argparse.ArgumentParser):
    """argparse with its errors in one line, as every other bad input (the module's
    contract): the command and what was wrong, without the usage block (`--help` has it)."""

    def error(self, message: str) -> NoReturn:
        line = visible(message, one_line=True, limit=ERROR_LIMIT)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {line}\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command in REGISTRY, each value checked and each --help
    complete."""
    parser = _Parser(
        prog="codeai-tui",
        description="Operator console for CodeAI ledgers: could the effect have happened?",
        epilog="`codeai-tui PATH` opens the console on a case directory or a bundle.",
    )
    parser.add_argument("--version", action="version", version=f"codeai-tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in REGISTRY:
        p = sub.add_parser(command.name, help=command.help)
        command.add_arguments(p)
        _complete_help(p, command.exit_codes or EXIT_CODES_HELP)
    _check_every_value(parser)
    return parser


_HELP = ("-h", "--help", "--version")  # the top level's own options


def _normalise(argv: list[str]) -> list[str]:
    """The console is the default command, and options may come before the path or the
    command (`codeai-tui --read-only CASE`, `codeai-tui --json inspect CASE`). A first
    word that is no command, no path that exists and looks like no path is named as an
    unknown command rather than opened as a missing directory. Raises CliError."""
    if not argv or argv[0] in _HELP:
        return argv
    names = [command.name for command in REGISTRY]
    command = next((i for i, word in enumerate(argv) if word in names), None)
    if command is not None and all(w.startswith("-") for w in argv[:command]):
        return [argv[command], *argv[:command], *argv[command + 1:]]  # options first
    words = [w for w in argv if not w.startswith("-")]
    first = argv[0]
    if not first.startswith("-") and not os.path.lexists(first) \
            and "/" not in first and "." not in first and len(words) == 1 \
            and first.replace("-", "").isalpha():
        raise CliError(f"unknown command {first!r} (commands: {', '.join(names)}; "
                       f"to open a directory of that name, write ./{first})")
    return ["open", *argv]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args_list = _normalise(list(sys.argv[1:] if argv is None else argv))
    except CliError as exc:
        say(str(exc))
        return EXIT_BAD_INPUT
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return EXIT_BAD_INPUT if exc.code not in (0, None) else EXIT_OK
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    run = next(command.run for command in REGISTRY if command.name == args.command)
    try:
        return run(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # one line for the operator: a bad input, a refusal, a path
        code = exit_code(exc)
        if code is not None:
            return code
        if os.environ.get("CODEAI_TUI_DEBUG"):  # a bug, not a bad input
            raise
        say(f"internal error: {type(exc).__name__}: {exc} (set CODEAI_TUI_DEBUG=1 for the traceback)")
        return EXIT_INTERNAL
