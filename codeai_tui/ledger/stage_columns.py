"""The skeleton's grouped read (`EvidenceSQL.call_stage_rows`) kept as columns.

A row per call as a tuple of nine Python objects cost ~300 bytes (the tuple, and an int
object for every seq above 256); the console held every row of a part at once while the
skeleton was built from them: ~400 MB at 1.37M calls, on top of everything it keeps.
Here each number is 8 bytes in an array, the index print is kept as its three sums (the
only use of the rows' last three fields), and the call ids are the one list the skeleton
keeps anyway. A child process (ledger/grouped_worker.py) sends its part in this shape.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

StageRow = tuple[object, int, int, int, int | None, int]  # without the index print

_FIELDS = 5  # first, last, flags, packed, started: one array each


def _column(values: list[int]) -> Sequence[int]:
    """An array of 8-byte integers, or the list itself where one value does not fit (a
    hostile ledger's seqs beyond 64 bits once shifted: SQLite gives a real then)."""
    try:
        return array("q", values)
    except (TypeError, OverflowError):
        return values


@dataclass(slots=True)
class StageColumns:
    """Rows of `call_stage_rows` (each part in first-seq order) as columns: ids, first
    and last seq, flags, last started attempt (`packed`; `started_any` 0 where none was
    started), started attempts; `index_print`: the sums of the rows' index-print fields.
    `order`: the positions in first-seq order when parts were joined (None: as kept)."""

    ids: list[object]
    firsts: Sequence[int]
    lasts: Sequence[int]
    flags: Sequence[int]
    packed: Sequence[int]
    started_any: bytes
    started: Sequence[int]
    index_print: tuple[int, int, int]
    order: list[int] | None = None

    @classmethod
    def of(cls, rows: Iterable[Sequence[object]]) -> StageColumns:
        """The columns of rows as `call_stage_rows` gives them (nine fields)."""
        ids: list[object] = []
        cols: list[list[int]] = [[] for _ in range(_FIELDS)]
        firsts, lasts, flags, packed, started = cols
        any_started = bytearray()
        events = seqs = kinds = 0
        for cid, first, last, flag, pack, count, pn, ps, pk in rows:
            ids.append(cid)
            firsts.append(first)  # type: ignore[arg-type]
            lasts.append(last)  # type: ignore[arg-type]
            flags.append(flag)  # type: ignore[arg-type]
            any_started.append(pack is not None)
            packed.append(0 if pack is None else pack)  # type: ignore[arg-type]
            started.append(count)  # type: ignore[arg-type]
            events += int(pn)  # type: ignore[call-overload]
            seqs += int(ps)  # type: ignore[call-overload]
            kinds += int(pk)  # type: ignore[call-overload]
        return cls(ids, *(_column(c) for c in cols[:4]), bytes(any_started),
                   _column(started), (events, seqs, kinds))

    @classmethod
    def joined(cls, parts: Sequence[StageColumns]) -> StageColumns:
        """The parts as one, read in first-seq order (`order`: timsort merges the parts'
        own runs)."""
        if len(parts) == 1:
            return parts[0]
        head, *rest = parts
        ids = list(head.ids)
        cols = [head.firsts, head.lasts, head.flags, head.packed, head.started]
        any_started = head.started_any
        prints = list(head.index_print)
        for part in rest:
            ids += part.ids
            mine = (part.firsts, part.lasts, part.flags, part.packed, part.started)
            cols = [_joined(a, b) for a, b in zip(cols, mine, strict=True)]
            any_started += part.started_any
            prints = [a + b for a, b in zip(prints, part.index_print, strict=True)]
        firsts = cols[0]
        order = sorted(range(len(ids)), key=firsts.__getitem__)
        return cls(ids, cols[0], cols[1], cols[2], cols[3], any_started, cols[4],
                   (prints[0], prints[1], prints[2]), order)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def odd(self) -> int:
        """The flags of every row ORed (the caller tests its bits)."""
        seen = 0
        for flag in set(self.flags):
            seen |= flag
        return seen

    def rows(self) -> Iterator[StageRow]:
        """(call_id, first, last, flags, packed or None, started) in first-seq order."""
        ids, firsts, lasts, flags = self.ids, self.firsts, self.lasts, self.flags
        packed, any_started, started = self.packed, self.started_any, self.started
        for i in range(len(ids)) if self.order is None else self.order:
            yield (ids[i], firsts[i], lasts[i], flags[i],
                   packed[i] if any_started[i] else None, started[i])


def _joined(a: Sequence[int], b: Sequence[int]) -> Sequence[int]:
    if type(a) is array and type(b) is array:
        return a + b
    return [*a, *b]
