"""Resume from the console: gated by the projection, pinned to what the modal showed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from apphelpers import (
    SIZE,
    detail_text,
    frozen_clock,
    ledger_digest,
    log_texts,
    ready,
    status_text,
    stays,
    wait_for,
)
from ledgerfactory import append_rows
from textual.widgets import Button, Input, Static

from codeai_tui.actions.resume import Resume
from codeai_tui.app import create_app
from codeai_tui.app.screens.resume import ResumeModal
from codeai_tui.ledger import LedgerReader, read_receipts
from tests.core.cases import STOPPED_AT, make_case


def make_real_case(case: Path, base_url: str, **kwargs: Any) -> Path:
    """A call stopped ten minutes before the frozen clock (one test asks for a call
    that moved seconds ago, and the warning it gets)."""
    return make_case(case, base_url, recorded_at=STOPPED_AT, **kwargs)


def modal_text(modal: ResumeModal) -> str:
    return "\n".join(str(w.render()) for w in modal.query(Static))


def resumed(app: Any) -> str | None:
    """The open case's note about the last resume, if it succeeded."""
    note = app.main.note
    return note.text if note is not None and note.ok else None


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
        await wait_for(pilot, lambda: resumed(app) is not None, timeout=20, what="resume done")
        assert "receipts 0 \u2192 1" in resumed(app)
        assert "\u2714 resumed call-1 as" in status_text(app)  # the whole note: the action log
        await wait_for(pilot, lambda: app.main.pane("calls").row_count == 2,
                       what="new call row")
        with LedgerReader(case) as reader:
            events = reader.events()
        new = [e for e in events[before:]]
        kinds = [e.kind for e in new]
        assert kinds[:3] == ["call.resumed", "call.requested", "call.manifest"]
        assert "attempt.started" in kinds and kinds[-1] == "call.completed"
        assert new[0].payload["reason"] == "producer crashed"
        assert len(read_receipts(case).receipts) == 1
        assert app.main.live.call("call-1").stage.value == "superseded"
        outcomes = [e.outcome.value for e in app.action_log.entries]
        assert outcomes[:2] == ["confirmed", "resumed"]  # A5: kept, with case and call
        assert all(e.call_id == "call-1" and e.case == "c1" for e in app.action_log.entries
                   if e.outcome.value != "alert")
        # a call in flight passed through effect_unknown: no alert for it
        assert not any(e.outcome.value == "alert" for e in app.action_log.entries)


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
        assert app.main.action_flow.busy is None
        assert [e.outcome.value for e in app.action_log.entries] == ["cancelled", "cancelled"]


async def test_drift_has_no_confirm_button(tmp_path: Path, provider: Any) -> None:
    case = make_real_case(tmp_path / "c3", provider.base_url, case_model="synthetic-large")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        before = ledger_digest(case)
        modal = await open_modal(pilot)
        assert "DRIFT" in modal_text(modal)
        assert not modal.query("#resume-confirm")
        await pilot.press("y")
        await stays(pilot, lambda: isinstance(app.screen, ResumeModal), what="dialog open")
        text = modal_text(modal)
        assert "set provider.model in case.json to synthetic-small" in text  # A2: what to fix
        assert "--model synthetic-small" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main, what="closed")
        assert ledger_digest(case) == before
        # the list no longer promises it: the row and the verdict line say drift
        row = app.main.pane("calls").source.row(0)
        assert "drift" in row.cells[3] and "\u25b6" not in row.cells[3]
        assert any(e.outcome.value == "refused" for e in app.action_log.entries)


async def test_drift_on_a_call_that_moved_moments_ago_asks_for_nothing(
        tmp_path: Path, provider: Any) -> None:
    """Drift refuses: with nothing to confirm there is no "type the call id" field, even
    where the call moved moments ago (a demo case right after its build)."""
    case = make_case(tmp_path / "c3c", provider.base_url, case_model="synthetic-large",
                     recorded_at="2026-09-13T12:04:57.000Z")  # 3 s before the clock
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_modal(pilot)
        assert "DRIFT" in modal_text(modal)
        assert not modal.query("#resume-confirm") and not modal.query("#resume-typed-id")


