"""Read-only access to a ledger, safe beside a live writer.

Rules measured against SQLite: open with `mode=ro`, autocommit, `query_only`, a busy timeout; never
`immutable=1`; never hold a read transaction between polls (every query is consumed at
once); page by key, never OFFSET; detect other writers' commits with `data_version`.

A ledger is untrusted input: only regular files are handed to SQLite (a FIFO
would block the open forever, a symlink would read a file from elsewhere); a table whose
`seq` is not the INTEGER PRIMARY KEY can hold 2.5, '2x' or NULL, which would stall a
`seq > ?` cursor, so such rows are returned once, flagged, and never used as a cursor;
TEXT that is not UTF-8 makes Python's sqlite3 fail the whole fetch, so a page that fails
is read again as bytes and decoded cell by cell, flagging the bad cells.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from urllib.parse import quote

from codeai_tui.ledger import table_check
from codeai_tui.ledger.errors import LedgerError, LedgerProblem, classify_sqlite_error
from codeai_tui.ledger.guard import (
    CHECK_OPS,
    StatementGuard,
    guard_of,
    ledger_error,
    ledger_factory,
    read_budget,
)
from codeai_tui.ledger.safefile import check_regular, refusal
from codeai_tui.ledger.schema import (
    EVENT_COLUMNS,
    LEDGER_FILENAME,
    LEDGER_FORMAT,
    Event,
    UndecodableText,
    event_from_row,
)
from codeai_tui.ledger.schema_check import SchemaReport, check_schema
from codeai_tui.ledger.table_check import checked_events

BUSY_TIMEOUT_S = 2.0
STOP_CHECK_OPS = CHECK_OPS  # SQLite VM steps between stop checks (see abort_when)
PAGE_SIZE = 5000
CAREFUL_PAGE = 50_000  # careful mode (see LedgerReader): fewer full scans of an unindexed seq
SEQ_MIN, SEQ_MAX = -(2**63), 2**63 - 1  # SQLite's INTEGER range
TIMES_CHUNK = 500  # seqs per `times_of` query (SQLite allows 32,766 parameters)
# the payload fields that name who wrote an operator's event (codeai_tui/ledger/who.py)
OPERATOR_FIELDS = ("decided_by", "by", "recorded_by")
OPERATOR_EVENTS_LIMIT = 1000


def clamp_seq(seq: int) -> int:
    """A seq bound as an SQL parameter: a ledger may hold seq 2**63-1, and a page or a
    cursor computed past it must not raise OverflowError."""
    return min(max(seq, SEQ_MIN), SEQ_MAX)


def resolve_ledger_path(path: str | os.PathLike[str]) -> Path:
    """A case directory or the ledger file itself -> the ledger file's path."""
    p = Path(path)
    if p.is_dir():
        return p / LEDGER_FILENAME
    return p


def readonly_uri(path: Path) -> str:
    return f"file:{quote(str(path.absolute()))}?mode=ro"


def check_ledger_files(path: Path) -> None:
    """The ledger and any -wal/-shm beside it are regular files, not symlinks, FIFOs,
    devices or sockets (SQLite would block opening a FIFO). `lstat` only: see safefile."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise LedgerError(LedgerProblem.MISSING, f"{path}: no such ledger file") from None
    except OSError as exc:
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: cannot stat ({exc.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise LedgerError(LedgerProblem.NOT_A_LEDGER, f"{path}: is a directory, not a ledger")
    if not stat.S_ISREG(st.st_mode):
        raise refusal(path, st.st_mode)
    for suffix in ("-wal", "-shm", "-journal"):
        check_regular(Path(f"{path}{suffix}"), missing_ok=True)


_DESC_KEY = re.compile(r"primary\s+key\s+desc|without\s+rowid", re.IGNORECASE)


def seq_is_rowid(conn: sqlite3.Connection) -> bool:
    """True when events.seq is the table's INTEGER PRIMARY KEY (a rowid alias): then every
    seq is a unique integer and `seq > ?` pages strictly forward. Any other table is read in
    the careful mode (see LedgerReader)."""
    cols = fetch_all(conn, TABLE_INFO_SQL)
    return seq_key_from(cols, fetch_all(conn, TABLE_SQL))


TABLE_INFO_SQL = "PRAGMA table_info(events)"
TABLE_SQL = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'events'"


def seq_key_from(cols: Sequence[Sequence[object]], table_sql: Sequence[Sequence[object]]) -> bool:
    """`seq_is_rowid` from the rows of TABLE_INFO_SQL and TABLE_SQL (shared with areader)."""
    keys = [c for c in cols if c[5]]
    if len(keys) != 1 or str(keys[0][1]).lower() != "seq" or str(keys[0][2]).upper() != "INTEGER":
        return False
    sql = table_sql[0][0] if table_sql else None
    return isinstance(sql, str) and not _DESC_KEY.search(sql)


def decode_cells(rows: Sequence[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Rows fetched with `text_factory=bytes` -> text cells; bytes that are not UTF-8
    become `UndecodableText` (U+FFFD in place of each bad byte) so the row is flagged."""
    out: list[tuple[object, ...]] = []
    for row in rows:
        cells: list[object] = []
        for value in row:
            if type(value) is bytes:
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError:
                    value = UndecodableText(value.decode("utf-8", "replace"))
            cells.append(value)
        out.append(tuple(cells))
    return out


