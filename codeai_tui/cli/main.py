"""The command line: `codeai-tui PATH` opens the console; subcommands do the rest.

Every bad input ends in one line on stderr and exit 2, never a traceback and never a
write. Exit codes: 0 ok, 1 verification failed, 2 bad input, 3 refused (resume,
reconcile: nothing appended), 4 the
action ran and its call ended failed, 5 it ran and the effect is unknown, 74 the
disk is full (nothing half-written; the line says what was not recorded), 70 an
internal error (one line; CODEAI_TUI_DEBUG=1 shows the traceback).
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from codeai_tui import __version__
from codeai_tui.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_EFFECT_UNKNOWN,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_IO,
    EXIT_OK,
    EXIT_REFUSED,
    OUTCOME_EXIT,
    CliError,
    _err,
    refused,
)
from codeai_tui.ledger.errors import LedgerError, LedgerProblem
from codeai_tui.ledger.reader import SEQ_MAX
from codeai_tui.textsafe import visible

if TYPE_CHECKING:
    import subprocess

    from codeai_tui.actions.resume import ResumePlan
    from codeai_tui.lab.provider import ProviderProcess

COMMANDS = ("open", "inspect", "resume", "reconcile", "reconcile-tool", "reinterpret",
            "redecide", "finalize", "next-attempt", "provider", "demo", "verify", "bench",
            "export", "receipts", "replay", "reliability", "report")


# an OSError naming a path with one of these is a bad path, not a failing disk
_PATH_ERRNOS = frozenset({errno.ENAMETOOLONG, errno.ENOENT, errno.ENOTDIR, errno.EISDIR,
                          errno.EACCES, errno.EPERM, errno.ELOOP})


def _finite(unit: str, *, positive: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number of `unit`, >= 0 (> 0 if `positive`); argparse
    turns the error into one line and exit 2. NaN or a negative value was taken silently
    (the provider held no request for `--latency nan`) and inf never ends."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of {unit}: {text!r}") from None
        in_range = value > 0 if positive else value >= 0  # (False for NaN)
        if not in_range or math.isinf(value):
            bound = "> 0" if positive else ">= 0"
            raise argparse.ArgumentTypeError(f"{unit} must be finite and {bound}: {text!r}")
        return value

    return parse


_seconds = _finite("seconds")


def _whole(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer from `low` (to `high`): a count, a port or a seq that
    SQLite's INTEGER can hold, named in one line instead of failing later."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"from {low:,} to {high:,}" if high is not None else f">= {low:,}"
            raise argparse.ArgumentTypeError(f"must be an integer {bound}: {text!r}")
        return value

    return parse


def _path(text: str) -> str:
    """An argparse type: a path, never empty. "" is not ".": `inspect "$CASE"` with CASE
    unset read whatever lay below the working directory, and `resume "$CASE" ...` would
    act on the case it stood in."""
    if not text:
        raise argparse.ArgumentTypeError("the path is empty")
    return text


def _path_obj(text: str) -> Path:
    return Path(_path(text))


def _base_url(text: str) -> str:
    """An argparse type: an http(s) URL with a host. An empty value is an error, not "use
    the case's": `--base-url "$URL"` with URL unset must not fall back to a destination
    the case directory chose."""
    from codeai_tui.runtime.destination import DestinationError, check_base_url

    try:
        check_base_url(text)
    except DestinationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _env_name(text: str) -> str:
    """An argparse type: the name of an environment variable (never empty, so an unset
    `$VAR` cannot silently mean "the case's variable")."""
    if not text.isascii() or not (text[:1].isalpha() or text[:1] == "_") \
            or not all(c.isalnum() or c == "_" for c in text):
        raise argparse.ArgumentTypeError(f"not an environment variable name: {text!r}")
    return text


def _model(text: str) -> str:
    """An argparse type: a model name (never empty: an empty one was ignored)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the model name is empty")
    return text


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
EXIT_CODES_HELP = (
    "exit codes: 0 ok; 1 verification failed; 2 bad input (one line, nothing written); "
    "3 refused: the projection does not name this step (nothing written); 4 the call "
    "ended failed; 5 the effect is unknown (the request may have reached the provider); "
    "74 the disk is full; 70 an internal error"
)


def _complete_help(parser: argparse.ArgumentParser) -> None:
    """Every argument of every command says what it is, and every command's --help ends
    with the exit codes."""
    for action in parser._actions:  # (argparse keeps its actions there; no public list)
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():
                sub.epilog = f"{sub.epilog}\n\n{EXIT_CODES_HELP}" if sub.epilog \
                    else EXIT_CODES_HELP
                _complete_help(sub)
        elif not action.help and action.help is not argparse.SUPPRESS:
            action.help = ARGUMENT_HELP.get(action.dest)


