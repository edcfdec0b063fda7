"""A column that grows at its end and is copied in proportion to what changes.

A live console copies the receipt log's columns each time the provider appends to it,
so the snapshot on screen never changes under it. Plain lists and arrays made that an
O(n) copy of ~10 MB a read at 143,904 receipts, and glibc kept the freed copies' pages
(over 150 s of a provider writing, RSS grew 43 MB, 26 of which malloc_trim gave back);
blocks are shared instead.
"""

from __future__ import annotations

import operator
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar, overload

T = TypeVar("T")

# items per sealed block (a power of two: found by shift and mask). The open list holds
# its items as Python objects until its block is sealed: a followed console's receipt
# log and settled calls keep ~380 bytes of strs and ints a new call in theirs (ids, keys,
# hashes, times), each pinning the allocator's pools among the rows read meanwhile.
# 4,096 held up to ~1.5 MB so; with 1,024 the console grew 7.1 MB (median of 3) in its
# first 90 s of following 1,000 events/s against 8.2 MB (alternating runs, none
# overlapping), and `inspect --json` at 1M events took as long (wall ratio 0.97-1.04,
# medians of 5 and 7 alternating pairs). Smaller blocks cost more apiece: 1.37M call ids
# took 5.54 bytes an id joined (5.28 in blocks of 4,096), their times 4.14 (4.04), ~2.5
# MB more over the columns a console keeps at 10M events.
_SHIFT = 10
BLOCK = 1 << _SHIFT


# A column of ints kept narrow while its values fit: `appended` and `extended` return it
# (changed in place) or, where a value does not fit, a wider one to keep instead: 2-, 4-
# or 8-byte ints, else a list (ints 2^63 apart: differences of a hostile ledger's seqs).
_WIDER = ("h", "i", "q")
_WIDEST = 9  # (a list: wider than any array)


def appended(values: array[int] | list[int], value: int) -> array[int] | list[int]:
    """`values` with `value` appended, widened where it does not fit (never wrapped)."""
    try:
        values.append(value)
        return values
    except OverflowError:
        return extended(values, [value])


def assigned(values: array[int] | list[int], i: int, value: int) -> array[int] | list[int]:
    """`values` with item `i` set to `value`, widened where it does not fit (never
    wrapped): the column to keep from then on."""
    try:
        values[i] = value
        return values
    except OverflowError:
        wide = extended(values, (value,))  # (the narrowest that holds `value` too)
        wide[i] = value
        del wide[-1]
        return wide


def extended(values: array[int] | list[int], more: Iterable[int]) -> array[int] | list[int]:
    """`values` with `more` appended, widened where they do not fit (never wrapped)."""
    if type(values) is array and type(more) is array and values.typecode == more.typecode:
        values.extend(more)
        return values
    more = list(more)
    width = values.itemsize if type(values) is array else _WIDEST
    for code in _WIDER:  # (the narrowest that holds them all, never narrower than now)
        if array(code).itemsize >= width:
            try:
                wide = array(code, values)
                wide.extend(more)
            except OverflowError:
                continue
            return wide
    return [*values, *more]