async def test_drift_is_checked_before_r_and_the_list_never_promises_resume(
        tmp_path: Path, provider: Any) -> None:
    """A2: case 03's shape. Before the check the row says "drift not checked yet"; after
    it, "drift: resume refuses" with what to fix; never "▶ resumable"."""
    case = make_real_case(tmp_path / "c3b", provider.base_url, case_model="synthetic-large")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        calls = app.main.pane("calls")
        seen: list[str] = []

        def verdict() -> str:
            cell = calls.source.row(0).cells[3]
            seen.append(cell)
            return cell

        await wait_for(pilot, lambda: "drift: resume refuses" in verdict(), what="checked")
        assert not any("\u25b6" in c for c in seen)
        assert "set provider.model in case.json" in detail_text(app)


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
        # A10: a premature `y` says what is missing instead of doing nothing silently
        await wait_for(pilot, lambda: "type the call id first" in modal_text(modal),
                       what="typed-id hint")
        assert isinstance(app.screen, ResumeModal)
        assert ledger_digest(case) == before
        typed = modal.query_one("#resume-typed-id", Input)
        assert app.focused is typed  # the hint takes the operator to the field
        await pilot.press(*"call-2", "enter")
        await wait_for(pilot, lambda: "not the call id" in modal_text(modal), what="wrong id")
        assert confirm.disabled and app.focused is typed
        typed.value = ""
        await pilot.press(*"call-1", "enter")  # the keyboard's way: Enter goes to Resume
        await wait_for(pilot, lambda: app.focused is confirm, what="Resume focused")
        assert isinstance(app.screen, ResumeModal) and ledger_digest(case) == before
        await pilot.press("enter")
        await wait_for(pilot, lambda: resumed(app) is not None, timeout=20, what="resumed")
        assert len(read_receipts(case).receipts) == 1


async def test_a_call_that_moved_moments_ago_needs_its_id_typed(tmp_path: Path,
                                                                provider: Any) -> None:
    """A call whose last event is seconds old (a live writer's, a moment between two of
    its events) may still be sent by its own process: the dialog says so before the
    match, and asks for the id typed out; then the resume goes ahead."""
    case = make_case(tmp_path / "c4b", provider.base_url, recorded_at="2026-09-13T12:04:57.000Z")
    app = create_app(case, clock=frozen_clock)  # 12:05:00: three seconds later
    async with app.run_test(size=SIZE) as pilot:
        before = ledger_digest(case)
        modal = await open_modal(pilot)
        text = modal_text(modal)
        assert "still running?" in text and "recorded 3 s ago" in text, text
        assert text.index("still running?") < text.index("match")
        assert "Resume only a call whose process has stopped" in text
        confirm = modal.query_one("#resume-confirm", Button)
        assert confirm.disabled
        await pilot.press("y")
        await wait_for(pilot, lambda: "type the call id first" in modal_text(modal),
                       what="typed-id hint")
        assert ledger_digest(case) == before
        await pilot.press(*"call-1", "enter")
        await wait_for(pilot, lambda: app.focused is confirm, what="Resume focused")
        await pilot.press("enter")
        await wait_for(pilot, lambda: resumed(app) is not None, timeout=20, what="resumed")
        assert len(read_receipts(case).receipts) == 1


async def test_a_call_stopped_minutes_ago_asks_only_yes(tmp_path: Path, provider: Any) -> None:
    """Past the window (ten minutes here), no warning and no typed id: `y` resumes."""
    case = make_real_case(tmp_path / "c4c", provider.base_url)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_modal(pilot)
        assert "still running?" not in modal_text(modal)
        assert not modal.query_one("#resume-confirm", Button).disabled
        assert not modal.query("#resume-typed-id")


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
        assert app.main.check_action("resume", ()) is False
        assert app.main.check_action("explain_resume", ()) is True


async def test_stale_plan_is_refused_by_resume_call(tmp_path: Path, provider: Any,
                                                    monkeypatch: Any) -> None:
    """If the ledger moves between the modal and the worker, resume_call(expected=plan)
    refuses and the console shows it."""
    case = make_real_case(tmp_path / "c6", provider.base_url)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f")  # paused: the console will not see the other writer
        modal = await open_modal(pilot)
        start_attempt_elsewhere(case, "racer")
        before = ledger_digest(case)
        await stays(pilot, lambda: modal.refused is None, seconds=0.5, what="unseen")
        await pilot.press("y")
        await wait_for(pilot, lambda: any(n.startswith("refused: call-1")
                                          for n in log_texts(app)), what="refusal")
        assert ledger_digest(case) == before
        assert len(read_receipts(case).receipts) == 0


class SlowPlans(Resume):
    """The resume action, whose plan waits for a gate, then reads the real plan."""

    def __init__(self) -> None:
        import threading

        self.gate = threading.Event()
        self.calls: list[str] = []
        self.broken = False

    def read(self, case: Path, call_id: str, options: Any) -> Any:
        self.calls.append(call_id)
        if self.broken:
            raise OSError("artifact unreadable")
        self.gate.wait(5)
        return super().read(case, call_id, options)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("never run in this test")


async def test_plan_failure_is_reported_and_double_r_opens_one_modal(
        tmp_path: Path) -> None:
    case = make_real_case(tmp_path / "c7", "http://127.0.0.1:9/v1")
    service = SlowPlans()
    app = create_app(case, clock=frozen_clock, actions={"resume": service})
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        service.gate.set()
        await wait_for(pilot, lambda: "call-1" in app.main.session.drift, what="drift check")
        checks = len(service.calls)
        service.gate.clear()
        await pilot.press("3", "r", "r", "r")
        service.gate.set()
        await wait_for(pilot, lambda: isinstance(app.screen, ResumeModal), what="modal")
        await stays(pilot, lambda: sum(isinstance(s, ResumeModal)
                                       for s in app.screen_stack) == 1, what="one modal")
        assert service.calls[checks:] == ["call-1"]
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is app.main, what="closed")
        service.broken = True
        await pilot.press("r")
        await wait_for(pilot, lambda: any("artifact unreadable" in n for n in log_texts(app)),
                       what="failure kept in the log")
        assert app.is_running and app.main.action_flow.busy is None


