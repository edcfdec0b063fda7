"""The command line's gated writes drive the registry's actions (actions/registry.py),
the objects the console and the reliability harness drive: one command per registered
action, whose plan and run are the registry's, with the command line's options and
choices carried in ActionOptions and Decision; and one family of refusals mapped to the
exit codes (ActionRefused: 3; UnusableInput, bad input: 2)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from ledgerfactory import write_ledger

from codeai_tui.actions import registry
from codeai_tui.actions.gate import ActionRefused, UnusableInput
from codeai_tui.actions.protocol import ActionOptions, Decision, Done, Progress, Selected
from codeai_tui.cli import actions as action_commands
from codeai_tui.cli import advance as advance_commands
from codeai_tui.cli import main as cli
from codeai_tui.cli.common import EXIT_BAD_INPUT, EXIT_OK, EXIT_REFUSED
from codeai_tui.workstate import NextOperation
from tests.support import TESTS


def _case(tmp_path: Path, vector: str) -> Path:
    v = json.loads((TESTS / "conformance_ext" / f"{vector}.json").read_text())
    return write_ledger(tmp_path / vector, v["events"], receipts=v["receipts"]).parent


class Watched:
    """A registered action, watched: what the command line asked of it, then the real
    action's answer (or `fails`, raised by its run instead)."""

    def __init__(self, real: Any, fails: Exception | None = None) -> None:
        self.real, self.fails = real, fails
        self.name, self.key, self.done_word = real.name, real.key, real.done_word
        self.asked: list[tuple[str, Any]] = []

    def refusal(self, selected: Selected) -> str | None:
        return self.real.refusal(selected)

    def permitted(self, selected: Selected) -> bool:
        return self.real.permitted(selected)

    def explain(self, selected: Selected) -> str:
        return self.real.explain(selected)

    def plan(self, case: Path, call_id: str, options: ActionOptions) -> Any:
        self.asked.append(("plan", (call_id, options)))
        return self.real.plan(case, call_id, options)

    def run(self, plan: Any, decision: Decision, options: ActionOptions,
            progress: Progress) -> Done:
        self.asked.append(("run", decision))
        if self.fails is not None:
            raise self.fails
        return self.real.run(plan, decision, options, progress)


def _watch(monkeypatch: pytest.MonkeyPatch, name: str,
           fails: Exception | None = None) -> Watched:
    watched = Watched(registry.BY_NAME[name], fails)
    monkeypatch.setitem(registry.BY_NAME, name, watched)
    return watched


def test_every_registered_action_is_one_gated_command() -> None:
    gated = [c.name for c in (*action_commands.GATED, *advance_commands.GATED)]
    assert Counter(gated) == Counter(a.name for a in registry.ACTIONS)  # each once
    commands = {c.name for c in cli.REGISTRY}
    assert set(gated) <= commands


def test_the_command_plans_and_runs_the_registry_action_with_its_options(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    case = _case(tmp_path, "evidence_received")
    watched = _watch(monkeypatch, "reconcile")
    code = cli.main(["reconcile", str(case), "c1", "--finding", "received", "--note", "seen",
                     "--yes"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert [step for step, _ in watched.asked] == ["plan", "run"]
    (_, (call_id, _options)), (_, decision) = watched.asked
    assert call_id == "c1"
    assert (decision.finding, decision.note) == ("received", "seen")
    assert out.startswith("reconciled c1 attempt ") and "as received" in out


def test_the_limits_given_reach_the_action_as_options(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """--max-attempts and --accept-duplicate are options of the plan (the step is chosen
    before it). c1's effect is unknown, so the registry's plan refuses redecide there
    (and a run, were one asked for, would be refused by the watcher: nothing appended)."""
    case = _case(tmp_path, "evidence_received")
    watched = _watch(monkeypatch, "redecide", fails=ActionRefused(
        NextOperation.REDECIDE, "stopped by the test"))
    code = cli.main(["redecide", str(case), "c1", "--max-attempts", "3", "--accept-duplicate",
                     "--note", "n", "--yes"])
    err = capsys.readouterr().err
    assert code == EXIT_REFUSED
    assert [step for step, _ in watched.asked] == ["plan"]
    (_, (_call, options)), = watched.asked
    assert (options.max_attempts, options.accept_duplicate) == (3, True)
    assert err.startswith("codeai-tui: refused (next operation: reconcile_effect): ")


@pytest.mark.parametrize(("raised", "code", "line"), [
    (ActionRefused(NextOperation.FINALIZE, "not now"), EXIT_REFUSED,
     "codeai-tui: refused (next operation: finalize): not now"),
    (ActionRefused(None, "the call moved"), EXIT_REFUSED, "codeai-tui: refused: the call moved"),
    (UnusableInput("that key is not this case's"), EXIT_BAD_INPUT,
     "codeai-tui: that key is not this case's"),
])
def test_one_refusal_family_maps_to_the_exit_codes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], raised: Exception, code: int, line: str) -> None:
    case = _case(tmp_path, "evidence_received")
    watched = _watch(monkeypatch, "reconcile", fails=raised)
    assert cli.main(["reconcile", str(case), "c1", "--finding", "received", "--yes"]) == code
    assert [step for step, _ in watched.asked] == ["plan", "run"]
    assert capsys.readouterr().err.strip().splitlines() == [line]
