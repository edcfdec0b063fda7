"""Resume from the console: gated by the projection, pinned to what the modal showed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from apphelpers import SIZE, frozen_clock, ledger_digest, ready, wait_for
from ledgerfactory import append_rows
from textual.widgets import Button, Input, Static

from codeai_tui.app import create_app
from codeai_tui.app.screens.resume import ResumeModal
from codeai_tui.ledger import LedgerReader, read_receipts
from tests.core.cases import make_case as make_real_case


def modal_text(modal: ResumeModal) -> str:
    return "\n".join(str(w.render()) for w in modal.query(Static))


async def open_modal(pilot: Any) -> ResumeModal:
    app = pilot.app
    await ready(pilot)
    await pilot.press("3", "r")
    await wait_for(pilot, lambda: isinstance(app.screen, ResumeModal), what="resume modal")
    await pilot.pause()
    return app.screen


async def test_confirmed_resume_appends_events_and_one_receipt(tmp_path: Path,
                                                               provider: Any) -> None:
    case = make_real_case(tmp_path / "c1", provider.base_url)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        modal = await open_modal(pilot)
        assert app.focused is modal.query_one("#resume-cancel", Button)
        text = modal_text(modal)
        assert "match" in text and "call-1" in text and "key-1" in text
        with LedgerReader(case) as reader:
            before = reader.stats()[0]
        modal.query_one("#resume-reason", Input).value = "producer crashed"
        await pilot.press("y")
        await wait_for(pilot, lambda: app.last_result is not None
                       and app.last_result.startswith("\u2714"), timeout=20, what="resume done")
        assert "receipts 0 \u2192 1" in app.last_result
        await wait_for(pilot, lambda: app.table("calls").row_count == 2, what="new call row")
        with LedgerReader(case) as reader:
            events = reader.events()
        new = [e for e in events[before:]]
        kinds = [e.kind for e in new]
        assert kinds[:3] == ["call.resumed", "call.requested", "call.manifest"]
        assert "attempt.started" in kinds and kinds[-1] == "call.completed"
        assert new[0].payload["reason"] == "producer crashed"
        assert len(read_receipts(case).receipts) == 1
        assert app.live.call("call-1").stage.value == "superseded"


async def test_escape_and_n_cancel_and_write_nothing(tmp_path: Path, provider: Any) -> None:
    case = make_real_case(tmp_path / "c2", provider.base_url)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        before = ledger_digest(case)
        await open_modal(pilot)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ResumeModal), what="closed")
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ResumeModal), what="modal again")
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ResumeModal), what="closed")
        assert ledger_digest(case) == before
        assert not app.resuming


async def test_drift_has_no_confirm_button(tmp_path: Path, provider: Any) -> None:
    case = make_real_case(tmp_path / "c3", provider.base_url, case_model="synthetic-large")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        before = ledger_digest(case)
        modal = await open_modal(pilot)
        assert "DRIFT" in modal_text(modal)
        assert not modal.query("#resume-confirm")
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, ResumeModal)
        await pilot.press("escape")
        assert ledger_digest(case) == before


async def test_rung_4_requires_typing_the_call_id(tmp_path: Path, provider: Any) -> None:
    case = make_real_case(tmp_path / "c4", provider.base_url, upto="requested")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        before = ledger_digest(case)
        modal = await open_modal(pilot)
        assert "no drift check possible" in modal_text(modal)
        confirm = modal.query_one("#resume-confirm", Button)
        assert confirm.disabled
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, ResumeModal)
        assert ledger_digest(case) == before
        typed = modal.query_one("#resume-typed-id", Input)
        typed.focus()
        await pilot.press(*"call-2")
        await pilot.pause()
        assert confirm.disabled
        typed.value = "call-1"
        await pilot.pause()
        assert not confirm.disabled
        await pilot.click("#resume-confirm")
        await wait_for(pilot, lambda: app.last_result is not None
                       and app.last_result.startswith("\u2714"), timeout=20, what="resumed")
        assert len(read_receipts(case).receipts) == 1


def start_attempt_elsewhere(case: Path, attempt_id: str) -> None:
    """Another writer starts an attempt of call-1 (plain sqlite3, its own connection)."""
    with LedgerReader(case) as reader:
        count = reader.stats()[1]
    writer = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    try:
        append_rows(writer, [{"seq": count + 1, "kind": "attempt.started",
                              "task_id": "task-1", "call_id": "call-1",
                              "attempt_id": attempt_id,
                              "payload": {"attempt_no": 1, "request_sha256": "x"}}])
    finally:
        writer.close()


async def test_evidence_change_while_modal_open_refuses(tmp_path: Path, provider: Any) -> None:
    case = make_real_case(tmp_path / "c5", provider.base_url)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_modal(pilot)
        start_attempt_elsewhere(case, "other-process")
        await wait_for(pilot, lambda: modal.refused is not None, what="evidence changed")
        await pilot.pause()
        assert "evidence changed" in modal_text(modal)
        assert not modal.query("#resume-confirm")
        after_append = ledger_digest(case)
        await pilot.press("y")
        await pilot.pause()
        assert ledger_digest(case) == after_append
        await pilot.press("escape")
        await pilot.pause()
        # and now r only explains: the call is effect_unknown
        assert app.check_action("resume", ()) is None


async def test_stale_plan_is_refused_by_resume_call(tmp_path: Path, provider: Any,
                                                    monkeypatch: Any) -> None:
    """If the ledger moves between the modal and the worker, resume_call(expected=plan)
    refuses and the console shows it."""
    case = make_real_case(tmp_path / "c6", provider.base_url)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        modal = await open_modal(pilot)
        app._modal = None  # the console misses the change: resume_call must catch it
        start_attempt_elsewhere(case, "racer")
        before = ledger_digest(case)
        modal.action_confirm()
        await wait_for(pilot, lambda: any("refused" in n.title for n in app._notifications),
                       what="refusal")
        assert ledger_digest(case) == before
        assert len(read_receipts(case).receipts) == 0


async def test_plan_failure_is_reported_and_double_r_opens_one_modal(
        tmp_path: Path, monkeypatch: Any) -> None:
    import threading
    from types import SimpleNamespace

    from codeai_tui.app import resume_flow
    from codeai_tui.resume import ResumeRefused, plan_resume

    case = make_real_case(tmp_path / "c7", "http://127.0.0.1:9/v1")
    gate = threading.Event()
    calls: list[str] = []

    def slow_plan(*args: Any, **kwargs: Any) -> Any:
        calls.append("plan")
        gate.wait(5)
        return plan_resume(*args, **kwargs)

    api = SimpleNamespace(plan_resume=slow_plan, ResumeRefused=ResumeRefused, resume_call=None)
    monkeypatch.setattr(resume_flow, "resume_api", lambda: api)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("3", "r", "r", "r")
        gate.set()
        await wait_for(pilot, lambda: isinstance(app.screen, ResumeModal), what="modal")
        await pilot.pause()
        assert calls == ["plan"]
        assert sum(isinstance(s, ResumeModal) for s in app.screen_stack) == 1
        await pilot.press("escape")

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise OSError("artifact unreadable")

        api.plan_resume = broken
        await pilot.press("r")
        await wait_for(pilot, lambda: any("artifact unreadable" in n.message
                                          for n in app._notifications), what="failure note")
        assert app.is_running and not app.planning
