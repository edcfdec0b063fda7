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


def call_print_terms(kinds: Sequence[str]) -> str:
    """SQL aggregates over call events: (count, seq sum, kind-weighted seq sum)."""
    return (f"count(*), coalesce(sum(seq % {SEQ_MOD}), 0), "
            f"coalesce(sum((seq % {WEIGHT_MOD}) * ({kind_number(kinds)})), 0)")


def all_print_terms() -> str:
    """SQL aggregates over every event: (count, seq sum)."""
    return f"count(*), coalesce(sum(seq % {SEQ_MOD}), 0)"


def call_filter(kinds_in: str) -> str:
    """SQL: the events the fast path groups by call (`kinds_in`: the SQL list of the
    call kinds)."""
    return f"call_id IS NOT NULL AND call_id != '' AND kind IN ({kinds_in})"


def table_print_sql(kinds_in: str, kinds: Sequence[str], after: bool) -> tuple[str, str]:
    """Two statements reading the table alone, for seqs <= ? (and > ? when `after`): the
    call print, then the print of all events. (One statement computing both evaluates
    the call filter once per aggregate: 2.4 times the time on the 1M-event ledger.)"""
    seqs = "seq <= ?" + (" AND seq > ?" if after else "")
    return (f"SELECT {call_print_terms(kinds)} FROM events NOT INDEXED "
            f"WHERE {seqs} AND {call_filter(kinds_in)}",
            f"SELECT {all_print_terms()} FROM events NOT INDEXED WHERE {seqs}")


Print = tuple[int, int, int, int, int]


def add_prints(a: Print, b: Print) -> Print:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])
