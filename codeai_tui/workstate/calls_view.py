"""A snapshot's calls where most are settled in columns: only the verdicts held as
objects are copied into it, by position, so a call in the columns costs a snapshot
nothing (a list or tuple slot a call was 8 bytes for every call, ~11 MB a snapshot at
1.37M calls, copied on every live poll)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, TypeVar, overload

from codeai_tui.ledger.blocks import ValueSequence
from codeai_tui.workstate.columns import SettledCalls
from codeai_tui.workstate.positions import holds
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

    __slots__ = ("_cols", "_ids")

    noun = "calls"

    def __init__(self, kept: dict[int, CallState], count: int, cols: SettledCalls,
                 slots: array[int]) -> None:
        super().__init__(kept, count, cols.state, slots)
        self._ids = cols.ids
        self._cols = cols

    def positions_keyed(self, key: str) -> list[int]:
        """The positions of the calls whose idempotency key is `key`, rising: those held
        as objects by their own key, the rest found in the columns (`slots_keyed`), not
        by making each call's verdict to read its key (0.2 s at 137,000 calls; a
        receipt's detail asks on every live snapshot)."""
        kept, count, slots, cols = self._kept, self._count, self._slots, self._cols
        found = [p for p, st in kept.items() if st.idempotency_key == key]
        for slot in cols.slots_keyed(key):
            p = cols.positions[slot]
            if p < count and p not in kept and slots[p] == slot:
                found.append(p)
        return sorted(found)

    def call_id_at(self, i: int) -> str:
        """The id of the call at position `i` (no verdict read from the columns)."""
        st = self._kept.get(i)
        return st.call_id if st is not None else self._ids[self._slots[i]]

    def task_id_at(self, i: int) -> str:
        """The task id of the call at position `i` (no verdict read from the columns)."""
        st = self._kept.get(i)
        return st.task_id if st is not None else self._cols.task_id(self._slots[i])


class CallIds(AbstractSet[str]):
    """The ids of a snapshot's calls at some positions (its effect-unknown calls), kept
    as the positions: 4 bytes a call, where a set of id strings cost the follower and
    each snapshot ~100 bytes a call (a writer leaving one call in ten in flight kept
    ~18 bytes a new call that way). An id is read from the calls when iterated; one is
    found by the projection's position of it."""

    __slots__ = ("_id_at", "_position_of", "_positions")

    def __init__(self, positions: array[int], calls: Sequence[CallState],
                 position_of: Callable[[str], int | None]) -> None:
        self._positions = positions  # (rising: a copy of its own)
        self._id_at: Callable[[int], str] = (
            calls.call_id_at if isinstance(calls, CallsView)
            else lambda i: calls[i].call_id)
        self._position_of = position_of

    def __len__(self) -> int:
        return len(self._positions)

    def __iter__(self) -> Iterator[str]:
        return map(self._id_at, self._positions)

    def __contains__(self, call_id: object) -> bool:
        if not isinstance(call_id, str):
            return False
        pos = self._position_of(call_id)
        return pos is not None and holds(self._positions, pos)

    @classmethod
    def _from_iterable(cls, it: Iterable[str]) -> frozenset[str]:  # type: ignore[override]
        return frozenset(it)  # (what `|`, `&` and `-` make: plain sets of ids)

    def __sub__(self, other: AbstractSet[Any]) -> frozenset[str]:  # type: ignore[override]
        return frozenset(self.not_in(other)) if isinstance(other, AbstractSet) \
            else NotImplemented

    def not_in(self, other: AbstractSet[str]) -> list[str]:
        """The ids here that `other` lacks. Between two snapshots of one projection it
        compares positions (a call's position never changes): a live console asks this
        of every snapshot, and reading each id would cost ~3 µs an effect-unknown call."""
        if isinstance(other, CallIds) and other._position_of == self._position_of:
            before = set(other._positions)
            return [self._id_at(p) for p in self._positions if p not in before]
        return [call_id for call_id in self if call_id not in other]

    def __repr__(self) -> str:
        return f"CallIds({len(self._positions)} calls)"


def calls_of(kept: Mapping[int, CallState], count: int, cols: SettledCalls | None,
             slots: array[int]) -> tuple[CallState, ...] | CallsView:
    """A snapshot's `count` calls from the verdicts held as objects (`kept`, by
    position: copied) and the columns: a plain tuple while nothing is settled there
    (every position is then kept)."""
    if cols is None or not len(cols):
        return tuple(map(kept.__getitem__, range(count)))
    return CallsView(dict(kept), count, cols, slots)


__all__ = ["CallIds", "CallsView", "KeptOrRead", "calls_of"]
