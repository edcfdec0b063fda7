"""The write commands on a call or a tool operation: resume, reconcile, reconcile-tool and
replay. Each is one GatedCommand (cli/gated.py) driving the registry's action: its
arguments, its options, its confirmation (common.confirm, unless --yes) and what it prints
when the run ends. A refusal is exit 3 and a bad input exit 2, each one line, nothing
written (common.write_action)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeai_tui.cli import arguments as arg
from codeai_tui.cli.common import (
    EXIT_OK,
    CliError,
    ask,
    confirm,
    outcome_exit,
    plan_line,
    refusal,
    say,
)
from codeai_tui.cli.gated import GatedCommand, no_check
from codeai_tui.textsafe import visible

if TYPE_CHECKING:
    from codeai_tui.actions.protocol import ActionOptions, Decision, Done, GatedAction
    from codeai_tui.actions.reconcile_plan import ToolReconcilePlan
    from codeai_tui.actions.replay import ReplayShown
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


def _resume_options(args: argparse.Namespace) -> ActionOptions:
    from codeai_tui.actions.protocol import ActionOptions

    return ActionOptions(model=args.model, base_url=args.base_url,
                         api_key_env=args.api_key_env, timeout=args.timeout,
                         max_retry_wait=args.max_retry_wait, deadline=args.deadline)


def _resume_decide(plan: ResumePlan, args: argparse.Namespace) -> Decision:
    """A plan that drifts is refused; else the confirmation (or --yes, with its notes)
    and whether the credential goes."""
    from codeai_tui.actions.gate import ActionRefused
    from codeai_tui.actions.protocol import Decision

    if plan.drift:
        raise ActionRefused(None, f"call {args.call_id}: drift, refusing: " + "; ".join(plan.drift))
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
    return Decision(reason=args.reason, send_credential=send_credential)


def _resume_report(done: Done, _args: argparse.Namespace) -> int:
    result = done.result
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


def _finding_options(args: argparse.Namespace) -> ActionOptions:
    from codeai_tui.actions.protocol import ActionOptions

    return ActionOptions(operation_key=getattr(args, "operation_key", None))


def _finding(args: argparse.Namespace) -> Decision:
    from codeai_tui.actions.protocol import Decision

    return Decision(finding=args.finding, note=args.note)


def _reconcile_decide(_plan: Any, args: argparse.Namespace) -> Decision:
    confirm(args.yes, "reconcile",
            f"Record finding {args.finding} for {args.call_id}? Type the call id: ",
            typed=args.call_id, declined="not reconciled")
    return _finding(args)


def _reconcile_report(done: Done, _args: argparse.Namespace) -> int:
    """Exit 0: appended (a refusal ended the command before: exit 3, nothing appended)."""
    result = done.result
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


def _operation_key_given(args: argparse.Namespace) -> None:
    if not args.operation_key.strip():
        raise CliError("the operation key is empty")


def _planning_call(case: Path, args: argparse.Namespace) -> str:
    """The call that admitted the operation named (UnknownOperation: exit 2)."""
    from codeai_tui.actions.reconcile_plan import planning_call

    return planning_call(case, args.operation_key)


def _reconcile_tool_decide(plan: ToolReconcilePlan, args: argparse.Namespace) -> Decision:
    """The confirmation asks for the tool-call id (the key's last part) typed."""
    key = args.operation_key
    tool_call_id = key.rsplit("/", 1)[-1]
    confirm(args.yes, "reconcile",
            f"Record finding {args.finding} for operation {key}? Type its tool-call id "
            f"({tool_call_id}): ", typed=tool_call_id, declined="not reconciled")
    return _finding(args)


def _reconcile_tool_report(done: Done, _args: argparse.Namespace) -> int:
    result = done.result
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


def _replay_options(args: argparse.Namespace) -> ActionOptions:
    from codeai_tui.actions.protocol import ActionOptions

    return ActionOptions(kernel_key=args.kernel_key)


def _replay_read(action: GatedAction, case: Path, call_id: str,
                 options: ActionOptions) -> ReplayShown:
    """The preview without the console's refusals: the command line shows the plan and
    each operation's state before it says why it will not run, and "nothing to run" is
    not a refusal here (the follow-up may still be due)."""
    from codeai_tui.actions.replay import Replay

    assert isinstance(action, Replay)
    return action.read(case, call_id, options)


def _replay_decide(shown: ReplayShown, args: argparse.Namespace) -> Decision:
    """Preview the plan and each operation's state; refuse where an operation is
    admitted without an outcome; ask before running the rest."""
    from codeai_tui.actions.protocol import Decision

    plan = shown.plan
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
    return Decision()


def _replay_report(done: Done, args: argparse.Namespace) -> int:
    from codeai_tui.tools.kernel import Outcome

    replayed = done.result
    for completed in replayed.completed:
        outcome = ("found to have run, outcome unknown (not run again)"
                   if completed.outcome is Outcome.UNKNOWN else completed.outcome.value)
        print(f"{visible(completed.operation_key, one_line=True)}: {outcome}")
    follow_up = replayed.follow_up
    if follow_up is not None:
        print(f"recorded the follow-up call {visible(follow_up, one_line=True)} with these "
              f"results (not sent); next: codeai-tui resume {visible(str(args.case), one_line=True)} "
              f"{visible(follow_up, one_line=True)}")
    return EXIT_OK


GATED = (
    GatedCommand("resume", "resume one call where the projection permits it",
                 _resume_arguments, _resume_options, _resume_decide, _resume_report),
    GatedCommand("reconcile", "record a finding for a call whose effect is unknown",
                 _reconcile_arguments, _finding_options, _reconcile_decide,
                 _reconcile_report),
    GatedCommand("reconcile-tool", "record whether a tool operation whose effect is unknown "
                 "ran", _reconcile_tool_arguments, _finding_options, _reconcile_tool_decide,
                 _reconcile_tool_report, check=_operation_key_given, call=_planning_call),
    GatedCommand("replay", "run a saved tool plan's never-admitted operations, without the "
                 "provider", _replay_arguments, _replay_options, _replay_decide,
                 _replay_report, check=no_check, plan=_replay_read),
)
COMMANDS = tuple(command.command() for command in GATED)