def is_decode_error(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and "could not decode" in str(exc).lower()


def fetch_all(conn: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()
              ) -> list[tuple[object, ...]]:
    """Run one query to completion. Fast path: str cells; only when a cell is not UTF-8
    (sqlite3 fails the whole fetch) the query runs again returning bytes, decoded per cell."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if not is_decode_error(exc):
            raise
    except UnicodeDecodeError:
        pass  # a name or an SQLite message that is not UTF-8 (a corrupt schema): see below
    conn.text_factory = bytes
    try:
        rows = conn.execute(sql, params).fetchall()
    except UnicodeDecodeError:
        raise sqlite3.DatabaseError(
            "database disk image is malformed (text outside any row is not UTF-8)") from None
    finally:
        conn.text_factory = str
    return decode_cells(rows)


def open_readonly(path: Path, timeout: float = BUSY_TIMEOUT_S,
                  stop: Callable[[], bool] | None = None
                  ) -> tuple[sqlite3.Connection, SchemaReport]:
    """Open a ledger read-only; never creates the file. Raises LedgerError.

    The connection is hardened before its first query (guard.LedgerConnection), every
    statement on it has a time budget and ends soon after `stop()` turns true (so a
    console quitting during this very open is not held), and the schema is checked
    (schema_check) before the format row, the first read of a table."""
    check_ledger_files(path)
    guard = StatementGuard(read_budget(path), stop)
    try:
        conn = sqlite3.connect(
            readonly_uri(path), uri=True, isolation_level=None, timeout=timeout,
            check_same_thread=False, factory=ledger_factory(guard),
        )
    except sqlite3.Error as exc:
        raise classify_sqlite_error(path, exc) from None
    try:
        conn.execute("PRAGMA query_only=1")
        report = check_schema(conn, path)
        check_format(conn, path)
    except sqlite3.Error as exc:
        conn.close()
        raise ledger_error(path, exc, guard) from None
    except LedgerError:
        conn.close()
        raise
    return conn, report


def connect_readonly(path: Path, timeout: float = BUSY_TIMEOUT_S,
                     stop: Callable[[], bool] | None = None) -> sqlite3.Connection:
    """`open_readonly` for a caller that needs no schema report."""
    return open_readonly(path, timeout, stop)[0]


def abort_when(conn: sqlite3.Connection, stop: Callable[[], bool]) -> None:
    """Make every statement on `conn` end with "interrupted" (a LedgerError to callers)
    soon after `stop()` turns true: SQLite asks every STOP_CHECK_OPS virtual-machine steps
    (~25 ms here; at most ~0.1 s seen), so a reader thread in the middle of a long grouped
    read lets the console quit at once (`q` during the first load). Better:
    give `stop` when opening (`open_readonly`), so the open itself is covered too.

    Each check calls into Python, so it waits for the GIL: up to the switch interval
    (5 ms) while another thread runs Python. At 20,000 steps the skeleton's grouped read
    (82M steps on the 1M-event ledger) made 4,100 checks, and beside a busy thread it ran
    ~40% slower (the console's answer: median 3.23 s against 2.31 s at 1,000,000 steps,
    7 alternating launches each)."""
    guard = guard_of(conn)
    if guard is not None:
        guard.stop = stop
    else:
        conn.set_progress_handler(lambda: 1 if stop() else 0, STOP_CHECK_OPS)


def check_format(conn: sqlite3.Connection, path: Path) -> None:
    rows = fetch_all(conn, "SELECT value FROM ledger_meta WHERE key='format'")
    row = rows[0] if rows else None
    if row is None:
        raise LedgerError(LedgerProblem.WRONG_FORMAT, f"{path}: ledger_meta has no 'format' row")
    if row[0] != LEDGER_FORMAT:
        raise LedgerError(
            LedgerProblem.WRONG_FORMAT,
            f"{path}: ledger format is {str(row[0])[:60]!r}, expected {LEDGER_FORMAT!r}",
        )


class LedgerReader:
    """Synchronous read-only reader (CLI, projection, resume's pre-checks, workers).

    When events.seq is not the INTEGER PRIMARY KEY (`careful` mode) a row's seq may be a
    real, text, blob, NULL or a duplicate. Cursors then use only integer seqs; duplicates
    are never split across pages; rows whose seq is not an integer come once, at the
    start (seq -1, `payload_error` saying why), so the projection flags them as anomalies.
    """

    def __init__(self, path: str | os.PathLike[str], timeout: float = BUSY_TIMEOUT_S,
                 stop: Callable[[], bool] | None = None) -> None:
        """`stop`: every read, this open's included, ends soon after it turns true."""
        self.path = resolve_ledger_path(path)
        self._conn, self.schema = open_readonly(self.path, timeout, stop)
        self._lock = threading.Lock()  # text_factory is per connection (see fetch_all)
        try:
            self.careful = not seq_is_rowid(self._conn)
        except sqlite3.Error as exc:
            self._conn.close()
            raise ledger_error(self.path, exc, guard_of(self._conn)) from None
        # SQL that keeps only integer seqs (empty when the schema guarantees them)
        self._int = "typeof(seq) = 'integer' AND " if self.careful else ""
        self._odd_sent = False
        self._inode = _inode(self.path)
        self._data_version = self._read_data_version()

    def close(self) -> None:
        self._conn.close()

    def abort_when(self, stop: Callable[[], bool]) -> None:
        """Statements end ("interrupted") soon after `stop()` turns true."""
        abort_when(self._conn, stop)

    def __enter__(self) -> LedgerReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _q(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Run one query to completion (no read transaction survives it)."""
        with self._lock:
            return self._q_held(sql, params)

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
        top = "CASE WHEN typeof(seq) = 'integer' THEN seq END" if self.careful else "seq"
        count, max_seq = self._q(f"SELECT count(*), coalesce(max({top}), 0) FROM events")[0]
        return int(count), int(max_seq)  # type: ignore[arg-type]

    def read_after(self, after_seq: int, limit: int = PAGE_SIZE) -> list[Event]:
        """Events with seq > after_seq in seq order, about `limit` of them.

        A read from the start (after_seq <= 0) also returns, first and once, the rows a
        `seq > 0` cursor can never reach: seq <= 0 and (careful mode) seqs that are not
        integers; the projection flags each. A careful-mode page also holds every
        duplicate of its last seq."""
        if after_seq >= SEQ_MAX:
            return []
        cursor = max(after_seq, 0)  # rows at or below 0 come only from _unreachable()
        if not self.careful:
            rows = self._q(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                (clamp_seq(cursor), limit),
            )
        else:
            # no index orders these seqs: each page is a full scan, so take big pages
            limit = max(limit, CAREFUL_PAGE)
            rows = self._q(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE {self._int}seq > ? "
                "ORDER BY seq LIMIT ?",
                (clamp_seq(cursor), limit),
            )
            if rows and len(rows) >= limit:  # never split a run of duplicate seqs
                last = rows[-1][0]
                rows = [r for r in rows if r[0] != last] + self._q(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE {self._int}seq = ?", (last,)
                )
        events = [event_from_row(r) for r in rows]
        if after_seq > 0:
            self._odd_sent = False
            return events
        if self._odd_sent:  # the caller's cursor did not move past them: once is enough
            return events
        self._odd_sent = True
        return self._unreachable() + events

    def _unreachable(self) -> list[Event]:
        """Rows no positive cursor reaches: seq <= 0, or (careful mode) not an integer."""
        if not self.careful:  # a rowid range: cheap on any size of ledger
            rows = self._q(f"SELECT {EVENT_COLUMNS} FROM events WHERE seq <= 0 ORDER BY seq")
        else:
            rows = self._q(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE typeof(seq) != 'integer' OR seq <= 0 "
                "ORDER BY typeof(seq) != 'integer', seq"
            )
        return [event_from_row(r) for r in rows]

    def read_range(self, first_seq: int, last_seq: int) -> list[Event]:
        if first_seq > SEQ_MAX or last_seq < SEQ_MIN:
            return []
        rows = self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE {self._int}seq BETWEEN ? AND ? "
            "ORDER BY seq",
            (clamp_seq(first_seq), clamp_seq(last_seq)),
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
            top = max(ev.seq for ev in page)
            if top <= last:  # only rows without an integer seq: nothing further to page
                return
            last = top

    def events(self, until_seq: int | None = None) -> list[Event]:
        return list(self.iter_events(0, until_seq))

    def event(self, seq: int) -> Event | None:
        if clamp_seq(seq) != seq:
            return None
        rows = self._q(f"SELECT {EVENT_COLUMNS} FROM events WHERE {self._int}seq = ?",
                       (clamp_seq(seq),))
        return event_from_row(rows[0]) if rows else None

    def events_for_call(self, call_id: str, kinds: tuple[str, ...] | None = None
                        ) -> list[Event]:
        """One call's events in seq order (only those of `kinds`, if given: a call can
        hold 10^5 events, each parsed here while the console waits on the GIL), the same
        through its index and from the table alone (a write's plan is made from these:
        ledger/table_check.py); raises IndexDisagrees."""
        return self._events_of("call_id", call_id, kinds, f"call {call_id[:80]!r}")

    def _events_of(self, column: str, value: str, kinds: tuple[str, ...] | None,
                   what: str) -> list[Event]:
        """The events whose `column` is `value` (of `kinds`, if given), checked."""
        where = f"{column} = ?"
        params: tuple[object, ...] = (value,)
        if kinds:
            where += f" AND kind IN ({','.join('?' * len(kinds))})"
            params += kinds
        return [event_from_row(r) for r in self._checked(where, params, what)]

    def _checked(self, where: str, params: tuple[object, ...], what: str
                 ) -> list[tuple[object, ...]]:
        """`checked_events` with both reads in one read transaction: a writer committing
        between them is not an index that disagrees with its table (the two reads of
        a write's plan raced the other writers of a case and read as a lying index)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN")
            except sqlite3.Error as exc:
                raise ledger_error(self.path, exc, guard_of(self._conn)) from None
            try:
                return checked_events(self._q_held, self.path, where, params, what)
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")  # a read: nothing to keep or undo

    def _q_held(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """`_q` for a caller that holds the lock already."""
        try:
            return fetch_all(self._conn, sql, params)
        except sqlite3.Error as exc:
            raise ledger_error(self.path, exc, guard_of(self._conn)) from None

    def events_for_task(self, task_id: str, kinds: tuple[str, ...] | None = None) -> list[Event]:
        """A task's events (of `kinds`), checked like `events_for_call`."""
        return self._events_of("task_id", task_id, kinds, f"task {task_id[:80]!r}")

    def index_disagrees(self, as_of: int, call_kinds: Sequence[str]) -> bool:
        """True when the indexes the fast path reads give other events than the table
        (ledger/table_check.py): for a projection made event by event, which reads the
        table alone and would not otherwise know."""
        return table_check.index_disagrees(self._q, as_of, call_kinds)

    def call_seqs(self, call_id: str) -> list[int]:
        """Seqs of one call's events, from the covering index alone."""
        return [int(r[0]) for r in self._q(  # type: ignore[arg-type]
            f"SELECT seq FROM events WHERE {self._int}call_id = ? ORDER BY seq", (call_id,)
        )]

    def last_recorded_at(self) -> str | None:
        rows = self._q(
            f"SELECT recorded_at FROM events WHERE {self._int}1 ORDER BY seq DESC LIMIT 1"
        )
        return str(rows[0][0]) if rows else None

    def times_of(self, seqs: Sequence[int]) -> list[tuple[int, str]]:
        """(seq, recorded_at) of the events with these seqs, in seq order: the samples
        of a time axis, read by key a few hundred at a time (2,048 of a 10^6-event
        ledger cost milliseconds). Seqs that hold no event, and recorded_at cells that
        are not text, are left out."""
        out: list[tuple[int, str]] = []
        wanted = sorted({clamp_seq(s) for s in seqs})
        for i in range(0, len(wanted), TIMES_CHUNK):
            chunk = tuple(wanted[i:i + TIMES_CHUNK])
            rows = self._q(
                f"SELECT seq, recorded_at FROM events WHERE {self._int}seq IN "
                f"({','.join('?' * len(chunk))}) ORDER BY seq", chunk)
            out += [(r[0], r[1]) for r in rows if type(r[0]) is int and isinstance(r[1], str)]
        return out

    def operator_events(self, until_seq: int | None = None,
                        limit: int = OPERATOR_EVENTS_LIMIT) -> list[Event]:
        """The events whose payload text names who wrote it (`decided_by`, `by`,
        `recorded_by`: what an operator's action appends), in seq order, at most `limit`
        of them. A text match: the caller checks each payload's field."""
        matches = " OR ".join(f"instr(payload, '\"{name}\"') > 0" for name in OPERATOR_FIELDS)
        rows = self._q(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE {self._int}seq <= ? AND ({matches}) "
            "ORDER BY seq LIMIT ?",
            (clamp_seq(SEQ_MAX if until_seq is None else until_seq), limit))
        return [event_from_row(r) for r in rows]


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)
