"""A column of strings kept as a few long texts: for ids read by the hundred thousand
and shown a screenful at a time (receipt ids)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import overload

from codeai_tui.ledger.blocks import Blocks


class JoinedText(Sequence[str]):
    """The strings of one sealed block as one joined text and the end offset of each:
    ~4 bytes plus its characters a string, where a str object each cost 49 bytes plus
    its characters. Reading one makes its str again (a slice)."""

    __slots__ = ("_ends", "_text")

    def __init__(self, items: list[str]) -> None:
        offsets = []
        at = 0
        for s in items:
            at += len(s)
            offsets.append(at)
        self._text = "".join(items)
        self._ends = array("I" if at < 1 << 32 else "Q", offsets)

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, j: int) -> str: ...

    @overload
    def __getitem__(self, j: slice) -> list[str]: ...

    def __getitem__(self, j: int | slice) -> str | list[str]:
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        ends = self._ends
        if j < 0:
            j += len(ends)
        return self._text[ends[j - 1] if j else 0:ends[j]]

    def __iter__(self) -> Iterator[str]:
        at = 0
        for end in self._ends:
            yield self._text[at:end]
            at = end


class TextColumn(Blocks[str]):
    """A column of strings whose sealed blocks are joined texts (receipt ids: ~54 -> ~10
    bytes an id, 6 MB fewer at 143,904 receipts); otherwise a column as any other."""

    __slots__ = ()

    def _sealed(self, items: list[str]) -> Sequence[str]:
        return JoinedText(items)


class OptionalJoinedText(Sequence["str | None"]):
    """A sealed block of strings some of which are None: a JoinedText and a byte per
    item saying which are None."""

    __slots__ = ("_none", "_text")

    def __init__(self, items: list[str | None]) -> None:
        self._none = bytes(s is None for s in items)
        self._text = JoinedText(["" if s is None else s for s in items])

    def __len__(self) -> int:
        return len(self._none)

    @overload
    def __getitem__(self, j: int) -> str | None: ...

    @overload
    def __getitem__(self, j: slice) -> list[str | None]: ...

    def __getitem__(self, j: int | slice) -> str | None | list[str | None]:
        if isinstance(j, slice):
            return [self[k] for k in range(*j.indices(len(self)))]
        return None if self._none[j] else self._text[j]

    def __iter__(self) -> Iterator[str | None]:
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
