"""Snapshot tests of the main views (pytest-textual-snapshot).

Deterministic: fixed size, animations off, a frozen clock, fixed event ids, a relative
path in the header (the test chdirs into its tmp dir), a stubbed resume plan so the
modal shows fixed hashes. Update with `pytest tests/app --snapshot-update` after
looking at the diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from apphelpers import CONFORMANCE, SIZE, frozen_clock, ready, wait_for
from ledgerfactory import write_ledger

from codeai_tui.actions.resume import Resume
from codeai_tui.app import create_app
from codeai_tui.workstate import CallStage

pytestmark = pytest.mark.timeout(60)


def fixed_case(root: Path, name: str, dirname: str = "case") -> Path:
    data = json.loads((CONFORMANCE / f"{name}.json").read_text(encoding="utf-8"))
    events = [dict(e, event_id=f"ev-{e['seq']:04d}") for e in data["events"]]
    write_ledger(root / dirname, events, receipts=data.get("receipts"))
    return Path(dirname)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def plan(drift: tuple[str, ...] = (), *, manifest: bool = True,
         credential_set: bool = False) -> Any:
    from codeai_tui.actions.resume import ResumePlan
    from codeai_tui.runtime.destination import Destination

    sha = SHA
    rendered = "c2beaf8eb91f771af05a6082cf2c94a47fb92312033161311c861b5ce56a291e"
    return ResumePlan(
        case_dir=Path("case"), call_id="call-16", task_id="task-1",
        idempotency_key="key-16", purpose="review",
        stage=CallStage.MANIFEST_RECORDED if manifest else CallStage.REQUESTED,
        drift_check_possible=manifest, model_recorded="synthetic-small",
        model_configured="synthetic-large" if drift else "synthetic-small",
        request_sha256_recorded=sha if manifest else None,
        request_sha256_rebuilt=("0" * 64 if drift else sha) if manifest else None,
        context_package_recorded="pkg-comp-1" if manifest else None,
        context_package_now="pkg-comp-1",
        rendered_sha256_recorded=rendered if manifest else None,
        rendered_sha256_now=rendered, drift=drift, evidence=(2, 7) if manifest else (1, 6), intent={},
        rendered_context=None,
        destination=Destination(
            base_url="http://127.0.0.1:8768/v1", base_url_from="case.json",
            api_key_env="CODEAI_API_KEY", api_key_env_from="case.json",
            credential_set=credential_set, trusted=False),
    )


class StubPlans(Resume):
    """The resume action answering with a fixed plan (fixed hashes in the picture)."""

    def __init__(self, the_plan: Any) -> None:
        self.the_plan = the_plan

    def read(self, case: Path, call_id: str, options: Any) -> Any:
        import dataclasses

        return dataclasses.replace(self.the_plan, call_id=call_id)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("snapshots never resume")


SHA = "5e20fd15075e86f7a99f64c2de8cecf3f07e03558e5c0e6b2c0e2b1b4b8e0a11"
# exactly the lines plan_resume writes for a model drift (tests/core checks the wording)
DRIFT_LINES = ("model: recorded synthetic-small, configured synthetic-large",
               f"request hash: recorded {SHA}, rebuilt {'0' * 64}")


async def checked(pilot: Any) -> None:
    """Projected, and every resumable call's drift check back (rows stop changing)."""
    await ready(pilot)
    main = pilot.app.main
    await wait_for(pilot, lambda: all(c.call_id in main.session.drift for c in main.live.state.calls
                                      if c.resumable), what="drift checks")
    await pilot.pause()


async def settle(pilot: Any) -> None:
    await checked(pilot)
    await pilot.press("3")
    await pilot.pause()


def test_main_view_effect_unknown(in_tmp: Path, snap_compare: Any) -> None:
    case = fixed_case(in_tmp, "naive_restart_copy")
    app = create_app(case, clock=frozen_clock)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_main_view_light_theme(in_tmp: Path, snap_compare: Any) -> None:
    case = fixed_case(in_tmp, "resumed_then_completed")
    app = create_app(case, theme="light", clock=frozen_clock)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_main_view_high_contrast_read_only(in_tmp: Path, snap_compare: Any) -> None:
    case = fixed_case(in_tmp, "killed_after_manifest")
    app = create_app(case, theme="high-contrast", read_only=True, clock=frozen_clock)
    assert snap_compare(app, terminal_size=SIZE, run_before=settle)


def test_time_travel_view(in_tmp: Path, snap_compare: Any) -> None:
    case = fixed_case(in_tmp, "resumed_then_completed")
    app = create_app(case, clock=frozen_clock)

    async def travel(pilot: Any) -> None:
        await checked(pilot)
        await pilot.press("5")
        pilot.app.main.pane("timeline").move_to(6)
        await pilot.press("t")
        main = pilot.app.main
        await wait_for(pilot, lambda: main.shown.as_of == 7 and main.session.progress is None,
                       what="as of 7")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=travel)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("kind", ["match", "drift", "no-manifest", "untrusted-credential"])
