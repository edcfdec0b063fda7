"""The ledger's schema, checked before anything is read or written.

A ledger's schema is untrusted input: SQL in `sqlite_master` runs whenever the tables are
read or written. A trigger can swallow or rewrite the very events that stop a call being
sent twice (`RAISE(IGNORE)` leaves no error), a view named `events` or `ledger_meta` can
read for ever or yield gigabytes, a generated column computes what a reader sees, a
collation or an ON CONFLICT clause changes which rows match or land. So every connection
reads `sqlite_master` (and the pragmas below, which read the schema, not the tables)
before its first query of the tables, and refuses with one line naming what it found:

- any trigger, any view, any virtual table (wherever they are);
- `events` or `ledger_meta` missing, or without a column a v1 ledger has;
- in `events` or `ledger_meta`: a generated column, a COLLATE or ON CONFLICT clause;
- an index on them that is partial, on an expression, or not in the BINARY collation.

What stays readable: extra columns, columns without types, `seq` that is not the
INTEGER PRIMARY KEY (the readers' careful mode), missing or extra plain indexes (the fast
path falls back), SQLite's own tables (`sqlite_stat1`, `sqlite_sequence`). An extra
ordinary table is never read: it stays, flagged as an anomaly (`SchemaReport.notes`).

`check_schema(conn, path)` runs the check on an open sqlite3 connection; the writer runs
it again inside every write transaction, so a trigger added after it opened is seen.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from codeai_tui.ledger.errors import LedgerError, LedgerProblem

LEDGER_TABLES = ("events", "ledger_meta")
REQUIRED_COLUMNS = {
    "events": ("seq", "event_id", "recorded_at", "kind", "task_id", "call_id", "attempt_id",
               "compilation_id", "payload"),
    "ledger_meta": ("key", "value"),
}
# SQLite's own tables: made by ANALYZE or AUTOINCREMENT, never read by a ledger reader
SQLITE_TABLES = frozenset({"sqlite_sequence", "sqlite_stat1", "sqlite_stat2", "sqlite_stat3",
                           "sqlite_stat4"})

# Every query reads the schema only: names and SQL text come as bytes (a name that is not
# UTF-8 must not fail the check before it can say what it found)
MASTER_SQL = ("SELECT CAST(type AS BLOB), CAST(name AS BLOB), CAST(tbl_name AS BLOB), "
              "CAST(sql AS BLOB) FROM sqlite_master")
COLUMNS_SQL = ("SELECT 'events', CAST(name AS BLOB), hidden FROM pragma_table_xinfo('events') "
               "UNION ALL SELECT 'ledger_meta', CAST(name AS BLOB), hidden "
               "FROM pragma_table_xinfo('ledger_meta')")
INDEXES_SQL = ("SELECT t.name, CAST(il.name AS BLOB), il.partial, ix.cid, "
               "CAST(ix.coll AS BLOB), ix.key FROM (SELECT 'events' AS name UNION ALL "
               "SELECT 'ledger_meta') AS t, pragma_index_list(t.name) AS il, "
               "pragma_index_xinfo(il.name) AS ix")

_VIRTUAL = re.compile(rb"^\s*create\s+virtual\s+table", re.IGNORECASE)
_COLLATE = re.compile(rb"\bcollate\b", re.IGNORECASE)
_ON_CONFLICT = re.compile(rb"\bon\s+conflict\b", re.IGNORECASE)
_SHOWN = 60  # characters of a name the line quotes


@dataclass(frozen=True, slots=True)
class SchemaReport:
    """A schema fit to read. `notes`: what is flagged but harmless (extra tables), one
    sentence each, shown as anomalies of the case."""

    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Master:
    """What `judge_master` kept for the second half of the check."""

    table_sql: dict[str, bytes]  # events / ledger_meta -> their CREATE TABLE text
    notes: tuple[str, ...]


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return "" if value is None else str(value)


def _name(value: Any) -> str:
    text = _text(value)
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "\u2026")


def unsafe(path: object, found: str, why: str) -> LedgerError:
    return LedgerError(LedgerProblem.UNSAFE_SCHEMA,
                       f"{path}: unsafe ledger schema: {found} ({why}); not read, not written")


def _more(count: int) -> str:
    return f" and {count - 1} more" if count > 1 else ""


def judge_master(rows: Sequence[Sequence[Any]], path: object) -> _Master:
    """The first half: the rows of MASTER_SQL. Raises LedgerError for a trigger, a view,
    a virtual table or a missing ledger table."""
    triggers = [r for r in rows if r[0] == b"trigger"]
    if triggers:
        first = triggers[0]
        raise unsafe(path, f"trigger {_name(first[1])} on {_name(first[2])}"
                     f"{_more(len(triggers))}",
                     "a trigger runs its own statements whenever rows are written")
    views = [r for r in rows if r[0] == b"view"]
    if views:
        ours = [r for r in views if _text(r[1]).lower() in LEDGER_TABLES]
        first = (ours or views)[0]
        raise unsafe(path, f"view {_name(first[1])}{_more(len(views))}",
                     "a view runs a query of its own whenever it is read")
    tables = {_text(r[1]).lower(): r for r in rows if r[0] == b"table"}
    for key in (*LEDGER_TABLES, *sorted(tables)):
        row = tables.get(key)
        if row is not None and isinstance(row[3], bytes) and _VIRTUAL.match(row[3]):
            raise unsafe(path, f"virtual table {_name(row[1])}",
                         "a virtual table's module runs code whenever it is read")
    if any(t not in tables for t in LEDGER_TABLES):
        raise LedgerError(LedgerProblem.NOT_A_LEDGER,
                          f"{path}: SQLite file without the ledger v1 tables")
    extra = sorted(_text(r[1]) for key, r in tables.items()
                   if key not in LEDGER_TABLES and key not in SQLITE_TABLES)
    notes = tuple(f"the ledger holds table {_name(name)}, which ledger v1 does not define "
                  "(left unread)" for name in extra)
    return _Master({t: tables[t][3] or b"" for t in LEDGER_TABLES}, notes)


def judge_tables(master: _Master, columns: Sequence[Sequence[Any]],
                 indexes: Sequence[Sequence[Any]], path: object) -> SchemaReport:
    """The second half: the rows of COLUMNS_SQL and INDEXES_SQL for the two tables."""
    for table in LEDGER_TABLES:
        sql = master.table_sql[table]
        if _COLLATE.search(sql):
            raise unsafe(path, f"{table} declares a COLLATE clause",
                         "a collation changes which ids match one another")
        if _ON_CONFLICT.search(sql):
            raise unsafe(path, f"{table} declares an ON CONFLICT clause",
                         "a conflict clause can drop a row without an error")
        own = [(_text(name), hidden) for t, name, hidden in columns if t == table]
        for name, hidden in own:
            if hidden in (2, 3):
                raise unsafe(path, f"generated column {_name(name)} in {table}",
                             "its value is computed whenever it is read")
        have = {name.lower() for name, _hidden in own}
        missing = [c for c in REQUIRED_COLUMNS[table] if c not in have]
        if missing:
            raise LedgerError(LedgerProblem.NOT_A_LEDGER,
                              f"{path}: {table} has no column {', '.join(missing)} "
                              "(not a ledger v1 table)")
    for table, name, partial, cid, coll, key in indexes:
        if partial:
            raise unsafe(path, f"partial index {_name(name)} on {table}",
                         "its WHERE clause runs on every write and it holds only some rows")
        if cid == -2:
            raise unsafe(path, f"index {_name(name)} on an expression of {table}",
                         "its expression runs on every write")
        if key and _text(coll).upper() != "BINARY":
            raise unsafe(path, f"index {_name(name)} on {table} in collation {_name(coll)}",
                         "a collation changes which ids match one another")
    return SchemaReport(master.notes)


def check_schema(conn: sqlite3.Connection, path: object) -> SchemaReport:
    """Check the schema of the ledger open on `conn` (see the module's docstring): a
    SchemaReport, or LedgerError naming what was found. Reads the schema only, never a
    row of a table; raises sqlite3.Error as a query would."""
    try:
        master = judge_master(conn.execute(MASTER_SQL).fetchall(), path)
        return judge_tables(master, conn.execute(COLUMNS_SQL).fetchall(),
                            conn.execute(INDEXES_SQL).fetchall(), path)
    except UnicodeDecodeError:  # SQLite's own message quoting a damaged schema
        raise sqlite3.DatabaseError(
            "database disk image is malformed (text outside any row is not UTF-8)") from None