async def test_a_note_belongs_to_its_case(tmp_path: Path, provider: Any) -> None:
    """A1: after resuming call-1 in one case, opening another case (which also has a
    call-1) shows no word of it; coming back shows it again."""
    bundle = tmp_path / "bundle"
    make_real_case(bundle / "a_resumable", provider.base_url)
    from apphelpers import make_case as make_vector_case

    make_vector_case(bundle / "b_unknown", "killed_in_flight")
    app = create_app(bundle, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_modal(pilot)
        assert modal is app.screen
        await pilot.press("y")
        await wait_for(pilot, lambda: resumed(app) is not None, timeout=20, what="resumed")
        assert "resumed call-1" in status_text(app)
        await wait_for(pilot, lambda: len(app.main.pane("cases").verdicts) == 2, what="summaries")
        await pilot.press("e")
        await wait_for(pilot, lambda: app.main.case.name == "b_unknown"
                       and app.main.live is not None, what="other case")
        await stays(pilot, lambda: "resumed call-1" not in status_text(app), what="gone")


@pytest.mark.parametrize("upto", ["manifest", "requested"])
async def test_dialog_shows_where_the_request_goes_and_fits_80x24(
        tmp_path: Path, provider: Any, upto: str) -> None:
    """A4/A10: the base URL is in the dialog, and at 80x24 Cancel and Resume are on screen
    (both dialogs: match, and the typed-id one)."""
    case = make_real_case(tmp_path / "c8", provider.base_url, upto=upto)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_modal(pilot)
        assert f"{provider.base_url.rsplit('/v1', 1)[0]}/c/c8/v1" in modal_text(modal)
        screen = modal.region
        for button_id in ("#resume-cancel", "#resume-confirm"):
            region = modal.query_one(button_id, Button).region
            assert region.width > 0 and screen.contains_region(region), (button_id, region)
        dialog = modal.query_one("#resume-dialog").region
        assert screen.contains_region(dialog)
        await pilot.press("escape")


class RecordingRuns(Resume):
    """Real plans; `run` records what it was asked to send and writes nothing."""

    def __init__(self) -> None:
        self.sent: list[bool] = []

    def run(self, plan: Any, decision: Any, options: Any, progress: Any) -> Any:
        from codeai_tui.actions.gate import ActionRefused

        self.sent.append(decision.send_credential)
        raise ActionRefused(None, "recorded only")


async def test_credential_goes_only_where_the_operator_said(tmp_path: Path,
                                                            monkeypatch: Any) -> None:
    """Security: case.json names the URL and the variable, so the dialog shows both, says
    "no credential will be sent", and sends it only if the operator ticks the separate
    control (off by default)."""
    monkeypatch.setenv("CODEAI_API_KEY", "sk-secret-value-never-shown")
    case = make_real_case(tmp_path / "c9", "http://127.0.0.1:9/v1")
    service = RecordingRuns()
    app = create_app(case, clock=frozen_clock, actions={"resume": service})
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_modal(pilot)
        text = modal_text(modal)
        assert "http://127.0.0.1:9/c/c9/v1" in text and "(from case.json)" in text
        assert "CODEAI_API_KEY" in text and "sk-secret" not in text
        assert "no credential will be sent" in text
        box = modal.query_one("#resume-send-credential")
        assert box.value is False
        await pilot.press("y")
        await wait_for(pilot, lambda: service.sent == [False], what="run without credential")
        await wait_for(pilot, lambda: app.main.action_flow.busy is None, what="done")
        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(app.screen, ResumeModal), what="again")
        modal = app.screen
        modal.query_one("#resume-send-credential").value = True
        await wait_for(pilot, lambda: "is sent as Authorization" in modal_text(modal),
                       what="the dialog says it will send")
        await pilot.press("y")
        await wait_for(pilot, lambda: service.sent == [False, True], what="run with it")


async def test_the_outcome_says_what_the_runner_waited_for(tmp_path: Path) -> None:
    """The runner's notes (a Retry-After waited out; why no whole answer came) reach the
    operator in the console as `resume` prints them."""
    from codeai_tui.lab.provider import ProviderProcess

    with ProviderProcess(receipts_root=tmp_path, fail_first=1, retry_after="1") as slow:
        case = make_real_case(tmp_path / "c1", slow.base_url)
        app = create_app(case, clock=frozen_clock)
        async with app.run_test(size=SIZE) as pilot:
            await open_modal(pilot)
            await pilot.press("y")
            await wait_for(pilot, lambda: resumed(app) is not None, timeout=20,
                           what="resume done")
            assert "waited 1 s before attempt 2" in resumed(app)
            assert any("waited 1 s before attempt 2" in t for t in log_texts(app))
