"""A set of call positions kept as one sorted array: 4 bytes a position where a set of
int objects cost ~70 (the calls in flight, a call in ten while following, are held
for as long as they stay in flight: most wait for good on a crash or a lost provider)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator, Sequence


def holds(items: Sequence[int], pos: int) -> bool:
    """True when the rising positions `items` hold `pos` (by bisection)."""
    at = bisect_left(items, pos)
    return at < len(items) and items[at] == pos


def places_of(positions: Sequence[int], among: Sequence[int]) -> list[int]:
    """Rising, the places in `among` of the `positions` it holds (both rising): a
    filter's rows (`among`, the positions it kept) that hold calls of `positions`. Each
    of the shorter is looked for in the longer by bisection."""
    if len(positions) <= len(among):
        places = (bisect_left(among, pos) for pos in positions)
        return [at for at, pos in zip(places, positions, strict=True)
                if at < len(among) and among[at] == pos]
    return [at for at, pos in enumerate(among) if holds(positions, pos)]


class SortedPositions:
    """Positions (0 to 2^31 - 1) in rising order. A new call's position, the largest so
    far, is appended; any other is placed by bisection (a shift of the items after it:
    a call in flight settling, a few a poll)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items = array("i")

    def add(self, pos: int) -> None:
        items = self._items
        if not items or items[-1] < pos:
            items.append(pos)
            return
        at = bisect_left(items, pos)
        if items[at] != pos:
            items.insert(at, pos)

    def discard(self, pos: int) -> None:
        items = self._items
        at = bisect_left(items, pos)
        if at < len(items) and items[at] == pos:
            del items[at]

    def __contains__(self, pos: object) -> bool:
        return type(pos) is int and holds(self._items, pos)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[int]:
        return iter(self._items)

    def copy(self) -> array[int]:
        """The positions in rising order, a copy of their own (a snapshot's)."""
        return array("i", self._items)


__all__ = ["SortedPositions", "holds", "places_of"]
