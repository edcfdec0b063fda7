"""`v` in the console: each advance step gated by the projection, confirmed in a dialog
with Cancel focused, recorded in the ledger and the action log; refused (nothing
written) where the projection names no advance step; hidden in read-only mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from apphelpers import SIZE, frozen_clock, ledger_digest, ready, stays, toast_text, wait_for
from textual.widgets import Button, Input, Static

from codeai_tui.actions.reconcile import reconcile_call
from codeai_tui.app import create_app
from codeai_tui.app.screens.action_log import ActionLogScreen
from codeai_tui.app.screens.advance import AdvanceModal
from codeai_tui.lab.reliability.cases import make_advance_case, make_call_case
from codeai_tui.ledger import LedgerReader, read_receipts


def _kinds(case: Path) -> list[str]:
    with LedgerReader(case) as reader:
        return [e.kind for e in reader.events()]


def _outcomes(app: Any) -> list[str]:
    return [e.outcome.value for e in app.action_log.entries if e.outcome.value != "alert"]


async def _open(pilot: Any) -> AdvanceModal:
    await ready(pilot)
    await pilot.press("3", "v")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, AdvanceModal),
                   what="advance dialog")
    await pilot.pause()
    modal = pilot.app.screen
    assert pilot.app.focused is modal.query_one("#advance-cancel", Button)
    return modal


def _text(modal: AdvanceModal) -> str:
    return "\n".join(str(w.render()) for w in modal.query(Static))


@pytest.mark.parametrize(("upto", "step", "appended"), [
    ("observed", "reinterpret", ["attempt.interpreted"]),
    ("interpreted", "redecide", ["attempt.retry_decided"]),
    ("decided_stop", "finalize", ["attempt.completed", "call.completed"]),
])
async def test_each_step_is_confirmed_and_recorded(tmp_path: Path, provider: Any, upto: str,
                                                   step: str, appended: list[str]) -> None:
    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, upto)
    before = _kinds(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        modal = await _open(pilot)
        assert step in _text(modal) and "call-1" in _text(modal)
        await pilot.press("y")
        await wait_for(pilot, lambda: "advanced" in _outcomes(app), timeout=20,
                       what="advance done")
        await pilot.press("a")  # the action log shows it
        await wait_for(pilot, lambda: isinstance(app.screen, ActionLogScreen), what="log")
        await pilot.pause()
        shown = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "advanced" in shown and step in shown
    assert _kinds(case) == before + appended
    assert _outcomes(app) == ["confirmed", "advanced"]
    assert len(read_receipts(case).receipts) == 0  # none of these three sends


async def test_next_attempt_sends_once_after_confirmation(tmp_path: Path,
                                                          provider: Any) -> None:
    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, "retry_decided")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        modal = await _open(pilot)
        assert "request goes to" in _text(modal) and "/c/c1/v1" in _text(modal)
        await pilot.press("y")
        await wait_for(pilot, lambda: "advanced" in _outcomes(app), timeout=30,
                       what="next attempt done")
        await wait_for(pilot, lambda: app.main.live.call("call-1").stage.value == "completed",
                       what="the call completed on screen")
    assert len(read_receipts(case).receipts) == 1
    assert "receipts 0 -> 1" in app.action_log.entries[-1].text


async def test_decide_duplicate_needs_a_choice_and_a_typed_id_to_accept(
        tmp_path: Path, provider: Any) -> None:
    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, "effect_unknown")
    reconcile_call(case, "call-1", "received")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        modal = await _open(pilot)
        await pilot.press("y")  # two choices: y takes neither
        await pilot.pause()
        assert isinstance(app.screen, AdvanceModal) and ledger_digest(case) == before
        accept = modal.query_one("#advance-accept-duplicate", Button)
        assert accept.disabled
        modal.query_one("#advance-typed-id", Input).focus()
        await pilot.press(*"call-1", "enter")  # Enter in the field goes to the button
        await wait_for(pilot, lambda: app.focused is accept and not accept.disabled,
                       what="accept enabled and focused")
        assert ledger_digest(case) == before
        await pilot.press("enter")
        await wait_for(pilot, lambda: "advanced" in _outcomes(app), timeout=20,
                       what="acceptance recorded")
    with LedgerReader(case) as reader:
        last = reader.events()[-1]
    assert (last.kind, last.payload["decision"], last.payload["accept_duplicate"]) == (
        "attempt.retry_decided", "retry", True)
    assert len(read_receipts(case).receipts) == 0  # accepting sends nothing by itself


async def test_decide_duplicate_finalizes_as_failed(tmp_path: Path, provider: Any) -> None:
    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, "effect_unknown")
    reconcile_call(case, "call-1", "received")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        modal = await _open(pilot)
        finalize = modal.query_one("#advance-finalize", Button)
        assert "(f)" in str(finalize.label)
        await pilot.press("f")  # chooses: focuses the button and says how to confirm
        await wait_for(pilot, lambda: app.focused is finalize, what="finalize focused")
        await stays(pilot, lambda: isinstance(app.screen, AdvanceModal), seconds=0.3,
                    what="the dialog stays open after f alone")
        assert ledger_digest(case) == before  # one key never writes
        assert "y or Enter records it" in str(modal.query_one("#advance-say").render())
        await pilot.press("y")
        await wait_for(pilot, lambda: "advanced" in _outcomes(app), timeout=20,
                       what="finalized")
        await wait_for(pilot, lambda: app.main.live.call("call-1").status == "failed",
                       what="the call failed on screen")


async def test_cancel_writes_nothing(tmp_path: Path, provider: Any) -> None:
    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, "observed")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _open(pilot)
        await pilot.press("escape")
        await wait_for(pilot, lambda: "cancelled" in _outcomes(app), what="cancelled")
    assert ledger_digest(case) == before


async def test_refused_where_the_projection_names_no_step(tmp_path: Path,
                                                          provider: Any) -> None:
    case = tmp_path / "c1"
    make_call_case(case, provider.base_url)  # next operation: start_call (resume's)
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("3", "v")
        await wait_for(pilot, lambda: "refused" in _outcomes(app), what="refusal logged")
        assert not isinstance(app.screen, AdvanceModal)
    assert ledger_digest(case) == before
    assert "start_call" in app.action_log.entries[-1].text


async def test_read_only_hides_and_blocks_it(tmp_path: Path, provider: Any) -> None:
    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, "observed")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock, read_only=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("3", "v")
        await wait_for(pilot, lambda: "console is read-only" in toast_text(app),
                       what="v says the console is read-only")
        await stays(pilot, lambda: not isinstance(app.screen, AdvanceModal), 0.5)
        assert app.main.check_action("advance", ()) is False
    assert ledger_digest(case) == before and _outcomes(app) == []


async def test_the_dialog_fits_80x24(tmp_path: Path, provider: Any) -> None:
    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, "retry_decided")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        modal = await _open(pilot)
        for button in modal.query(Button):
            region = button.region
            assert region.width > 0 and region.bottom <= 24 and region.right <= 80, button.id


async def test_the_header_names_the_latest_step_not_an_earlier_one(tmp_path: Path,
                                                                     provider: Any) -> None:
    """Two steps in a row: the header's note is the second's outcome (the first's words
    used to stay after the second had changed the call)."""
    from apphelpers import status_text

    case = tmp_path / "c1"
    make_advance_case(case, provider.base_url, "observed")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await _open(pilot)
        await pilot.press("y")
        await wait_for(pilot, lambda: "reinterpret call-1" in status_text(app), timeout=20,
                       what="the reinterpret note")
        await wait_for(pilot, lambda: app.main.live.call("call-1").next_operation.value
                       == "redecide", what="the call at redecide")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, AdvanceModal), what="dialog")
        await pilot.pause()
        await pilot.press("y")
        await wait_for(pilot, lambda: "redecide call-1" in status_text(app), timeout=20,
                       what="the redecide note")
        assert "reinterpret call-1" not in status_text(app)
