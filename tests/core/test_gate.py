"""One registry of gated writes, and every one of them goes through the gate: a call
that moved between the plan the operator was shown and the run is refused, and nothing
is appended. The move is another process's event on the call (plain sqlite3) of a kind
the projection ignores, so the action is still permitted: only the pinned evidence can
refuse it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ledgerfactory import append_to_case, read_max_seq

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.protocol import ActionOptions, Decision, GatedAction, Selected
from codeai_tui.actions.registry import ACTIONS, BY_NAME
from codeai_tui.lab.reliability.cases import make_advance_case, make_call_case
from codeai_tui.ledger import LedgerReader
from codeai_tui.workstate import CallState, project_call
from tests.app.tool_cases import tool_case
from tests.core.test_replay import _killed_run

URL = "http://127.0.0.1:9/v1"  # nothing listens: a run that got past the gate would fail


def test_the_registry_names_exactly_the_eight_gated_writes() -> None:
    assert [a.name for a in ACTIONS] == [
        "resume", "reconcile", "reconcile-tool", "reinterpret", "redecide", "finalize",
        "next-attempt", "replay"]
    assert all(isinstance(a, GatedAction) for a in ACTIONS)


def _call_case(upto: str) -> Callable[[Path], tuple[Path, str, ActionOptions]]:
    def make(root: Path) -> tuple[Path, str, ActionOptions]:
        case = root / "case"
        if upto == "manifest":
            make_call_case(case, URL)
        else:
            make_advance_case(case, URL, upto)
        return case, "call-1", ActionOptions()
    return make


def _tool_unknown(root: Path) -> tuple[Path, str, ActionOptions]:
    case = tool_case(root, "tool_admitted_no_outcome")
    with LedgerReader(case) as reader:
        call_id = next(e.call_id for e in reader.events() if e.kind == "tool.admitted")
    assert call_id is not None
    return case, call_id, ActionOptions()


def _tool_planned(root: Path) -> tuple[Path, str, ActionOptions]:
    case, key = root / "case", root / "keys" / "kernel.key"
    _killed_run(case, key, "call.completed")  # decision saved, no tool admitted yet
    return case, "turn-1-m1", ActionOptions(kernel_key=key)


SETUPS: dict[str, tuple[Callable[[Path], tuple[Path, str, ActionOptions]], Decision]] = {
    "resume": (_call_case("manifest"), Decision()),
    "reconcile": (_call_case("effect_unknown"), Decision(finding="received")),
    "reconcile-tool": (_tool_unknown, Decision(finding="not_executed")),
    "reinterpret": (_call_case("observed"), Decision()),
    "redecide": (_call_case("interpreted"), Decision()),
    "finalize": (_call_case("decided_stop"), Decision()),
    "next-attempt": (_call_case("retry_decided"), Decision()),
    "replay": (_tool_planned, Decision()),
}


def _state(case: Path, call_id: str) -> CallState | None:
    with LedgerReader(case) as reader:
        return project_call(reader.events_for_call(call_id), call_id)


def _rows(case: Path) -> list[Any]:
    with LedgerReader(case) as reader:
        return [(e.seq, e.kind, e.call_id) for e in reader.events()]


@pytest.mark.parametrize("name", list(SETUPS))
def test_a_call_that_moved_after_the_plan_is_refused_by_every_action(
        tmp_path: Path, name: str) -> None:
    assert set(SETUPS) == set(BY_NAME)
    action = BY_NAME[name]
    make, decision = SETUPS[name]
    case, call_id, options = make(tmp_path)
    assert action.permitted(Selected(_state(case, call_id), options=options)), \
        action.explain(Selected(_state(case, call_id), options=options))
    plan = action.plan(case, call_id, options)  # read-only: nothing written, nothing sent
    append_to_case(case, [{"seq": read_max_seq(case) + 1, "kind": "operator.note",
                           "task_id": "task-1", "call_id": plan.call_id,
                           "payload": {"text": "another process was here"}}])
    moved = _rows(case)
    # the projection still permits it: only the evidence the operator saw has changed
    assert action.permitted(Selected(_state(case, call_id), options=options))
    with pytest.raises(ActionRefused, match="changed since it was shown"):
        action.run(plan, decision, options, lambda _line: None)
    assert _rows(case) == moved  # nothing appended
