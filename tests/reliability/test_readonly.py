"""Must hold 3: inspect, verify, export and the console leave a ledger's bytes alone in
every cell of dir ro/rw x -shm absent/present x writer live/stopped/killed."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from codeai_tui.lab.reliability.cases import make_call_case
from codeai_tui.lab.reliability.readonly import (
    Cell,
    all_cells,
    cli_tools,
    read_only_mount_problem,
    run_cell,
    run_matrix,
)

from .conftest import inprocess_cli


def console_tool(case: Path, _scratch: Path) -> tuple[bool, str]:
    """The console opened on the case without any write action, then quit."""
    import time

    from codeai_tui.app import create_app
    from codeai_tui.app.screens.error import ErrorScreen

    async def wait_until(pilot: Any, predicate: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not predicate():
            await pilot.pause()
            await asyncio.sleep(0.02)

    async def run() -> tuple[bool, str]:
        app: Any = create_app(case)
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_until(pilot, lambda: app.main.session.state == "following"
                             or isinstance(app.screen, ErrorScreen), timeout=30)
            opened = app.main.session.state == "following"
            sentence = "" if opened else str(app.screen.sentence)
            await pilot.press("q")
        return opened, sentence

    return asyncio.run(run())


def _make_case(case: Path) -> None:
    make_call_case(case, "http://127.0.0.1:9/v1")


@pytest.mark.parametrize("read_only_dir", [False, True], ids=["rw-dir", "ro-dir"])
def test_readers_change_no_byte_in_any_cell(tmp_path: Path, read_only_dir: bool) -> None:
    if read_only_dir and (why := read_only_mount_problem(tmp_path / "probe")):
        pytest.skip(why)
    tools = {**cli_tools(inprocess_cli), "console": console_tool}
    cells = [c for c in all_cells() if c.read_only_dir == read_only_dir]
    results = run_matrix(tmp_path, tools, _make_case, cells)
    ran = [r for r in results if r.skipped is None]
    assert [r.cell.writer for r in results if r.skipped] == ["live"]  # live, -shm absent: N/A
    assert len(ran) == 5
    for r in ran:
        assert r.problems == [], (r.cell.name, r.problems)
        assert [o.tool for o in r.outcomes] == ["inspect", "verify", "export", "console"]
        assert r.bytes_changed == 0 and r.wrote_after
        for o in r.outcomes:
            assert o.opened or (o.sentence and "\n" not in o.sentence), (r.cell.name, o)


def test_a_careless_reader_is_caught_changing_bytes(tmp_path: Path) -> None:
    """An ordinary read-write client checkpoints a killed writer's -wal on close: the
    matrix reports it, so its "no byte changed" is not vacuous."""

    def careless(case: Path, _scratch: Path) -> tuple[bool, str]:
        conn = sqlite3.connect(case / "ledger.sqlite3")
        conn.execute("SELECT count(*) FROM events").fetchone()
        conn.close()
        return True, ""

    result = run_cell(Cell(False, True, "killed"), tmp_path, {"careless": careless},
                      _make_case, None)
    assert result.bytes_changed == 1
    assert any("careless changed" in p for p in result.problems)