class _Parser(argparse.ArgumentParser):
    """argparse with its errors in one line, as every other bad input (the module's
    contract): the command and what was wrong, without the usage block (`--help` has it)."""

    def error(self, message: str) -> NoReturn:
        line = visible(message, one_line=True, limit=ERROR_LIMIT)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {line}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="codeai-tui",
        description="Operator console for CodeAI ledgers: could the effect have happened?",
        epilog="`codeai-tui PATH` opens the console on a case directory or a bundle.",
    )
    parser.add_argument("--version", action="version", version=f"codeai-tui {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("open", help="open the console on a case or bundle (the default)")
    p.add_argument("path", type=_path)
    p.add_argument("--theme", default=None, help="theme name (see themes/)")
    p.add_argument("--read-only", action="store_true", help="make every write path unreachable")
    p.add_argument("--model", type=_model, default=None,
                   help="override case.json's model for resume")
    p.add_argument("--base-url", type=_base_url, default=None,
                   help="override case.json's provider base_url")
    p.add_argument("--api-key-env", type=_env_name, default=None, metavar="VAR",
                   help="the environment variable holding the provider credential")
    p.add_argument("--kernel-key", type=_path, default=None, metavar="PATH",
                   help="the tool kernel's signing key: lets `R` replay a saved tool plan")

    p = sub.add_parser("inspect", help="print the work-state projection")
    p.add_argument("path", type=_path, help="a case directory, a ledger file, or a bundle")
    p.add_argument("--json", action="store_true",
                   help="the codeai.work_state.v1 JSON document (docs/ledger.md section 7); "
                        "it names its JSON Schema, shipped in codeai_tui/schemas/")
    p.add_argument("--as-of", type=_whole(0, SEQ_MAX), default=None, metavar="SEQ",
                   help="project only events with seq <= SEQ")

    p = sub.add_parser("report", help="a self-contained incident report of one case "
                                      "(HTML with the lanes drawn, or Markdown)")
    p.add_argument("case", type=_path, help="a case directory or its ledger file")
    p.add_argument("--as-of", type=_whole(0, SEQ_MAX), default=None, metavar="SEQ",
                   help="report the case as it stood at seq SEQ")
    p.add_argument("--format", choices=("html", "md"), default="html",
                   help="html (default: inline CSS and SVG, no script, no network) or md")
    p.add_argument("-o", "--output", type=_path, default=None, metavar="OUT",
                   help="write the report here (never inside the case directory); "
                        "default: standard output")

    p = sub.add_parser("resume", help="resume one call where the projection permits it")
    p.add_argument("case", type=_path)
    p.add_argument("call_id")
    p.add_argument("--model", type=_model, default=None)
    p.add_argument("--base-url", type=_base_url, default=None,
                   help="where to send (trusted: given by you, not by the case directory)")
    p.add_argument("--api-key-env", type=_env_name, default=None, metavar="VAR",
                   help="the environment variable holding the credential (trusted)")
    p.add_argument("--reason", default=None, help="recorded in call.resumed")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--max-retry-wait", type=_seconds, default=None, metavar="S",
                   help="the longest Retry-After honoured before a retry; a longer one "
                        "stops the call (default 30)")
    _send_limits(p)

    p = sub.add_parser("reconcile", help="record a finding for a call whose effect is unknown")
    p.add_argument("case", type=_path)
    p.add_argument("call_id")
    p.add_argument("--finding", required=True, choices=("received", "not_received"),
                   help="did the provider receive the last attempt (docs/reconcile.md)")
    p.add_argument("--note", default=None, help="recorded in attempt.reconciled")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    p = sub.add_parser("reconcile-tool",
                       help="record whether a tool operation whose effect is unknown ran")
    p.add_argument("case", type=_path)
    p.add_argument("operation_key", help="namespace/thread/turn/tool_call_id")
    p.add_argument("--finding", required=True, choices=("executed", "not_executed"),
                   help="what the tool's own records say (docs/tools.md); not_executed "
                        "lets replay run it again")
    p.add_argument("--note", default=None, help="recorded in tool.reconciled")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    _advance_parsers(sub)

    p = sub.add_parser("provider", help="run the synthetic provider on loopback")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_whole(0, 65535), default=8768)
    rec = p.add_mutually_exclusive_group(required=True)
    rec.add_argument("--receipts", type=_path_obj, help="the receipt log to append to")
    rec.add_argument("--receipts-root", type=_path_obj,
                     help="bundle mode: /c/<case>/v1 logs to <root>/<case>/provider/receipts.jsonl")
    p.add_argument("--bundle-id", default=None, metavar="ID",
                   help="bundle mode: serve only /b/ID/c/<case>/v1 (default: the root's "
                        "bundle.json bundle_id, when it names one)")
    p.add_argument("--latency", type=_seconds, default=0.0, help="seconds to hold each request")
    p.add_argument("--fail-first", type=_whole(0), default=0,
                   help="answer --fail-status to the first N requests")
    p.add_argument("--fail-status", type=int, default=503, choices=(503, 429),
                   help="the status of those answers (default 503)")
    p.add_argument("--retry-after", default=None, metavar="VALUE",
                   help="send `Retry-After: VALUE` with them (seconds or an HTTP-date)")
    p.add_argument("--truncate-after", type=_whole(0), default=None, metavar="N",
                   help="cut every streamed answer after N chunks (connection closed mid-body)")
    p.add_argument("--stall-after", type=_whole(0), default=None, metavar="N",
                   help="stop every streamed answer after N chunks but keep it open with "
                        "keep-alive comments (a hung generation)")
    p.add_argument("--fresh-tool-call-ids", action="store_true",
                   help="answer every request with new tool-call ids, as a model asked again "
                        "does (default: ids derived from the request bytes, the same for the "
                        "same bytes)")

    p = sub.add_parser("demo", help="build the demo bundle by real kills, then verify it")
    p.add_argument("out_dir", nargs="?", type=_path, default=None)
    p.add_argument("--open", action="store_true", help="open the console on the bundle")
    p.add_argument("--live", action="store_true", help="keep a producer appending until Ctrl-C")
    p.add_argument("--rate", type=_finite("events per second", positive=True), default=4.0,
                   help="events per second with --live")
    p.add_argument("--kernel-key", type=_path_obj, default=None, metavar="PATH",
                   help="keep the tool kernel's signing key at PATH (outside the bundle; "
                        "made if missing), so `replay` and the console's R can run the "
                        "bundle's tool plans later; by default it is deleted (with --open: "
                        "when the console closes)")

    p = sub.add_parser("export", help="a consistent, self-contained copy of a case to share")
    p.add_argument("case", type=_path)
    p.add_argument("out", type=_path, help="a new (or empty) directory")

    p = sub.add_parser("verify", help="independently verify a demo bundle's claims")
    p.add_argument("path", type=_path)

    p = sub.add_parser("receipts", help="tool receipts: verify every signed receipt of a case")
    rsub = p.add_subparsers(dest="receipts_command", metavar="ACTION", required=True)
    v = rsub.add_parser("verify", help="check every receipt: exit 0 all valid, 1 any invalid or missing")
    v.add_argument("case", type=_path)
    v.add_argument("--trusted-key", type=_path_obj, default=None, metavar="PATH",
                   help="the kernel public key (PEM) to trust; default the case's tools/kernel.pub")

    p = sub.add_parser("replay", help="run a saved tool plan's never-admitted operations, "
                                      "without the provider")
    p.add_argument("case", type=_path)
    p.add_argument("call_id", help="the call whose saved response holds the tool plan")
    p.add_argument("--kernel-key", type=_path_obj, required=True, metavar="PATH",
                   help="the tool kernel's private key (kept outside the case)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    p = sub.add_parser("reliability", help="races, kills, faults, read-only, soak (minutes)")
    p.add_argument("--quick", action="store_true", help="a few of each (about a minute)")
    p.add_argument("--rounds", type=_whole(1), default=None, help="race rounds (default 50)")
    p.add_argument("--kills", type=_whole(1), default=None, help="kills per action (default 100)")
    p.add_argument("--soak-minutes", type=_finite("minutes", positive=True), default=None,
                   help="default 10")
    p.add_argument("--keep", action="store_true", help="keep the work directory")

    p = sub.add_parser("bench", help="print the speed and memory target table")
    p.add_argument("--events", type=_whole(100), default=1_000_000,
                   help="events in the interleaved ledger (default 1,000,000)")
    p.add_argument("--runs", type=_whole(1), default=3, help="runs per measure (medians)")
    p.add_argument("--cases", type=_whole(0), default=1000,
                   help="cases in the bundle measure (0: skip)")
    p.add_argument("--live-seconds", type=_seconds, default=30.0,
                   help="how long the live measure follows a writer (0: skip)")
    p.add_argument("--keep", type=_path, default=None,
                   help="write the ledgers here and keep them")
    p.add_argument("--shapes", type=_whole(0, 10_000_000), default=100_000,
                   help="size of the shape ledgers beside ordinary ones: one call with N "
                        "attempts, one task with N calls, one call with N tool operations, "
                        "one task with N compilations (default 100,000; 0: skip)")
    p.add_argument("--shape-tasks", type=_whole(0, 10_000_000), default=0,
                   help="also a ledger of N tasks beside an ordinary one (0, the default: "
                        "skip; 1,000,000 takes minutes to write and measure)")
    _check_every_value(parser)
    _complete_help(parser)
    return parser


_HELP = ("-h", "--help", "--version")  # the top level's own options


def _normalise(argv: list[str]) -> list[str]:
    """The console is the default command, and options may come before the path or the
    command (`codeai-tui --read-only CASE`, `codeai-tui --json inspect CASE`). A first
    word that is no command, no path that exists and looks like no path is named as an
    unknown command rather than opened as a missing directory. Raises CliError."""
    if not argv or argv[0] in _HELP:
        return argv
    command = next((i for i, word in enumerate(argv) if word in COMMANDS), None)
    if command is not None and all(w.startswith("-") for w in argv[:command]):
        return [argv[command], *argv[:command], *argv[command + 1:]]  # options first
    words = [w for w in argv if not w.startswith("-")]
    first = argv[0]
    if not first.startswith("-") and not os.path.lexists(first) \
            and "/" not in first and "." not in first and len(words) == 1 \
            and first.replace("-", "").isalpha():
        raise CliError(f"unknown command {first!r} (commands: {', '.join(COMMANDS)}; "
                       f"to open a directory of that name, write ./{first})")
    return ["open", *argv]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args_list = _normalise(list(sys.argv[1:] if argv is None else argv))
    except CliError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return EXIT_BAD_INPUT if exc.code not in (0, None) else EXIT_OK
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return _dispatch(args)
    except LedgerError as exc:
        _err(str(exc))
        return EXIT_IO if exc.problem is LedgerProblem.DISK_FULL else EXIT_BAD_INPUT
    except CliError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # one line for the operator, a path or a bug
        if isinstance(exc, OSError) and exc.filename is not None:
            # a path that cannot be looked at (a name too long, a directory not
            # searchable, a file that is not a directory): the path and why, as for a
            # missing one
            _err(f"{exc.filename}: {exc.strerror or exc}")
            return EXIT_BAD_INPUT if exc.errno in _PATH_ERRNOS else EXIT_IO
        if os.environ.get("CODEAI_TUI_DEBUG"):  # a bug, not a bad input
            raise
        _err(f"internal error: {type(exc).__name__}: {exc} (set CODEAI_TUI_DEBUG=1 for the traceback)")
        return EXIT_INTERNAL


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "inspect":
        return cmd_inspect(args)
    if args.command == "resume":
        return cmd_resume(args)
    if args.command == "reconcile":
        return cmd_reconcile(args)
    if args.command == "reconcile-tool":
        return cmd_reconcile_tool(args)
    if args.command in ("reinterpret", "redecide", "finalize", "next-attempt"):
        from codeai_tui.cli.advance import cmd_advance

        return cmd_advance(args)
    if args.command == "provider":
        return cmd_provider(args)
    if args.command == "open":
        return cmd_open(args)
    if args.command == "demo":
        return cmd_demo(args)
    if args.command == "verify":
        from codeai_tui.verify import run_verify_command

        return run_verify_command(args.path)
    if args.command == "export":
        from codeai_tui.read.export import export_case

        print(visible(export_case(args.case, args.out).summary(), one_line=True))
        return EXIT_OK
    if args.command == "receipts":
        return cmd_receipts_verify(args)
    if args.command == "report":
        return cmd_report(args)
    if args.command == "replay":
        return cmd_replay(args)
    if args.command == "reliability":
        from codeai_tui.lab.reliability.command import run_reliability

        return run_reliability(quick=args.quick, rounds=args.rounds, kills=args.kills,
                               soak_minutes=args.soak_minutes, keep=args.keep)
    if args.command == "bench":
        from codeai_tui.lab.bench import run_bench

        return run_bench(args.events, args.keep, args.runs, args.cases, args.live_seconds,
                         args.shapes, args.shape_tasks)
    raise CliError(f"unknown command {args.command}")


def _send_limits(p: argparse.ArgumentParser) -> None:
    """--timeout and --deadline of the commands that send (runner.send_request)."""
    p.add_argument("--timeout", type=_seconds, default=None, metavar="S",
                   help="the longest wait for progress: the connect (TLS included) and each "
                        "read or write; a provider that keeps sending is stopped only by "
                        "--deadline (default 30)")
    p.add_argument("--deadline", type=_finite("seconds", positive=True), default=None,
                   metavar="S", help="wall-clock seconds for each attempt's whole exchange: "
                                     "connect, request, status line, headers, body and "
                                     "stream, bytes arriving or not; an answer not whole by "
                                     "then is not recorded and the attempt's effect is unknown "
                                     "(default 600)")


def _advance_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """reinterpret / redecide / finalize / next-attempt (codeai_tui/actions/advance.py)."""
    helps = {
        "reinterpret": "interpret an observed attempt's stored response again (no network)",
        "redecide": "decide retry or stop from the recorded interpretation, under the policy",
        "finalize": "record the terminal events where the projection says finalize",
        "next-attempt": "start the next attempt where the projection says start_next_attempt",
    }
    for name, text in helps.items():
        p = sub.add_parser(name, help=text)
        p.add_argument("case", type=_path)
        p.add_argument("call_id")
        if name in ("redecide", "next-attempt"):
            p.add_argument("--max-attempts", type=int, default=2, metavar="N",
                           help="retry a retryable error while fewer than N attempts started "
                                "(default 2, the runner's)")
        if name in ("redecide", "finalize"):
            p.add_argument("--accept-duplicate", action="store_true",
                           help="at decide_duplicate: record an explicit acceptance of a "
                                "duplicate (retry) instead of finalizing as failed")
            p.add_argument("--note", default=None, help="recorded with the decision")
        if name == "next-attempt":
            p.add_argument("--base-url", type=_base_url, default=None,
                           help="where to send (trusted: given by you, not by the case directory)")
            p.add_argument("--api-key-env", type=_env_name, default=None, metavar="VAR",
                           help="the environment variable holding the credential (trusted)")
            _send_limits(p)
        p.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def cmd_inspect(args: argparse.Namespace) -> int:
    from codeai_tui.read.inspection import write_json, write_table
    from codeai_tui.services.forked import helper_plan

    # streamed: calls are written (the table: spooled) as the projection finishes them;
    # a big case's calls are rendered by two processes where two cores are ours
    write = write_json if args.json else write_table
    write(args.path, args.as_of, sys.stdout, helper_plan())
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from codeai_tui.read.report import report_text, write_report

    if args.output is None:
        sys.stdout.write(report_text(args.case, args.as_of, args.format))
        return EXIT_OK
    size = write_report(args.case, args.output, args.as_of, args.format)
    print(visible(f"wrote the report of {args.case} to {args.output} ({size:,} bytes)",
                  one_line=True))
    return EXIT_OK


def _plan_rows(plan: ResumePlan) -> list[tuple[str, str]]:
    dest = plan.destination
    return [
        ("call", plan.call_id),
        ("idempotency key", plan.idempotency_key or "-"),
        ("stage", plan.stage.value),
        ("model", f"recorded {plan.model_recorded}  configured {plan.model_configured}"),
        ("request sha256", f"recorded {plan.request_sha256_recorded}  rebuilt {plan.request_sha256_rebuilt}"),
        ("context package", f"recorded {plan.context_package_recorded}  now {plan.context_package_now}"),
        ("rendered context", f"recorded {plan.rendered_sha256_recorded}  now {plan.rendered_sha256_now}"),
        ("destination", f"{dest.base_url}  (from {dest.base_url_from})"),
        ("credential var", f"{dest.api_key_env or '-'}  (from {dest.api_key_env_from}; "
                           f"{'set' if dest.credential_set else 'not set'})"),
        ("verdict", plan.verdict),
    ]


def _confirm(plan: ResumePlan) -> tuple[bool, bool]:
    """Ask on the terminal: (resume?, send the credential?)."""
    for label, value in _plan_rows(plan):
        print(f"  {label:<17} {visible(value, one_line=True)}", file=sys.stderr)
    active = plan.still_active(datetime.now(UTC))
    if active is not None:
        print(f"  WARNING: {visible(active, one_line=True)}", file=sys.stderr)
    if not plan.drift_check_possible:
        print("  WARNING: no manifest was recorded, so no drift check is possible.", file=sys.stderr)
    if not plan.drift_check_possible or active is not None:
        answer = input(f"Type the call id ({visible(plan.call_id, one_line=True)}) to resume: ")
        if answer.strip() != plan.call_id:
            return False, False
    elif input("Resume this call? [y/N] ").strip().lower() not in ("y", "yes"):
        return False, False
    dest = plan.destination
    send = dest.trusted
    if dest.needs_credential_confirmation:
        question = dest.credential_question()
        send = input(visible(question, one_line=True)).strip().lower() in ("y", "yes")
    return True, send


def cmd_reconcile(args: argparse.Namespace) -> int:
    """Record the operator's finding for an effect-unknown call: exit 0 when appended,
    3 when the projection or the receipt log refuses it (nothing appended), 2 bad input."""
    from codeai_tui.actions.reconcile import ReconcileRefused, reconcile_call
    from codeai_tui.actions.resume import UnknownCall

    case = Path(args.case)
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    if not args.call_id.strip():
        raise CliError("the call id is empty")
    if not args.yes:
        if not sys.stdin.isatty():
            raise CliError("refusing to reconcile without confirmation: run on a terminal or pass --yes")
        shown = visible(args.call_id, one_line=True)
        answer = input(f"Record finding {args.finding} for {shown}? Type the call id: ")
        if answer.strip() != args.call_id:
            print("not reconciled", file=sys.stderr)
            return EXIT_REFUSED
    try:
        result = reconcile_call(case, args.call_id, args.finding, args.note)
    except UnknownCall as exc:
        raise CliError(exc.reason) from None
    except ReconcileRefused as exc:
        return refused(exc)
    st = result.state
    receipts = ", ".join(result.evidence) or "none"
    print(visible(
        f"reconciled {result.call_id} attempt {result.attempt_id} as {result.finding} "
        f"(seq {result.seq}; matching receipts: {receipts}); now {st.stage.value}, "
        f"next {st.next_operation.value}, provider effect {st.provider_effect.value}",
        one_line=True))
    return EXIT_OK


def cmd_reconcile_tool(args: argparse.Namespace) -> int:
    """Record what the tool's own records say of an operation whose effect is unknown:
    exit 0 when appended, 3 when the projection refuses it (nothing appended), 2 bad
    input. The confirmation asks for the tool-call id (the key's last part) typed."""
    from codeai_tui.actions.reconcile import (
        ToolReconcileRefused,
        UnknownOperation,
        reconcile_operation,
    )

    case = Path(args.case)
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    key = args.operation_key
    if not key.strip():
        raise CliError("the operation key is empty")
    if not args.yes:
        if not sys.stdin.isatty():
            raise CliError("refusing to reconcile without confirmation: run on a terminal "
                           "or pass --yes")
        tool_call_id = key.rsplit("/", 1)[-1]
        answer = input(f"Record finding {args.finding} for operation "
                       f"{visible(key, one_line=True)}? Type its tool-call id "
                       f"({visible(tool_call_id, one_line=True)}): ")
        if answer.strip() != tool_call_id:
            print("not reconciled", file=sys.stderr)
            return EXIT_REFUSED
    try:
        result = reconcile_operation(case, key, args.finding, args.note)
    except UnknownOperation as exc:
        raise CliError(str(exc)) from None
    except ToolReconcileRefused as exc:
        return refused(exc)
    op = result.state
    print(visible(
        f"reconciled operation {result.operation_key} (call {result.call_id}) as "
        f"{result.finding} (seq {result.seq}); now {op.stage.value}, next "
        f"{op.next_operation.value}", one_line=True))
    return EXIT_OK


def cmd_resume(args: argparse.Namespace) -> int:
    from codeai_tui.actions.resume import ResumeRefused, UnknownCall, plan_resume, resume_call
    from codeai_tui.runtime.destination import DestinationError

    case = Path(args.case)
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    if not args.call_id.strip():
        raise CliError("the call id is empty")
    try:
        plan = plan_resume(case, args.call_id, model=args.model, base_url=args.base_url,
                           api_key_env=args.api_key_env, ask_destination=True)
        if plan.drift:
            raise ResumeRefused(None, f"call {args.call_id}: drift, refusing: " + "; ".join(plan.drift))
        if not args.yes:
            if not sys.stdin.isatty():
                raise CliError("refusing to resume without confirmation: run on a terminal or pass --yes")
            confirmed, send_credential = _confirm(plan)
            if not confirmed:
                print("not resumed", file=sys.stderr)
                return EXIT_REFUSED
        else:
            # --yes never sends a credential to a destination the operator did not name
            send_credential = plan.destination.trusted
            if not plan.drift_check_possible:
                print("codeai-tui: note: no manifest recorded, so no drift check was possible",
                      file=sys.stderr)
            active = plan.still_active(datetime.now(UTC))
            if active is not None:
                print(f"codeai-tui: note: {visible(active, one_line=True)}", file=sys.stderr)
        line = plan.destination.credential_line(send_credential)
        _err(f"note: sending to {plan.destination.base_url}; {line}")
        result = resume_call(
            case, args.call_id, model=args.model, base_url=args.base_url,
            api_key_env=args.api_key_env, send_credential=send_credential, reason=args.reason,
            expected=plan, timeout=args.timeout, max_retry_wait=args.max_retry_wait,
            deadline=args.deadline,
        )
    except UnknownCall as exc:
        raise CliError(exc.reason) from None
    except DestinationError as exc:
        raise CliError(str(exc)) from None
    except ResumeRefused as exc:
        return refused(exc)
    print(
        f"resumed {visible(result.old_call_id, one_line=True)} as "
        f"{visible(result.new_call_id, one_line=True)}: {result.status}; "
        f"receipts {result.receipts_before} -> {result.receipts_after}"
    )
    for note in result.notes:  # a Retry-After waited out, or one too long to wait
        _err(f"note: {note}")
    if result.warning is not None:
        _err(f"warning: {result.warning}")
    return OUTCOME_EXIT.get(result.status, EXIT_EFFECT_UNKNOWN)


def cmd_provider(args: argparse.Namespace) -> int:
    from codeai_tui.lab.provider import serve

    try:
        serve(args.host, args.port, args.receipts, args.latency, args.fail_first,
              receipts_root=args.receipts_root, truncate_after=args.truncate_after,
              stall_after=args.stall_after, fresh_tool_call_ids=args.fresh_tool_call_ids,
              bundle_id=args.bundle_id,
              fail_status=args.fail_status, retry_after=args.retry_after)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    return EXIT_OK


def cmd_receipts_verify(args: argparse.Namespace) -> int:
    from codeai_tui.tools import KeyProblem, ReceiptsInputError, verify_case_receipts
    from codeai_tui.tools.verify import render_report

    try:
        report = verify_case_receipts(args.case, args.trusted_key)
    except (KeyProblem, ReceiptsInputError) as exc:
        raise CliError(str(exc)) from None
    for line in render_report(report):
        print(visible(line, one_line=True))
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_replay(args: argparse.Namespace) -> int:
    """Preview the plan and each operation's state; refuse (exit 3, nothing written) where
    an operation is admitted without an outcome; run the rest only after confirmation."""
    from codeai_tui.ledger.writer import LedgerWriter
    from codeai_tui.tools import PUBLISH_REPORT, KeyProblem, PublishReport, ToolKernel
    from codeai_tui.tools.kernel import Outcome
    from codeai_tui.tools.replay import UnknownCall, plan_replay, record_follow_up, run_replay
    from codeai_tui.tools.turn import TurnRefused

    case = Path(args.case)
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    try:
        plan = plan_replay(case, args.call_id)
    except UnknownCall as exc:
        raise CliError(str(exc)) from None
    except TurnRefused as exc:
        print(f"codeai-tui: refused: {visible(str(exc), one_line=True)}", file=sys.stderr)
        return EXIT_REFUSED
    if plan.saved.call_id != args.call_id:
        print(f"call {visible(args.call_id, one_line=True)} was resumed as "
              f"{visible(plan.saved.call_id, one_line=True)}, whose response holds the plan",
              file=sys.stderr)
    print(f"call {visible(plan.saved.call_id, one_line=True)} attempt "
          f"{visible(plan.saved.attempt_id, one_line=True)}: {len(plan.operations)} planned "
          f"tool call(s), turn {visible('/'.join((plan.namespace, plan.thread, plan.turn)), one_line=True)}",
          file=sys.stderr)
    for op in plan.operations:
        print(f"  {visible(op.planned.tool_call_id, one_line=True)}  "
              f"{visible(op.planned.name, one_line=True)}  args {op.planned.arguments_sha256[:12]}  "
              f"{op.state.value}", file=sys.stderr)
    if plan.refusal is not None:
        print(f"codeai-tui: refused: {visible(plan.refusal, one_line=True)}", file=sys.stderr)
        return EXIT_REFUSED
    if not plan.to_run:
        print("nothing to run: every planned operation is completed or found to have run")
    elif not args.yes:
        if not sys.stdin.isatty():
            raise CliError("refusing to replay without confirmation: run on a terminal or pass --yes")
        answer = input(f"Run {len(plan.to_run)} operation(s) with their original tool-call ids? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not replayed", file=sys.stderr)
            return EXIT_REFUSED
    try:
        with LedgerWriter.open(case) as writer:
            kernel = ToolKernel.open(case, writer, args.kernel_key,
                                     {PUBLISH_REPORT: PublishReport(case)}, namespace=plan.namespace)
            done = run_replay(plan, kernel)
            follow_up = record_follow_up(case, writer, plan, done)
    except KeyProblem as exc:
        raise CliError(str(exc)) from None
    except TurnRefused as exc:
        print(f"codeai-tui: refused: {visible(str(exc), one_line=True)}", file=sys.stderr)
        return EXIT_REFUSED
    for completed in done:
        outcome = ("found to have run, outcome unknown (not run again)"
                   if completed.outcome is Outcome.UNKNOWN else completed.outcome.value)
        print(f"{visible(completed.operation_key, one_line=True)}: {outcome}")
    if follow_up is not None:
        print(f"recorded the follow-up call {visible(follow_up, one_line=True)} with these "
              f"results (not sent); next: codeai-tui resume {visible(str(case), one_line=True)} "
              f"{visible(follow_up, one_line=True)}")
    return EXIT_OK


def _check_kernel_key(args: argparse.Namespace) -> None:
    """The key `R` replays with is looked at before the screen opens (as --base-url is, by
    its parser): a mistyped path is named now, not when `R` is pressed mid-incident."""
    key = getattr(args, "kernel_key", None)
    if key is not None:
        path = Path(key)
        if not path.is_file():
            raise CliError(f"--kernel-key {key}: no such file (the tool kernel's signing key)")
        if not os.access(path, os.R_OK):
            raise CliError(f"--kernel-key {key}: not readable")


def need_a_terminal() -> None:
    """Without a terminal the screen was drawn into a pipe or a file, spun a core and did
    not end on SIGTERM: a script wants `inspect`, not the console."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CliError("the console needs a terminal (standard input and output are not "
                       "one here); for a script, use `codeai-tui inspect PATH [--json]`")


def cmd_open(args: argparse.Namespace, provider_note: str | None = None) -> int:
    from codeai_tui.ledger.case import find_cases

    find_cases(args.path)  # a missing path fails here with one line, before the screen
    _check_kernel_key(args)
    if args.theme is not None:
        from codeai_tui.app.themes import load_themes

        names = [t.name for t in load_themes()[0]]
        if args.theme not in names:
            raise CliError(f"unknown theme {args.theme!r}; choose one of: {', '.join(names)}")
    need_a_terminal()
    # an incident console gains nothing from animation, and loses time on slow links
    os.environ.setdefault("TEXTUAL_ANIMATIONS", "none")
    from codeai_tui.app import create_app

    app = create_app(
        args.path, theme=args.theme, read_only=args.read_only, model=args.model,
        base_url=args.base_url, api_key_env=args.api_key_env, provider_note=provider_note,
        kernel_key=getattr(args, "kernel_key", None),
    )
    app.run()
    # what the operator did stays on the terminal after the screen is gone
    print(visible(app.action_log.summary(), one_line=True))
    ended_by = getattr(app, "ended_by", None)
    if ended_by:
        # Told to stop: the terminal is restored and the summary printed; a reader thread
        # still starting (a worker's first read, an aiosqlite connection) must not keep
        # the process alive, so end now with the shell's convention for a signal.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + ended_by)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """Build the bundle by real kills; optionally keep a live producer and open the app.

    With --open, the bundle's own bundle-mode provider is started first, on 8768, or on
    a port the system gives it where 8768 is taken: the provider process binds the port
    itself and reports it, and only then is the bundle built with that port in its
    case.json files, so nothing can take it between the choice and the use. It serves
    for as long as the console is open, under the bundle's id, so a resume confirmed in
    the console reaches it and no other bundle's provider (and logs to that case's own
    receipt log); the console says where resumes go. Should no provider start at all,
    the console still opens, and says resumes will be refused.
    """
    from codeai_tui.lab.provider import new_bundle_id

    out = Path(args.out_dir) if args.out_dir else None
    if out is not None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CliError(f"{out}: exists and is not an empty directory; give a new directory")
    # with --open the console may replay tool plans (R): the kernel's key lives, outside
    # the bundle, exactly as long as the console is open (or where --kernel-key keeps it)
    kernel_key: Path | None = args.kernel_key
    if kernel_key is not None and out is not None and kernel_key.resolve().is_relative_to(
            out.resolve()):
        raise CliError(f"{kernel_key}: the kernel key must live outside the bundle "
                       "(whoever holds it can sign receipts)")
    import tempfile  # (here: most commands never need it, and every one pays its import)

    if args.open and out is None:  # its provider is rooted there before the build starts
        out = Path(tempfile.mkdtemp(prefix="codeai-demo-"))
    keys = (tempfile.TemporaryDirectory(prefix="codeai-demo-kernel-")
            if args.open and kernel_key is None else None)
    if keys is not None:
        kernel_key = Path(keys.name) / "kernel.key"
    try:
        return _demo(args, out, kernel_key, new_bundle_id())
    finally:
        if keys is not None:
            keys.cleanup()


def _start_demo_provider(bundle: Path, bundle_id: str) -> tuple[ProviderProcess | None, str]:
    """The bundle's provider for `demo --open`, bound before any case.json names its port:
    on the usual port, else on one the system chooses (bound by the provider itself and
    reported back). Returns it (None if none could start) and the console's note."""
    from codeai_tui.demo import DEMO_PROVIDER_PORT
    from codeai_tui.lab.provider import ProviderProcess

    problems: list[str] = []
    for port in (DEMO_PROVIDER_PORT, 0):
        provider = ProviderProcess(receipts_root=bundle, port=port, bundle_id=bundle_id)
        try:
            provider.start()
        except RuntimeError as exc:
            problems.append(str(exc))
            continue
        if provider.port != DEMO_PROVIDER_PORT:
            _err(f"note: port {DEMO_PROVIDER_PORT} is taken; this bundle's case.json files "
                 f"name port {provider.port} instead")
        return provider, (f"demo provider on 127.0.0.1:{provider.port}: resumes from this "
                          "console reach it (receipts go to each case's "
                          "provider/receipts.jsonl)")
    why = "; ".join(problems)
    _err(f"note: no provider for resumes from the console ({why})")
    return None, (f"no demo provider ({why[:160]}): resumes from this console are refused "
                  "and send nothing")


