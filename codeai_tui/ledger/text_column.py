"""A column of strings kept as a few long texts: for ids read by the hundred thousand
and shown a screenful at a time (receipt ids)."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import overload

from codeai_tui.ledger.blocks import ValueSequence

BLOCK = 1024  # strings per sealed text


class TextColumn(ValueSequence[str]):
    """Strings appended in order, kept per block of `BLOCK` as one joined text and the end
    offset of each: ~4 bytes plus its characters per string, where a str object each
    cost 49 bytes plus its characters (receipt ids: ~54 -> ~10 bytes, 6 MB fewer at
    143,904 receipts). Reading one makes its str again (a slice). Sealed blocks never
    change, so `head` shares them."""

    __slots__ = ("_ends", "_open", "_texts")

    def __init__(self, items: Iterable[str] = ()) -> None:
        self._texts: list[str] = []
        self._ends: list[array[int]] = []
        self._open: list[str] = []  # the last block's strings, sealed once it is full
        for s in items:
            self.append(s)

    def append(self, s: str) -> None:
        self._open.append(s)
        if len(self._open) == BLOCK:
            self._seal(self._open)
            self._open = []

    def extend(self, items: Iterable[str]) -> None:
        opened = self._open
        opened.extend(items)
        if len(opened) >= BLOCK:
            full = len(opened) - len(opened) % BLOCK
            for at in range(0, full, BLOCK):
                self._seal(opened[at:at + BLOCK])
            self._open = opened[full:]

    def _seal(self, items: list[str]) -> None:
        offsets = []
        at = 0
        for s in items:
            at += len(s)
            offsets.append(at)
        self._texts.append("".join(items))
        self._ends.append(array("I" if at < 1 << 32 else "Q", offsets))

    def __len__(self) -> int:
        return len(self._texts) * BLOCK + len(self._open)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> TextColumn: ...

    def __getitem__(self, i: int | slice) -> str | TextColumn:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if start == 0 and step == 1:
                return self.head(stop)
            return TextColumn(self[k] for k in range(start, stop, step))
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("text column index out of range")
        block, j = divmod(i, BLOCK)
        if block == len(self._texts):
            return self._open[j]
        ends = self._ends[block]
        return self._texts[block][ends[j - 1] if j else 0:ends[j]]

    def __iter__(self) -> Iterator[str]:
        for text, ends in zip(self._texts, self._ends, strict=True):
            at = 0
            for end in ends:
                yield text[at:end]
                at = end
        yield from self._open

    def head(self, k: int) -> TextColumn:
        """The first `k` strings (k <= len), sharing every sealed block they fill."""
        k = max(0, min(k, len(self)))
        full = k // BLOCK
        out = TextColumn()
        out._texts = self._texts[:full]
        out._ends = self._ends[:full]
        for j in range(full * BLOCK, k):
            out._open.append(self[j])
        return out

    def __repr__(self) -> str:
        return f"TextColumn({len(self)} strings)"
