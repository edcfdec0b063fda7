"""`codeai-tui reinterpret|redecide|finalize|next-attempt CASE CALL_ID [...] [--yes]`.

Same contract as `reconcile`: exit 0 appended, 3 refused (the projected next operation
and why on stderr, nothing appended), 2 bad input (one line); next-attempt ends like
resume: 0 succeeded, 4 failed, 5 effect unknown.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from codeai_tui.cli import arguments as arg
from codeai_tui.cli.common import (
    EXIT_OK,
    CliError,
    Command,
    ask,
    confirm,
    need_confirmation_terminal,
    outcome_exit,
    plan_line,
    say,
    write_action,
)
from codeai_tui.textsafe import visible


def _arguments(name: str) -> Callable[[argparse.ArgumentParser], None]:
    """The arguments of one of the four (they share the case, the call and --yes)."""

    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("case", type=arg.path_text)
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
            arg.destination(p)
            arg.send_limits(p)
        p.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    return add


def cmd_advance(args: argparse.Namespace) -> int:
    from codeai_tui.actions import advance

    case = Path(args.case)
    verb = args.command
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    if not args.call_id.strip():
        raise CliError("the call id is empty")
    max_attempts = getattr(args, "max_attempts", advance.DEFAULT_MAX_ATTEMPTS)
    if not 1 <= max_attempts <= advance.MAX_ATTEMPTS_LIMIT:
        raise CliError(f"--max-attempts must be 1..{advance.MAX_ATTEMPTS_LIMIT}")
    if not args.yes:
        need_confirmation_terminal(verb)
    accept = bool(getattr(args, "accept_duplicate", False))
    note = getattr(args, "note", None)
    with write_action():
        if verb == "next-attempt":
            return _next_attempt(args, case, max_attempts)
        confirm(args.yes, verb,
                f"{verb} {args.call_id}" + (" accepting a duplicate?" if accept else "?")
                + f" Type the call id ({args.call_id}): ",
                typed=args.call_id, declined=f"not done: {verb}")
        if verb == "reinterpret":
            result = advance.reinterpret(case, args.call_id)
        elif verb == "redecide":
            result = advance.redecide(case, args.call_id, max_attempts=max_attempts,
                                      accept_duplicate=accept, note=note)
        else:
            result = advance.finalize(case, args.call_id, accept_duplicate=accept, note=note)
    print(visible(result.summary(), one_line=True))
    return EXIT_OK


def _next_attempt(args: argparse.Namespace, case: Path, max_attempts: int) -> int:
    from codeai_tui.actions import advance

    plan = advance.plan_next_attempt(case, args.call_id, base_url=args.base_url,
                                     api_key_env=args.api_key_env, ask_destination=True)
    dest = plan.destination
    send = dest.trusted  # --yes never sends a credential where the operator did not name
    if not args.yes:
        shown = [plan_line(label, value) for label, value in (
            ("call", plan.call_id), ("stage", plan.stage),
            ("attempt", str(plan.attempt_no)),
            ("idempotency key", plan.idempotency_key),
            ("request sha256", plan.request_sha256),
            ("destination", f"{dest.base_url}  (from {dest.base_url_from})"))]
        confirm(False, "next-attempt", "Send the recorded request again as the next attempt?"
                f" Type the call id ({plan.call_id}): ", typed=plan.call_id,
                declined="not done: next-attempt", shown=shown)
        if dest.needs_credential_confirmation:
            send = ask(dest.credential_question())
    say(f"note: sending to {dest.base_url}; {dest.credential_line(send)}")
    result = advance.next_attempt(case, args.call_id, base_url=args.base_url,
                                  api_key_env=args.api_key_env, send_credential=send,
                                  max_attempts=max_attempts, expected=plan,
                                  timeout=args.timeout, deadline=args.deadline)
    print(visible(result.summary(), one_line=True))
    for note in result.notes:  # as resume: a Retry-After waited out, why no whole answer
        say(f"note: {note}")
    return outcome_exit(result.status)


COMMANDS = tuple(Command(name, text, _arguments(name), cmd_advance) for name, text in (
    ("reinterpret", "interpret an observed attempt's stored response again (no network)"),
    ("redecide", "decide retry or stop from the recorded interpretation, under the policy"),
    ("finalize", "record the terminal events where the projection says finalize"),
    ("next-attempt", "start the next attempt where the projection says start_next_attempt"),
))