def _demo(args: argparse.Namespace, out: Path | None, kernel_key: Path | None,
          bundle_id: str) -> int:
    from codeai_tui.demo import DEMO_PROVIDER_PORT, build_demo, start_live

    provider: ProviderProcess | None = None
    note = ""
    if args.open:
        assert out is not None
        out.mkdir(parents=True, exist_ok=True)
        provider, note = _start_demo_provider(out.resolve(), bundle_id)
    port = provider.port if provider is not None else DEMO_PROVIDER_PORT
    live: subprocess.Popen[str] | None = None
    try:
        bundle = build_demo(out, port, kernel_key, bundle_id)
        # at once: with --live or --open the command runs on, and a script reading the
        # path from a pipe (block-buffered) would otherwise get it only when it ends
        print(bundle, flush=True)
        live = start_live(bundle, args.rate, case_port=port) if args.live else None
        if args.open:
            args.path, args.theme, args.read_only = str(bundle), None, False
            args.model, args.base_url, args.api_key_env = None, None, None
            args.kernel_key = kernel_key
            return cmd_open(args, provider_note=note)
        if live is not None:
            print(f"live producer running (its notes go to {bundle / 'live.log'}); "
                  "Ctrl-C to stop", file=sys.stderr)
            live.wait()
    finally:
        if live is not None:
            _stop_process(live)
        if provider is not None:
            provider.stop()
    return EXIT_OK


def _stop_process(proc: subprocess.Popen[str]) -> None:
    """SIGTERM (the live producer then stops what it started), SIGKILL after 10 s."""
    import subprocess

    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
