"""The console's tool operations: the Tools section of a
call's Detail, the header count, the Cases row, and replay (`R`) gated by the projection
and confirmed in a dialog, run against real kernel keys and a real tool store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apphelpers import (
    detail_text,
    frozen_clock,
    ledger_digest,
    log_texts,
    ready,
    status_text,
    verdict_text,
    wait_for,
)
from tool_cases import tool_case

from codeai_tui.app import create_app
from codeai_tui.ledger import LedgerReader, read_receipts
from codeai_tui.tools import count_publications
from tests.core.test_replay import _killed_run

pytestmark = pytest.mark.timeout(90)


async def _detail_loaded(pilot: Any) -> None:
    """Calls focused, the call selected, its tool arguments and receipts read."""
    await ready(pilot)
    await pilot.press("3")
    main = pilot.app.main
    await wait_for(pilot, lambda: main.query_one("#detail-box").tool_details is not None, what="tool details")
    await pilot.pause()


async def test_effect_unknown_tool_operation_is_shown_in_words_and_refuses_replay(
        tmp_path: Path) -> None:
    case = tool_case(tmp_path, "tool_admitted_no_outcome")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock, kernel_key=tmp_path / "kernel.key")
    async with app.run_test(size=(160, 48)) as pilot:
        await _detail_loaded(pilot)
        main = app.main
        assert "\u26a0 1 tool effect unknown" in status_text(app)
        assert "tool effect unknown: duplicate risk" in verdict_text(app)
        assert main.session.live_verdict.line == "tool effect unknown \u00d71"
        assert main.session.live_verdict.alarming
        detail = detail_text(app)
        assert "\u26a0 tool tc-1: publish_report: \u26a0 tool effect unknown" in detail
        assert "next reconcile_effect" in detail
        await pilot.press("R")
        await wait_for(pilot, lambda: any("replay refused" in t for t in log_texts(app)),
                       what="refusal in the action log")
        assert type(app.screen).__name__ != "ReplayModal"
        assert "admitted without an outcome" in log_texts(app)[-1]
    assert ledger_digest(case) == before  # refused: nothing written


async def test_completed_operation_shows_its_receipt_verdict_and_signed_json(
        tmp_path: Path) -> None:
    valid = tool_case(tmp_path, "tool_completed_valid", "valid")
    changed = tool_case(tmp_path, "tool_completed_invalid_changed_byte", "changed")
    for case, verdict in ((valid, "\u2714 receipt valid"), (changed, "\u26a0 receipt INVALID")):
        app = create_app(case, clock=frozen_clock)
        async with app.run_test(size=(160, 48)) as pilot:
            await _detail_loaded(pilot)
            detail = detail_text(app)
            assert verdict in detail
            assert '"signed_receipt"' in detail and '"alg": "Ed25519"' in detail
            assert "tool effect unknown" not in status_text(app)


async def test_replay_from_the_console_runs_the_saved_plan_once(tmp_path: Path) -> None:
    case, key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, key, "call.completed")  # decision saved, no tool admitted yet
    provider_calls = len(read_receipts(case).receipts)
    app = create_app(case, clock=frozen_clock, kernel_key=key)
    async with app.run_test(size=(80, 24)) as pilot:
        await _detail_loaded(pilot)
        assert "start_tool" in verdict_text(app)
        await pilot.press("R")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ReplayModal",
                       what="replay dialog")
        await pilot.pause()
        shown = "\n".join(str(s.render()) for s in app.screen.query("Static"))
        assert "not admitted: runs now" in shown and "publish_report" in shown
        assert count_publications(case) == 0  # nothing runs before the confirmation
        await pilot.press("y")
        await wait_for(pilot, lambda: any(t.startswith("replayed:") for t in log_texts(app)),
                       timeout=30, what="replay outcome in the action log")
        assert "succeeded" in log_texts(app)[-1] and "turn-1-m2" in log_texts(app)[-1]
    assert count_publications(case) == 1
    assert len(read_receipts(case).receipts) == provider_calls  # no provider call
    with LedgerReader(case) as reader:
        kinds = [e.kind for e in reader.events()]
    assert kinds.count("tool.admitted") == kinds.count("tool.completed") == 1


async def test_replay_refused_without_a_kernel_key_and_hidden_read_only(tmp_path: Path) -> None:
    case = tool_case(tmp_path, "tool_planned_not_admitted")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await _detail_loaded(pilot)
        await pilot.press("R")
        await wait_for(pilot, lambda: any("no kernel key" in t for t in log_texts(app)),
                       what="refusal naming the missing key")
    app = create_app(case, clock=frozen_clock, read_only=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await _detail_loaded(pilot)
        assert app.main.check_action("replay", ()) is False
        await pilot.press("R")
        await pilot.pause()
        assert log_texts(app) == []
    assert ledger_digest(case) == before


async def test_e_stops_at_tool_operations_of_unknown_effect_across_a_bundle(
        tmp_path: Path) -> None:
    """`e` visits every effect-unknown call of every case, and the call holding a tool
    operation admitted without an outcome counts as one (it used to skip that case,
    though the bundle header counted it)."""
    from apphelpers import make_case

    bundle = tmp_path / "bundle"
    make_case(bundle / "a_in_flight", "killed_in_flight")
    tool_case(bundle, "tool_admitted_no_outcome", "b_tool")
    app = create_app(bundle, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        main = app.main
        await wait_for(pilot, lambda: len(main.pane("cases").verdicts) == 2, what="both cases")
        seen = []
        for _ in range(3):
            await pilot.press("e")
            await wait_for(pilot, lambda: main.live is not None
                           and main.selected_call_id is not None
                           and (main.case.name, main.selected_call_id) not in seen[-1:],
                           what="the next stop")
            await pilot.pause()
            seen.append((main.case.name, main.selected_call_id))
        # a_in_flight opens first with its call selected: e goes on to b_tool, and back
        assert [case for case, _ in seen] == ["b_tool", "a_in_flight", "b_tool"]


async def test_r_where_every_operation_is_done_records_the_follow_up_once(
        tmp_path: Path) -> None:
    """All operations done, no follow-up yet (killed right after tool.completed): `R`
    offers to record it and runs no tool. Once the turn went on, `R` refuses and says so
    instead of recording a second follow-up."""
    case, key = tmp_path / "case", tmp_path / "keys" / "kernel.key"
    _killed_run(case, key, "tool.completed")
    app = create_app(case, clock=frozen_clock, kernel_key=key)
    async with app.run_test(size=(160, 48)) as pilot:
        await _detail_loaded(pilot)
        await pilot.press("R")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "ReplayModal",
                       what="replay dialog")
        await pilot.pause()
        shown = "\n".join(str(s.render()) for s in app.screen.query("Static"))
        assert "runs no tool: every operation completed" in shown
        assert "Record the follow-up (y)" in str(app.screen.query_one("#replay-confirm").label)
        await pilot.press("y")
        await wait_for(pilot, lambda: any(t.startswith("replayed:") for t in log_texts(app)),
                       timeout=30, what="the follow-up recorded")
        await wait_for(pilot, lambda: app.main.live is not None
                       and app.main.live.call("turn-1-m2") is not None, what="the new call")
        before = ledger_digest(case)
        await pilot.press("R")
        await wait_for(pilot, lambda: any("the turn already went on" in t
                                          for t in log_texts(app)), what="the refusal")
        assert type(app.screen).__name__ != "ReplayModal"
    assert ledger_digest(case) == before
    assert count_publications(case) == 1  # no tool ran again
    with LedgerReader(case) as reader:
        assert [e.call_id for e in reader.events() if e.kind == "call.requested"] == [
            "turn-1-m1", "turn-1-m2"]
