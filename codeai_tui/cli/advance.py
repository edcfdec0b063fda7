"""`codeai-tui reinterpret|redecide|finalize|next-attempt CASE CALL_ID [...] [--yes]`.

Same contract as `reconcile`: exit 0 appended, 3 refused (the projected next operation
and why on stderr, nothing appended), 2 bad input (one line); next-attempt ends like
resume: 0 succeeded, 4 failed, 5 effect unknown. Each is one GatedCommand (cli/gated.py)
driving the registry's action of the same name.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from codeai_tui.cli import arguments as arg
from codeai_tui.cli.common import (
    EXIT_OK,
    CliError,
    ask,
    confirm,
    need_confirmation_terminal,
    outcome_exit,
    plan_line,
    say,
)
from codeai_tui.cli.gated import GatedCommand
from codeai_tui.textsafe import visible

if TYPE_CHECKING:
    from codeai_tui.actions.advance import AdvancePlan
    from codeai_tui.actions.protocol import ActionOptions, Decision, Done


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


def _check(args: argparse.Namespace) -> None:
    """Bad input before anything is read: no call, a policy limit out of range, or no
    terminal to confirm on."""
    from codeai_tui.actions import advance

    if not args.call_id.strip():
        raise CliError("the call id is empty")
    max_attempts = getattr(args, "max_attempts", advance.DEFAULT_MAX_ATTEMPTS)
    if not 1 <= max_attempts <= advance.MAX_ATTEMPTS_LIMIT:
        raise CliError(f"--max-attempts must be 1..{advance.MAX_ATTEMPTS_LIMIT}")
    if not args.yes:
        need_confirmation_terminal(args.command)


def _options(args: argparse.Namespace) -> ActionOptions:
    from codeai_tui.actions.protocol import ActionOptions

    return ActionOptions(base_url=getattr(args, "base_url", None),
                         api_key_env=getattr(args, "api_key_env", None),
                         timeout=getattr(args, "timeout", None),
                         deadline=getattr(args, "deadline", None),
                         max_attempts=getattr(args, "max_attempts", None),
                         accept_duplicate=bool(getattr(args, "accept_duplicate", False)))


def _decide(plan: AdvancePlan, args: argparse.Namespace) -> Decision:
    from codeai_tui.actions.protocol import Decision

    verb = args.command
    if verb == "next-attempt":
        return _next_attempt_decide(plan, args)
    accept = bool(getattr(args, "accept_duplicate", False))
    confirm(args.yes, verb,
            f"{verb} {args.call_id}" + (" accepting a duplicate?" if accept else "?")
            + f" Type the call id ({args.call_id}): ",
            typed=args.call_id, declined=f"not done: {verb}")
    return Decision(note=getattr(args, "note", None), accept_duplicate=accept)


def _next_attempt_decide(advance: AdvancePlan, args: argparse.Namespace) -> Decision:
    """Where the request goes, shown; whether the credential goes with it."""
    from codeai_tui.actions.protocol import Decision

    plan = advance.next_attempt
    assert plan is not None  # the action plans where a next attempt goes
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
    return Decision(send_credential=send)


def _report(done: Done, args: argparse.Namespace) -> int:
    result = done.result
    print(visible(result.summary(), one_line=True))
    if args.command != "next-attempt":
        return EXIT_OK
    for note in result.notes:  # as resume: a Retry-After waited out, why no whole answer
        say(f"note: {note}")
    return outcome_exit(result.status)


GATED = tuple(GatedCommand(name, text, _arguments(name), _options, _decide, _report,
                           check=_check) for name, text in (
    ("reinterpret", "interpret an observed attempt's stored response again (no network)"),
    ("redecide", "decide retry or stop from the recorded interpretation, under the policy"),
    ("finalize", "record the terminal events where the projection says finalize"),
    ("next-attempt", "start the next attempt where the projection says start_next_attempt"),
))
COMMANDS = tuple(command.command() for command in GATED)
