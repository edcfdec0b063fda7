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

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from codeai_tui.ledger import table_check
from codeai_tui.ledger.guard import StatementGuard, guard_of, ledger_error
from codeai_tui.ledger.reader import abort_when, open_readonly, resolve_ledger_path
from codeai_tui.ledger.table_check import (
    SEQ_MOD,
    WEIGHT_MOD,
    Print,
    call_filter,
    call_print_terms,
    kind_number,
    seqs_between,
)


@dataclass(frozen=True, slots=True)
class SkeletonTotals:
    """What the grouped read of the calls sums over them: how many calls, how many have
    an event whose payload matters, and the index's side of the call print."""

    calls: int
    ready: int
    index_print: tuple[int, int, int]
    # the first call id (in id order) with an attempt id holding a separator the packed
    # skeleton uses (its events would not split): None when none has
    unpacked: str | None = None


class FastPathUnfit(Exception):
    """The grouped reads cannot be trusted on this ledger (the caller reads it event by
    event instead); the message says why."""


_SEP_FIELD = "\x1f"
_SEP_EVENT = "\x1d"
_NULL = "\x1e"
_BATCH = 4096
# skeleton rows fetched at once: they wait while the calls before them are folded, and
# 4096 of them held ~1.5 MB (a row is ~360 bytes of objects)
_SKELETON_BATCH = 128
# the cells `first_odd_text` checks; its first and largest page in rows, and the joined
# bytes it keeps a page under; the bytes it passes
_TEXT_CELLS = ("event_id", "recorded_at", "compilation_id", "call_id", "attempt_id", "task_id")
_TEXT_FIRST_PAGE, _TEXT_PAGE, _TEXT_BYTES = 32, 8192, 4 << 20
_PLAIN = bytes(range(0x20, 0x7F))  # printable ASCII


