"""The one writer module: every append to a ledger goes through here.

WAL, `synchronous=FULL`, each event (or each resume's group of events) in its own
`BEGIN IMMEDIATE` transaction, gap-free seq assigned inside the transaction. Never make a
network call while a transaction is open (one writer, one winner).

The schema is checked (schema_check) when the ledger is opened and again inside every
write transaction, under its lock: a trigger added since the open is seen before any
row is written. The connection is hardened like a reader's (guard), so a trigger that got
past the check would make the INSERT fail, not run.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codeai_tui.ledger.errors import (
    AppendNotLanded,
    LedgerError,
    LedgerProblem,
    classify_sqlite_error,
)
from codeai_tui.ledger.guard import (
    StatementGuard,
    guard_of,
    ledger_error,
    ledger_factory,
    read_budget,
)
from codeai_tui.ledger.reader import check_format, is_decode_error, resolve_ledger_path
from codeai_tui.ledger.schema import (
    EVENT_COLUMNS,
    LEDGER_FILENAME,
    LEDGER_FORMAT,
    SCHEMA_SQL,
    Event,
    event_from_row,
)
from codeai_tui.ledger.schema_check import check_schema
from codeai_tui.ledger.table_check import checked_events

WRITE_BUSY_TIMEOUT_S = 10.0


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class NewEvent:
    kind: str
    task_id: str
    payload: dict[str, Any]
    call_id: str | None = None
    attempt_id: str | None = None
    compilation_id: str | None = None


# The appended row read back from the table itself (a rowid lookup, no index), each cell
# with its storage class: a column that converts what it is given (NUMERIC affinity, a
# REAL key) shows there.
READ_BACK_SQL = (
    f"SELECT {EVENT_COLUMNS}, "
    + ", ".join(f"typeof({c.strip()})" for c in EVENT_COLUMNS.split(","))
    + " FROM events NOT INDEXED WHERE seq = ?"
)


def _storage_class(value: object) -> str:
    return "null" if value is None else "integer" if isinstance(value, int) else "text"


class WriteTransaction:
    """An open `BEGIN IMMEDIATE` transaction: re-read evidence, then append.

    Every read here is checked against the table itself (ledger/table_check.py): a gate
    never acts on what an index alone says. Every append checks that it landed."""

    def __init__(self, conn: sqlite3.Connection, clock: Callable[[], str],
                 path: object = "ledger") -> None:
        self._conn = conn
        self._clock = clock
        self._path = path
        self.appended: list[Event] = []

    def _query(self, sql: str, params: tuple[object, ...]) -> list[tuple[object, ...]]:
        return self._conn.execute(sql, params).fetchall()

    def events_for_call(self, call_id: str) -> list[Event]:
        rows = checked_events(self._query, self._path, "call_id = ?", (call_id,),
                              f"call {call_id[:80]!r}")
        return [event_from_row(r) for r in rows]

    def events(self, where: str = "1=1", params: tuple[Any, ...] = ()) -> list[Event]:
        rows = checked_events(self._query, self._path, where, params, f"events where {where}")
        return [event_from_row(r) for r in rows]

    def max_seq(self) -> int:
        return int(self._conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])

    def append(self, new: NewEvent) -> Event:
        """INSERT one event, then check inside this transaction that it landed: exactly
        one row changed, by this statement and in all (a trigger's changes count in
        `total_changes`), and the row at its seq is, cell for cell and storage class for
        storage class, the one written. Otherwise AppendNotLanded, and `transaction()`
        rolls back."""
        seq = self.max_seq() + 1
        text = json.dumps(new.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        row = (
            seq, uuid.uuid4().hex, self._clock(), new.kind, new.task_id,
            new.call_id, new.attempt_id, new.compilation_id, text,
        )
        before = self._conn.total_changes
        try:
            cursor = self._conn.execute(
                f"INSERT INTO events ({EVENT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)", row
            )
        except sqlite3.IntegrityError as exc:
            # a fresh seq and a random event id meet no constraint of the v1 schema: a
            # CHECK or a trigger's RAISE refused the row
            raise AppendNotLanded(self._path, new.kind, seq,
                                  f"the schema refused the row: {str(exc)[:200]}") from None
        why = self._not_landed(row, cursor.rowcount, self._conn.total_changes - before)
        if why is not None:
            raise AppendNotLanded(self._path, new.kind, seq, why)
        event = event_from_row(row)
        self.appended.append(event)
        return event

    def _not_landed(self, row: tuple[object, ...], inserted: int, changed: int) -> str | None:
        """Why the INSERT of `row` did not land as written, or None when it did."""
        if inserted != 1:
            return f"the INSERT changed {inserted} rows, not 1"
        if changed != 1:
            return f"{changed} rows changed in all, not 1"
        try:
            found = self._conn.execute(READ_BACK_SQL, (row[0],)).fetchall()
        except sqlite3.OperationalError as exc:
            if not is_decode_error(exc):
                raise
            return "the row read back holds text that is not UTF-8"
        expected = (*row, *(_storage_class(v) for v in row))
        if len(found) != 1:
            return f"{len(found)} rows hold its seq"
        if found[0] != expected:
            diff = [c.strip() for c, a, b in zip(
                EVENT_COLUMNS.split(","), found[0], expected, strict=False) if a != b]
            types = [c.strip() for c, a, b in zip(
                EVENT_COLUMNS.split(","), found[0][9:], expected[9:], strict=False) if a != b]
            return "the row read back differs in " + ", ".join(diff or types)
        return None


class LedgerWriter:
    """Appends events to one ledger. Create with `create()` or open with `open()`."""

    def __init__(self, conn: sqlite3.Connection, path: Path, clock: Callable[[], str]) -> None:
        self._conn = conn
        self.path = path
        self._clock = clock

    @classmethod
    def create(cls, path: str | os.PathLike[str], clock: Callable[[], str] = utc_now,
               busy_timeout: float = WRITE_BUSY_TIMEOUT_S) -> LedgerWriter:
        """Create a new ledger. `path` is a case directory (made if needed) or, when it
        ends in `.sqlite3`, the ledger file itself."""
        p = Path(path) if str(path).endswith(".sqlite3") else Path(path) / LEDGER_FILENAME
        if p.exists():
            raise LedgerError(LedgerProblem.WRONG_FORMAT, f"{p}: already exists")
        p.parent.mkdir(parents=True, exist_ok=True)
        conn = _connect_rw(p, busy_timeout)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(SCHEMA_SQL)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO ledger_meta(key, value) VALUES ('format', ?)", (LEDGER_FORMAT,))
        conn.execute("COMMIT")
        return cls(conn, p, clock)

    @classmethod
    def open(cls, path: str | os.PathLike[str], clock: Callable[[], str] = utc_now,
             busy_timeout: float = WRITE_BUSY_TIMEOUT_S) -> LedgerWriter:
        p = resolve_ledger_path(path)
        if not p.exists():
            raise LedgerError(LedgerProblem.MISSING, f"{p}: no such ledger file")
        conn = _connect_rw(p, busy_timeout)
        try:
            check_schema(conn, p)
            check_format(conn, p)
        except sqlite3.Error as exc:
            conn.close()
            raise ledger_error(p, exc, guard_of(conn)) from None
        except LedgerError:
            conn.close()
            raise
        return cls(conn, p, clock)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> LedgerWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[WriteTransaction]:
        """`BEGIN IMMEDIATE` ... COMMIT; rolls back on any exception. Hold it briefly.

        SQLite rolls a transaction back by itself on some errors (a full disk at COMMIT):
        then there is nothing left to roll back, and the error to report is the first one,
        never "cannot rollback - no transaction is active"."""
        guard = guard_of(self._conn)
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise ledger_error(self.path, exc, guard) from None
        txn = WriteTransaction(self._conn, self._clock, self.path)
        try:
            check_schema(self._conn, self.path)  # under the write lock: no change after it
            yield txn
        except sqlite3.Error as exc:
            self._rollback()
            raise ledger_error(self.path, exc, guard) from None
        except BaseException:
            self._rollback()
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self._rollback()
            raise ledger_error(self.path, exc, guard) from None

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            # the original error is the one that says what happened
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def append(
        self,
        kind: str,
        task_id: str,
        payload: dict[str, Any],
        *,
        call_id: str | None = None,
        attempt_id: str | None = None,
        compilation_id: str | None = None,
    ) -> Event:
        """Append one event in its own transaction: a durable checkpoint when it returns."""
        with self.transaction() as txn:
            return txn.append(NewEvent(kind, task_id, payload, call_id, attempt_id, compilation_id))


def _connect_rw(path: Path, busy_timeout: float = WRITE_BUSY_TIMEOUT_S) -> sqlite3.Connection:
    guard = StatementGuard(read_budget(path))
    try:
        conn = sqlite3.connect(
            str(path), isolation_level=None, timeout=busy_timeout, check_same_thread=False,
            factory=ledger_factory(guard),
        )
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
    except sqlite3.Error as exc:
        raise classify_sqlite_error(path, exc) from None
    return conn
