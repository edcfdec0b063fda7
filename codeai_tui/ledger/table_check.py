"""Reads a write may act on: what the indexes give, checked against the table itself.

A query that the planner answers from an index never looks at the table: an index that
disagrees with its table (a swapped rootpage, plain corruption) would make a write act
on a record that is not the ledger's. So every read a write gate makes runs twice, once
as the planner chooses and once with `NOT INDEXED` (rowid lookups and a full scan of the
table: 84 ms for one call on the 1M-event bench ledger), and the two must be the same
rows, cell for cell. The readers' cheaper check over a whole ledger (a print of what
the fast path reads through its indexes, against one scan of the table) follows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from codeai_tui.ledger.errors import IndexDisagrees
from codeai_tui.ledger.schema import EVENT_COLUMNS

Rows = list[tuple[object, ...]]
Query = Callable[[str, tuple[object, ...]], Rows]


def checked_events(query: Query, path: object, where: str, params: tuple[object, ...],
                   what: str) -> Rows:
    """The rows of `SELECT EVENT_COLUMNS FROM events WHERE where ORDER BY seq`, read through
    whatever index the planner picks and from the table alone; raises IndexDisagrees
    (naming `what` and the first seq that differs) unless both give the same rows."""
    by_index = query(f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} ORDER BY seq", params)
    by_table = query(
        f"SELECT {EVENT_COLUMNS} FROM events NOT INDEXED WHERE {where} ORDER BY seq", params)
    if by_index != by_table:
        raise IndexDisagrees(path, f"{what}: {first_difference(by_index, by_table)}")
    return by_table


def first_difference(by_index: Sequence[tuple[object, ...]],
                     by_table: Sequence[tuple[object, ...]]) -> str:
    """Where the two reads part, in words: the index's events against the table's."""
    counts = f"the index gives {len(by_index)} event(s), the table {len(by_table)}"
    for got, held in zip(by_index, by_table, strict=False):
        if got != held:
            a, b = _seq(got), _seq(held)
            where = f"seq {a}" if a == b else f"the index's seq {a}, the table's seq {b}"
            return f"{counts}; first different at {where}"
    longer = by_index if len(by_index) > len(by_table) else by_table
    side = "index" if longer is by_index else "table"
    shorter = min(len(by_index), len(by_table))
    return f"{counts}; seq {_seq(longer[shorter])} is only in the {side}"


def _seq(row: tuple[object, ...]) -> str:
    return str(row[0])[:24] if row else "?"


# ---- the readers' check over a whole ledger: a print of what the fast path reads
#
# The fast path groups the call events it reads from the covering index `events_call`
# and counts events through `events_task`. Both are compared with one scan of the table
# (NOT INDEXED): for the call events, how many, the sum of their seqs and of each seq
# weighted by its kind; for all events, how many and the sum of their seqs. An entry the
# index hides or adds, or whose seq or kind is not the table's, changes a print. An entry
# moved from one call to another, keeping its seq and kind, does not: the write gate's
# exact comparison (`checked_events`) and `PRAGMA integrity_check` catch that.

SEQ_MOD, WEIGHT_MOD = 1_000_003, 1_009  # keep every sum an exact integer, whatever the seqs


def kind_number(kinds: Sequence[str]) -> str:
    """SQL: 1, 2, ... for each of `kinds` in order, 0 for any other kind."""
    whens = " ".join("WHEN '" + k.replace("'", "''") + f"' THEN {i + 1}"
                     for i, k in enumerate(kinds))
    return f"CASE kind {whens} ELSE 0 END"


def call_print_terms(kinds: Sequence[str], names: tuple[str, str, str] | None = None) -> str:
    """SQL aggregates over call events: (count, seq sum, kind-weighted seq sum), each
    named by `names` when given."""
    a, b, c = (f" AS {n}" for n in names) if names else ("", "", "")
    return (f"count(*){a}, coalesce(sum(seq % {SEQ_MOD}), 0){b}, "
            f"coalesce(sum((seq % {WEIGHT_MOD}) * ({kind_number(kinds)})), 0){c}")


def all_print_terms() -> str:
    """SQL aggregates over every event: (count, seq sum)."""
    return f"count(*), coalesce(sum(seq % {SEQ_MOD}), 0)"


def sql_list(names: Sequence[str]) -> str:
    """SQL: the quoted list of `names` for an IN (...)."""
    return ",".join("'" + n.replace("'", "''") + "'" for n in names)


def call_filter(kinds: Sequence[str]) -> str:
    """SQL: the events the fast path groups by call."""
    return f"call_id IS NOT NULL AND call_id != '' AND kind IN ({sql_list(kinds)})"


Print = tuple[int, int, int, int, int]


def add_prints(a: Print, b: Print) -> Print:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])


def _ints(row: tuple[object, ...]) -> tuple[int, ...]:
    return tuple(int(v) for v in row)  # type: ignore[call-overload]


def seqs_between(after: int | None, upto: int) -> tuple[str, tuple[int, ...]]:
    """SQL and its parameters for the seqs in (`after`, `upto`]: no lower bound for None
    (any bound below would leave out the least 64-bit seq)."""
    if after is None:
        return "seq <= ?", (upto,)
    return "seq <= ? AND seq > ?", (upto, after)


def table_print(query: Query, as_of: int, kinds: Sequence[str], after: int | None = None
                ) -> Print:
    """The print of the events with a seq in (`after`, `as_of`], read from the table
    alone: (call events, their seq sum, kind-weighted seq sum, all events, seq sum). Two
    statements: one computing both evaluated the call filter once per aggregate (2.4
    times the time on the 1M-event ledger)."""
    seqs, params = seqs_between(after, as_of)
    calls = query(f"SELECT {call_print_terms(kinds)} FROM events NOT INDEXED "
                  f"WHERE {seqs} AND {call_filter(kinds)}", params)[0]
    every = query(f"SELECT {all_print_terms()} FROM events NOT INDEXED WHERE {seqs}",
                  params)[0]
    return _ints((*calls, *every))  # type: ignore[return-value]


def indexes_by_columns(query: Query) -> dict[tuple[str, ...], str]:
    """The indexes on events by their columns: each name quoted for SQL."""
    found: dict[tuple[str, ...], str] = {}
    for row in query("PRAGMA index_list(events)", ()):
        name = '"' + str(row[1]).replace('"', '""') + '"'
        found.setdefault(tuple(str(r[2]) for r in query(f"PRAGMA index_info({name})", ())),
                         name)
    return found


def index_disagrees(query: Query, as_of: int, kinds: Sequence[str]) -> bool:
    """True when an index the fast path reads (events_call for the call events,
    events_task for all) gives other events than the table: one scan of each index
    and one of the table, for a reader that does not take the fast path."""
    indexes = indexes_by_columns(query)
    call_index = indexes.get(("call_id", "attempt_id", "kind", "seq"))
    task_index = indexes.get(("task_id", "seq"))
    table = table_print(query, as_of, kinds)
    if call_index is not None and _ints(query(
            f"SELECT {call_print_terms(kinds)} FROM events INDEXED BY {call_index} "
            f"WHERE seq <= ? AND {call_filter(kinds)}", (as_of,))[0]) != table[:3]:
        return True
    return task_index is not None and _ints(query(
        f"SELECT {all_print_terms()} FROM events INDEXED BY {task_index} WHERE seq <= ?",
        (as_of,))[0]) != table[3:]
