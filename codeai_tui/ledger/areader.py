"""The asyncio face of the reader (aiosqlite), for the Textual app's workers.

Same rules as `reader.py`: read-only URI, autocommit, query_only, every query consumed
at once so no read transaction outlives a poll. Same hazards too: only regular files are
opened, a page with text that is not UTF-8 is re-read as bytes and flagged per cell, and
when seq is not the INTEGER PRIMARY KEY only integer seqs are used as cursors and the
other rows come once, first, flagged (as in the synchronous reader). The connection is
hardened and its schema checked before any table is read, and every statement has the
reader's time budget (guard, schema_check).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiosqlite

from codeai_tui.ledger.errors import LedgerError, LedgerProblem
from codeai_tui.ledger.guard import StatementGuard, ledger_error, ledger_factory, read_budget
from codeai_tui.ledger.reader import (
    BUSY_TIMEOUT_S,
    PAGE_SIZE,
    SEQ_MAX,
    SEQ_MIN,
    TABLE_INFO_SQL,
    TABLE_SQL,
    _inode,
    check_ledger_files,
    clamp_seq,
    decode_cells,
    is_decode_error,
    readonly_uri,
    resolve_ledger_path,
    seq_key_from,
)
from codeai_tui.ledger.schema import EVENT_COLUMNS, LEDGER_FORMAT, Event, event_from_row
from codeai_tui.ledger.schema_check import (
    COLUMNS_SQL,
    INDEXES_SQL,
    MASTER_SQL,
    SchemaReport,
    judge_master,
    judge_tables,
)


class AsyncLedgerReader:
    """`stop`: every read, the open's included, ends soon after it turns true; closing
    (or cancelling the open) ends a read in progress too, so the connection's thread,
    which is not a daemon, never keeps the process alive."""

    def __init__(self, path: str | os.PathLike[str],
                 stop: Callable[[], bool] | None = None) -> None:
        self.path: Path = resolve_ledger_path(path)
        self._conn: aiosqlite.Connection | None = None
        self._stop = stop
        self._ending = False
        self._guard: StatementGuard | None = None
        self.schema = SchemaReport()
        self._inode: tuple[int, int] | None = None
        self._data_version = -1
        self._int = ""  # "typeof(seq) = 'integer' AND " when seq is not the rowid
        self._odd_sent = False
        self._lock = asyncio.Lock()

    async def open(self) -> AsyncLedgerReader:
        # A reader that fails to open is closed here: nobody else holds it.
        try:
            return await self._open()
        except asyncio.CancelledError:
            # cancelled while opening (the console quits under load): aiosqlite's thread
            # is not a daemon and would keep the process alive after the screen is gone
            # (seen: the summary printed, no exit); stop it without awaiting here
            self._stop_now()
            raise
        except Exception:
            await self.close()
            raise

    async def _open(self) -> AsyncLedgerReader:
        check_ledger_files(self.path)
        guard = self._guard = StatementGuard(read_budget(self.path), self._stopped)
        try:
            self._conn = await aiosqlite.connect(
                readonly_uri(self.path), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_S,
                factory=ledger_factory(guard),
            )
            await self._conn.execute("PRAGMA query_only=1")
            # the schema before any table is read (schema_check), in its two halves
            master = judge_master(await self._q(MASTER_SQL), self.path)
            self.schema = judge_tables(master, await self._q(COLUMNS_SQL),
                                       await self._q(INDEXES_SQL), self.path)
            rows = await self._q("SELECT value FROM ledger_meta WHERE key='format'")
            if rows and rows[0][0] == LEDGER_FORMAT and not seq_key_from(
                await self._q(TABLE_INFO_SQL), await self._q(TABLE_SQL)
            ):
                self._int = "typeof(seq) = 'integer' AND "
        except sqlite3.Error as exc:
            await self.close()
            raise ledger_error(self.path, exc, guard) from None
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

    def _stopped(self) -> bool:
        stop = self._stop
        return self._ending or (stop is not None and stop())

    def _stop_now(self) -> None:
        self._ending = True  # a statement in progress ends now: the close is not held
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.stop()  # queues close-and-end for its thread; returns at once

    async def close(self) -> None:
        self._ending = True  # a statement in progress ends now: the close is not held
        if self._conn is not None:
            conn, self._conn = self._conn, None
            # closing a broken connection must not mask the error that broke it
            with contextlib.suppress(Exception):
                await conn.close()

    async def _q(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        # one query at a time: while a page is re-read as bytes, text_factory is bytes for
        # the whole connection, and a page read meanwhile would get undecoded cells
        async with self._lock:
            return await self._q_locked(sql, params)

    async def _q_locked(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        conn = self._conn
        if conn is None:
            raise LedgerError(LedgerProblem.GONE, f"{self.path}: reader is closed")
        try:
            try:
                async with conn.execute(sql, params) as cur:
                    return list(await cur.fetchall())
            except sqlite3.OperationalError as exc:
                if not is_decode_error(exc):
                    raise
            except UnicodeDecodeError:
                pass  # a name or an SQLite message that is not UTF-8 (see reader.fetch_all)
            conn.text_factory = bytes  # this page only: decode cell by cell
            try:
                async with conn.execute(sql, params) as cur:
                    return decode_cells(list(await cur.fetchall()))
            except UnicodeDecodeError:
                raise sqlite3.DatabaseError("database disk image is malformed (text outside "
                                            "any row is not UTF-8)") from None
            finally:
                conn.text_factory = str
        except sqlite3.Error as exc:
            raise ledger_error(self.path, exc, self._guard) from None

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
        top = "CASE WHEN typeof(seq) = 'integer' THEN seq END" if self._int else "seq"
        count, max_seq = (await self._q(f"SELECT count(*), coalesce(max({top}), 0) FROM events"))[0]
        return int(count), int(max_seq)

    async def read_after(self, after_seq: int, limit: int = PAGE_SIZE) -> list[Event]:
        """As LedgerReader.read_after: a read from the start also returns, first and once,
        the rows no positive cursor reaches (seq <= 0, seqs that are not integers), and a
        careful-mode page never splits a run of duplicate seqs."""
        if after_seq >= SEQ_MAX:
            return []
        rows = await self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE {self._int}seq > ? ORDER BY seq LIMIT ?",
            (clamp_seq(max(after_seq, 0)), limit),
        )
        if self._int and rows and len(rows) >= limit:
            last = rows[-1][0]
            rows = [r for r in rows if r[0] != last] + await self._q(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE {self._int}seq = ?", (last,))
        events = [event_from_row(r) for r in rows]
        if after_seq > 0:
            self._odd_sent = False
            return events
        if self._odd_sent:
            return events
        self._odd_sent = True
        odd = await self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE typeof(seq) != 'integer' OR seq <= 0 "
            "ORDER BY typeof(seq) != 'integer', seq" if self._int else
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq <= 0 ORDER BY seq"
        )
        return [event_from_row(r) for r in odd] + events

    async def read_range(self, first_seq: int, last_seq: int) -> list[Event]:
        if first_seq > SEQ_MAX or last_seq < SEQ_MIN:
            return []
        rows = await self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE {self._int}seq BETWEEN ? AND ? "
            "ORDER BY seq",
            (clamp_seq(first_seq), clamp_seq(last_seq)),
        )
        return [event_from_row(r) for r in rows]

    async def event(self, seq: int) -> Event | None:
        if clamp_seq(seq) != seq:
            return None
        rows = await self._q(f"SELECT {EVENT_COLUMNS} FROM events WHERE {self._int}seq = ?",
                             (clamp_seq(seq),))
        return event_from_row(rows[0]) if rows else None

    async def call_seqs(self, call_id: str) -> list[int]:
        rows = await self._q(
            f"SELECT seq FROM events WHERE {self._int}call_id = ? ORDER BY seq", (call_id,)
        )
        return [int(r[0]) for r in rows]

    async def last_recorded_at(self) -> str | None:
        rows = await self._q(
            f"SELECT recorded_at FROM events WHERE {self._int}1 ORDER BY seq DESC LIMIT 1"
        )
        return str(rows[0][0]) if rows else None
