"""A sealed block of a text column keeps the prefix its strings share once, and no end
offset where their rests are all as long: ids written by one program (receipt ids,
idempotency keys, call ids, the attempt suffix of a call id) keep a few bytes each. Any
text (empty, non-ASCII, NUL, lone surrogates, long) comes back exactly, by index,
slice, head, copy and pass."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codeai_tui.ledger.blocks import BLOCK
from codeai_tui.ledger.text_column import (
    RUN,
    OptionalTextColumn,
    RepeatingTextColumn,
    TextColumn,
)
from tests.support import held_by

# any str Python can hold: lone surrogates and NUL included
_hostile = st.text(st.characters(exclude_categories=()), max_size=8)
_long = st.text(st.characters(exclude_categories=()), min_size=300, max_size=2000)


def _block(prefix: str, rests: list[str], numbered: bool) -> list[str]:
    """A block of BLOCK strings that all begin with `prefix`: the rests cycled (all as
    long where they are), numbered with a fixed width where asked."""
    return [f"{prefix}{rests[i % len(rests)]}{i:04d}" if numbered
            else prefix + rests[i % len(rests)] for i in range(BLOCK)]


def _same_as_list(col: TextColumn, full: list[str]) -> None:
    assert len(col) == len(full) and list(col) == full and col == full
    assert [col[i] for i in range(len(full))] == full
    for i in range(1, min(len(full), 40) + 1):
        assert col[-i] == full[-i]
    for start in (0, 1, BLOCK - 1, BLOCK, len(full) - 1):
        assert list(col.iter_from(start)) == full[start:]
    assert list(col[3::BLOCK // 3]) == full[3::BLOCK // 3]


@settings(max_examples=60, deadline=None)
@given(_hostile, st.lists(_hostile, min_size=1, max_size=6), st.booleans(),
       st.lists(st.one_of(_hostile, _long), max_size=12), st.data())
def test_any_text_comes_back_exactly(prefix: str, rests: list[str], numbered: bool,
                                     odd: list[str], data: st.DataObject) -> None:
    """Blocks whose strings share a prefix (rests as long or not), a block of hostile
    strings that share none, and an open tail read back as the plain list does."""
    width = data.draw(st.integers(0, 3))
    same_width = [r[:width].ljust(width, "\x00") for r in rests]
    full = (_block(prefix, rests, numbered) + _block(prefix, same_width, numbered)
            + ((odd * (BLOCK // len(odd) + 1))[:BLOCK] if odd else []) + odd)
    col = TextColumn(full)
    _same_as_list(col, full)
    k = data.draw(st.integers(0, len(full)))
    head = col[:k]
    head.extend(odd)
    assert list(head) == full[:k] + odd and list(col) == full
    if full:
        i = data.draw(st.integers(0, len(full) - 1))
        mine = col.copy()
        mine.set(i, "\ud800x")
        assert list(mine) == [*full[:i], "\ud800x", *full[i + 1:]] and list(col) == full


@settings(max_examples=30, deadline=None)
@given(st.text(st.characters(exclude_categories=()), min_size=2, max_size=40),
       st.lists(_hostile, min_size=1, max_size=6), st.booleans())
def test_a_prefix_every_string_shares_is_kept_once_a_run(prefix: str, rests: list[str],
                                                         numbered: bool) -> None:
    """A block of strings that all begin with `prefix` keeps little more than the same
    block without it: the prefix once a run of RUN strings (a str: 4 bytes a character
    at most and its header), not once a string."""
    bare = _block("", rests, numbered)
    prefixed = [prefix + s for s in bare]
    TextColumn(bare)  # (whatever a first seal allocates once is not the block's)
    _bare_col, without = held_by(lambda: TextColumn(bare))
    col, with_prefix = held_by(lambda: TextColumn(prefixed))
    assert list(col) == prefixed
    assert with_prefix - without <= BLOCK // RUN * (4 * len(prefix) + 64) + 200


def _held_per_item(items: list[str]) -> float:
    col, held = held_by(lambda: TextColumn(items))
    assert list(col) == items
    return held / len(items)


def test_ids_numbered_by_one_writer_keep_a_few_bytes_each() -> None:
    """Ids as the live writer and the runtime name them, four full blocks each: their
    numbered rests are as long within a block, so only those characters are kept."""
    n = 4 * BLOCK
    receipt_ids = [f"r-live-{1006045 + 7 * i}" for i in range(n)]
    call_ids = [f"live-999280-t{100 + i // 10}-c{i % 10}" for i in range(n)]
    attempt_rests = ["-a1"] * n  # (an attempt id after its call's id)
    assert _held_per_item(receipt_ids) <= 6.5  # (14 characters; 18 bytes joined, 4 ends)
    assert _held_per_item(call_ids) <= 7.5  # (19-20 characters)
    assert _held_per_item(attempt_rests) <= 0.5


def test_ids_of_varied_length_keep_two_byte_ends() -> None:
    """Rests of different lengths keep an end each, 2 bytes where a block's rests are
    under 64 KiB together (as ids are)."""
    ids = [f"r-{i * 37}" for i in range(1, 4 * BLOCK + 1)]  # "r-37" .. "r-606208"
    rests = sum(len(s) - 2 for s in ids) / len(ids)
    assert _held_per_item(ids) <= rests + 2.5


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), _hostile), min_size=1, max_size=10), st.booleans())
def test_an_optional_block_comes_back_exactly(items: list[str | None], nones: bool
                                              ) -> None:
    """A sealed block of strings and None (a None standing in the block as one of its
    strings, or no None at all) gives back each as it was."""
    block = [items[i % len(items)] for i in range(BLOCK)]
    if not nones:
        block = ["" if s is None else s for s in block]
    full = block + items
    col = OptionalTextColumn(full)
    assert list(col) == full and [col[i] for i in range(len(full))] == full
    assert col[-1] == full[-1] and list(col.head(BLOCK + 1)) == full[:BLOCK + 1]


def test_an_optional_block_keeps_a_shared_prefix_once_past_its_nones() -> None:
    """Attempt ids of one writer with None among them keep their shared prefix once:
    a None does not shorten it."""
    n = 4 * BLOCK
    ids: list[str | None] = [None if i % 10 == 9 else f"live-999280-t{100 + i // 10}-c{i % 10}-a1"
                             for i in range(n)]
    col, held = held_by(lambda: OptionalTextColumn(ids))
    assert list(col) == ids
    assert held / n <= 11.5  # (22-23 characters: joined with a 4-byte end and a None
    # byte each, ~28 bytes; their rests "100-c0-a1" 9)


def test_a_repeated_string_is_kept_once_until_its_block_is_sealed() -> None:
    """An attempt id's rest after its call id repeats call after call: appended one by
    one, each a str of its own made for the column, the open block keeps one str for
    them (a pointer each); a string that differs is kept as it is."""
    count = BLOCK // 2  # (all in the open block, not yet sealed)

    def filled() -> RepeatingTextColumn:
        col = RepeatingTextColumn()
        for _ in range(count):
            col.append("".join(["-a", "1"]))  # (a new str each, as slicing an id makes)
        col.append("".join(["-a", "2"]))
        col.append("".join(["-a", "1"]))
        return col
    col, held = held_by(filled)
    expected = ["-a1"] * count + ["-a2", "-a1"]
    assert list(col) == expected
    assert held / len(expected) <= 10  # (a str each: ~60 bytes with its pointer)
    for _ in range(BLOCK + 3):
        col.append("".join(["-a", "1"]))
    assert list(col) == expected + ["-a1"] * (BLOCK + 3)
