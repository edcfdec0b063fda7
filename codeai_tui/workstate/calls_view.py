"""A snapshot's calls where most are settled in columns: only the verdicts held as
objects are copied into it, by position, so a call in the columns costs a snapshot
nothing (a list or tuple slot a call was 8 bytes for every call, ~11 MB a snapshot at
1.37M calls, copied on every live poll)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Mapping
from typing import overload

from codeai_tui.ledger.blocks import ValueSequence
from codeai_tui.workstate.columns import SettledCalls
from codeai_tui.workstate.verdicts import CallState


class CallsView(ValueSequence[CallState]):
    """A snapshot's calls: the verdicts held as objects when it was taken, by position,
    and every other position's verdict read from the columns. What it reads never
    changes: `kept` is its own copy, the columns are only appended to, and a
    position's slot is set once (before the snapshot, for every position not kept)."""

    __slots__ = ("_cols", "_count", "_kept", "_slots")

    def __init__(self, kept: dict[int, CallState], count: int, cols: SettledCalls,
                 slots: array[int]) -> None:
        self._kept = kept
        self._count = count
        self._cols = cols
        self._slots = slots

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, i: int) -> CallState: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[CallState, ...]: ...

    def __getitem__(self, i: int | slice) -> CallState | tuple[CallState, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(self._count)))
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError("call position out of range")
        st = self._kept.get(i)
        return st if st is not None else self._cols.state(self._slots[i])

    def __iter__(self) -> Iterator[CallState]:
        kept, state, slots = self._kept, self._cols.state, self._slots
        at = 0
        for pos in sorted(kept):  # (few: the runs between them are read from columns)
            for i in range(at, pos):
                yield state(slots[i])
            yield kept[pos]
            at = pos + 1
        for i in range(at, self._count):
            yield state(slots[i])

    def __repr__(self) -> str:
        return f"CallsView({self._count} calls)"


def calls_of(kept: Mapping[int, CallState], count: int, cols: SettledCalls | None,
             slots: array[int]) -> tuple[CallState, ...] | CallsView:
    """A snapshot's `count` calls from the verdicts held as objects (`kept`, by
    position: copied) and the columns: a plain tuple while nothing is settled there
    (every position is then kept)."""
    if cols is None or not len(cols):
        return tuple(map(kept.__getitem__, range(count)))
    return CallsView(dict(kept), count, cols, slots)


__all__ = ["CallsView", "calls_of"]
