"""Read-only access to a ledger, safe beside a live writer.

Rules from NOTES.md: open with `mode=ro`, autocommit, `query_only`, a busy timeout; never
`immutable=1`; never hold a read transaction between polls (every query is consumed at
once); page by key, never OFFSET; detect other writers' commits with `data_version`.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from codeai_tui.ledger.errors import LedgerError, LedgerProblem, classify_sqlite_error
from codeai_tui.ledger.schema import (
    EVENT_COLUMNS,
    LEDGER_FILENAME,
    LEDGER_FORMAT,
    Event,
    event_from_row,
)

BUSY_TIMEOUT_S = 2.0
PAGE_SIZE = 5000


def resolve_ledger_path(path: str | os.PathLike[str]) -> Path:
    """A case directory or the ledger file itself -> the ledger file's path."""
    p = Path(path)
    if p.is_dir():
        return p / LEDGER_FILENAME
    return p


def readonly_uri(path: Path) -> str:
    return f"file:{quote(str(path.absolute()))}?mode=ro"


def connect_readonly(path: Path, timeout: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """Open a ledger read-only; never creates the file. Raises LedgerError."""
    if not path.exists():
        raise LedgerError(LedgerProblem.MISSING, f"{path}: no such ledger file")
    if path.is_dir():
        raise LedgerError(LedgerProblem.NOT_A_LEDGER, f"{path}: is a directory, not a ledger")
    try:
        conn = sqlite3.connect(
            readonly_uri(path), uri=True, isolation_level=None, timeout=timeout,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise classify_sqlite_error(path, exc) from None
    try:
        conn.execute("PRAGMA query_only=1")
        check_format(conn, path)
    except sqlite3.Error as exc:
        conn.close()
        raise classify_sqlite_error(path, exc) from None
    except LedgerError:
        conn.close()
        raise
    return conn


def check_format(conn: sqlite3.Connection, path: Path) -> None:
    row = conn.execute("SELECT value FROM ledger_meta WHERE key='format'").fetchone()
    if row is None:
        raise LedgerError(LedgerProblem.WRONG_FORMAT, f"{path}: ledger_meta has no 'format' row")
    if row[0] != LEDGER_FORMAT:
        raise LedgerError(
            LedgerProblem.WRONG_FORMAT,
            f"{path}: ledger format is {str(row[0])[:60]!r}, expected {LEDGER_FORMAT!r}",
        )


class LedgerReader:
    """Synchronous read-only reader (CLI, projection, resume's pre-checks, workers)."""

    def __init__(self, path: str | os.PathLike[str], timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = resolve_ledger_path(path)
        self._conn = connect_readonly(self.path, timeout)
        self._inode = _inode(self.path)
        self._data_version = self._read_data_version()

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> LedgerReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _q(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Run one query to completion (no read transaction survives it)."""
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise classify_sqlite_error(self.path, exc) from None

    def _read_data_version(self) -> int:
        return int(self._q("PRAGMA data_version")[0][0])  # type: ignore[arg-type]

    def changed(self) -> bool:
        """True once after another connection committed; raises LedgerError(GONE) if the
        file was removed or replaced (the open connection would keep reading the old one)."""
        if _inode(self.path) != self._inode:
            raise LedgerError(LedgerProblem.GONE, f"{self.path}: ledger file was removed or replaced")
        version = self._read_data_version()
        if version != self._data_version:
            self._data_version = version
            return True
        return False

    def stats(self) -> tuple[int, int]:
        """(event count, highest seq)."""
        count, max_seq = self._q("SELECT count(*), coalesce(max(seq), 0) FROM events")[0]
        return int(count), int(max_seq)  # type: ignore[arg-type]

    def read_after(self, after_seq: int, limit: int = PAGE_SIZE) -> list[Event]:
        rows = self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
            (after_seq, limit),
        )
        return [event_from_row(r) for r in rows]

    def read_range(self, first_seq: int, last_seq: int) -> list[Event]:
        rows = self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq",
            (first_seq, last_seq),
        )
        return [event_from_row(r) for r in rows]

    def iter_events(self, after_seq: int = 0, until_seq: int | None = None) -> Iterator[Event]:
        """All events with after_seq < seq (<= until_seq), paged by key."""
        last = after_seq
        while True:
            page = self.read_after(last)
            if not page:
                return
            for ev in page:
                if until_seq is not None and ev.seq > until_seq:
                    return
                yield ev
            last = page[-1].seq

    def events(self, until_seq: int | None = None) -> list[Event]:
        return list(self.iter_events(0, until_seq))

    def event(self, seq: int) -> Event | None:
        rows = self._q(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq = ?", (seq,))
        return event_from_row(rows[0]) if rows else None

    def events_for_call(self, call_id: str) -> list[Event]:
        rows = self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE call_id = ? ORDER BY seq", (call_id,)
        )
        return [event_from_row(r) for r in rows]

    def events_for_task(self, task_id: str, kinds: tuple[str, ...] | None = None) -> list[Event]:
        sql = f"SELECT {EVENT_COLUMNS} FROM events WHERE task_id = ?"
        params: tuple[object, ...] = (task_id,)
        if kinds:
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            params += kinds
        return [event_from_row(r) for r in self._q(sql + " ORDER BY seq", params)]

    def call_seqs(self, call_id: str) -> list[int]:
        """Seqs of one call's events, from the covering index alone."""
        return [int(r[0]) for r in self._q(  # type: ignore[arg-type]
            "SELECT seq FROM events WHERE call_id = ? ORDER BY seq", (call_id,)
        )]

    def last_recorded_at(self) -> str | None:
        rows = self._q("SELECT recorded_at FROM events ORDER BY seq DESC LIMIT 1")
        return str(rows[0][0]) if rows else None


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
