"""The write commands on a call or a tool operation: resume, reconcile, reconcile-tool and
replay. Each checks its input, asks the one confirmation (common.confirm) unless --yes,
and runs its action inside common.write_action, which says a refusal (exit 3, nothing
written) or a bad input (exit 2) in one line."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from codeai_tui.cli import arguments as arg
from codeai_tui.cli.common import (
    EXIT_OK,
    CliError,
    Command,
    ask,
    confirm,
    outcome_exit,
    plan_line,
    refusal,
    say,
    write_action,
)
from codeai_tui.textsafe import visible

if TYPE_CHECKING:
    from codeai_tui.actions.resume import ResumePlan


def _resume_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("case", type=arg.path_text)
    p.add_argument("call_id")
    p.add_argument("--model", type=arg.model, default=None)
    arg.destination(p)
    p.add_argument("--reason", default=None, help="recorded in call.resumed")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    p.add_argument("--max-retry-wait", type=arg.seconds, default=None, metavar="S",
                   help="the longest Retry-After honoured before a retry; a longer one "
                        "stops the call (default 30)")
    arg.send_limits(p)


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


def _confirm(plan: ResumePlan) -> bool:
    """Ask on the terminal (Refused when the operator says no); whether to send the
    credential."""
    shown = [plan_line(label, value) for label, value in _plan_rows(plan)]
    active = plan.still_active(datetime.now(UTC))
    if active is not None:
        shown.append(f"  WARNING: {visible(active, one_line=True)}")
    if not plan.drift_check_possible:
        shown.append("  WARNING: no manifest was recorded, so no drift check is possible.")
    if not plan.drift_check_possible or active is not None:
        confirm(False, "resume", f"Type the call id ({plan.call_id}) to resume: ",
                typed=plan.call_id, declined="not resumed", shown=shown)
    else:
        confirm(False, "resume", "Resume this call? [y/N] ", typed=None,
                declined="not resumed", shown=shown)
    dest = plan.destination
    send = dest.trusted
    if dest.needs_credential_confirmation:
        send = ask(dest.credential_question())
    return send


def cmd_resume(args: argparse.Namespace) -> int:
    from codeai_tui.actions.resume import ResumeRefused, plan_resume, resume_call

    case = Path(args.case)
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    if not args.call_id.strip():
        raise CliError("the call id is empty")
    with write_action():
        plan = plan_resume(case, args.call_id, model=args.model, base_url=args.base_url,
                           api_key_env=args.api_key_env, ask_destination=True)
        if plan.drift:
            raise ResumeRefused(None, f"call {args.call_id}: drift, refusing: " + "; ".join(plan.drift))
        if not args.yes:
            send_credential = _confirm(plan)
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
        say(f"note: sending to {plan.destination.base_url}; {line}")
        result = resume_call(
            case, args.call_id, model=args.model, base_url=args.base_url,
            api_key_env=args.api_key_env, send_credential=send_credential, reason=args.reason,
            expected=plan, timeout=args.timeout, max_retry_wait=args.max_retry_wait,
            deadline=args.deadline,
        )
    print(
        f"resumed {visible(result.old_call_id, one_line=True)} as "
        f"{visible(result.new_call_id, one_line=True)}: {result.status}; "
        f"receipts {result.receipts_before} -> {result.receipts_after}"
    )
    for note in result.notes:  # a Retry-After waited out, or one too long to wait
        say(f"note: {note}")
    if result.warning is not None:
        say(f"warning: {result.warning}")
    return outcome_exit(result.status)


def _reconcile_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("case", type=arg.path_text)
    p.add_argument("call_id")
    p.add_argument("--finding", required=True, choices=("received", "not_received"),
                   help="did the provider receive the last attempt (docs/reconcile.md)")
    p.add_argument("--note", default=None, help="recorded in attempt.reconciled")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def cmd_reconcile(args: argparse.Namespace) -> int:
    """Record the operator's finding for an effect-unknown call: exit 0 when appended,
    3 when the projection or the receipt log refuses it (nothing appended), 2 bad input."""
    from codeai_tui.actions.reconcile import reconcile_call

    case = Path(args.case)
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    if not args.call_id.strip():
        raise CliError("the call id is empty")
    confirm(args.yes, "reconcile",
            f"Record finding {args.finding} for {args.call_id}? Type the call id: ",
            typed=args.call_id, declined="not reconciled")
    with write_action():
        result = reconcile_call(case, args.call_id, args.finding, args.note)
    st = result.state
    receipts = ", ".join(result.evidence) or "none"
    print(visible(
        f"reconciled {result.call_id} attempt {result.attempt_id} as {result.finding} "
        f"(seq {result.seq}; matching receipts: {receipts}); now {st.stage.value}, "
        f"next {st.next_operation.value}, provider effect {st.provider_effect.value}",
        one_line=True))
    return EXIT_OK


def _reconcile_tool_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("case", type=arg.path_text)
    p.add_argument("operation_key", help="namespace/thread/turn/tool_call_id")
    p.add_argument("--finding", required=True, choices=("executed", "not_executed"),
                   help="what the tool's own records say (docs/tools.md); not_executed "
                        "lets replay run it again")
    p.add_argument("--note", default=None, help="recorded in tool.reconciled")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def cmd_reconcile_tool(args: argparse.Namespace) -> int:
    """Record what the tool's own records say of an operation whose effect is unknown:
    exit 0 when appended, 3 when the projection refuses it (nothing appended), 2 bad
    input. The confirmation asks for the tool-call id (the key's last part) typed."""
    from codeai_tui.actions.reconcile import reconcile_operation

    case = Path(args.case)
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    key = args.operation_key
    if not key.strip():
        raise CliError("the operation key is empty")
    tool_call_id = key.rsplit("/", 1)[-1]
    confirm(args.yes, "reconcile",
            f"Record finding {args.finding} for operation {key}? Type its tool-call id "
            f"({tool_call_id}): ", typed=tool_call_id, declined="not reconciled")
    with write_action():
        result = reconcile_operation(case, key, args.finding, args.note)
    op = result.state
    print(visible(
        f"reconciled operation {result.operation_key} (call {result.call_id}) as "
        f"{result.finding} (seq {result.seq}); now {op.stage.value}, next "
        f"{op.next_operation.value}", one_line=True))
    return EXIT_OK


def _replay_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("case", type=arg.path_text)
    p.add_argument("call_id", help="the call whose saved response holds the tool plan")
    p.add_argument("--kernel-key", type=arg.path, required=True, metavar="PATH",
                   help="the tool kernel's private key (kept outside the case)")
    p.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def cmd_replay(args: argparse.Namespace) -> int:
    """Preview the plan and each operation's state; refuse (exit 3, nothing written) where
    an operation is admitted without an outcome; run the rest only after confirmation."""
    from codeai_tui.ledger.writer import LedgerWriter
    from codeai_tui.tools import PUBLISH_REPORT, PublishReport, ToolKernel
    from codeai_tui.tools.kernel import Outcome
    from codeai_tui.tools.replay import plan_replay, record_follow_up, run_replay

    case = Path(args.case)
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    with write_action():
        plan = plan_replay(case, args.call_id)
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
        raise refusal(plan.refusal)
    if not plan.to_run:
        print("nothing to run: every planned operation is completed or found to have run")
    else:
        confirm(args.yes, "replay",
                f"Run {len(plan.to_run)} operation(s) with their original tool-call ids? [y/N] ",
                typed=None, declined="not replayed")
    with write_action(), LedgerWriter.open(case) as writer:
        kernel = ToolKernel.open(case, writer, args.kernel_key,
                                 {PUBLISH_REPORT: PublishReport(case)}, namespace=plan.namespace)
        done = run_replay(plan, kernel)
        follow_up = record_follow_up(case, writer, plan, done)
    for completed in done:
        outcome = ("found to have run, outcome unknown (not run again)"
                   if completed.outcome is Outcome.UNKNOWN else completed.outcome.value)
        print(f"{visible(completed.operation_key, one_line=True)}: {outcome}")
    if follow_up is not None:
        print(f"recorded the follow-up call {visible(follow_up, one_line=True)} with these "
              f"results (not sent); next: codeai-tui resume {visible(str(case), one_line=True)} "
              f"{visible(follow_up, one_line=True)}")
    return EXIT_OK


COMMANDS = (
    Command("resume", "resume one call where the projection permits it", _resume_arguments,
            cmd_resume),
    Command("reconcile", "record a finding for a call whose effect is unknown",
            _reconcile_arguments, cmd_reconcile),
    Command("reconcile-tool", "record whether a tool operation whose effect is unknown ran",
            _reconcile_tool_arguments, cmd_reconcile_tool),
    Command("replay", "run a saved tool plan's never-admitted operations, without the "
                      "provider", _replay_arguments, cmd_replay),
)
