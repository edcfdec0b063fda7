"""Grouped, read-only SQL reads for the projection's fast path (no Python loop over
every event where SQLite can do the work).

Every query here runs to completion (no read transaction outlives it), filters in C,
and returns only what the gatherer needs: per call its (seq, kind, attempt) skeleton
from the covering index `events_call(call_id, attempt_id, kind, seq)`, the payloads of
the few kinds whose fields a verdict needs, and the rows SQLite already knows to be
anomalous. A ledger that does not fit the fast path's assumptions is named here and
read event by event instead.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from codeai_tui.ledger.errors import classify_sqlite_error
from codeai_tui.ledger.reader import connect_readonly, resolve_ledger_path

_SEP_FIELD = "\x1f"
_SEP_EVENT = "\x1d"
_NULL = "\x1e"
_BATCH = 4096


def _text(raw: bytes) -> str:
    """TEXT cells as str; bytes that are not UTF-8 become U+FFFD instead of failing
    the whole read (sqlite3's default decoder raises on the first bad cell)."""
    return raw.decode("utf-8", "replace")


def _in(names: Sequence[str]) -> str:
    return ",".join("'" + n.replace("'", "''") + "'" for n in names)


def unpack(packed: str) -> list[tuple[int, str, str | None]]:
    """A call's skeleton as (seq, kind, attempt_id), in seq order."""
    events = []
    for part in packed.split(_SEP_EVENT):
        seq, kind, attempt = part.split(_SEP_FIELD)
        events.append((int(seq), kind, None if attempt == _NULL else attempt))
    events.sort()
    return events


class EvidenceSQL:
    """One read-only connection to a ledger, for the fast path's grouped queries."""

    def __init__(self, path: str | Path) -> None:
        self.path = resolve_ledger_path(path)
        self._conn = connect_readonly(self.path)
        self._conn.text_factory = _text

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> EvidenceSQL:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _all(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise classify_sqlite_error(self.path, exc) from None

    def _stream(self, sql: str, params: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
        """Rows in batches; the statement is finished (or reset) before returning."""
        try:
            cur = self._conn.execute(sql, params)
            try:
                while rows := cur.fetchmany(_BATCH):
                    yield from rows
            finally:
                cur.close()
        except sqlite3.Error as exc:
            raise classify_sqlite_error(self.path, exc) from None

    # ---- can this ledger take the fast path?

    def fast_path_problem(self) -> str | None:
        """Why the grouped reads cannot be trusted on this ledger, or None."""
        cols = {r[1]: r for r in self._all("PRAGMA table_info(events)")}
        seq = cols.get("seq")
        if seq is None or str(seq[2]).upper() != "INTEGER" or seq[5] != 1:
            return "seq is not the table's INTEGER PRIMARY KEY (seqs may not be integers)"
        if self._index_on(("call_id", "attempt_id", "kind", "seq")) is None:
            return "no covering index events_call(call_id, attempt_id, kind, seq)"
        return None

    def _index_on(self, columns: tuple[str, ...]) -> str | None:
        for row in self._all("PRAGMA index_list(events)"):
            name = str(row[1])
            cols = tuple(str(r[2]) for r in self._all(f"PRAGMA index_info('{name}')"))
            if cols == columns:
                return name
        return None

    def event_ids_unique(self) -> bool:
        """True when SQLite itself guarantees distinct event ids (a UNIQUE index)."""
        for row in self._all("PRAGMA index_list(events)"):
            if row[2]:  # unique
                cols = tuple(str(r[2]) for r in self._all(f"PRAGMA index_info('{row[1]}')"))
                if cols == ("event_id",):
                    return True
        return False

    def odd_rows(self, as_of: int) -> int:
        """Rows whose cells are not the types LEDGER.md gives them, or whose ids carry
        the separators the grouped reads use: any such row sends the ledger down the
        event-by-event path, which handles every type."""
        return int(self._all("""
            SELECT count(*) FROM events WHERE seq <= ? AND NOT (
              typeof(event_id)='text' AND typeof(recorded_at)='text' AND typeof(kind)='text'
              AND typeof(task_id)='text' AND typeof(payload)='text'
              AND typeof(call_id) IN ('text','null') AND typeof(attempt_id) IN ('text','null')
              AND typeof(compilation_id) IN ('text','null')
              AND instr(kind, char(29)) + instr(kind, char(30)) + instr(kind, char(31)) = 0
              AND ifnull(instr(attempt_id, char(29)) + instr(attempt_id, char(30))
                         + instr(attempt_id, char(31)), 0) = 0)
        """, (as_of,))[0][0])  # type: ignore[arg-type]

    # ---- extents and anomalies found in SQL

    def stats(self, as_of: int) -> tuple[int, int, int]:
        """(count, min seq, max seq) of the events with seq <= as_of."""
        n, lo, hi = self._all(
            "SELECT count(*), ifnull(min(seq), 0), ifnull(max(seq), 0) FROM events WHERE seq <= ?",
            (as_of,))[0]
        return int(n), int(lo), int(hi)  # type: ignore[arg-type]

    def seq_breaks(self, as_of: int) -> list[tuple[int, int]]:
        """(seq, previous seq) wherever seq is not previous + 1 (gaps; a first seq != 1)."""
        return [(int(a), int(b)) for a, b in self._all(  # type: ignore[arg-type]
            "SELECT seq, prev FROM (SELECT seq, lag(seq, 1, 0) OVER (ORDER BY seq) AS prev "
            "FROM events WHERE seq <= ?) WHERE seq != prev + 1", (as_of,))]

    def duplicate_event_ids(self, as_of: int) -> list[tuple[int, str, str | None, int]]:
        """(seq, event_id, call_id, first seq) for every event reusing an earlier id."""
        out = []
        for event_id, first in self._all(
            "SELECT event_id, min(seq) FROM events WHERE seq <= ? GROUP BY event_id "
            "HAVING count(*) > 1", (as_of,)):
            for seq, call_id in self._all(
                "SELECT seq, call_id FROM events WHERE event_id = ? AND seq > ? AND seq <= ?",
                (event_id, first, as_of)):
                out.append((int(seq), str(event_id), call_id, int(first)))  # type: ignore[arg-type]
        return out

    def suspect_rows(self, as_of: int, known: Sequence[str]
                     ) -> Iterator[tuple[int, str, str | None, str | None, str, bool]]:
        """(seq, kind, call_id, compilation_id, payload, known kind) of events of unknown
        kinds and of events whose payload SQLite does not see as a JSON object (the
        caller re-parses those the way the oracle does), in seq order."""
        return self._stream(f"""
            SELECT seq, kind, call_id, compilation_id, payload, kind IN ({_in(known)})
            FROM events WHERE seq <= ? AND (kind NOT IN ({_in(known)})
              OR CASE WHEN json_valid(payload) THEN json_type(payload) ELSE 'bad' END != 'object')
            ORDER BY seq""", (as_of,))  # type: ignore[return-value]

    def task_extents(self, as_of: int) -> list[tuple[str, int, int]]:
        """(task_id, first seq, last seq) of every task id, in first-seq order."""
        return self._all(  # type: ignore[return-value]
            "SELECT task_id, min(seq) AS f, max(seq) FROM events WHERE seq <= ? "
            "GROUP BY task_id ORDER BY f", (as_of,))

    # ---- calls

    def call_skeletons(self, as_of: int, call_kinds: Sequence[str], payload_kinds: Sequence[str]
                       ) -> Iterator[tuple[str, int, int | None, str]]:
        """Per call id: (call_id, first seq, last seq of an event whose payload matters,
        packed skeleton), read from the covering index alone, one grouped row per call.
        `unpack` turns the skeleton into (seq, kind, attempt_id) triples."""
        return self._stream(f"""
            SELECT call_id, min(seq), max(CASE WHEN kind IN ({_in(payload_kinds)}) THEN seq END),
                   group_concat(seq || char(31) || kind || char(31)
                                || ifnull(attempt_id, char(30)), char(29))
            FROM events INDEXED BY {self._index_on(("call_id", "attempt_id", "kind", "seq"))}
            WHERE call_id IS NOT NULL AND call_id != '' AND seq <= ?
              AND kind IN ({_in(call_kinds)})
            GROUP BY call_id""", (as_of,))  # type: ignore[return-value]

    def call_events_without_id(self, as_of: int, call_kinds: Sequence[str]
                               ) -> list[tuple[int, str]]:
        return self._all(  # type: ignore[return-value]
            f"SELECT seq, kind FROM events WHERE (call_id IS NULL OR call_id = '') "
            f"AND seq <= ? AND kind IN ({_in(call_kinds)}) ORDER BY seq", (as_of,))

    def payload_rows(self, as_of: int, kinds: Sequence[str]
                     ) -> Iterator[tuple[int, str, str, str | None, str | None, str]]:
        """(seq, kind, task_id, call_id, compilation_id, payload) of the events of
        `kinds`, in seq order (SQLite filters; only these rows reach Python)."""
        return self._stream(f"""
            SELECT seq, kind, task_id, call_id, compilation_id, payload FROM events
            WHERE seq <= ? AND kind IN ({_in(kinds)}) ORDER BY seq""",
            (as_of,))  # type: ignore[return-value]

    def task_of(self, seq: int) -> str:
        rows = self._all("SELECT task_id FROM events WHERE seq = ?", (seq,))
        return str(rows[0][0]) if rows else ""

    def call_rows(self, call_id: str, as_of: int
                  ) -> list[tuple[int, str, str, str | None, str | None, str]]:
        """One call's events (seq, kind, task_id, attempt_id, event_id, payload) through
        the index: re-deriving one entity costs its own events, not the ledger."""
        return self._all(  # type: ignore[return-value]
            "SELECT seq, kind, task_id, attempt_id, event_id, payload FROM events "
            "WHERE call_id = ? AND seq <= ? ORDER BY seq", (call_id, as_of))

    def next_recorded_at(self, as_of: int) -> str | None:
        rows = self._all("SELECT recorded_at FROM events WHERE seq > ? ORDER BY seq LIMIT 1",
                         (as_of,))
        return str(rows[0][0]) if rows else None
