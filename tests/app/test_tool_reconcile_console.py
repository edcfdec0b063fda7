"""`x` on a call whose tool operation's effect is unknown (docs/tools.md,
`tool.reconciled`): the dialog, keyboard only, records the operator's finding; nothing is
pre-filled without evidence, and `not_executed` (which lets the tool run again) needs the
tool-call id typed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from apphelpers import frozen_clock, ledger_digest, log_texts, ready, status_text, wait_for
from tool_cases import tool_case

from codeai_tui.app import create_app
from codeai_tui.ledger import LedgerReader

pytestmark = pytest.mark.timeout(90)


def _findings(case: Path) -> list[dict[str, Any]]:
    with LedgerReader(case) as reader:
        return [e.payload or {} for e in reader.events() if e.kind == "tool.reconciled"]


def _dialog_text(app: Any) -> str:
    return "\n".join(str(s.render()) for s in app.screen.query("Static"))


def _console_facts(app: Any, case: Path) -> str:
    """What the console showed against what the ledger holds: the seq and state it
    followed, the screen on top, the tool operations it judged."""
    main = app.main
    live = main.live
    with LedgerReader(case) as reader:
        events = reader.events()
    ops = [(op.subject, op.stage.value) for c in (live.state.calls if live else ())
           if c.tools is not None for op in c.tools.operations]
    return (f"console: state {main.session.state!r}, trouble {main.session.trouble!r}, following "
            f"{main.session.following}, live seq {live.max_seq if live else None}, screen "
            f"{type(app.screen).__name__}, operations {ops}; ledger: seq "
            f"{events[-1].seq if events else 0} ({events[-1].kind if events else '-'})")


async def _open_dialog(pilot: Any) -> None:
    app = pilot.app
    await ready(pilot)
    await pilot.press("3")
    await wait_for(pilot, lambda: app.main.selected_call_id == "m1", what="the call")
    await pilot.press("x")
    await wait_for(pilot, lambda: type(app.screen).__name__ == "ToolReconcileModal",
                   what="tool reconcile dialog")
    await pilot.pause()


async def _choose(pilot: Any, downs: int) -> None:
    """Back from Cancel to the findings (note, typed id, findings), then pick one."""
    for key in ("shift+tab", "shift+tab", "shift+tab", *("down",) * downs, "enter"):
        await pilot.press(key)
    await pilot.pause()


async def test_executed_is_recorded_from_the_keyboard_and_settles_the_operation(
        tmp_path: Path) -> None:
    case = tool_case(tmp_path, "tool_admitted_no_outcome")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_dialog(pilot)
        shown = _dialog_text(app)
        assert "did it run?" in shown and "tc-1" in shown
        assert "pre-filled     nothing" in shown  # only the tool's own records can say
        before = ledger_digest(case)
        await pilot.press("y")
        await pilot.pause()
        assert "choose a finding first" in _dialog_text(app)
        assert ledger_digest(case) == before
        await _choose(pilot, 0)
        assert "executed: it ran (never run it again)  \u2190 chosen" in _dialog_text(app)
        await pilot.press("y")
        await wait_for(pilot, lambda: any(t.startswith("reconciled: reconciled tool operation")
                                          for t in log_texts(app)), what="the outcome")
        assert "now reconciled_executed, next none" in log_texts(app)[-1]
        await wait_for(pilot, lambda: "tool effect unknown" not in status_text(app),
                       what="the header without the unknown effect")
    assert [(f["operation_key"], f["finding"]) for f in _findings(case)] == [
        ("ns/th/turn-1/tc-1", "executed")]


async def test_the_dialog_says_its_keys_and_where_the_tools_records_are(
        tmp_path: Path) -> None:
    """At 80x24, keyboard only: the keys are on screen, `y` before a choice says which key
    chooses, `1` chooses without writing, `y` records; the dialog names the tool's own
    records (the kernel's receipt file, the tool's store) and what each says."""
    case = tool_case(tmp_path, "tool_admitted_no_outcome")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await _open_dialog(pilot)
        shown = _dialog_text(app)
        assert "1 / 2 choose a finding" in shown and "y records it" in shown
        assert "tools/receipts.ndjson: no receipt line" in shown
        assert "tools/reports.sqlite3: absent" in shown
        before = ledger_digest(case)
        await pilot.press("y")
        await pilot.pause()
        assert "choose a finding first: 1 executed, 2 not_executed" in _dialog_text(app)
        await pilot.press("1")
        await wait_for(pilot, lambda: "(1) executed: it ran (never run it again)  \u2190 chosen"
                       in _dialog_text(app), what="executed chosen")
        assert ledger_digest(case) == before  # choosing never writes
        await pilot.press("y")
        await wait_for(pilot, lambda: any(t.startswith("reconciled: reconciled tool operation")
                                          for t in log_texts(app)), what="the outcome")
    assert [f["finding"] for f in _findings(case)] == ["executed"]


async def test_not_executed_needs_the_typed_tool_call_id(tmp_path: Path) -> None:
    case = tool_case(tmp_path, "tool_admitted_no_outcome")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await _open_dialog(pilot)
        await _choose(pilot, 1)
        before = ledger_digest(case)
        await pilot.press("y")
        await pilot.pause()
        assert "type the tool-call id first: tc-1" in _dialog_text(app)
        assert app.focused is not None and app.focused.id == "tool-reconcile-typed-id"
        assert ledger_digest(case) == before
        await pilot.press("t", "c", "-", "1", "enter")  # Enter moves to Record
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "reconcile-confirm"
        assert "the tool-call id matches" in _dialog_text(app)
        assert ledger_digest(case) == before  # the field never records by itself
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(t.startswith("reconciled: reconciled tool operation")
                                          for t in log_texts(app)), what="the outcome")
        assert "now reconciled_not_executed, next start_tool" in log_texts(app)[-1]
    assert [f["finding"] for f in _findings(case)] == ["not_executed"]


async def test_x_explains_itself_where_no_effect_is_unknown_and_is_hidden_read_only(
        tmp_path: Path) -> None:
    case = tool_case(tmp_path, "tool_completed_valid")
    before = ledger_digest(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await pilot.press("3", "x")
        await wait_for(pilot, lambda: any("reconcile not permitted" in t
                                          for t in log_texts(app)), what="the refusal")
        assert "effect-unknown call or tool operation" in log_texts(app)[-1]
    unknown = tool_case(tmp_path, "tool_admitted_no_outcome", "unknown")
    app = create_app(unknown, clock=frozen_clock, read_only=True)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        await pilot.press("3")
        assert app.main.check_action("reconcile", ()) is False
        await pilot.press("x")
        await pilot.pause()
        assert type(app.screen).__name__ != "ToolReconcileModal"
    assert ledger_digest(case) == before and _findings(unknown) == []


def _killed_after_the_receipt_line(root: Path, *, forged: bool) -> Path:
    """tool_completed_valid without its tool.completed: the kernel's receipt line is in
    tools/receipts.ndjson but the ledger never recorded the outcome (T2). `forged`: the
    line's signature no longer verifies (its result changed)."""
    from ledgerfactory import write_ledger
    from tool_cases import EXT

    data = json.loads((EXT / "tool_completed_valid.json").read_text(encoding="utf-8"))
    events = [dict(e, event_id=f"ev-{e['seq']:04d}") for e in data["events"]
              if e["kind"] != "tool.completed"]
    case = write_ledger(root, events).parent
    (case / "tools").mkdir()
    (case / "tools" / "kernel.pub").write_text(data["tools"]["kernel_pub"])
    lines = data["tools"]["receipts_ndjson"]
    if forged:
        lines = [lines[0].replace('"publication_id":1', '"publication_id":2', 1)]
        assert lines != data["tools"]["receipts_ndjson"]
    (case / "tools" / "receipts.ndjson").write_text("".join(line + "\n" for line in lines))
    return case


