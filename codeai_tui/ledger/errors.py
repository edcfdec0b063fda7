"""Every way a ledger can fail to open or read, as one-line states (never tracebacks)."""

from __future__ import annotations

import os
import sqlite3
from enum import StrEnum
from pathlib import Path


class LedgerProblem(StrEnum):
    MISSING = "missing"
    NOT_A_LEDGER = "not_a_ledger"
    NOT_SQLITE = "not_sqlite"
    WRONG_FORMAT = "wrong_format"
    BUSY = "busy"
    READONLY_DIR = "readonly_dir"
    CORRUPT = "corrupt"
    GONE = "gone"
    LOCKED_FOR_WRITE = "locked_for_write"
    DISK_FULL = "disk_full"
    UNSAFE_FILE = "unsafe_file"  # a symlink, FIFO, device or socket where a file belongs
    TOO_LARGE = "too_large"
    NOT_LANDED = "not_landed"  # an append that did not land as written (rolled back)
    INDEX_DISAGREES = "index_disagrees"  # an index says other than its table
    UNSAFE_SCHEMA = "unsafe_schema"  # a trigger, a view, ...: SQL in the schema that runs
    OVER_BUDGET = "over_budget"  # a read ran past its time budget and was stopped


INDEX_DISAGREES = "the index disagrees with the table: run PRAGMA integrity_check"


class LedgerError(Exception):
    """A ledger that cannot be read or written. `str()` is one operator-readable line."""

    def __init__(self, problem: LedgerProblem, message: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.message = message

    def __str__(self) -> str:
        return self.message


class AppendNotLanded(LedgerError):
    """An append whose row is not in the table exactly as written, or that changed other
    rows too (a trigger, a column that converts what it is given): the transaction was
    rolled back, so nothing that depends on the append happened."""

    def __init__(self, path: object, kind: str, seq: int, why: str) -> None:
        super().__init__(
            LedgerProblem.NOT_LANDED,
            f"{path}: {kind} at seq {seq} did not land as written ({why}): rolled back, "
            "and nothing that needed it was done (nothing was sent); something in the "
            "ledger's schema rewrites appends (look at its triggers and column types)")
        self.kind = kind
        self.seq = seq


class IndexDisagrees(LedgerError):
    """What an index gives for a query differs from what the table itself holds: no
    write may act on it (nothing was written or sent)."""

    def __init__(self, path: object, detail: str) -> None:
        super().__init__(LedgerProblem.INDEX_DISAGREES, f"{path}: {INDEX_DISAGREES} ({detail})")


def classify_sqlite_error(path: object, exc: BaseException) -> LedgerError:
    """Map a sqlite3 exception to a clear state (busy, a read-only directory, a full disk)."""
    text = str(exc).lower()
    if ("database or disk is full" in text or "no space left" in text
            or ("disk i/o" in text and _nearly_full(path))):
        return LedgerError(
            LedgerProblem.DISK_FULL,
            f"{path}: the disk is full: this write was not recorded and the ledger is "
            "unchanged by it; free space, then look at the case again",
        )
    if "could not decode" in text:  # outside the pages the reader re-reads as bytes
        return LedgerError(LedgerProblem.CORRUPT, f"{path}: the ledger holds text that is not "
                           "valid UTF-8 where a v1 ledger needs it (ledger_meta)")
    if "not a database" in text or "file is encrypted" in text:
        return LedgerError(LedgerProblem.NOT_SQLITE, f"{path}: not an SQLite database")
    if "no such table" in text:
        return LedgerError(
            LedgerProblem.NOT_A_LEDGER, f"{path}: SQLite file without the ledger v1 tables"
        )
    if "locked" in text or "busy" in text:
        return LedgerError(
            LedgerProblem.BUSY,
            f"{path}: ledger is busy (another process holds a lock); try again in a moment",
        )
    if "readonly" in text or "read-only" in text:
        return LedgerError(
            LedgerProblem.READONLY_DIR,
            f"{path}: cannot read a WAL ledger in a read-only directory while no writer is "
            "live (its -shm/-wal files are missing); copy the case to a writable place",
        )
    if "unable to open" in text:
        p = Path(str(path))
        if p.is_file() and not Path(f"{p}-shm").exists():
            # WAL needs its -shm index; mode=ro cannot create it in a read-only directory
            return LedgerError(
                LedgerProblem.READONLY_DIR,
                f"{path}: cannot read this WAL ledger: its directory is read-only and no "
                "writer is live (the -shm index is missing); copy the case to a writable place",
            )
        if p.is_file():
            return LedgerError(LedgerProblem.CORRUPT, f"{path}: cannot open the ledger file (permissions?)")
        return LedgerError(LedgerProblem.MISSING, f"{path}: cannot open the ledger file")
    if "disk i/o" in text:
        return LedgerError(LedgerProblem.CORRUPT, f"{path}: an I/O error reading or writing the "
                           "ledger (disk I/O error); the file may be damaged or the disk failing")
    if "malformed" in text or "corrupt" in text:
        return LedgerError(LedgerProblem.CORRUPT, f"{path}: ledger file is corrupt ({exc})")
    if isinstance(exc, sqlite3.DatabaseError):
        return LedgerError(LedgerProblem.CORRUPT, f"{path}: cannot read the ledger ({exc})")
    return LedgerError(LedgerProblem.CORRUPT, f"{path}: {type(exc).__name__}: {exc}")


def _nearly_full(path: object) -> bool:
    """SQLite reports a full disk as an I/O error when its -wal or -shm cannot grow."""
    try:
        st = os.statvfs(Path(str(path)).parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 256 * 1024
