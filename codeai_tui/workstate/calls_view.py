"""A snapshot's calls where most are settled in columns: only the verdicts held as
objects are copied into it, by position, so a call in the columns costs a snapshot
nothing (a list or tuple slot a call was 8 bytes for every call, ~11 MB a snapshot at
1.37M calls, copied on every live poll)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar, overload

from codeai_tui.ledger.blocks import ValueSequence
from codeai_tui.workstate.columns import SettledCalls
from codeai_tui.workstate.verdicts import CallState

T = TypeVar("T")


class KeptOrRead(ValueSequence[T]):
    """A snapshot's entities by position: the verdicts held as objects when it was
    taken, and every other position's verdict read from columns by its slot (`read`).
    What it reads never changes: `kept` is its own copy, the columns are only appended
    to, and a position's slot is set once (before the snapshot, for every position not
    kept)."""

    __slots__ = ("_count", "_kept", "_read", "_slots")

    noun = "entities"

    def __init__(self, kept: dict[int, T], count: int, read: Callable[[int], T],
                 slots: array[int]) -> None:
        self._kept = kept
        self._count = count
        self._read = read
        self._slots = slots

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[T, ...]: ...

    def __getitem__(self, i: int | slice) -> T | tuple[T, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(self._count)))
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError(f"position {i} out of range")
        st = self._kept.get(i)
        return st if st is not None else self._read(self._slots[i])

    def __iter__(self) -> Iterator[T]:
        kept, read, slots = self._kept, self._read, self._slots
        at = 0
        for pos in sorted(kept):  # (few: the runs between them are read from columns)
            for i in range(at, pos):
                yield read(slots[i])
            yield kept[pos]
            at = pos + 1
        for i in range(at, self._count):
            yield read(slots[i])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._count} {self.noun})"


class CallsView(KeptOrRead[CallState]):
    """A snapshot's calls, those not held as objects read from the settled columns."""

    __slots__ = ()

    noun = "calls"

    def __init__(self, kept: dict[int, CallState], count: int, cols: SettledCalls,
                 slots: array[int]) -> None:
        super().__init__(kept, count, cols.state, slots)


def calls_of(kept: Mapping[int, CallState], count: int, cols: SettledCalls | None,
             slots: array[int]) -> tuple[CallState, ...] | CallsView:
    """A snapshot's `count` calls from the verdicts held as objects (`kept`, by
    position: copied) and the columns: a plain tuple while nothing is settled there
    (every position is then kept)."""
    if cols is None or not len(cols):
        return tuple(map(kept.__getitem__, range(count)))
    return CallsView(dict(kept), count, cols, slots)


__all__ = ["CallsView", "KeptOrRead", "calls_of"]