def _next_page(rows: int, joined: int) -> int:
    """How many rows `first_odd_text` joins next, after `rows` rows joined to `joined`
    bytes: four times as many while that stays under a quarter of _TEXT_BYTES (up to
    _TEXT_PAGE), a quarter as many (at least one) once it passes _TEXT_BYTES."""
    if joined > _TEXT_BYTES:
        return max(1, rows // 4)
    return min(_TEXT_PAGE, rows * 4) if joined * 4 < _TEXT_BYTES else rows


def _not_plain(cell: bytes) -> bool:
    """Whether `cell` holds a byte that is not printable ASCII (12 times a regex's speed:
    the bytes left once the printable ones are deleted)."""
    return bool(cell.translate(None, _PLAIN))


# call_stage_rows' flags beside the kinds' own bits (below 1 << 10)
NULL_ATTEMPT, ATTEMPT_OBSERVED, ATTEMPT_RECONCILED = 1 << 10, 1 << 11, 1 << 12
ODD_KIND = 1 << 20


def _error(path: Path, exc: sqlite3.Error, guard: StatementGuard | None) -> Exception:
    if isinstance(exc, sqlite3.OperationalError) and "decode" in str(exc).lower():
        return FastPathUnfit("text that is not UTF-8")
    return ledger_error(path, exc, guard)


def _in(names: Sequence[str]) -> str:
    return ",".join("'" + n.replace("'", "''") + "'" for n in names)


_PREFIXED = "\x1c"  # the attempt id is the call id followed by the rest
_LITERAL = "\x1b"  # the attempt id follows as is


def well_packed(packed: str, count: int) -> bool:
    """True if a packed skeleton splits into exactly `count` events."""
    return packed.count(_SEP_EVENT) == count - 1 and packed.count(_SEP_FIELD) == count


def unpack(packed: str, call_id: str, kinds: Sequence[str]) -> list[tuple[int, str, str | None]]:
    """A call's skeleton as (seq, kind, attempt_id), in seq order. Each event is packed
    as `seq<US><kind code><marker><rest of the attempt id>`: one letter per kind and the
    call id left out of attempt ids that start with it (most do) keep 10^5 skeletons
    small while they wait to be folded."""
    events = []
    for part in packed.split(_SEP_EVENT):
        seq, rest = part.split(_SEP_FIELD, 1)
        marker = rest[1]
        attempt = None if marker == _NULL else (
            call_id + rest[2:] if marker == _PREFIXED else rest[2:])
        events.append((int(seq), kinds[ord(rest[0]) - 97], attempt))
    events.sort()
    return events


def _kind_code(kinds: Sequence[str]) -> str:
    """SQL for the one-letter code of each of `kinds` ('a' for kinds[0], ...)."""
    whens = " ".join(f"WHEN {_in([k])} THEN '{chr(97 + i)}'" for i, k in enumerate(kinds))
    return f"CASE kind {whens} END"


class EvidenceSQL:
    """One read-only connection to a ledger, for the fast path's grouped queries."""

    def __init__(self, path: str | Path, stop: Callable[[], bool] | None = None) -> None:
        """`stop`: every read, this open's included, ends soon after it turns true."""
        self.path = resolve_ledger_path(path)
        self._conn, self.schema = open_readonly(self.path, stop=stop)
        self._stop: Callable[[], bool] | None = stop

    def close(self) -> None:
        self._conn.close()

    def abort_when(self, stop: Callable[[], bool]) -> None:
        """Statements end ("interrupted") soon after `stop()` turns true."""
        self._stop = stop
        abort_when(self._conn, stop)

    def sibling(self, abandoned: Callable[[], bool] | None = None) -> EvidenceSQL:
        """Another read-only connection to the same ledger, stopped by the same `stop`
        and by `abandoned` (its caller gave up): for a grouped read in a second thread
        (SQLite steps outside the GIL, so two reads use both cores). Every query is
        bounded by a seq, so both see one prefix of a ledger that is still growing."""
        checks = [c for c in (self._stop, abandoned) if c is not None]
        return EvidenceSQL(self.path, (lambda: any(check() for check in checks))
                           if checks else None)

    def for_one_pass(self) -> None:
        """Keep a small page cache (256 KiB instead of SQLite's 2 MiB): a connection
        opened for one pass over the ledger reads each page once, and the pages a big
        cache held are memory a thread's malloc arena may never give back."""
        self._conn.execute("PRAGMA cache_size = -256")

    def __enter__(self) -> EvidenceSQL:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _all(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _error(self.path, exc, guard_of(self._conn)) from None

    def _stream(self, sql: str, params: tuple[object, ...] = (), batch: int = _BATCH
                ) -> Iterator[tuple[object, ...]]:
        """Rows in batches; the statement is finished (or reset) before returning."""
        try:
            cur = self._conn.execute(sql, params)
            try:
                while rows := cur.fetchmany(batch):
                    yield from rows
            finally:
                # a stream left unfinished (`inspect --json | head`) is collected after
                # its connection closed: nothing is left to finish then
                with contextlib.suppress(sqlite3.ProgrammingError):
                    cur.close()
        except sqlite3.Error as exc:
            raise _error(self.path, exc, guard_of(self._conn)) from None

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

    # ---- extents and anomalies found in SQL

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

    def odd_cells(self, as_of: int) -> int:
        """Rows whose id or kind cells are not the types docs/ledger.md gives them, or carry the
        separators the grouped reads use: read from the indexes alone (no table rows).
        Any such row sends the ledger down the event-by-event path."""
        call_index = self._index_on(("call_id", "attempt_id", "kind", "seq"))
        n = int(self._all(f"""
            SELECT count(*) FROM events INDEXED BY {call_index} WHERE seq <= ? AND NOT (
              typeof(kind)='text' AND typeof(call_id) IN ('text','null')
              AND typeof(attempt_id) IN ('text','null'))""", (as_of,))[0][0])  # type: ignore[arg-type]
        task_index = self._index_on(("task_id", "seq"))
        by = f"INDEXED BY {task_index}" if task_index else ""
        n += int(self._all(f"SELECT count(*) FROM events {by} WHERE seq <= ? "
                           "AND typeof(task_id) != 'text'", (as_of,))[0][0])  # type: ignore[arg-type]
        comp_index = self._index_on(("compilation_id", "seq"))
        by = f"INDEXED BY {comp_index}" if comp_index else ""
        n += int(self._all(f"SELECT count(*) FROM events {by} WHERE seq <= ? "
                           "AND typeof(compilation_id) NOT IN ('text', 'null')",
                           (as_of,))[0][0])  # type: ignore[arg-type]
        return n

    def suspect_rows(self, as_of: int, known: Sequence[str], scanned: Sequence[str],
                     flagging: Sequence[str], after: int | None = None
                     ) -> Iterator[tuple[int, str, str | None, object, bool, bool]]:
        """One scan in C for (seq, kind, call_id, payload, known kind, odd) of: rows with
        an event_id or recorded_at cell that is not text (`odd`: the caller reads the
        ledger event by event; `first_odd_text` finds text that is not plain); events of
        unknown kinds; and, among kinds the payload scan will not parse, events whose
        payload SQLite does not see as a JSON object text (the caller re-parses those
        the way the oracle does). `flagging` kinds are checked too when they name a
        call, since a broken payload there flags the call before the call is judged.
        `after`: only rows with a seq above it (a scan split in parts, one per thread)."""
        bad = ("CASE WHEN typeof(payload) = 'text' AND json_valid(payload) "
               "THEN json_type(payload) ELSE 'bad' END != 'object'")
        odd = "typeof(event_id) != 'text' OR typeof(recorded_at) != 'text'"
        seqs, params = seqs_between(after, as_of)
        return self._stream(f"""
            SELECT seq, kind, call_id, payload, kind IN ({_in(known)}), {odd}
            FROM events WHERE {seqs}
              AND ({odd} OR kind NOT IN ({_in(known)})
              OR (kind NOT IN ({_in(scanned)}) AND {bad})
              OR (kind IN ({_in(flagging)}) AND call_id IS NOT NULL AND call_id != ''
                  AND {bad}))
            ORDER BY seq""", params)  # type: ignore[return-value]

    def first_odd_text(self, as_of: int, after: int | None = None) -> int | None:
        """The first seq in (`after`, `as_of`] whose id or time cells hold a byte that is
        not printable ASCII, or None. The fast path never decodes those cells: such a
        ledger is left to the event path, which flags what is not UTF-8 or not text (the
        oracle's way). Each column of a page of rows is joined in C and searched in one
        pass (a GLOB per cell took 1.8 s of the 1M-event ledger's scan, this 0.8 s); only
        a page holding such a byte is read again, cell by cell. Pages hold up to 8,192
        rows, fewer where the joined cells would pass ~4 MiB (a hostile ledger's long
        ids): a page's size follows the one before, beginning small."""
        cells = ", ".join(f"CAST(group_concat({c}, '') AS BLOB)" for c in _TEXT_CELLS)
        rows = _TEXT_FIRST_PAGE
        while True:
            self._stop_check()  # (a page is too short for the progress handler's check)
            where, params = seqs_between(after, as_of)
            page = self._all(
                f"SELECT max(seq), {cells} FROM (SELECT seq, {', '.join(_TEXT_CELLS)} "
                f"FROM events WHERE {where} ORDER BY seq LIMIT ?)", (*params, rows))[0]
            if page[0] is None:
                return None
            joined = [cell for cell in page[1:] if cell is not None]
            if any(map(_not_plain, joined)):  # type: ignore[arg-type]
                return self._first_odd_in(after, int(page[0]))  # type: ignore[call-overload]
            after = int(page[0])  # type: ignore[call-overload]
            rows = _next_page(rows, sum(map(len, joined)))  # type: ignore[arg-type]

    def _first_odd_in(self, after: int | None, upto: int) -> int | None:
        casts = ", ".join(f"CAST({c} AS BLOB)" for c in _TEXT_CELLS)
        where, params = seqs_between(after, upto)
        for seq, *row in self._stream(f"SELECT seq, {casts} FROM events WHERE {where} "
                                      "ORDER BY seq", params, batch=64):
            if any(cell is not None and _not_plain(cell) for cell in row):  # type: ignore[arg-type]
                return int(seq)  # type: ignore[call-overload]
        return None

    def task_extents(self, as_of: int) -> list[tuple[str, int, int, int, int]]:
        """(task_id, first seq, last seq, events, their seq sum as `table_print` sums
        them) of every task id, in first-seq order (the covering index events_task when
        present)."""
        return self._all(  # type: ignore[return-value]
            f"SELECT task_id, min(seq) AS f, max(seq), count(*), sum(seq % {SEQ_MOD}) "
            "FROM events WHERE seq <= ? GROUP BY task_id ORDER BY f", (as_of,))

    # ---- calls

    def call_skeletons(self, as_of: int, call_kinds: Sequence[str], payload_kinds: Sequence[str]
                       ) -> tuple[SkeletonTotals, Iterator[tuple[int, str, int | None, str, int]]]:
        """Per call id, in first-seq order (then call id): (first seq, call_id, last seq
        of an event whose payload matters, packed skeleton, count), read from the covering
        index alone, one grouped row per call; and first, before any row, their totals.
        `unpack` turns a skeleton into (seq, kind, attempt_id) triples; `count` lets the
        caller check that no id smuggled a separator in. SQLite groups and sorts the
        calls (its sorter spills to a temporary file past its cache): the caller holds
        only the rows it has not folded yet, where a Python sort had every call's row
        (~130 bytes a call) held at once. The totals come from the same grouped rows,
        so the index's side of the call print (`table_print` is the table's) and any
        attempt id that would not unpack are known before the first call is folded.
        The statement runs its grouping and sort here; the rows are read as they are
        asked for (it stays open until they all are, or the iterator is closed)."""
        kinds = _in(call_kinds)
        rows = self._stream(f"""
            WITH g AS MATERIALIZED (
              SELECT call_id AS c, min(seq) AS f,
                     max(CASE WHEN kind IN ({_in(payload_kinds)}) THEN seq END) AS r,
                     group_concat(seq || char(31) || {_kind_code(call_kinds)}
                       || CASE WHEN attempt_id IS NULL THEN char(30)
                               WHEN substr(attempt_id, 1, length(call_id)) = call_id
                               THEN char(28) || substr(attempt_id, length(call_id) + 1)
                               ELSE char(27) || attempt_id END, char(29)) AS p,
                     {call_print_terms(call_kinds, ("n", "s", "k"))},
                     max(instr(attempt_id, char(29)) OR instr(attempt_id, char(31))) AS x
              FROM events INDEXED BY {self._index_on(("call_id", "attempt_id", "kind", "seq"))}
              WHERE call_id IS NOT NULL AND call_id != '' AND seq <= ? AND kind IN ({kinds})
              GROUP BY call_id)
            SELECT 0 AS head, count(*) AS f, min(CASE WHEN x THEN c END), count(r), NULL,
                   coalesce(sum(n), 0), coalesce(sum(s), 0), coalesce(sum(k), 0) FROM g
            UNION ALL
            SELECT 1, f, c, r, p, n, 0, 0 FROM g
            ORDER BY head, f, 3""", (as_of,), _SKELETON_BATCH)
        head = next(rows, None)
        if head is None or head[0] != 0:  # (the totals' row is always there)
            rows.close()
            raise FastPathUnfit("the grouped read of the calls gave no totals")
        _h, calls, unpacked, ready, _p, events, seqs, weighted = head
        totals = SkeletonTotals(
            int(calls), int(ready),  # type: ignore[call-overload]
            (int(events), int(seqs), int(weighted)),  # type: ignore[call-overload]
            None if unpacked is None else str(unpacked))
        return totals, (row[1:6] for row in rows)  # type: ignore[misc]

    # ---- the index against the table (ledger/table_check.py)

    def table_print(self, as_of: int, call_kinds: Sequence[str], after: int | None = None
                    ) -> Print:
        """The table's print of the seqs in (`after`, `as_of`] (ledger/table_check.py)."""
        return table_check.table_print(self._all, as_of, call_kinds, after)

    def observed_with_table_print(self, as_of: int, word: str, call_kinds: Sequence[str]
                                  ) -> tuple[set[str], tuple[int, int, int]]:
        """`calls_observed_mentioning(as_of, word)` and the table's call print
        (`table_print(as_of, call_kinds)[:3]`) from ONE scan of the table: the skeleton's
        observation scan, which compares the index with the table at little extra cost."""
        # (an observed event with a call id is a call event: the filter keeps them all)
        observed = ("kind = 'attempt.observed' AND (typeof(payload) != 'text' "
                    "OR instr(payload, ?) > 0 OR instr(payload, char(92)) > 0)")
        row = self._all(
            f"SELECT json_group_array(DISTINCT CASE WHEN {observed} THEN call_id END), "
            f"{call_print_terms(call_kinds)} FROM events NOT INDEXED "
            f"WHERE seq <= ? AND {call_filter(call_kinds)}", (word, as_of))[0]
        ids = json.loads(str(row[0]))
        return ({str(i) for i in ids if i is not None},
                (int(row[1]), int(row[2]), int(row[3])))  # type: ignore[arg-type]

    def index_disagrees(self, as_of: int, call_kinds: Sequence[str]) -> bool:
        """True when an index the fast path reads gives other events than the table."""
        return table_check.index_disagrees(self._all, as_of, call_kinds)

    def call_stage_rows(self, as_of: int, codes: Sequence[tuple[str, int]],
                        ids: tuple[object, object] = (None, None),
                        ) -> list[tuple[str, int, int, int, int | None, int, int, int, int]]:
        """Per call id, in first-seq order: (call_id, first seq, last seq, flags, last
        started attempt as `started seq << 5 | its kind bits`, started attempts, and the
        call's share of the index's call print: events, seq sum, kind-weighted seq sum
        (ledger/table_check.py; `codes` in the order of the print's kinds)), read
        from the covering index alone (no payload, no table row): the skeleton a console
        paints first (services/skeleton.py). `codes` gives each kind its bit: attempt
        kinds below 32, call kinds from 32. `flags`: the call kinds' bits, the ORed bits
        `ATTEMPT_OBSERVED`/`ATTEMPT_RECONCILED` of any started attempt, `NULL_ATTEMPT`
        (attempt evidence without an attempt id: each such event is its own attempt) and
        `ODD_KIND` (a kind or attempt id cell that is not text: the event path reads
        those ledgers). `ids`: only call ids at or above the first and below the second
        (None: no bound), so two processes can each read a part (SQLite orders every
        value: the parts of a split cover every call once)."""
        lo, hi = ids
        bounds = ("" if lo is None else " AND call_id >= ?") + (
            "" if hi is None else " AND call_id < ?")
        params = (as_of, *(b for b in ids if b is not None))
        whens = " ".join(f"WHEN {_in([k])} THEN {int(c)}" for k, c in codes)
        number = kind_number([k for k, _c in codes])  # the print's kind numbers
        call_bits = " | ".join(f"max(b & {c})" for _k, c in codes if c >= 32)
        return self._all(f"""
            WITH g AS (
              SELECT call_id AS c, attempt_id AS a, min(seq) AS fs, max(seq) AS ls,
                     min(CASE WHEN kind = 'attempt.started' THEN seq END) AS st,
                     sum(DISTINCT CASE kind {whens} ELSE CASE WHEN typeof(kind) != 'text'
                                  THEN {ODD_KIND} ELSE 0 END END) AS b,
                     count(*) AS pn, sum(seq % {SEQ_MOD}) AS ps,
                     sum((seq % {WEIGHT_MOD}) * ({number})) AS pk
              FROM events INDEXED BY {self._index_on(("call_id", "attempt_id", "kind", "seq"))}
              WHERE call_id IS NOT NULL AND call_id != '' AND seq <= ?{bounds}
                AND (kind IN ({_in([k for k, _c in codes])}) OR typeof(kind) != 'text')
              GROUP BY call_id, attempt_id)
            SELECT c, min(fs) AS f, max(ls),
                   {call_bits} | max(b & {ODD_KIND})
                   | max(CASE WHEN typeof(a) NOT IN ('text', 'null') THEN {ODD_KIND} ELSE 0 END)
                   | max(CASE WHEN (a IS NULL OR a = '') AND (st IS NOT NULL OR b & 31)
                         THEN {NULL_ATTEMPT} ELSE 0 END)
                   | max(CASE WHEN st IS NOT NULL AND b & 1 THEN {ATTEMPT_OBSERVED} ELSE 0 END)
                   | max(CASE WHEN st IS NOT NULL AND b & 16 THEN {ATTEMPT_RECONCILED}
                         ELSE 0 END),
                   max(st * 32 + (b & 31)), count(st),
                   coalesce(sum(pn), 0), coalesce(sum(ps), 0), coalesce(sum(pk), 0)
            FROM g GROUP BY c ORDER BY f""", params)  # type: ignore[return-value]

    def middle_call_id(self, as_of: int, samples: int = 511) -> str | None:
        """A call id near the middle of the calls' id order, weighted by their events:
        the median of the ids named at `samples` evenly spaced seqs (point reads by
        seq, 2 ms for 511). A bound that splits `call_stage_rows` into two parts of
        similar size (the part with more events is the one the answer waits for); None
        when too few events name a call by a text id. The median of n samples is off by
        about 1/(2 sqrt n) of the events: 31 split the 1M-event bench ledger 54:46,
        511 split it 50:50."""
        step = max(1, as_of // (samples + 1))
        found = sorted(str(r[0]) for r in self._all(
            f"SELECT call_id FROM events WHERE seq IN "
            f"({', '.join(str(step * k) for k in range(1, samples + 1))}) AND seq <= ? "
            f"AND typeof(call_id) = 'text' AND call_id != ''", (as_of,)))
        return found[len(found) // 2] if len(found) >= 3 else None

    def stop_requested(self) -> bool:
        """True once this connection's `stop` (abort_when) has turned true."""
        stop = self._stop
        return stop is not None and stop()

    def _stop_check(self) -> None:
        """Between the statements of one read made of many: end it as a long statement
        ends once `stop` turns true ("interrupted", a LedgerError)."""
        if self.stop_requested():
            raise _error(self.path, sqlite3.OperationalError("interrupted"),
                         guard_of(self._conn))

    def calls_observed_mentioning(self, as_of: int, word: str) -> set[str]:
        """Call ids with an attempt.observed whose payload text contains `word` or any
        escape (`\\u0073ent` parses as "sent"), or is not text: a C substring test, no JSON
        parse, finds the few calls a skeleton cannot judge alone."""
        return {str(r[0]) for r in self._all(
            "SELECT DISTINCT call_id FROM events NOT INDEXED WHERE kind = 'attempt.observed' "
            "AND seq <= ? "
            "AND call_id IS NOT NULL AND (typeof(payload) != 'text' OR instr(payload, ?) > 0 "
            "OR instr(payload, char(92)) > 0)", (as_of, word))}

    def call_events_without_id(self, as_of: int, call_kinds: Sequence[str]
                               ) -> list[tuple[int, str]]:
        return self._all(  # type: ignore[return-value]
            f"SELECT seq, kind FROM events WHERE (call_id IS NULL OR call_id = '') "
            f"AND seq <= ? AND kind IN ({_in(call_kinds)}) ORDER BY seq", (as_of,))

    def payload_rows(self, as_of: int, call_kinds: Sequence[str], other_kinds: Sequence[str],
                     after: int = 0, *, orphans_only: bool = False,
                     ) -> Iterator[tuple[int, str | None, str | None, str | None, str | None,
                                         bytes]]:
        """(seq, call_id, kind, task_id, compilation_id, payload bytes) of the events of
        `call_kinds` and `other_kinds` with a seq in (`after`, `as_of`], in seq order:
        SQLite filters, only these rows reach Python. For call kinds, kind, task_id (but
        on call.requested) and compilation_id are NULL: the skeleton already has them,
        and every cell not decoded is time saved. Payloads come as bytes: orjson reads
        them directly and invalid UTF-8 in one payload is that event's anomaly, not a
        failed read. `orphans_only`: of the call kinds, only events naming no call (once
        every call's own events were read)."""
        orphans = (f"AND (kind IN ({_in(other_kinds)}) OR call_id IS NULL OR call_id = '')"
                   if orphans_only else "")
        return self._stream(f"""
            SELECT seq, call_id,
                   CASE WHEN kind IN ({_in(other_kinds)}) THEN kind END,
                   CASE WHEN kind IN ({_in(other_kinds)}) OR kind = 'call.requested'
                        THEN task_id END,
                   CASE WHEN kind IN ({_in(other_kinds)}) THEN compilation_id END,
                   CASE WHEN typeof(payload) = 'text' THEN CAST(payload AS BLOB) ELSE payload END
            FROM events WHERE seq <= ? AND seq > ?
              AND kind IN ({_in(list(call_kinds) + list(other_kinds))}) {orphans}
            ORDER BY seq""", (as_of, after))  # type: ignore[return-value]

    def kind_of(self, seq: int) -> str:
        rows = self._all("SELECT kind FROM events WHERE seq = ?", (seq,))
        return str(rows[0][0]) if rows else ""

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

    # ---- one entity as of a seq (time travel)

    def max_seq(self) -> int:
        """The highest seq now (0 if none): the prefix a projection pins itself to."""
        hi = self._all("SELECT max(seq) FROM events")[0][0]
        return max(0, int(hi)) if isinstance(hi, int) else 0

    def count_upto(self, n: int) -> tuple[int, int]:
        """(events with seq <= n, the highest such seq or 0)."""
        count, hi = self._all("SELECT count(*), ifnull(max(seq), 0) FROM events WHERE seq <= ?",
                              (n,))[0]
        return int(count), max(0, int(hi))  # type: ignore[arg-type]

    def compilation_rows(self, comp_id: str, n: int, kinds: Sequence[str]
                         ) -> list[tuple[int, str, str, str]]:
        return self._all(  # type: ignore[return-value]
            f"SELECT seq, kind, task_id, payload FROM events WHERE compilation_id = ? "
            f"AND seq <= ? AND kind IN ({_in(kinds)}) ORDER BY seq", (comp_id, n))

    def task_span(self, task_id: str, n: int) -> tuple[int, int]:
        lo, hi = self._all("SELECT min(seq), max(seq) FROM events WHERE task_id = ? AND seq <= ?",
                           (task_id, n))[0]
        return int(lo or 0), int(hi or 0)  # type: ignore[arg-type]

    def task_rows(self, task_id: str, n: int, kinds: Sequence[str]
                  ) -> list[tuple[int, str, str]]:
        return self._all(  # type: ignore[return-value]
            f"SELECT seq, kind, payload FROM events WHERE task_id = ? AND seq <= ? "
            f"AND kind IN ({_in(kinds)}) ORDER BY seq", (task_id, n))

    def recorded_at_upto(self, n: int) -> str | None:
        rows = self._all("SELECT recorded_at FROM events WHERE seq <= ? ORDER BY seq DESC "
                         "LIMIT 1", (n,))
        return str(rows[0][0]) if rows else None
