"""A column of strings kept as a few long texts: for ids read by the hundred thousand
and shown a screenful at a time (receipt ids, idempotency keys, call ids)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from itertools import accumulate, chain
from typing import overload

from codeai_tui.ledger.blocks import BLOCK, Blocks

_RUN_SHIFT = 7
RUN = 1 << _RUN_SHIFT  # strings a prefix is shared by (`JoinedText`)
_RUN_MASK = RUN - 1
_VARIED = 255  # a run's width where its rests are not all as long (then read by `_ends`)


class JoinedText(Sequence[str]):
    """The strings of one sealed block, each run of RUN neighbours as the prefix they all
    share, kept once, and the rest of each string joined in one text. Where a run's
    rests are all as long (ids numbered by one writer: `r-live-1006045`,
    `live-999280-t100-c9`), string j is a piece of that width and nothing is kept per
    string; a block with a run that is not keeps an end offset a string, 2 bytes where
    its rests are under 64 KiB together. Ids written by one program share most of their
    text with their neighbours: a str each cost 49 bytes plus its characters, joined
    whole they cost their characters and a 4-byte end (18 bytes a receipt id such as
    `r-live-1006045`, 24 a call id), these ~4.3 and ~6 (their last 3-5 characters, and
    the runs). Reading one makes its str again: a slice, its run's prefix put before."""

    __slots__ = ("_count", "_ends", "_prefixes", "_starts", "_text", "_widths")

    def __init__(self, items: list[str]) -> None:
        # each step a C loop over the block or over its runs, not a Python loop a run:
        # sealing still costs ~3 times what one joined text did (~0.45 ms a block)
        count = len(items)
        runs = [items[lo:lo + RUN] for lo in range(0, count, RUN)]
        least = list(map(min, runs))
        shared = list(map(_shared_prefix, least, map(max, runs)))
        rests = [s[cut:] for run, cut in zip(runs, shared, strict=True) for s in run]
        lengths = list(map(len, rests))
        by_run = [lengths[lo:lo + RUN] for lo in range(0, count, RUN)]
        sizes = list(map(sum, by_run))
        code = _offset_code(sum(sizes))
        self._count = count
        self._prefixes = _prefixes(least, shared)
        self._text = "".join(rests)
        self._starts = array(code, accumulate(sizes[:-1], initial=0) if sizes else ())
        self._widths = bytes(_width(lengths) for lengths in by_run)
        self._ends: array[int] | None = None
        if _VARIED in self._widths:
            self._ends = array(code, accumulate(lengths))

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
        run = j >> _RUN_SHIFT
        width = self._widths[run]
        if width != _VARIED:
            at = self._starts[run] + (j & _RUN_MASK) * width
            return self._prefixes[run] + self._text[at:at + width]
        ends = self._ends
        return self._prefixes[run] + self._text[ends[j - 1] if j else 0:ends[j]]  # type: ignore[index]

    def __iter__(self) -> Iterator[str]:
        # (no generator: a run's strings are made at once, by `_run`)
        return chain.from_iterable(map(self._run, range(len(self._prefixes))))

    def positions_of(self, value: str) -> list[int]:
        """The indexes of the strings equal to `value`, rising. Only a run whose prefix
        begins `value` and whose joined rests hold the rest of it (one search in C) is
        made into strings and compared (a key among the 1.37M calls of a 10M-event
        ledger: 4-6 ms, where making every string took ~0.3 s)."""
        text, starts, prefixes = self._text, self._starts, self._prefixes
        found: list[int] = []
        last = len(prefixes) - 1
        for run, prefix in enumerate(prefixes):
            if not value.startswith(prefix):
                continue
            end = starts[run + 1] if run < last else len(text)
            if text.find(value[len(prefix):], starts[run], end) < 0:
                continue
            lo = run << _RUN_SHIFT
            found += [lo + k for k, item in enumerate(self._run(run)) if item == value]
        return found

    def _run(self, run: int) -> list[str]:
        """The strings of run `run`, in order (a comprehension: ~40% faster a string
        than maps of slices and additions)."""
        lo = run << _RUN_SHIFT
        size = min(RUN, self._count - lo)
        prefix, width, text = self._prefixes[run], self._widths[run], self._text
        if width == 0:
            return [prefix] * size
        if width != _VARIED:
            at = self._starts[run]
            if not prefix:
                return [text[k:k + width] for k in range(at, at + size * width, width)]
            return [prefix + text[k:k + width] for k in range(at, at + size * width, width)]
        ends = self._ends
        assert ends is not None
        bounds = zip(chain((ends[lo - 1] if lo else 0,), ends[lo:lo + size - 1]),
                     ends[lo:lo + size], strict=True)
        return [prefix + text[a:b] for a, b in bounds]


def _width(lengths: list[int]) -> int:
    """The width of a run whose rests are all `lengths[0]` long, else _VARIED (one
    count in C: an int compared with itself is not called)."""
    first = lengths[0]
    return first if first < _VARIED and lengths.count(first) == len(lengths) else _VARIED


def _prefixes(least: list[str], shared: list[int]) -> tuple[str, ...]:
    """The prefix of each run (the first `shared[r]` characters of `least[r]`), one str
    for neighbouring runs that have the same."""
    out: list[str] = []
    prefix = ""
    for first, cut in zip(least, shared, strict=True):
        if cut != len(prefix) or not first.startswith(prefix):
            prefix = first[:cut]
        out.append(prefix)
    return tuple(out)


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
    """A column of strings whose sealed blocks are joined texts, the prefix a run of
    them shares kept once (a receipt id while following: ~63 bytes as a str, ~4.3
    sealed); otherwise a column as any other."""

    __slots__ = ()

    def _sealed(self, items: list[str]) -> Sequence[str]:
        return JoinedText(items)

    def positions_of(self, value: str) -> list[int]:
        """The positions of the strings equal to `value`, rising (each sealed block, a
        JoinedText by `_sealed`, searched in its joined text)."""
        blocks, opened = self._blocks[:], self._open[:]
        found: list[int] = []
        for b, block in enumerate(blocks):
            at = b * BLOCK
            found += [at + j for j in block.positions_of(value)]  # type: ignore[attr-defined]
        at = len(blocks) * BLOCK
        return found + [at + j for j, item in enumerate(opened) if item == value]


class RepeatingTextColumn(TextColumn):
    """A text column whose strings mostly repeat the one before (an attempt id's rest
    after its call id: `-a1` call after call): a string appended equal to the last one
    not yet sealed is kept as that very str, ~52 bytes fewer each until its block is
    sealed (a sealed block keeps a run of them in a few bytes)."""

    __slots__ = ()

    def append(self, item: str) -> None:
        opened = self._open
        if opened and opened[-1] == item:
            item = opened[-1]
        Blocks.append(self, item)


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
