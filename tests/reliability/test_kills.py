"""Must hold 2: SIGKILL at every boundary of every action leaves a consistent case."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from codeai_tui.lab.reliability import REGISTRY, Action
from codeai_tui.lab.reliability.actions import RESUME
from codeai_tui.lab.reliability.advance_actions import ADVANCE_ACTIONS
from codeai_tui.lab.reliability.harness import ActorProc, Deadline, check_case
from codeai_tui.lab.reliability.kills import run_kills
from codeai_tui.ledger import LedgerWriter


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_kills_at_every_boundary_leave_a_consistent_case(
    tmp_path: Path, slow_provider: Any, cli: Any, name: str
) -> None:
    action = REGISTRY[name]
    kills = 2 * len(action.boundaries)  # each boundary once exactly, once a moment after
    report = run_kills(action, tmp_path, slow_provider.base_url, kills, cli)
    assert [r.problems for r in report.runs if r.problems] == []
    assert report.kills == kills  # runs that finished before their random moment re-run
    assert set(report.by_boundary()) == {b.name for b in action.boundaries}
    assert any(r.recovered for r in report.runs)  # killed before commit: runs again once
    assert report.violations == 0
    landings = report.landings()
    # the kills landed on both sides of the commit: nothing half-done either way
    if name == "resume":
        assert any(k.startswith("not acted on") for k in landings)
        assert any("effect_unknown" in k for k in landings)
    if name in {a.name for a in ADVANCE_ACTIONS}:
        # before the claim the action is still the next step; after it, it is not
        assert len(landings) >= 2, landings
    if name == "next-attempt":
        assert any("effect_unknown" in k for k in landings)
    if name == "reconcile-tool":  # before the claim still T2; after it, found not run
        assert any("effect_unknown, next reconcile_effect" in k for k in landings)
        assert any("reconciled_not_executed, next start_tool" in k for k in landings)
    if name == "replay":
        assert any("not_admitted" in k for k in landings)
        assert any("effect_unknown" in k for k in landings)  # admitted, no outcome


def test_the_checks_fail_on_a_broken_case(tmp_path: Path, provider: Any, cli: Any) -> None:
    """A superseded call without its successor and a receipt no attempt covers are
    caught: the kill test's "no problems" is not vacuous."""
    target = RESUME.setup(tmp_path / "broken", provider.base_url)
    assert check_case(target.case, cli).problems == []
    with LedgerWriter.open(target.case) as writer:  # call.resumed alone, no successor
        writer.append("call.resumed", "task-1", {"resumed_as": "call-x", "idempotency_key":
                      "key-call-1", "request_sha256": None, "by": {}, "reason": None},
                      call_id=target.subject)
    receipts = target.case / "provider" / "receipts.jsonl"
    receipts.parent.mkdir(exist_ok=True)
    receipts.write_text(json.dumps({"receipt_id": "r1", "received_at": "2026-01-01T00:00:00Z",
                                    "idempotency_key": "key-call-1", "body_sha256": "0" * 64,
                                    "bytes": 1}) + "\n")
    problems = " | ".join(check_case(target.case, cli).problems)
    assert "superseded without its successor" in problems
    assert "receipts > 0 attempts started" in problems


def test_a_network_call_inside_a_write_transaction_is_caught(
    tmp_path: Path, provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The actor's instrumentation flags a send made while the write lock is held."""
    mod = tmp_path / "mods" / "sends_in_txn.py"
    mod.parent.mkdir()
    mod.write_text(textwrap.dedent(f"""
        import sys, urllib.request
        from codeai_tui.ledger import LedgerWriter
        with LedgerWriter.open(sys.argv[1]) as w, w.transaction():
            urllib.request.urlopen({provider.base_url + "/health"!r}, timeout=10).read()
    """))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(mod.parent), *sys.path]))
    target = RESUME.setup(tmp_path / "c", provider.base_url)
    bad = Action("sends-in-txn", RESUME.setup, "sends_in_txn", lambda t: [str(t.case)],
                 (), RESUME.audit, RESUME.permitted, control=True)
    actor = ActorProc(bad, target, tmp_path)
    assert actor.finish(Deadline(60)) == 0, actor.output()
    actor.output()
    assert actor.violations and "inside a write transaction" in actor.violations[0]