def test_resume_modal(in_tmp: Path, snap_compare: Any, kind: str,
                      size: tuple[int, int]) -> None:
    case = fixed_case(in_tmp, "killed_after_requested" if kind == "no-manifest"
                      else "killed_after_manifest")
    the_plan = {
        "match": plan(),
        "drift": plan(DRIFT_LINES),
        "no-manifest": plan(manifest=False),
        # case.json names URL and variable, the variable is set: the explicit box, off
        "untrusted-credential": plan(credential_set=True),
    }[kind]
    app = create_app(case, clock=frozen_clock, actions={"resume": StubPlans(the_plan)})

    async def open_modal(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("r")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ResumeModal",
                       what="modal")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_modal)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_help_screen(in_tmp: Path, snap_compare: Any, size: tuple[int, int]) -> None:
    case = fixed_case(in_tmp, "completed_task")
    app = create_app(case, clock=frozen_clock)

    async def helped(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "HelpScreen",
                       what="help")

    assert snap_compare(app, terminal_size=size, run_before=helped)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_error_screen(in_tmp: Path, snap_compare: Any, size: tuple[int, int]) -> None:
    (in_tmp / "broken").mkdir()
    (in_tmp / "broken" / "ledger.sqlite3").write_bytes(b"not a database " * 200)
    app = create_app("broken", clock=frozen_clock)

    async def failed(pilot: Any) -> None:
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ErrorScreen",
                       what="error screen")

    assert snap_compare(app, terminal_size=size, run_before=failed)


PANE_KEYS = {"cases": "1", "tasks": "2", "calls": "3", "compilations": "4", "timeline": "5",
             "receipts": "6"}


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("pane", list(PANE_KEYS))
def test_each_pane(in_tmp: Path, snap_compare: Any, pane: str, size: tuple[int, int]) -> None:
    """Every pane focused, small and large: a narrow terminal shows it as the active tab."""
    case = fixed_case(in_tmp, "naive_restart_copy")
    app = create_app(case, clock=frozen_clock)

    async def focused(pilot: Any) -> None:
        await checked(pilot)
        await pilot.press(PANE_KEYS[pane])
        await wait_for(pilot, lambda: pilot.app.focused is pilot.app.main.pane(pane),
                       what=f"{pane} focused")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=focused)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_action_log_screen(in_tmp: Path, snap_compare: Any, size: tuple[int, int]) -> None:
    case = fixed_case(in_tmp, "killed_in_flight")
    app = create_app(case, clock=frozen_clock)

    async def logged(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("r")  # refused: effect_unknown, kept in the log
        await wait_for(pilot, lambda: pilot.app.action_log.entries, what="refusal logged")
        await pilot.press("a")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ActionLogScreen",
                       what="action log")

    assert snap_compare(app, terminal_size=size, run_before=logged)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("kind", ["received", "unknowable"])
def test_reconcile_modal(in_tmp: Path, snap_compare: Any, kind: str,
                         size: tuple[int, int]) -> None:
    """The reconcile dialog: evidence first, the finding pre-filled from it
    (or not, where the log cannot say), fitting 80x24 with the body scrolling inside."""
    data = json.loads((CONFORMANCE.parent / "conformance_ext" /
                       f"evidence_{'received' if kind == 'received' else 'no_log'}.json")
                      .read_text(encoding="utf-8"))
    events = [dict(e, event_id=f"ev-{e['seq']:04d}") for e in data["events"]]
    write_ledger(in_tmp / "case", events, receipts=data.get("receipts"))
    app = create_app(Path("case"), clock=frozen_clock)

    async def open_dialog(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("x")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ReconcileModal",
                       what="reconcile dialog")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_dialog)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_tool_reconcile_modal(in_tmp: Path, snap_compare: Any, size: tuple[int, int]) -> None:
    """The tool reconcile dialog (docs/tools.md, `tool.reconciled`): the admission with
    no outcome, nothing pre-filled (only the tool's own records can say), the typed-id
    field for not_executed, fitting 80x24 with the body scrolling inside."""
    from tool_cases import tool_case

    tool_case(in_tmp, "tool_admitted_no_outcome")
    app = create_app(Path("case"), clock=frozen_clock)

    async def open_dialog(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("3", "x")
        await wait_for(pilot, lambda: type(pilot.app.screen).__name__ == "ToolReconcileModal",
                       what="tool reconcile dialog")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_dialog)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_tools_section(in_tmp: Path, snap_compare: Any, size: tuple[int, int]) -> None:
    """A call whose saved plan chose two tools: one completed with a valid receipt, one
    admitted without an outcome (words, not colour alone; counted in the header)."""
    from tool_cases import tool_case

    tool_case(in_tmp, "tool_mixed_operations")
    app = create_app(Path("case"), clock=frozen_clock)

    async def shown(pilot: Any) -> None:
        await settle(pilot)
        main = pilot.app.main
        await wait_for(pilot, lambda: main.query_one("#detail-box").tool_details is not None,
                       what="tool details")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=shown)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("when", ["live", "as-of"])
def test_lanes_view(in_tmp: Path, snap_compare: Any, when: str, size: tuple[int, int]) -> None:
    """The lanes (l): tasks and their calls, attempts, the in-flight call's open span and
    its duplicated receipt, the uncovered receipt's lane; as of seq 14, the as-of line."""
    from lanes_cases import lanes_case

    lanes_case(in_tmp)
    app = create_app(Path("case"), clock=frozen_clock)

    async def drawn(pilot: Any) -> None:
        await checked(pilot)
        main = pilot.app.main
        if when == "as-of":
            await pilot.press("5")
            main.pane("timeline").move_to(13)
            await pilot.press("t")
            await wait_for(pilot, lambda: main.shown.as_of == 14 and main.session.progress is None,
                           what="as of 14")
        await pilot.press("l")
        lanes = main.query_one("#lanes")
        await wait_for(pilot, lambda: pilot.app.focused is lanes and lanes.clock is not None,
                       what="lanes drawn")
        # the lane under the cursor selected its call: Detail says it (laid out anew)
        await wait_for(pilot, lambda: "verdict:" in main.query_one("#detail-box").text(), what="detail")
        # ... and laid out: the text alone can come a layout before its lines
        await wait_for(pilot, lambda: main.query_one("#detail").size.height > 2,
                       timeout=30, what="detail laid out")
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=drawn)