def test_a_signed_receipt_line_pre_fills_executed_and_a_forged_one_does_not(
        tmp_path: Path) -> None:
    from codeai_tui.actions.reconcile_plan import plan_tool_reconcile

    key = "ns/th/turn-1/tc-1"
    signed = plan_tool_reconcile(_killed_after_the_receipt_line(tmp_path / "s", forged=False),
                                 "m1", key)
    assert signed.suggested == "executed"
    assert "line 1 holds this operation's receipt, signed" in signed.why_suggested
    forged = plan_tool_reconcile(_killed_after_the_receipt_line(tmp_path / "f", forged=True),
                                 "m1", key)
    assert forged.suggested is None
    assert "look in publish_report's own records" in forged.why_suggested


async def test_the_dialog_refuses_once_another_process_reconciled_the_operation(
        tmp_path: Path) -> None:
    """Pinned to the admission shown: a finding recorded meanwhile (here by the CLI in
    another process) turns the dialog into a refusal, and nothing more is recorded."""
    from tests.support import cli

    case = tool_case(tmp_path, "tool_admitted_no_outcome")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await _open_dialog(pilot)
        other = cli("reconcile-tool", str(case), "ns/th/turn-1/tc-1", "--finding", "executed",
                    "--yes")
        assert other.returncode == 0, other.stderr
        try:
            await wait_for(pilot, lambda: "evidence changed" in _dialog_text(app),
                           what="the refusal in the dialog")
        except AssertionError as exc:  # (seen twice in CI, never alone: say what was seen)
            raise AssertionError(f"{exc}; {_console_facts(app, case)}; the CLI said "
                                 f"{other.stdout.strip()!r}") from None
        assert "now reconciled_executed" in _dialog_text(app)
        await _choose(pilot, 1)
        await pilot.press("y")
        await pilot.pause()
        assert type(app.screen).__name__ == "ToolReconcileModal"  # y does nothing now
        await pilot.press("escape")
        await wait_for(pilot, lambda: any("reconcile: " in t for t in log_texts(app)),
                       what="the refusal in the action log")
    assert [f["finding"] for f in _findings(case)] == ["executed"]
