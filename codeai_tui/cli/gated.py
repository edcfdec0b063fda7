"""How the command line drives a gated write: the action is the one the registry holds
(codeai_tui/actions/registry.py: the console and the reliability harness drive the same
object), and the command adds only what a terminal needs around it.

Every gated write command runs the same steps, in `run_gated`:

1. its own checks of the arguments (bad input: exit 2, before anything is read);
2. the action's read-only plan (nothing written, nothing sent);
3. the confirmation: the plan shown, the typed id asked for, unless --yes
   (common.confirm), which makes the operator's `Decision`;
4. the action's run through the gate, pinned to the evidence the plan showed;
5. what it did, printed, and the exit code.

Steps 2 to 4 run inside common.write_action: a refusal is one line and exit 3, an input
the action cannot use one line and exit 2; nothing is appended either way.

The registry is imported when a gated command runs, not when the parser is built: a
read command does not pay for the action modules (about 0.16 s of imports).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeai_tui.cli.common import CliError, Command, write_action

if TYPE_CHECKING:
    from codeai_tui.actions.protocol import ActionOptions, Decision, Done, GatedAction


def no_check(_args: argparse.Namespace) -> None:
    """A command whose arguments the parser's checks suffice for."""


def call_id_given(args: argparse.Namespace) -> None:
    if not args.call_id.strip():
        raise CliError("the call id is empty")


def the_call(_case: Path, args: argparse.Namespace) -> str:
    """The call the plan is of: the one named."""
    return str(args.call_id)


def action_plan(action: GatedAction, case: Path, call_id: str,
                options: ActionOptions) -> Any:
    """The registry action's own read-only plan (what the console's dialog shows)."""
    return action.plan(case, call_id, options)


@dataclass(frozen=True, slots=True)
class GatedCommand:
    """One gated write's subcommand. `name` is the registry's name for the action and
    the subcommand's; the rest is what the command line adds around the action."""

    name: str
    help: str  # the one line in `codeai-tui --help`
    add_arguments: Callable[[argparse.ArgumentParser], None]
    # the operator's options, before any plan (ActionOptions)
    options: Callable[[argparse.Namespace], ActionOptions]
    # show the plan and ask (unless --yes): the operator's Decision, or Refused
    decide: Callable[[Any, argparse.Namespace], Decision]
    # print what the run did (Done.result); the exit code
    report: Callable[[Done, argparse.Namespace], int]
    check: Callable[[argparse.Namespace], None] = call_id_given
    # the call the plan is of (reconcile-tool names an operation: its planning call)
    call: Callable[[Path, argparse.Namespace], str] = the_call
    # the plan the confirmation shows (replay's preview: shown before its refusals)
    plan: Callable[[GatedAction, Path, str, ActionOptions], Any] = action_plan

    def command(self) -> Command:
        """The record the parser and the dispatch are built from."""
        return Command(self.name, self.help, self.add_arguments, partial(run_gated, self))


def _quiet(_text: str) -> None:
    """The run's progress: a command prints what it did when it ends, not as it goes."""


def run_gated(command: GatedCommand, args: argparse.Namespace) -> int:
    """The steps every gated write command takes (module docstring)."""
    from codeai_tui.actions.registry import BY_NAME

    case = Path(args.case)
    if not case.is_dir():
        raise CliError(f"{args.case}: not a case directory")
    command.check(args)
    action = BY_NAME[command.name]
    with write_action():
        options = command.options(args)
        plan = command.plan(action, case, command.call(case, args), options)
        decision = command.decide(plan, args)
        done = action.run(plan, decision, options, _quiet)
    return command.report(done, args)
