"""The skeleton's grouped rows kept as columns (ledger/stage_columns.py): whatever values
a ledger's rows hold, the columns give back the rows (without their index-print fields)
in first-seq order, and the print's sums; parts joined read as the one read."""

from __future__ import annotations

import pickle
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from codeai_tui.ledger.stage_columns import StageColumns

SEQ = st.integers(-(1 << 63), (1 << 63) - 1)
# what SQLite can hand back: ints of 64 bits, a real where a shift overflowed, None
PACKED = st.one_of(st.none(), SEQ, st.floats(allow_nan=False), st.just(0))
IDS = st.one_of(st.text(max_size=4), st.binary(max_size=2), st.integers(-2, 2))


@st.composite
def grouped_rows(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    firsts = draw(st.lists(SEQ, unique=True, max_size=12))
    return sorted(((draw(IDS), first, draw(SEQ), draw(st.integers(0, 1 << 22)),
                    draw(PACKED), draw(st.integers(0, 9)), draw(st.integers(0, 99)),
                    draw(SEQ), draw(SEQ)) for first in firsts), key=lambda r: r[1])


def _expected(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return [r[:6] for r in sorted(rows, key=lambda r: r[1])]


def _sums(rows: list[tuple[Any, ...]]) -> tuple[int, int, int]:
    return (sum(r[6] for r in rows), sum(r[7] for r in rows), sum(r[8] for r in rows))


@given(grouped_rows())
def test_the_columns_give_back_the_rows(rows: list[tuple[Any, ...]]) -> None:
    cols = StageColumns.of(rows)
    assert list(cols.rows()) == _expected(rows)
    assert cols.index_print == _sums(rows)
    assert len(cols) == len(rows)
    odd = 0
    for r in rows:
        odd |= r[3]
    assert cols.odd == odd
    again = pickle.loads(pickle.dumps(cols))  # (a child sends its part so)
    assert list(again.rows()) == _expected(rows)


@given(grouped_rows(), st.data())
def test_parts_joined_read_in_first_seq_order(rows: list[tuple[Any, ...]],
                                              data: st.DataObject) -> None:
    """Two parts, each in first-seq order (as each child reads its ids), joined: the
    rows of both in first-seq order, the sums of both."""
    picks = data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    low = [r for r, p in zip(rows, picks, strict=True) if p]
    high = [r for r, p in zip(rows, picks, strict=True) if not p]
    joined = StageColumns.joined([StageColumns.of(low), StageColumns.of(high)])
    assert list(joined.rows()) == _expected(rows)
    assert joined.index_print == _sums(rows)


def test_a_real_where_an_int_was_read_keeps_its_value() -> None:
    """A started seq near 2^63 shifted by five overflows SQLite's integers into a real:
    that column is kept as the values themselves, not refused or rounded."""
    rows = [("c1", 1, 5, 0, 2.9514790517935283e20, 1, 3, 6, 9),
            ("c2", 2, 4, 0, None, 0, 1, 2, 3)]
    cols = StageColumns.of(rows)
    assert list(cols.rows()) == [r[:6] for r in rows]
