"""The columns behind the receipt log. A column of strings kept as joined texts gives
back every string as appended: any text (empty, non-ASCII, beyond the BMP), across
block boundaries, by index, slice and iteration, and a head that shares blocks keeps
working as a column of its own. A column in shared blocks is copied and changed
without changing what it shares."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeai_tui.ledger.blocks import BLOCK, Blocks
from codeai_tui.ledger.text_column import TextColumn

_texts = st.lists(st.text(max_size=6), max_size=40)


def _column(items: list[str], pad: int) -> tuple[TextColumn, list[str]]:
    """`items` after `pad` filler strings, so small lists cross block boundaries too."""
    full = [f"f{i}" for i in range(pad)] + items
    return TextColumn(full), full


@settings(max_examples=150, deadline=None)
@given(_texts, st.sampled_from([0, BLOCK - 3, BLOCK, 2 * BLOCK + 5]))
def test_every_string_comes_back(items: list[str], pad: int) -> None:
    col, full = _column(items, pad)
    assert len(col) == len(full)
    assert list(col) == full
    assert col == full
    for i in range(max(0, len(full) - 45), len(full)):
        assert col[i] == full[i]
        assert col[i - len(full)] == full[i - len(full)]  # negative indexes


@settings(max_examples=150, deadline=None)
@given(_texts, st.sampled_from([0, BLOCK - 3, BLOCK, 2 * BLOCK + 5]), st.data())
def test_slices_and_heads(items: list[str], pad: int, data: st.DataObject) -> None:
    col, full = _column(items, pad)
    k = data.draw(st.integers(0, len(full) + 2))
    head = col[:k]
    assert list(head) == full[:k]
    more = data.draw(_texts)
    for s in more[:2]:  # appends after a head, one by one and together
        head.append(s)
    head.extend(more[2:])
    assert list(head) == full[:k] + more
    assert list(col) == full  # the column the head shares blocks with is unchanged
    start, step = data.draw(st.integers(-5, 5)), data.draw(st.sampled_from([1, 2, -1]))
    assert list(col[start::step]) == full[start::step]


# ids as writers number them (runs of one width under a shared prefix), mixed with
# any text: runs of varied widths, empty strings, a value that is two neighbours joined
_ids = st.lists(st.one_of(st.integers(0, 400).map(lambda n: f"r-{n:03d}"), st.text(max_size=4),
                          st.sampled_from(["", "r-", "r-0", "ab", "cd", "abcd", "bc"])),
                max_size=60)


@settings(max_examples=200, deadline=None)
@given(_ids, st.sampled_from([0, BLOCK - 3, 2 * BLOCK + 5]), st.data())
def test_a_string_is_found_where_it_is_and_nowhere_else(items: list[str], pad: int,
                                                         data: st.DataObject) -> None:
    """`positions_of` gives every index holding the value and no other, in sealed blocks
    (runs of one width, of varied widths, all alike) and in the open end."""
    col, full = _column(items * 3, pad)  # (a few copies: a value found in several runs)
    values = items[:3] + ["", "r-1", "bc", "f1", "r-0001", data.draw(st.text(max_size=4))]
    for value in values:
        assert col.positions_of(value) == [i for i, s in enumerate(full) if s == value]


def test_all_alike_and_numbered_runs_are_found_in_sealed_blocks() -> None:
    same = ["k"] * (BLOCK + 3)
    assert TextColumn(same).positions_of("k") == list(range(BLOCK + 3))
    assert TextColumn(same).positions_of("") == []
    numbered = [f"live-{n}" for n in range(3 * BLOCK)]
    col = TextColumn(numbered)
    assert [col.positions_of(v) for v in ("live-0", "live-1500", "live-3071", "live-307",
                                          "live-15001")] == [[0], [1500], [3071], [307], []]


def test_out_of_range() -> None:
    col = TextColumn(["a", "b"])
    with pytest.raises(IndexError):
        col[2]
    with pytest.raises(IndexError):
        col[-3]
    assert TextColumn() == []
    assert TextColumn(["x"]) != ["y"]


_ints = st.lists(st.one_of(st.integers(-5, 300), st.integers(min_value=2**63)), max_size=30)


@settings(max_examples=100, deadline=None)
@given(_ints, st.sampled_from([0, BLOCK - 7, BLOCK, 2 * BLOCK + 1]),
       st.sampled_from([None, "q"]), st.data())
def test_blocks_copy_and_set_never_change_what_is_shared(
        items: list[int], pad: int, code: str | None, data: st.DataObject) -> None:
    """A column whose copies share its blocks: every item comes back (ints beyond 64
    bits included), and setting or appending on a copy or a head leaves the original
    as it was."""
    full = list(range(pad)) + items
    col = Blocks(full, code)
    assert list(col) == full and len(col) == len(full) and col == full
    k = data.draw(st.integers(0, len(full) + 2))
    assert list(col[:k]) == full[:k]
    assert list(col.iter_from(k)) == full[k:]
    extended: Blocks[int] = Blocks((), code)
    extended.extend(full[:k])
    extended.extend(full[k:])
    assert list(extended) == full
    if full:
        i = data.draw(st.integers(0, len(full) - 1))
        assert col[i] == full[i] and col[i - len(full)] == full[i]
        mine = col.copy()
        mine.set(i, -1)
        mine.append(2**70)
        assert list(col) == full  # the original is unchanged
        assert list(mine) == [*full[:i], -1, *full[i + 1:], 2**70]
    grown = col[:k]
    for n in items:
        grown.append(n)
    assert list(grown) == full[:k] + items and list(col) == full


def test_share_swaps_only_an_equal_item_in_the_open_list() -> None:
    """`share` saves memory and changes nothing a reader sees: an unequal item is
    ignored, and a sealed block (which copies share) is left as it is."""
    items = [f"h{i}" for i in range(BLOCK + 2)]
    col: Blocks[str] = Blocks(items)
    copy = col.copy()
    open_equal = "".join(["h", str(BLOCK + 1)])
    sealed_equal = "".join(["h", "1"])
    assert open_equal is not col[BLOCK + 1] and sealed_equal is not col[1]
    col.share(BLOCK + 1, open_equal)
    col.share(1, sealed_equal)
    col.share(BLOCK, "something else")
    assert col[BLOCK + 1] is open_equal and col[1] is not sealed_equal
    assert list(col) == items == list(copy)


_maybe_texts = st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=40)


@settings(max_examples=100, deadline=None)
@given(_maybe_texts, st.sampled_from([0, BLOCK - 3, 2 * BLOCK + 5]), st.data())
def test_an_optional_text_column_gives_back_none_and_text(
        items: list[str | None], pad: int, data: st.DataObject) -> None:
    from codeai_tui.ledger.text_column import OptionalTextColumn
    full: list[str | None] = [None if i % 3 else f"f{i}" for i in range(pad)] + items
    col = OptionalTextColumn(full)
    assert list(col) == full and len(col) == len(full)
    assert [col[i] for i in range(len(full))] == full
    if full:
        i = data.draw(st.integers(0, len(full) - 1))
        copy = col.copy()
        copy.set(i, None if full[i] is not None else "x")
        assert list(col) == full  # the copy's change stays its own
        assert copy[i] == (None if full[i] is not None else "x")
        assert list(col.head(i)) == full[:i]


_digests = st.lists(st.one_of(
    st.binary(min_size=32, max_size=32).map(bytes.hex),
    st.binary(min_size=32, max_size=32).map(lambda b: b.hex().upper()),  # not as written
    st.text(max_size=70)), max_size=12)


@settings(max_examples=150, deadline=None)
@given(_digests, st.sampled_from([0, BLOCK - 3, 2 * BLOCK + 5]), st.booleans())
def test_a_digest_column_gives_back_every_text(items: list[str], pad: int,
                                               odd_filler: bool) -> None:
    """Hashes sealed as bytes come back as the same lower-case hex; a block holding any
    other text (upper case, short, anything) keeps it as written."""
    from codeai_tui.ledger.text_column import DigestColumn
    filler = [("x" if odd_filler and i == 5 else f"{i:064x}") for i in range(pad)]
    full = filler + items
    col = DigestColumn(full)
    assert list(col) == full and len(col) == len(full)
    for i in range(max(0, len(full) - 20), len(full)):
        assert col[i] == full[i] and col[i - len(full)] == full[i - len(full)]
    head = col[:len(full) // 2]
    head.extend(["ab" * 32])
    assert list(head) == full[:len(full) // 2] + ["ab" * 32] and list(col) == full
    if full:
        col.set(0, "cd" * 32)
        assert col[0] == "cd" * 32 and list(col)[1:] == full[1:]
