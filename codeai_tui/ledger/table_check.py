"""Reads a write may act on: what the indexes give, checked against the table itself.

A query that the planner answers from an index never looks at the table: an index that
disagrees with its table (a swapped rootpage, plain corruption) would make a write act
on a record that is not the ledger's. So every read a write gate makes runs twice, once
as the planner chooses and once with `NOT INDEXED` (rowid lookups and a full scan of the
table: 84 ms for one call on the 1M-event bench ledger), and the two must be the same
rows, cell for cell.
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

