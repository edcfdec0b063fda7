"""The console paints the answer from the skeleton before the projection ends: the
effect-unknown count (final) and every call's row; what needs payloads reads
"reading…" until the projection replaces it, and nothing acts on a skeleton row."""

from __future__ import annotations

import gc
import sqlite3
import threading
from pathlib import Path

from apphelpers import (
    SIZE,
    detail_text,
    frozen_clock,
    ledger_digest,
    status_text,
    verdict_text,
    wait_for,
)
from bigledger import rows
from ledgerfactory import SCHEMA, write_ledger

from codeai_tui.app import create_app
from codeai_tui.console import model as data
from codeai_tui.services.projection import project_case
from codeai_tui.services.skeleton import SkeletonCalls

EVENTS = 6000  # above the console's FAST_START_MIN: the skeleton applies


def _big_case(root: Path) -> Path:
    case = root / "big"
    case.mkdir()
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO ledger_meta VALUES ('format', 'codeai.ledger.v1')")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", rows(EVENTS))
    conn.execute("COMMIT")
    conn.close()
    return case


async def test_the_skeleton_answers_before_the_projection(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    case = _big_case(tmp_path)
    state = project_case(case)
    unknown = {c.call_id for c in state.calls if c.effect_unknown}
    assert unknown  # the ledger leaves every 50th call in flight
    before = ledger_digest(case)
    release = threading.Event()
    catch_up = data.CaseFollower.catch_up

    def held(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        release.wait(30)  # the projection waits until the test has seen the skeleton
        return catch_up(self, *args, **kwargs)

    monkeypatch.setattr(data.CaseFollower, "catch_up", held)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        calls = main.pane("calls")
        try:
            await wait_for(pilot, lambda: f"{len(unknown)} effect unknown" in status_text(app),
                           what="the skeleton's effect-unknown count")
            assert main.live is None  # painted before the projection
            assert "uncovered receipts reading" in status_text(app)
            # the skeleton does not know tool operations: not known is not none
            assert "tool effect unknown reading" in status_text(app)
            assert calls.row_count == len(state.calls)
            await pilot.press("3")
            await pilot.press("e")  # the next effect-unknown row, from the skeleton
            row = calls.source.row(calls.cursor)
            assert row is not None and row.key in unknown
            assert calls.call_at_cursor() is None  # nothing acts on a skeleton row
            # the verdict line and the detail name that call with what its kinds decide,
            # and say the rest is still being read (they said "selected call: none")
            await wait_for(pilot, lambda: f"call {row.key}:" in verdict_text(app),
                           what="the skeleton's call on the verdict line")
            line = verdict_text(app)
            assert "effect unknown" in line and "reading" in line, line
            assert "x: reconcile" not in line and "r: resume" not in line, line
            await wait_for(pilot, lambda: f"call {row.key}" in detail_text(app),
                           what="the skeleton's call in the detail")
            assert "still being read" in detail_text(app)
            await pilot.press("r")
            await pilot.pause()
        finally:
            release.set()
        await wait_for(pilot, lambda: main.live is not None, timeout=30,
                       what="the projection")
        await wait_for(pilot, lambda: "reading" not in status_text(app), what="full counts")
        assert f"{len(unknown)} effect unknown" in status_text(app)
        # the projection's verdict replaces the skeleton's for the same call
        selected = calls.call_at_cursor()
        assert selected is not None and selected.call_id == row.key == main.selected_call_id
        await wait_for(pilot, lambda: "reading" not in verdict_text(app),
                       what="the projection's verdict line")
        assert f"call {row.key}: " in verdict_text(app)
        assert "x: reconcile" in verdict_text(app)
        await wait_for(pilot, lambda: "still being read" not in detail_text(app),
                       what="the projection's detail")
        assert "why:" in detail_text(app) and f"call {row.key}" in detail_text(app)
    assert ledger_digest(case) == before


async def test_no_skeleton_outlives_the_projection(tmp_path: Path) -> None:
    """The screen drops the skeleton when the projection arrives; the follower thread,
    which runs all session, must not hold it either (it did: ~5 MB at 137,000 calls)."""
    case = _big_case(tmp_path)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: app.main.live is not None, timeout=30,
                       what="the projection")
        await pilot.pause()
        gc.unfreeze()  # (the console freezes what it holds after its first projection)
        gc.collect()
        assert not [o for o in gc.get_objects() if isinstance(o, SkeletonCalls)]



async def test_an_empty_pane_says_not_projected_until_the_projection(
        tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    """Before its case is projected a pane does not say "no calls" (which reads as a
    verdict under a header that already counts the events), and a case still opening
    has no error cross beside it; once projected, an empty case's panes say there is
    nothing."""
    case = tmp_path / "empty"
    write_ledger(case, [])
    release = threading.Event()
    init = data.CaseFollower.__init__

    def held(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        release.wait(30)  # the case stays "opening" until the test has looked
        init(self, *args, **kwargs)

    monkeypatch.setattr(data.CaseFollower, "__init__", held)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE) as pilot:
        main = app.main
        names = ("tasks", "calls", "compilations", "receipts")
        try:
            await pilot.pause()
            assert main.live is None
            assert "\u25cb opening" in status_text(app)
            assert "\u2716" not in status_text(app)
            assert "0 events" not in status_text(app)  # not counted yet
            for name in names:
                assert main.pane(name).render_line(1).text.strip() == "not projected yet"
                assert str(main.pane(name).border_title).endswith("(\u2026)")
            # the Cases pane reads the directory, not the projection
            assert str(main.pane("cases").border_title).endswith("(1)")
        finally:
            release.set()
        await wait_for(pilot, lambda: main.live is not None, timeout=30,
                       what="the projection")
        await pilot.pause()
        assert "\u25cf following" in status_text(app)
        assert "0 events" in status_text(app)  # counted: the ledger is empty
        assert all(str(main.pane(name).border_title).endswith("(0)") for name in names)
        shown = {name: main.pane(name).render_line(1).text.strip() for name in names}
        assert shown == {"tasks": "no tasks", "calls": "no calls",
                         "compilations": "no compilations",
                         "receipts": "no provider receipts"}
        await wait_for(pilot, lambda: main.pane("timeline").render_line(1).text.strip()
                       == "no events", what="the timeline of an empty ledger")
