"""The asyncio face of the reader (aiosqlite), for the Textual app's workers.

Same rules as `reader.py`: read-only URI, autocommit, query_only, every query consumed
at once so no read transaction outlives a poll.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite

from codeai_tui.ledger.errors import LedgerError, LedgerProblem, classify_sqlite_error
from codeai_tui.ledger.reader import (
    BUSY_TIMEOUT_S,
    PAGE_SIZE,
    _inode,
    readonly_uri,
    resolve_ledger_path,
)
from codeai_tui.ledger.schema import EVENT_COLUMNS, LEDGER_FORMAT, Event, event_from_row


class AsyncLedgerReader:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path: Path = resolve_ledger_path(path)
        self._conn: aiosqlite.Connection | None = None
        self._inode: tuple[int, int] | None = None
        self._data_version = -1

    async def open(self) -> AsyncLedgerReader:
        if not self.path.exists():
            raise LedgerError(LedgerProblem.MISSING, f"{self.path}: no such ledger file")
        if self.path.is_dir():
            raise LedgerError(LedgerProblem.NOT_A_LEDGER, f"{self.path}: is a directory")
        try:
            self._conn = await aiosqlite.connect(
                readonly_uri(self.path), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_S
            )
            await self._conn.execute("PRAGMA query_only=1")
            rows = await self._q("SELECT value FROM ledger_meta WHERE key='format'")
        except sqlite3.Error as exc:
            await self.close()
            raise classify_sqlite_error(self.path, exc) from None
        except LedgerError:
            await self.close()
            raise
        if not rows or rows[0][0] != LEDGER_FORMAT:
            await self.close()
            found = repr(str(rows[0][0])[:60]) if rows else "no format row"
            raise LedgerError(
                LedgerProblem.WRONG_FORMAT,
                f"{self.path}: ledger format is {found}, expected {LEDGER_FORMAT!r}",
            )
        self._inode = _inode(self.path)
        self._data_version = await self._read_data_version()
        return self

    async def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            # closing a broken connection must not mask the error that broke it
            with contextlib.suppress(Exception):
                await conn.close()

    async def _q(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        if self._conn is None:
            raise LedgerError(LedgerProblem.GONE, f"{self.path}: reader is closed")
        try:
            async with self._conn.execute(sql, params) as cur:
                return list(await cur.fetchall())
        except sqlite3.Error as exc:
            raise classify_sqlite_error(self.path, exc) from None

    async def _read_data_version(self) -> int:
        return int((await self._q("PRAGMA data_version"))[0][0])

    async def changed(self) -> bool:
        if _inode(self.path) != self._inode:
            raise LedgerError(LedgerProblem.GONE, f"{self.path}: ledger file was removed or replaced")
        version = await self._read_data_version()
        if version != self._data_version:
            self._data_version = version
            return True
        return False

    async def stats(self) -> tuple[int, int]:
        count, max_seq = (await self._q("SELECT count(*), coalesce(max(seq), 0) FROM events"))[0]
        return int(count), int(max_seq)

    async def read_after(self, after_seq: int, limit: int = PAGE_SIZE) -> list[Event]:
        rows = await self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )
        return [event_from_row(r) for r in rows]

    async def read_range(self, first_seq: int, last_seq: int) -> list[Event]:
        rows = await self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq",
            (first_seq, last_seq),
        )
        return [event_from_row(r) for r in rows]

    async def event(self, seq: int) -> Event | None:
        rows = await self._q(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq = ?", (seq,))
        return event_from_row(rows[0]) if rows else None

    async def call_seqs(self, call_id: str) -> list[int]:
        rows = await self._q("SELECT seq FROM events WHERE call_id = ? ORDER BY seq", (call_id,))
        return [int(r[0]) for r in rows]

    async def last_recorded_at(self) -> str | None:
        rows = await self._q("SELECT recorded_at FROM events ORDER BY seq DESC LIMIT 1")
        return str(rows[0][0]) if rows else None
