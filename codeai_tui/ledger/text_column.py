"""A column of strings kept as a few long texts: for ids read by the hundred thousand
and shown a screenful at a time (receipt ids)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import accumulate, chain, repeat
from operator import itemgetter
from typing import overload

from codeai_tui.ledger.blocks import Blocks


class JoinedText(Sequence[str]):
    """The strings of one sealed block as the prefix they all share, kept once, and the
    rest of each joined in one text. Where every rest is as long (ids numbered within a
    block: `r-live-1006045`, `live-999280-t100-c9`), item j is the j-th piece of that
    width and nothing is kept per item; otherwise an end offset per item, in 2 bytes
    where the rests are under 64 KiB together. Ids written by one program share most of
    their text with their neighbours: a str each cost 49 bytes plus its characters, the
    whole text and a 4-byte end each ~4 plus its characters, this often its last few.
    Reading one makes its str again (a slice, and the prefix put before it)."""

    __slots__ = ("_count", "_ends", "_prefix", "_text", "_width")

    def __init__(self, items: list[str]) -> None:
        count = len(items)
        shared = _shared_prefix(min(items), max(items)) if count else 0
        rests = list(map(itemgetter(slice(shared, None)), items)) if shared else items
        self._count = count
        self._prefix = items[0][:shared] if shared else ""
        self._text = text = "".join(rests)
        width = len(text) // count if count else 0
        self._width = width
        self._ends: array[int] | None = None
        if len(text) != width * count or len(set(map(len, rests))) > 1:
            self._ends = array(_offset_code(len(text)), accumulate(map(len, rests)))

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, j: int) -> str: ...

    @overload
    def __getitem__(self, j: slice) -> list[str]: ...

    def __getitem__(self, j: int | slice) -> str | list[str]:
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(self._count))]
        if j < 0:
            j += self._count
        if not 0 <= j < self._count:
            raise IndexError("text index out of range")
        ends = self._ends
        if ends is None:
            width = self._width
            return self._prefix + self._text[j * width:j * width + width]
        return self._prefix + self._text[ends[j - 1] if j else 0:ends[j]]

    def __iter__(self) -> Iterator[str]:
        prefix, text, ends = self._prefix, self._text, self._ends
        if ends is None:
            width = self._width
            if not width:
                return repeat(prefix, self._count)
            rests = map(text.__getitem__, map(slice, range(0, len(text), width),
                                              range(width, len(text) + 1, width)))
        else:
            rests = map(text.__getitem__, map(slice, chain((0,), ends), ends))
        return map(prefix.__add__, rests) if prefix else rests


def _shared_prefix(least: str, greatest: str) -> int:
    """How many characters `least` and `greatest` begin with alike: every string that
    sorts between them begins with those too. Found by bisection with slices, as a
    hostile text may be megabytes long."""
    if greatest.startswith(least):
        return len(least)
    low, high = 0, min(len(least), len(greatest))
    while low < high:  # (least[:low] == greatest[:low]; they differ before `high` + 1)
        mid = (low + high + 1) // 2
        if least[:mid] == greatest[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _offset_code(end: int) -> str:
    """The narrowest unsigned array type that holds offsets up to `end`."""
    return next(code for code, limit in _OFFSET_LIMITS if end < limit)


_OFFSET_LIMITS = tuple((code, 1 << (8 * array(code).itemsize)) for code in "HIQ")


class TextColumn(Blocks[str]):
    """A column of strings whose sealed blocks are joined texts, their shared prefix
    kept once (receipt ids while following: ~63 bytes a str, 5 joined); otherwise a
    column as any other."""

    __slots__ = ()

    def _sealed(self, items: list[str]) -> Sequence[str]:
        return JoinedText(items)


class OptionalJoinedText(Sequence["str | None"]):
    """A sealed block of strings some of which are None: a JoinedText, where a None
    stands as a string of the block (so it shortens no shared prefix), and a byte per
    item saying which are None (none kept where no item is)."""

    __slots__ = ("_none", "_text")

    def __init__(self, items: list[str | None]) -> None:
        stand_in = next((s for s in items if s is not None), "")
        nones = bytes(s is None for s in items)
        self._none = nones if any(nones) else None
        self._text = JoinedText([stand_in if s is None else s for s in items])

    def __len__(self) -> int:
        return len(self._text)

    @overload
    def __getitem__(self, j: int) -> str | None: ...

    @overload
    def __getitem__(self, j: slice) -> list[str | None]: ...

    def __getitem__(self, j: int | slice) -> str | None | list[str | None]:
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        text = self._text[j]
        return None if self._none is not None and self._none[j] else text

    def __iter__(self) -> Iterator[str | None]:
        if self._none is None:
            yield from self._text
            return
        for none, s in zip(self._none, self._text, strict=True):
            yield None if none else s


class OptionalTextColumn(Blocks["str | None"]):
    """A column of strings or None whose sealed blocks are joined texts (the attempt
    covering each receipt: a str each cost ~50 bytes more per receipt)."""

    __slots__ = ()

    def _sealed(self, items: list[str | None]) -> Sequence[str | None]:
        return OptionalJoinedText(items)


class HexDigests(Sequence[str]):
    """A sealed block of SHA-256 hex digests (64 lower-case hex digits each, as every
    writer records them) as 32 bytes each, where a str each cost 113 bytes: the text
    comes back exactly (`DigestColumn` seals only blocks that do)."""

    __slots__ = ("_raw",)

    def __init__(self, raw: bytes) -> None:
        self._raw = raw

    def __len__(self) -> int:
        return len(self._raw) // 32

    @overload
    def __getitem__(self, j: int) -> str: ...

    @overload
    def __getitem__(self, j: slice) -> list[str]: ...

    def __getitem__(self, j: int | slice) -> str | list[str]:
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        count = len(self._raw) // 32  # (not len(self): a call more per hash read)
        if j < 0:
            j += count
        if not 0 <= j < count:
            raise IndexError("digest index out of range")
        return self._raw[j * 32:j * 32 + 32].hex()

    def __iter__(self) -> Iterator[str]:
        raw = self._raw
        for at in range(0, len(raw), 32):
            yield raw[at:at + 32].hex()


class DigestColumn(Blocks[str]):
    """A column of body hashes: a sealed block whose every item is a lower-case hex
    SHA-256 keeps 32 bytes an item (HexDigests), any other a joined text."""

    __slots__ = ()

    def _sealed(self, items: list[str]) -> Sequence[str]:
        text = "".join(items)
        if len(text) == 64 * len(items) and all(len(s) == 64 for s in items):
            try:
                raw = bytes.fromhex(text)
            except ValueError:
                raw = None
            if raw is not None and raw.hex() == text:  # (upper case would come back lower)
                return HexDigests(raw)
        return JoinedText(items)
