"""`codeai-tui PATH` (`open`): the console on a case directory, a ledger file or a bundle.
Everything that can be named in one line (a missing path, key or theme, no terminal) is
named before the screen opens."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from codeai_tui.cli import arguments as arg
from codeai_tui.cli.common import EXIT_OK, CliError, Command
from codeai_tui.textsafe import visible


def _open_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=arg.path_text)
    p.add_argument("--theme", default=None, help="theme name (see themes/)")
    p.add_argument("--read-only", action="store_true", help="make every write path unreachable")
    p.add_argument("--model", type=arg.model, default=None,
                   help="override case.json's model for resume")
    p.add_argument("--base-url", type=arg.base_url, default=None,
                   help="override case.json's provider base_url")
    p.add_argument("--api-key-env", type=arg.env_name, default=None, metavar="VAR",
                   help="the environment variable holding the provider credential")
    p.add_argument("--kernel-key", type=arg.path_text, default=None, metavar="PATH",
                   help="the tool kernel's signing key: lets `R` replay a saved tool plan")


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


def open_console(args: argparse.Namespace, provider_note: str | None = None) -> int:
    """Open the console as `args` (the `open` command's) say; `provider_note` is what
    `demo --open` tells the operator about where resumes go."""
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


COMMANDS = (
    Command("open", "open the console on a case or bundle (the default)", _open_arguments,
            open_console),
)
