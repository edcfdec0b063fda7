"""The Textual-free console model: severity, filters, the action log, drift fixes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from apphelpers import make_case

from codeai_tui.actions.resume import plan_resume
from codeai_tui.console.actions import ActionLog, Outcome
from codeai_tui.console.drift import DriftStatus, check_from_plan, drift_fixes
from codeai_tui.console.filters import Needle, parse
from codeai_tui.console.fleet import CaseOrder, ordered, summarize
from codeai_tui.console.severity import fleet_counts
from tests.core.cases import make_case as make_real_case


@pytest.mark.parametrize(("vector", "words"), [
    ("accepted_not_completed", "repeat_acceptance (task task-"),
    ("killed_after_compilation_requested", "recompile (compilation "),
    ("compilation_failed_missing_required", "fix_inputs"),
    ("killed_in_flight", "effect unknown"),
    ("naive_restart_copy", "duplicate effect"),
    ("completed_task", "all done"),
])
def test_a_case_names_its_worst_next_operation_of_any_kind(tmp_path: Path, vector: str,
                                                           words: str) -> None:
    verdict = summarize(make_case(tmp_path / vector, vector))
    assert words in verdict.line


def test_fleet_counts_and_worst_first_order(tmp_path: Path) -> None:
    names = ("a_done", "b_unknown", "c_dup")
    vectors = ("completed_task", "killed_in_flight", "naive_restart_copy")
    cases = [make_case(tmp_path / n, v) for n, v in zip(names, vectors, strict=True)]
    verdicts = {c: summarize(c) for c in cases}
    counts = fleet_counts(verdicts.values())
    assert counts.line().startswith("2 of 3 cases have effect-unknown calls")
    assert "1 with duplicate effects" in counts.line()
    assert fleet_counts([None, *verdicts.values()]).line().endswith("1 still projecting")
    assert [c.name for c in ordered(cases, verdicts, CaseOrder.WORST)] == \
        ["c_dup", "b_unknown", "a_done"]
    assert ordered(cases, verdicts, CaseOrder.PATH) == cases


def test_one_filter_semantics() -> None:
    assert parse("   ") is None
    needle = Needle("Call-1 completed")
    assert needle.matches(["call-17", "stage completed"])  # every word, any order
    assert not needle.matches(["call-17", "requested"])


def test_action_log_summary() -> None:
    log = ActionLog()
    assert "no actions" in log.summary()
    at = datetime(2026, 9, 13, 12, 0, tzinfo=UTC)
    log.add(at, "04_in_flight", "call-1", Outcome.REFUSED, "reconcile_effect")
    log.add(at, "01_req", "call-1", Outcome.RESUMED, "resumed call-1 as call-x")
    log.add(at, "05_naive", None, Outcome.ALERT, "duplicate")
    line = log.summary()
    assert "1 refused" in line and "1 resumed" in line and "1 alert" in line
    assert "resumed call-1 in 01_req" in line and "\n" not in line


def test_drift_fixes_name_what_to_change(tmp_path: Path) -> None:
    case = make_real_case(tmp_path / "c", "http://127.0.0.1:9/v1", case_model="synthetic-large")
    plan = plan_resume(case, "call-1")
    check = check_from_plan(plan)
    assert check.status is DriftStatus.DRIFT
    fixes = " ".join(drift_fixes(plan))
    assert "set provider.model in case.json to synthetic-small" in fixes
    assert "--model synthetic-small" in fixes
    ok = plan_resume(case, "call-1", model="synthetic-small")
    assert check_from_plan(ok).status is DriftStatus.MATCH and drift_fixes(ok) == ()


def test_open_prints_the_action_summary_on_exit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    import codeai_tui.app as app_package
    from codeai_tui.cli import console
    from codeai_tui.cli import main as cli

    case = make_case(tmp_path / "c", "completed_task")

    class FakeApp:
        def __init__(self) -> None:
            self.action_log = ActionLog()

        def run(self) -> None:
            self.action_log.add(datetime(2026, 9, 13, tzinfo=UTC), "c", "call-1",
                                Outcome.REFUSED, "no")

    monkeypatch.setattr(app_package, "create_app", lambda *a, **k: FakeApp())
    monkeypatch.setattr(console, "need_a_terminal", lambda: None)  # the stand-in app needs none
    assert cli.main([str(case)]) == 0
    assert "codeai-tui: this session: 1 refused" in capsys.readouterr().out
