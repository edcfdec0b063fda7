"""The app's asyncio face on the ledger behaves like the synchronous reader."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from ledgerfactory import append_rows, write_ledger

from codeai_tui.ledger import LedgerError, LedgerProblem
from codeai_tui.ledger.areader import AsyncLedgerReader
from tests.support import load_vectors

VECTOR = next(v for v in load_vectors() if v["name"] == "retry_pending")


async def test_async_reader_reads_pages_and_sees_commits(tmp_path: Path) -> None:
    write_ledger(tmp_path / "c", VECTOR["events"][:4])
    writer = sqlite3.connect(tmp_path / "c" / "ledger.sqlite3", isolation_level=None)
    reader = await AsyncLedgerReader(tmp_path / "c").open()
    try:
        assert await reader.stats() == (4, 4)
        assert await reader.changed() is False
        append_rows(writer, VECTOR["events"][4:])
        assert await reader.changed() is True
        page = await reader.read_after(4, limit=3)
        assert [e.seq for e in page] == [5, 6, 7]
        assert [e.seq for e in await reader.read_range(9, 11)] == [9, 10, 11]
        assert await reader.call_seqs("call-5") == [6, 7, 8, 9, 10, 11]
        event = await reader.event(8)
        assert event is not None and event.kind == "attempt.started"
    finally:
        await reader.close()
        writer.close()


async def test_async_reader_errors_are_states(tmp_path: Path) -> None:
    with pytest.raises(LedgerError) as err:
        await AsyncLedgerReader(tmp_path / "nope").open()
    assert err.value.problem is LedgerProblem.MISSING
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "ledger.sqlite3").write_bytes(b"junk" * 1000)
    with pytest.raises(LedgerError) as err:
        await AsyncLedgerReader(tmp_path / "junk").open()
    assert err.value.problem is LedgerProblem.NOT_SQLITE
    write_ledger(tmp_path / "v2", [], fmt="codeai.ledger.v2")
    with pytest.raises(LedgerError) as err:
        await AsyncLedgerReader(tmp_path / "v2").open()
    assert err.value.problem is LedgerProblem.WRONG_FORMAT
