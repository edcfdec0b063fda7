"""Every connection to a ledger: hardened before its first query, every statement
interruptible.

A ledger is untrusted input, its schema included (see schema_check). A `LedgerConnection`
is made by `sqlite3.connect(..., factory=...)`, so nothing can run on it before these hold:

- `PRAGMA trusted_schema=OFF`: a function or virtual table the schema names runs only if
  SQLite marks it innocuous;
- `PRAGMA cell_size_check=ON`: a damaged b-tree cell is an error, not a wild read;
- `PRAGMA mmap_size=0`: pages are read with read(), never mapped (a truncated mapped file
  kills the process with SIGBUS);
- limits (`Connection.setlimit`, Python 3.11): no ATTACH at all, and trigger depth 0, so
  a trigger that got past the schema check makes its statement fail instead of running;
- a progress handler (`StatementGuard`): every statement ends ("interrupted") soon after
  its caller's `stop()` turns true, or once it has run longer than its budget;
- no statement in a process forked after the connection was opened (SQLite: a
  connection must not be carried across a fork): it fails there, and a forked child
  opens a connection of its own.

Not available here: SQLITE_DBCONFIG_DEFENSIVE and the other `sqlite3_db_config` switches
(`Connection.setconfig` exists only from Python 3.12).
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from codeai_tui.ledger.errors import LedgerError, LedgerProblem, classify_sqlite_error

# SQLite virtual-machine steps between two calls of the progress handler: ~25 ms of a
# grouped read here (see reader.abort_when for why not fewer)
CHECK_OPS = 1_000_000
BUDGET_ENV = "CODEAI_TUI_READ_BUDGET"
# The longest one statement may run (or one batch of a streamed statement take to come):
# a floor, and more for each GiB of ledger file (a legitimate read is linear in the file).
# Measured on the bench's 1,000,000-event ledger (338 MiB) with the machine's load average
# at 8-9 on 2 cores: the longest statement of `inspect` took 6.0 s, of `inspect --json`
# 6.6 s, of the console's first load 8.2 s (the suspect scan: every cell of every row,
# few rows out). Its budget here is 30 + 120 x 0.33 = 70 s, 8.5 times the worst of them.
BUDGET_FLOOR_S = 30.0
BUDGET_PER_GIB_S = 120.0
_GIB = 1 << 30

HARDENING = (
    "PRAGMA trusted_schema=OFF",
    "PRAGMA cell_size_check=ON",
    "PRAGMA mmap_size=0",
)
LIMITS = (
    (sqlite3.SQLITE_LIMIT_ATTACHED, 0),
    (sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH, 0),
)


def budget_setting() -> float | None:
    """The operator's budget in seconds (CODEAI_TUI_READ_BUDGET), or None when unset.
    Raises LedgerError for a value that is not a finite number of seconds above 0."""
    text = os.environ.get(BUDGET_ENV, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise LedgerError(LedgerProblem.OVER_BUDGET,
                          f"{BUDGET_ENV}={text[:40]!r}: not a number of seconds above 0")
    return value


def read_budget(path: Path | None) -> float:
    """Seconds a statement on the ledger at `path` may run: the operator's setting, else
    BUDGET_FLOOR_S plus BUDGET_PER_GIB_S for each GiB of the ledger and its -wal (a
    legitimate read of a bigger ledger takes longer; a small file that reads for minutes
    is broken or hostile)."""
    chosen = budget_setting()
    if chosen is not None:
        return chosen
    size = 0
    if path is not None:
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                size += os.stat(f"{path}{suffix}").st_size
    return BUDGET_FLOOR_S + BUDGET_PER_GIB_S * size / _GIB


class StatementGuard:
    """The progress handler of one connection. A statement ends ("interrupted") when
    `stop()` turns true, or when more than `budget_s` passed since it began or since its
    last batch of rows was asked for (`begin`); `expired` then says which."""

    __slots__ = ("stop", "budget_s", "expired", "_deadline", "_pid")

    def __init__(self, budget_s: float, stop: Callable[[], bool] | None = None) -> None:
        self.stop = stop
        self.budget_s = budget_s
        self.expired = False
        self._deadline = math.inf
        self._pid = os.getpid()

    def begin(self) -> None:
        """A statement starts, or a stream asks for its next batch: a new budget. Raises
        sqlite3.ProgrammingError in a process forked since the connection was opened."""
        if os.getpid() != self._pid:
            raise sqlite3.ProgrammingError("a ledger connection is not used in a process "
                                           "forked after it was opened")
        self.expired = False
        self._deadline = time.monotonic() + self.budget_s

    def __call__(self) -> int:
        stop = self.stop
        if stop is not None and stop():
            return 1
        if time.monotonic() > self._deadline:
            self.expired = True
            return 1
        return 0


class LedgerCursor(sqlite3.Cursor):
    """A cursor whose every statement, and every batch of rows, starts a new budget.

    A statement that fails closes its cursor: the traceback keeps this frame, and a cursor
    kept alive keeps its statement, which keeps the database file open after the
    connection's close (until the traceback is collected)."""

    connection: LedgerConnection

    def _release(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # (its connection may be closed already)
            self.close()

    def execute(self, sql: str, parameters: Any = (), /) -> LedgerCursor:
        self.connection.guard.begin()
        try:
            return super().execute(sql, parameters)
        except BaseException:
            self._release()
            raise

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> LedgerCursor:
        self.connection.guard.begin()
        try:
            return super().executemany(sql, seq_of_parameters)
        except BaseException:
            self._release()
            raise

    def executescript(self, sql_script: str, /) -> LedgerCursor:
        self.connection.guard.begin()
        try:
            return super().executescript(sql_script)
        except BaseException:
            self._release()
            raise

    def fetchmany(self, size: int | None = None) -> list[Any]:
        self.connection.guard.begin()
        try:
            return super().fetchmany(self.arraysize if size is None else size)
        except BaseException:
            self._release()
            raise


class LedgerConnection(sqlite3.Connection):
    """A connection made hardened (HARDENING, LIMITS) with a `guard` on every statement.
    Make it with `sqlite3.connect(..., factory=ledger_factory(budget, stop))`."""

    def __init__(self, *args: Any, guard: StatementGuard | None = None, **kwargs: Any) -> None:
        kwargs.pop("factory", None)
        super().__init__(*args, **kwargs)
        self.guard = guard if guard is not None else StatementGuard(BUDGET_FLOOR_S)
        self.set_progress_handler(self.guard, CHECK_OPS)
        for limit, value in LIMITS:
            self.setlimit(limit, value)
        for pragma in HARDENING:
            self.execute(pragma)

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(LedgerCursor if factory is None else factory)

    # (sqlite3.Connection.execute makes a plain Cursor: these make a LedgerCursor, whose
    # batches of rows each start a new budget)
    def execute(self, sql: str, parameters: Any = (), /) -> LedgerCursor:
        return self.cursor().execute(sql, parameters)  # type: ignore[no-any-return]

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> LedgerCursor:
        return self.cursor().executemany(sql, seq_of_parameters)  # type: ignore[no-any-return]

    def executescript(self, sql_script: str, /) -> LedgerCursor:
        return self.cursor().executescript(sql_script)  # type: ignore[no-any-return]


def ledger_factory(guard: StatementGuard) -> Callable[..., LedgerConnection]:
    """The `factory=` for sqlite3.connect (and aiosqlite.connect, which passes it on)."""

    def make(*args: Any, **kwargs: Any) -> LedgerConnection:
        return LedgerConnection(*args, guard=guard, **kwargs)

    return make


def guard_of(conn: sqlite3.Connection) -> StatementGuard | None:
    return conn.guard if isinstance(conn, LedgerConnection) else None


def over_budget(path: object, guard: StatementGuard) -> LedgerError:
    return LedgerError(
        LedgerProblem.OVER_BUDGET,
        f"{path}: a read of the ledger ran past its budget of {guard.budget_s:.3g} s and "
        f"was stopped (a damaged or hostile file, or a ledger too big for the budget: "
        f"{BUDGET_ENV}=SECONDS sets another)")


def ledger_error(path: object, exc: BaseException, guard: StatementGuard | None) -> LedgerError:
    """`classify_sqlite_error`, knowing why an "interrupted" statement was stopped."""
    if guard is not None and guard.expired and "interrupted" in str(exc):
        return over_budget(path, guard)
    return classify_sqlite_error(path, exc)
