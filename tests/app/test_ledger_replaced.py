"""A ledger file replaced under the console is announced, and nothing read
from the old file survives (drift verdicts, timeline pages, the projection)."""

from __future__ import annotations

import os
from pathlib import Path

from apphelpers import SIZE, frozen_clock, log_texts, make_case, ready, status_text, wait_for

from codeai_tui.app import create_app
from codeai_tui.ledger import LedgerReader


def replace_ledger(case: Path, other: Path) -> None:
    """Move another case's ledger into place (a restore, a copy): a new inode."""
    for suffix in ("-wal", "-shm"):
        (case / f"ledger.sqlite3{suffix}").unlink(missing_ok=True)
    os.replace(other / "ledger.sqlite3", case / "ledger.sqlite3")


async def test_a_replaced_ledger_is_announced_and_nothing_stale_remains(tmp_path: Path
                                                                        ) -> None:
    case = make_case(tmp_path / "case", "killed_after_manifest")  # call-16 resumable
    other = make_case(tmp_path / "other", "killed_in_flight")  # call-16 effect_unknown
    with LedgerReader(other) as reader:
        new_first = reader.read_range(1, 1)[0]
        new_count = reader.stats()[0]
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await ready(pilot)
        main = app.main
        await wait_for(pilot, lambda: "call-16" in main.session.drift, what="call-16 checked")
        assert main.live.call("call-16").resumable
        assert "ledger file replaced" not in status_text(app)
        replace_ledger(case, other)
        await wait_for(pilot, lambda: "ledger file replaced" in status_text(app),
                       timeout=15, what="the replaced notice in the header")
        assert any("ledger file replaced" in t for t in log_texts(app))
        await wait_for(pilot, lambda: main.live is not None
                       and main.live.call("call-16").effect_unknown, timeout=15,
                       what="the new file's projection")
        await ready(pilot)
        assert "call-16" not in main.session.drift  # the old file's drift verdict is gone
        assert main.live.event_count == new_count
        timeline = main.pane("timeline")
        timeline.move_to(0)
        await wait_for(pilot, timeline.cursor_loaded, what="first timeline page")
        ev = timeline.event_at_cursor()
        assert ev is not None and ev.event_id == new_first.event_id  # no old pages
        assert main.session.state == "following"
        assert "ledger file replaced" in status_text(app)  # stays until the next action


async def test_the_same_file_back_after_a_blip_is_not_called_replaced(tmp_path: Path
                                                                       ) -> None:
    case = make_case(tmp_path / "case", "completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        main = app.main
        aside = tmp_path / "aside.sqlite3"
        os.replace(case / "ledger.sqlite3", aside)
        await wait_for(pilot, lambda: main.session.state == "file gone", timeout=15, what="gone")
        os.replace(aside, case / "ledger.sqlite3")
        await wait_for(pilot, lambda: main.session.state == "following", timeout=15, what="back")
        assert "ledger file replaced" not in status_text(app)
        assert not any("ledger file replaced" in t for t in log_texts(app))
