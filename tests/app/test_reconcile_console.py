"""Receipt evidence and reconcile in the console: the provider's log beside the verdict, the
call <-> receipt cross-links, and `x` reconcile (pre-filled, gated, recorded)."""

from __future__ import annotations

import json
import shutil
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
    verdict_text,
    wait_for,
)
from ledgerfactory import write_ledger
from textual.widgets import RadioButton, Static

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.protocol import ActionOptions, Decision
from codeai_tui.actions.reconcile_plan import RECONCILE, plan_reconcile
from codeai_tui.app import create_app
from codeai_tui.app.screens.reconcile import ReconcileModal
from codeai_tui.ledger import LedgerReader
from codeai_tui.workstate import CallStage
from tests.support import shared_demo_bundle

pytestmark = pytest.mark.timeout(120)

EXT = Path(__file__).resolve().parents[1] / "conformance_ext"
BASE = Path(__file__).resolve().parents[1] / "conformance"


def vector_case(root: Path, directory: Path, name: str) -> Path:
    data = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
    write_ledger(root / name, data["events"], receipts=data.get("receipts"))
    return root / name


@pytest.fixture(scope="module")
def demo_04(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Demo case 04 (killed while the provider held the request), from the demo bundle
    the real command built once for the run."""
    return shared_demo_bundle(tmp_path_factory.getbasetemp()) / "04_killed_in_flight"


def modal_text(modal: ReconcileModal) -> str:
    return "\n".join(str(w.render()) for w in modal.query(Static))


def reconciled_events(case: Path) -> list[dict[str, Any]]:
    with LedgerReader(case) as reader:
        return [dict(e.payload or {}, attempt_id=e.attempt_id) for e in reader.events()
                if e.kind == "attempt.reconciled"]


async def open_reconcile(pilot: Any) -> ReconcileModal:
    app = pilot.app
    await ready(pilot)
    await pilot.press("3", "x")
    await wait_for(pilot, lambda: isinstance(app.screen, ReconcileModal),
                   what="reconcile dialog")
    await pilot.pause()
    return app.screen


def finding(modal: ReconcileModal) -> str | None:
    return modal.finding()


async def test_reconcile_received_on_demo_case_04(demo_04: Path, tmp_path: Path) -> None:
    case = tmp_path / "04"
    shutil.copytree(demo_04, case)
    receipt_id = json.loads((case / "provider" / "receipts.jsonl").read_text()
                            .splitlines()[0])["receipt_id"]
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        await pilot.press("3")
        line = verdict_text(app)
        assert "effect unknown" in line
        assert "received by the provider at" in line and f"(receipt {receipt_id})" in line
        modal = await open_reconcile(pilot)
        assert finding(modal) == "received"  # pre-filled from the matching receipt
        assert "\u2190 chosen" in str(modal.query_one("#finding-received", RadioButton).label)
        assert modal.query_one("#finding-not_received", RadioButton).disabled
        assert f"receipt {receipt_id}" in modal_text(modal)
        assert app.focused is modal.query_one("#reconcile-cancel")
        await pilot.press("escape")  # cancel writes nothing and is kept in the log
        await wait_for(pilot, lambda: not isinstance(app.screen, ReconcileModal),
                       what="dialog closed")
        assert reconciled_events(case) == []
        assert log_texts(app)[-1].startswith("cancelled: reconcile")
        modal = await open_reconcile(pilot)
        modal.query_one("#reconcile-note").focus()
        await pilot.press(*"seen in the log")
        await pilot.click("#reconcile-confirm")
        main = app.main
        await wait_for(pilot, lambda: (c := main.live.call("call-1")) is not None
                       and c.stage is CallStage.RECONCILED_RECEIVED, what="new verdict live")
        await wait_for(pilot, lambda: "decide_duplicate" in verdict_text(app),
                       what="verdict line")
        assert "reconciled call-1" in status_text(app)
        assert any(t.startswith("reconciled: reconciled call-1 attempt call-1-a1: received "
                                f"(receipt {receipt_id})") for t in log_texts(app))
        assert "reconciled call-1 in" in app.action_log.summary()
        # the outcome's toast is up; the next dialog opens without it over its buttons
        await wait_for(pilot, lambda: len(app.screen.query("Toast")) > 0, what="toast")
        await pilot.press("v")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "AdvanceModal",
                       what="advance dialog")
        await pilot.pause()
        assert len(app.screen.query("Toast")) == 0
        await pilot.press("escape")
    events = reconciled_events(case)
    assert len(events) == 1
    assert events[0]["finding"] == "received" and events[0]["evidence"] == [receipt_id]
    assert events[0]["attempt_id"] == "call-1-a1"
    assert events[0]["note"] == "seen in the log"


async def test_not_received_is_refused_while_a_receipt_matches(tmp_path: Path) -> None:
    case = vector_case(tmp_path, EXT, "evidence_received")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_reconcile(pilot)
        assert finding(modal) == "received"
        box = modal.query_one("#finding-not_received", RadioButton)
        assert box.disabled
        await pilot.click("#finding-not_received")
        await pilot.pause()
        assert finding(modal) == "received"  # a disabled choice cannot be made
        assert "refused while a receipt matches" in modal_text(modal)
        await pilot.press("n")
        await wait_for(pilot, lambda: not isinstance(app.screen, ReconcileModal),
                       what="dialog closed")
    assert ledger_digest(case) == before
    # the action refuses it too (the dialog is not the only gate), writing nothing
    plan = plan_reconcile(case, "c1")
    assert plan.matching and plan.suggested == "received"
    with pytest.raises(ActionRefused, match="rcpt-1"):
        RECONCILE.run(plan, Decision(finding="not_received", note="it did not arrive"),
                      ActionOptions(), lambda _line: None)
    assert ledger_digest(case) == before


async def test_no_prefill_when_unknowable_then_not_received_is_recorded(tmp_path: Path
                                                                        ) -> None:
    case = vector_case(tmp_path, EXT, "evidence_no_log")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_reconcile(pilot)
        assert finding(modal) is None
        assert "unknowable" in modal_text(modal)
        await pilot.press("y")
        await pilot.pause()
        assert "choose a finding first" in modal_text(modal)
        assert ledger_digest(case) == before
        assert not [b for b in modal.query(RadioButton) if "chosen" in str(b.label)]
        await pilot.click("#finding-not_received")
        await wait_for(pilot, lambda: finding(modal) == "not_received", what="chosen")
        # which finding is chosen is said in words, not by the dot's colour alone
        await wait_for(pilot, lambda: [b.id for b in modal.query(RadioButton)
                                       if "\u2190 chosen" in str(b.label)]
                       == ["finding-not_received"], what="the chosen mark")
        modal.query_one("#reconcile-cancel").focus()
        await pilot.press("y")
        main = app.main
        await wait_for(pilot, lambda: (c := main.live.call("c1")) is not None
                       and c.stage is CallStage.RECONCILED_NOT_RECEIVED,
                       what="reconciled_not_received")
    events = reconciled_events(case)
    assert [(e["finding"], e["evidence"]) for e in events] == [("not_received", [])]


async def test_prefill_not_received_when_the_log_is_complete_past_the_start(
        tmp_path: Path) -> None:
    case = vector_case(tmp_path, EXT, "evidence_not_received")
    plan = plan_reconcile(case, "c1")
    assert plan.suggested == "not_received" and not plan.matching
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("3")
        assert "not in the provider's log (log complete up to 12:00:04.100)" \
            in verdict_text(app)
        modal = await open_reconcile(pilot)
        assert finding(modal) == "not_received"
        await pilot.press("escape")


async def test_x_elsewhere_explains_the_refusal_and_read_only_hides_it(tmp_path: Path
                                                                       ) -> None:
    case = vector_case(tmp_path, BASE, "killed_after_manifest")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("3", "x")
        await wait_for(pilot, lambda: any("reconcile not permitted" in t
                                          for t in log_texts(app)), what="refusal")
        assert "next operation is start_call" in log_texts(app)[-1]
        assert not isinstance(app.screen, ReconcileModal)
    assert ledger_digest(case) == before
    unknown = vector_case(tmp_path, BASE, "killed_in_flight")
    app = create_app(unknown, read_only=True, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("3", "x")
        await pilot.pause()
        assert not isinstance(app.screen, ReconcileModal)
        assert log_texts(app) == []
        assert "Reconcile" not in [d for _k, d, _i in app.help_rows()]
        assert "x: reconcile" not in verdict_text(app)


async def test_cross_links_call_to_receipt_and_back(tmp_path: Path) -> None:
    case = vector_case(tmp_path, BASE, "killed_in_flight")  # r-1 matches att-1
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        receipts = main.pane("receipts")
        await pilot.press("3")
        await wait_for(pilot, lambda: receipts.linked[1] == frozenset({"r-1"}),
                       what="receipt marked")
        row = receipts.current_row()
        assert row is not None and row.cells[0] == "\u25c6"
        assert "\u25c6 1 match call-16" in str(receipts.border_title)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.focused is receipts, what="Receipts focused")
        assert receipts.receipt_at_cursor().receipt_id == "r-1"
        assert "matches: call call-16, attempt att-1" in detail_text(app)
        await pilot.press("c")
        await wait_for(pilot, lambda: app.focused is main.calls, what="Calls focused")
        assert main.calls.call_at_cursor().call_id == "call-16"
        assert main.selected_call_id == "call-16"
        help_ids = [i for _k, _d, i in app.help_rows()]
        assert "goto_receipt" in help_ids and "goto_call" in help_ids


async def test_an_uncovered_receipt_matches_no_attempt(tmp_path: Path) -> None:
    case = vector_case(tmp_path, EXT, "evidence_not_received")  # rcpt-9: another key
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        receipts = main.pane("receipts")
        await pilot.press("6")
        await wait_for(pilot, lambda: app.focused is receipts, what="Receipts focused")
        assert receipts.receipt_at_cursor().receipt_id == "rcpt-9"
        assert "matches: no attempt: uncovered effect" in detail_text(app)
        await pilot.press("c")
        await pilot.pause()
        assert app.focused is receipts  # nowhere to go
        await pilot.press("3", "p")  # c1 has no matching receipt either
        await pilot.pause()
        assert app.focused is main.calls



def append_elsewhere(case: Path, event: dict[str, Any]) -> None:
    """Another process appends one event to the ledger."""
    from ledgerfactory import append_to_case

    append_to_case(case, [event])


def observe_elsewhere(case: Path, seq: int) -> None:
    """Another process records the provider's answer for c1's attempt a1."""
    append_elsewhere(case, {"seq": seq, "kind": "attempt.observed", "task_id": "t1",
                            "call_id": "c1", "attempt_id": "a1",
                            "payload": {"transport": {"status": 200}}})


async def test_evidence_change_while_the_dialog_is_open_refuses(tmp_path: Path) -> None:
    case = vector_case(tmp_path, EXT, "evidence_no_log")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        modal = await open_reconcile(pilot)
        await pilot.click("#finding-not_received")
        observe_elsewhere(case, 5)
        await wait_for(pilot, lambda: modal.refused is not None, what="evidence changed")
        await pilot.pause()
        assert "evidence changed" in modal_text(modal)
        assert not modal.query("#reconcile-confirm")
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, ReconcileModal),
                       what="dialog closed")
        assert log_texts(app)[-1].startswith("refused: reconcile: shown at seq 4")
    assert reconciled_events(case) == []


async def test_a_stale_dialog_is_refused_by_the_writer(tmp_path: Path) -> None:
    """Follow paused: the console cannot see the other writer start a second attempt
    (still effect_unknown, but not the attempt the dialog showed); the pin in
    reconcile_call(expected_last_seq) refuses and nothing is written."""
    case = vector_case(tmp_path, EXT, "evidence_no_log")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f")
        modal = await open_reconcile(pilot)
        await pilot.click("#finding-not_received")
        sha = "1" * 64
        append_elsewhere(case, {"seq": 5, "kind": "attempt.started", "task_id": "t1",
                                "call_id": "c1", "attempt_id": "a2",
                                "payload": {"attempt_no": 2, "request_sha256": sha}})
        assert plan_reconcile(case, "c1").attempt_id == "a2"  # rung 6 still
        before = ledger_digest(case)
        await stays(pilot, lambda: modal.refused is None, seconds=0.5, what="unseen")
        await pilot.click("#reconcile-confirm")
        await wait_for(pilot, lambda: any(t.startswith("refused: c1: reconcile refused")
                                          for t in log_texts(app)), what="refusal")
        assert "evidence changed since it was shown" in log_texts(app)[-1]
        assert ledger_digest(case) == before
    assert reconciled_events(case) == []
