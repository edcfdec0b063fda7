"""`codeai-tui reinterpret|redecide|finalize|next-attempt CASE CALL_ID [...] [--yes]`.

Same contract as `reconcile`: exit 0 appended, 3 refused (the projected next operation
and why on stderr, nothing appended), 2 bad input (one line); next-attempt ends like
resume: 0 succeeded, 4 failed, 5 effect unknown.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from codeai_tui.cli.common import (
    EXIT_EFFECT_UNKNOWN,
    EXIT_OK,
    EXIT_REFUSED,
    OUTCOME_EXIT,
    CliError,
    _err,
    refused,
)
from codeai_tui.textsafe import visible


def _ask(question: str, call_id: str) -> bool:
    answer = input(visible(f"{question} Type the call id ({call_id}): ", one_line=True))
    return answer.strip() == call_id


def cmd_advance(args: argparse.Namespace) -> int:
    from codeai_tui.actions import advance
    from codeai_tui.actions.resume import ResumeRefused, UnknownCall
    from codeai_tui.runtime.destination import DestinationError

    case = Path(args.case)
    verb = args.command
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    if not args.call_id.strip():
        raise CliError("the call id is empty")
    max_attempts = getattr(args, "max_attempts", advance.DEFAULT_MAX_ATTEMPTS)
    if not 1 <= max_attempts <= advance.MAX_ATTEMPTS_LIMIT:
        raise CliError(f"--max-attempts must be 1..{advance.MAX_ATTEMPTS_LIMIT}")
    if not args.yes and not sys.stdin.isatty():
        raise CliError(f"refusing to {verb} without confirmation: run on a terminal or pass --yes")
    accept = bool(getattr(args, "accept_duplicate", False))
    note = getattr(args, "note", None)
    try:
        if verb == "next-attempt":
            return _next_attempt(args, case, max_attempts)
        if not args.yes and not _ask(f"{verb} {args.call_id}"
                                     + (" accepting a duplicate?" if accept else "?"),
                                     args.call_id):
            print(f"not done: {verb}", file=sys.stderr)
            return EXIT_REFUSED
        if verb == "reinterpret":
            result = advance.reinterpret(case, args.call_id)
        elif verb == "redecide":
            result = advance.redecide(case, args.call_id, max_attempts=max_attempts,
                                      accept_duplicate=accept, note=note)
        else:
            result = advance.finalize(case, args.call_id, accept_duplicate=accept, note=note)
    except UnknownCall as exc:
        raise CliError(exc.reason) from None
    except DestinationError as exc:
        raise CliError(str(exc)) from None
    except ResumeRefused as exc:
        return refused(exc)
    print(visible(result.summary(), one_line=True))
    return EXIT_OK


def _next_attempt(args: argparse.Namespace, case: Path, max_attempts: int) -> int:
    from codeai_tui.actions import advance

    plan = advance.plan_next_attempt(case, args.call_id, base_url=args.base_url,
                                     api_key_env=args.api_key_env, ask_destination=True)
    dest = plan.destination
    send = dest.trusted  # --yes never sends a credential where the operator did not name
    if not args.yes:
        for label, value in (("call", plan.call_id), ("stage", plan.stage),
                             ("attempt", str(plan.attempt_no)),
                             ("idempotency key", plan.idempotency_key),
                             ("request sha256", plan.request_sha256),
                             ("destination", f"{dest.base_url}  (from {dest.base_url_from})")):
            print(f"  {label:<17} {visible(value, one_line=True)}", file=sys.stderr)
        if not _ask("Send the recorded request again as the next attempt?", plan.call_id):
            print("not done: next-attempt", file=sys.stderr)
            return EXIT_REFUSED
        if dest.needs_credential_confirmation:
            question = dest.credential_question()
            send = input(visible(question, one_line=True)).strip().lower() in ("y", "yes")
    _err(f"note: sending to {dest.base_url}; {dest.credential_line(send)}")
    result = advance.next_attempt(case, args.call_id, base_url=args.base_url,
                                  api_key_env=args.api_key_env, send_credential=send,
                                  max_attempts=max_attempts, expected=plan,
                                  timeout=args.timeout, deadline=args.deadline)
    print(visible(result.summary(), one_line=True))
    for note in result.notes:  # as resume: a Retry-After waited out, why no whole answer
        _err(f"note: {note}")
    return OUTCOME_EXIT.get(result.status or "", EXIT_EFFECT_UNKNOWN)