class ValueSequence(Sequence[T], Generic[T]):
    """A sequence equal to any other sequence (not text) of equal items, in order, as
    a list or tuple of them would be: the columns stand in for lists."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))


class Blocks(ValueSequence[T]):
    """Items in sealed blocks of `BLOCK` (arrays of `typecode` where every item fits,
    else tuples; a subclass may seal them otherwise) and an open list at the end. Sealed
    blocks are never changed in place: `copy` and `head` share them, `set` replaces the
    one block it changes."""

    __slots__ = ("_blocks", "_code", "_open")

    def __init__(self, items: Iterable[T] = (), typecode: str | None = None) -> None:
        self._code = typecode
        self._blocks: list[Sequence[T]] = []
        listed = list(items)
        full = len(listed) - len(listed) % BLOCK
        for at in range(0, full, BLOCK):
            self._blocks.append(self._sealed(listed[at:at + BLOCK]))
        self._open: list[T] = listed[full:]

    def _sealed(self, items: list[T]) -> Sequence[T]:
        if self._code is not None:
            try:
                return array(self._code, items)  # type: ignore[arg-type, return-value]
            except (OverflowError, TypeError):  # an int beyond 64 bits (a hostile log)
                pass
        return tuple(items)

    def append(self, item: T) -> None:
        self._open.append(item)
        if len(self._open) == BLOCK:
            self._blocks.append(self._sealed(self._open))
            self._open = []

    def extend(self, items: Iterable[T]) -> None:
        opened = self._open
        opened.extend(items)
        if len(opened) >= BLOCK:
            full = len(opened) - len(opened) % BLOCK
            for at in range(0, full, BLOCK):
                self._blocks.append(self._sealed(opened[at:at + BLOCK]))
            self._open = opened[full:]

    def __len__(self) -> int:
        return len(self._blocks) * BLOCK + len(self._open)

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> Blocks[T]: ...

    def __getitem__(self, i: int | slice) -> T | Blocks[T]:
        # the common case first, in as few steps as Python allows: a console or an
        # inspect reads one item at a time, ~3 per call (0.37 s of 1.4 s per 40,000
        # calls' receipt evidence went here)
        if type(i) is int and i >= 0:
            blocks = self._blocks
            block = i >> _SHIFT
            if block < len(blocks):
                return blocks[block][i & (BLOCK - 1)]
            opened = self._open
            if block == len(blocks) and i & (BLOCK - 1) < len(opened):
                return opened[i & (BLOCK - 1)]
            raise IndexError("column index out of range")
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if start == 0 and step == 1:
                return self.head(stop)
            return type(self)((self[k] for k in range(start, stop, step)), self._code)
        return self[self._index(operator.index(i))]  # (from the end; any int-like)

    def _index(self, i: int) -> int:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("column index out of range")
        return i

    def __iter__(self) -> Iterator[T]:
        for block in self._blocks:
            yield from block
        yield from self._open

    def iter_from(self, start: int) -> Iterator[T]:
        """The items from position `start` on, without stepping through those before."""
        if start >= len(self):
            return
        first, skip = divmod(max(0, start), BLOCK)
        for block in self._blocks[first:]:
            yield from block[skip:] if skip else block
            skip = 0
        yield from self._open[skip:] if skip else self._open

    def head(self, k: int) -> Blocks[T]:
        """The first `k` items, sharing the sealed blocks they fill."""
        k = max(0, min(k, len(self)))
        full, rest = divmod(k, BLOCK)
        out = type(self)((), self._code)
        out._blocks = self._blocks[:full]
        if rest:
            last = self._open if full == len(self._blocks) else self._blocks[full]
            out._open = list(last[:rest])
        return out

    def copy(self) -> Blocks[T]:
        """A column of its own to change: O(blocks) plus the open list."""
        return self.head(len(self))

    def set(self, i: int, item: T) -> None:
        """Item `i` becomes `item`; a sealed block is copied, not changed."""
        block, j = divmod(self._index(i), BLOCK)
        if block == len(self._blocks):
            self._open[j] = item
            return
        changed = list(self._blocks[block])
        changed[j] = item
        self._blocks[block] = self._sealed(changed)

    def share(self, i: int, item: T) -> None:
        """Item `i`, equal to `item`, becomes that very object where that costs nothing
        (the open list, which no copy shares): memory only, nothing anyone reads changes."""
        at = i - len(self._blocks) * BLOCK
        if 0 <= at < len(self._open) and self._open[at] == item:
            self._open[at] = item

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} items)"


# unsigned item types from narrowest: the offsets of a sealed block of `IntBlocks`
_OFFSET_CODES = tuple((code, 1 << (8 * array(code).itemsize)) for code in "BHIQ")


class OffsetInts(Sequence[int]):
    """A sealed block of ints as its least item and each item's offset from it, in the
    narrowest unsigned items that hold them: sizes alike, line numbers a block apart,
    times minutes apart take 1, 2 or 4 bytes an item where a column of 8 took 8."""

    __slots__ = ("_base", "_offsets")

    def __init__(self, base: int, offsets: array[int]) -> None:
        self._base = base
        self._offsets = offsets

    @classmethod
    def of(cls, items: list[int]) -> OffsetInts | None:
        """`items` so kept, None where they lie 2^64 apart or more (or are not ints)."""
        if not items or any(type(v) is not int for v in items):
            return None
        base = min(items)
        span = max(items) - base
        code = next((code for code, limit in _OFFSET_CODES if span < limit), None)
        if code is None:
            return None
        return cls(base, array(code, [v - base for v in items]))

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, j: int) -> int: ...

    @overload
    def __getitem__(self, j: slice) -> list[int]: ...

    def __getitem__(self, j: int | slice) -> int | list[int]:
        if isinstance(j, slice):
            return list(map(self._base.__add__, self._offsets[j]))
        return self._base + self._offsets[j]

    def __iter__(self) -> Iterator[int]:
        return map(self._base.__add__, self._offsets)


class IntBlocks(Blocks[int]):
    """A column of ints whose sealed blocks are `OffsetInts` (a tuple where their items
    lie 2^64 apart: a hostile log's); otherwise a column as any other."""

    __slots__ = ()

    def _sealed(self, items: list[int]) -> Sequence[int]:
        sealed = OffsetInts.of(items)
        return sealed if sealed is not None else tuple(items)
