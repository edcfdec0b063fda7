"""The console's resume when the ledger's schema changed under it: a trigger made with
plain sqlite3 after the console opened the case and showed the resume dialog. The
confirmed resume must end with a note naming the trigger's doing, nothing sent to the
real provider and the ledger as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import consoleprobe as probe
from apphelpers import frozen_clock, wait_for

from codeai_tui.app import create_app
from codeai_tui.ledger import read_receipts
from tests.core.cases import STOPPED_AT, file_hashes, ledger_rows, make_case

HIDE = ("CREATE TRIGGER hide BEFORE INSERT ON events WHEN NEW.kind IN "
        "('call.resumed', 'attempt.started') BEGIN SELECT RAISE(IGNORE); END")


async def test_a_confirmed_console_resume_under_a_new_trigger_sends_nothing(
        tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "c1", provider.base_url, recorded_at=STOPPED_AT)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await probe.projected(pilot, "a resumable case")
        await probe.select_call(pilot, "call-1")
        await probe.open_resume_dialog(pilot)
        conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
        conn.execute(HIDE)  # while the dialog is open: after every check the console made
        conn.close()
        before = file_hashes(case), ledger_rows(case)
        await pilot.press("y")
        await wait_for(pilot, lambda: any("trigger" in n for n in probe.notes(app)),
                       timeout=probe.DEADLINE_S, what="the refusal naming the trigger")
        assert probe.internal_errors(app) == []
        await pilot.press("q")
    assert read_receipts(case).receipts == ()  # the provider received nothing
    assert (file_hashes(case), ledger_rows(case)) == before
