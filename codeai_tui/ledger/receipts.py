"""Read the provider's receipt log (written by the provider, never by CodeAI).

A crash can cut the last line short: that is tolerated and reported as a note, not an
error. Any other malformed line is reported with its line number. The log comes with an
untrusted case directory: a receipt with missing or mistyped fields still says the
provider received *something*, so it is kept (and stays uncovered, under a placeholder
id or hash that matches nothing) and reported; a log that is a symlink, a FIFO or a
device is refused without blocking (line 0 problem).
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import overload

import orjson

from codeai_tui.ledger.blocks import Blocks, IntBlocks, ValueSequence
from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.ledger.errors import LedgerError
from codeai_tui.ledger.safefile import FileId, open_regular_since
from codeai_tui.ledger.text_column import DigestColumn, TextColumn

# bytes read from one log; beyond that: one problem. Read a batch at a time into columns
# (~half its size held): a 10M-event ledger's log is ~300 MB
RECEIPTS_LIMIT = 1024 * 1024 * 1024
PARSE_BATCH = 1 << 20  # bytes of whole lines split and parsed at a time (`_parse_into`)
LONGEST_LINE = 16 * PARSE_BATCH  # a longer line is reported and skipped, never held



# (receipt_id, received_at, idempotency_key, body_sha256, bytes, line_no)
ReceiptRow = tuple[str, str, str, str, int, int]


@dataclass(frozen=True, slots=True)
class Receipt:
    receipt_id: str
    received_at: str
    idempotency_key: str
    body_sha256: str
    bytes: int
    line_no: int


# received_at kept as an int where the text is a plain UTC RFC 3339 time (the providers'
# own form): microseconds since 0001-01-01 shifted left by 4, the low 4 bits naming the
# fraction's digit count (0-6) plus 7 for "+00:00" instead of "Z", so the text comes
# back exactly. Anything else is kept as text.
_UTC_TIME = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]{1,6}))?"
    r"(Z|\+00:00)").fullmatch
_ODD_TIME = -1
_US_PER_DAY = 86_400_000_000
_DAY_ONE = date(1, 1, 1).toordinal()


@lru_cache(maxsize=256)
def _day_number(text: str) -> int:
    """Days from 0001-01-01 to the date `text` (YYYY-MM-DD), or -1 if it names none."""
    try:
        return date.fromisoformat(text).toordinal() - _DAY_ONE
    except ValueError:
        return -1


@lru_cache(maxsize=256)
def _day_text(days: int) -> str:
    day = date.fromordinal(days + _DAY_ONE)
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}T"


def _time_code(text: str) -> int:
    """`text` as a received_at code, or _ODD_TIME where only the text can say it."""
    m = _UTC_TIME(text)
    if m is None:
        return _ODD_TIME
    days = _day_number(m[1])
    hour, minute, second = int(m[2]), int(m[3]), int(m[4])
    if days < 0 or hour > 23 or minute > 59 or second > 59:
        return _ODD_TIME
    frac = m[5] or ""
    micros = (days * _US_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1_000_000
              + (int(frac.ljust(6, "0")) if frac else 0))
    return (micros << 4) | (len(frac) + (7 if m[6] == "+00:00" else 0))


def _time_text(code: int) -> str:
    micros, form = code >> 4, code & 15
    digits, suffix = (form - 7, "+00:00") if form >= 7 else (form, "Z")
    days, rest = divmod(micros, _US_PER_DAY)
    seconds, fraction = divmod(rest, 1_000_000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    frac = f".{fraction:06d}"[:digits + 1] if digits else ""
    return f"{_day_text(days)}{hour:02d}:{minute:02d}:{second:02d}{frac}{suffix}"


class Receipts(ValueSequence[Receipt]):
    """A log's receipts kept in columns, each `Receipt` made when asked for. An object
    per receipt, with an int for its line number and its received_at as text, cost
    ~100 bytes more per receipt than these columns (with the key table's dict, see
    workstate's ByKey: 21 MB at 143,904 receipts, for as long as a console is open).
    The columns grow in blocks that copies share (`copy`: a log read on as the provider
    appends). Equal to any sequence of the same receipts."""

    __slots__ = ("_fell", "_lines", "_odd", "_rising", "_sizes", "_times", "ids", "keys",
                 "origin", "shas")

    def __init__(self, receipts: Iterable[Receipt] = ()) -> None:
        # texts joined, body hashes as 32 bytes each: a str per key and per hash cost
        # ~180 bytes a receipt more (a live console reads one receipt per attempt)
        self.ids = TextColumn()  # a str each cost 44 bytes more (6 MB at 143,904 receipts)
        self.keys: Blocks[str] = TextColumn()
        self.shas: Blocks[str] = DigestColumn()
        # each sealed block as offsets from its least (`IntBlocks`): a block of times
        # minutes apart in 4 bytes each, of line numbers in 2, of equal sizes in 1, where
        # 8, 4 and 4 took 16 bytes a receipt (23 MB at 1.44M receipts)
        self._times: Blocks[int] = IntBlocks()
        self._odd: dict[int, str] = {}  # received_at kept as text, by position
        self._sizes: Blocks[int] = IntBlocks()
        self._lines: Blocks[int] = IntBlocks()
        # `take`'s: the receipts these were taken from, and the positions taken (rising),
        # so a check of that whole log can answer for these
        self.origin: tuple[Receipts, Sequence[int]] | None = None
        # how many receipts from the first were found in time order, and whether one
        # came earlier than the one before it (a cut is then a pass, not a bisection)
        self._rising = 0
        self._fell = False
        self.extend((r.receipt_id, r.received_at, r.idempotency_key, r.body_sha256, r.bytes,
                     r.line_no) for r in receipts)

    def extend(self, rows: Iterable[ReceiptRow]) -> None:
        """Append receipts given as (id, received_at, key, body hash, bytes, line), each
        column in one go (an append per column and receipt cost ~0.4 s at 143,904)."""
        ids: list[str] = []
        keys: list[str] = []
        shas: list[str] = []
        times: list[int] = []
        sizes: list[int] = []
        lines: list[int] = []
        base = len(self)
        for rid, received_at, key, sha, size, line_no in rows:
            code = _time_code(received_at)
            if code == _ODD_TIME:
                self._odd[base + len(ids)] = received_at
            ids.append(rid)
            keys.append(key)
            shas.append(sha)
            times.append(code)
            sizes.append(size)
            lines.append(line_no)
        self.ids.extend(ids)
        self.keys.extend(keys)
        self.shas.extend(shas)
        self._times.extend(times)
        self._sizes.extend(sizes)
        self._lines.extend(lines)

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, i: int) -> Receipt: ...

    @overload
    def __getitem__(self, i: slice) -> Receipts: ...

    def __getitem__(self, i: int | slice) -> Receipt | Receipts:
        if isinstance(i, slice):
            return self.take(range(len(self))[i])
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("receipt index out of range")
        return Receipt(self.ids[i], self.received_at(i), self.keys[i], self.shas[i],
                       self._sizes[i], self._lines[i])

    def __iter__(self) -> Iterator[Receipt]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"Receipts({len(self)} receipts)"

    def position_of(self, receipt: Receipt) -> int | None:
        """Where `receipt` is among these (None if it is not): found by its line number,
        by bisection where the lines ascend (a log read from disk, and any cut of it)."""
        lines, line = self._lines, receipt.line_no
        at = bisect_left(lines, line)
        while at < len(lines) and lines[at] == line:
            if self[at] == receipt:
                return at
            at += 1
        # lines out of order (receipts put together by hand): look at each
        return next((i for i, n in enumerate(lines) if n == line and self[i] == receipt), None)

    def received_at(self, i: int) -> str:
        code = self._times[i]
        return self._odd[i] if code == _ODD_TIME else _time_text(code)

    def received_micros(self, i: int) -> int | None:
        """Receipt i's time as microseconds since 0001-01-01 UTC, or None where its text
        is not a plain UTC time (the caller reads `received_at(i)` then)."""
        code = self._times[i]
        return None if code == _ODD_TIME else code >> 4

    def micros_from(self, start: int) -> Iterator[tuple[int, int | None]]:
        """(position, `received_micros`) of each receipt from `start` on, in one pass."""
        for i, code in enumerate(self._times.iter_from(start), start):
            yield i, None if code == _ODD_TIME else code >> 4

    def _in_time_order(self) -> bool:
        """True when no receipt's time is earlier than the one before it: checked once
        per receipt as the log grows (time travel cuts the log at every step: a pass
        over 1.44M receipts cost ~0.3 s of each)."""
        if self._fell:
            return False
        n, at, times = len(self), self._rising, self._times
        if at < n:
            last = times[at - 1] if at else None
            for code in times.iter_from(at):
                if last is not None and code < last:
                    self._fell = True
                    break
                last = code
                at += 1
            self._rising = at
        return not self._fell

    def positions_before(self, limit_micros: int, odd_before: Callable[[str], bool]
                         ) -> Sequence[int]:
        """The positions of the receipts received before `limit_micros` (rising); a
        receipt whose time is kept as text is asked about through `odd_before`."""
        bound = limit_micros << 4  # code >> 4 < limit exactly when code < limit << 4
        odd = self._odd
        if not odd and self._in_time_order():  # (a provider logs as it receives)
            return range(bisect_left(self._times, bound))
        if not odd:
            return [i for i, code in enumerate(self._times) if code < bound]
        return [i for i, code in enumerate(self._times)
                if (odd_before(odd[i]) if code == _ODD_TIME else code < bound)]

    def take(self, positions: Iterable[int]) -> Receipts:
        """These receipts (by position, in the order given), sharing their strings. A
        cut-off mostly keeps a prefix of the log: that is sliced, not copied one by one."""
        if type(positions) is range and positions.start == 0 and positions.step == 1:
            out = self._head(len(positions))  # (a cut in time order: no list of positions)
            out.origin = (self, positions)
            return out
        picked = list(positions)
        k = len(picked)
        if k and not (picked[0] == 0 and picked[-1] == k - 1 and picked == list(range(k))):
            out = self._gather(picked)
            out.origin = (self, picked)
        else:
            out = self._head(k)
            out.origin = (self, range(k))
        return out

    def copy(self) -> Receipts:
        """The same receipts in columns of their own, to append to while this stays as
        it is (a snapshot may be showing it); the strings and full id blocks are shared."""
        return self._head(len(self))

    def _head(self, k: int) -> Receipts:
        out = Receipts()
        out.ids, out.keys, out.shas = self.ids[:k], self.keys[:k], self.shas[:k]
        out._times, out._sizes, out._lines = self._times[:k], self._sizes[:k], self._lines[:k]
        out._odd = {i: text for i, text in self._odd.items() if i < k}
        return out

    def _gather(self, picked: list[int]) -> Receipts:
        out = Receipts()
        out.ids = TextColumn(self.ids[i] for i in picked)
        out.keys = TextColumn(self.keys[i] for i in picked)
        out.shas = DigestColumn(self.shas[i] for i in picked)
        out._times = IntBlocks(self._times[i] for i in picked)
        out._sizes = IntBlocks(self._sizes[i] for i in picked)
        out._lines = IntBlocks(self._lines[i] for i in picked)
        out._odd = {n: self._odd[i] for n, i in enumerate(picked) if i in self._odd}
        return out


def micros_of(when: datetime) -> int:
    """An aware datetime as microseconds since 0001-01-01 UTC (see `received_micros`);
    below zero where the offset reaches before it."""
    offset = when.utcoffset() or timedelta(0)
    days = when.toordinal() - _DAY_ONE
    local = (days * _US_PER_DAY + ((when.hour * 60 + when.minute) * 60 + when.second)
             * 1_000_000 + when.microsecond)
    return local - offset // timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class ReceiptLog:
    exists: bool
    receipts: Sequence[Receipt] = ()
    problems: tuple[tuple[int, str], ...] = ()
    truncated_tail: bool = False
    path: Path | None = field(default=None, compare=False)
    # where a read from disk ended, so the next reads only what was appended
    tail: LogTail | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class LogTail:
    """Where reading a receipt log ended: the file, the bytes taken and the line number
    at that point. `lineage`: one token for a log read whole and every log read on from
    it, so a check of an earlier one can be carried forward (workstate.receipts)."""

    file: FileId
    offset: int
    line: int
    lineage: object


def _loads(raw: bytes) -> object:
    """One line: orjson (3x faster over 10^5 lines), the standard library for what orjson
    rejects (NaN, lone surrogates) or reads otherwise (an integer beyond 64 bits becomes
    a float), so a line means what it meant."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw.decode("utf-8"))
    if type(obj) is dict and type(obj.get("bytes")) is float:
        return json.loads(raw.decode("utf-8"))
    return obj


def parse_receipt_lines(data: bytes, path: Path | None = None) -> ReceiptLog:
    receipts = Receipts()
    problems: list[tuple[int, str]] = []
    _used, _line, truncated = _parse_into(data, receipts, problems, 1)
    return ReceiptLog(True, receipts, tuple(problems), truncated, path)


def _parse_into(data: bytes, receipts: Receipts, problems: list[tuple[int, str]],
                first_line: int) -> tuple[int, int, bool]:
    """Append the receipts of `data`, whose first line is line `first_line`. Returns the
    bytes taken (all but a cut-short last line), the line number where they end, and
    whether the last line was cut short (a line without its newline that does not
    parse: the writer is still writing it, or crashed).

    Parsed PARSE_BATCH bytes (whole lines) at a time, each batch's rows appended before
    the next is split: split whole, the lines and their rows of a 143,904-receipt log
    (33 MB) were ~100 MB more at once, the console's peak on the 1M-event ledger, and
    left behind in pieces the next projection had to grow around."""
    truncated = False
    size = used = len(data)
    line_no = first_line
    pos = 0
    while pos < size:
        cut = data.find(b"\n", min(pos + PARSE_BATCH, size - 1))
        end = size if cut < 0 else cut + 1
        rows: list[ReceiptRow] = []
        lines = data[pos:end].split(b"\n")
        if cut >= 0:
            lines.pop()  # (the empty piece after the batch's last newline)
        open_last = len(lines) - 1 if cut < 0 else -1  # the log's last line, no newline
        for i, raw in enumerate(lines):
            idx = line_no + i
            if not raw.strip():
                continue
            try:
                obj = _loads(raw)
            except (UnicodeDecodeError, ValueError):
                if i == open_last:
                    truncated, used = True, size - len(raw)
                    continue
                problems.append((idx, "not a JSON line"))
                continue
            if not isinstance(obj, dict):
                problems.append((idx, "receipt is not a JSON object"))
                continue
            missing = _receipt(obj, idx, rows)
            if missing:
                problems.append((idx, "receipt lacks or mistypes " + ", ".join(missing)))
        receipts.extend(rows)
        line_no += len(lines)
        pos = end
    return used, first_line + data.count(b"\n"), truncated


def _receipt(obj: dict[str, object], line_no: int, rows: list[ReceiptRow]) -> list[str]:
    """Append one receipt's row from one JSON object; the names of the fields it lacks
    or mistypes.
    Placeholders name the line, so two broken receipts never look like one duplicate."""
    missing: list[str] = []

    def text(name: str, placeholder: str) -> str:
        value = obj.get(name)
        if isinstance(value, str):
            return value
        missing.append(name)
        return placeholder

    rid = text("receipt_id", f"(line {line_no})")
    received_at = text("received_at", "")
    key = text("idempotency_key", "")
    sha = text("body_sha256", f"(no body_sha256, line {line_no})")
    size = obj.get("bytes")
    if not (isinstance(size, int) and not isinstance(size, bool) and size >= 0):
        missing.append("bytes")
        size = -1
    rows.append((rid, received_at, key, sha, size, line_no))
    return missing


def read_receipts(case_dir: str | os.PathLike[str]) -> ReceiptLog:
    """The case's receipt log; never raises, never blocks. A log that cannot be read is
    `exists=True` with one line-0 problem, so it is never mistaken for "no receipts"."""
    return read_more_receipts(case_dir, None)


def read_receipts_later(case_dir: str | os.PathLike[str]) -> Callable[[], ReceiptLog]:
    """The case's receipt log as `read_receipts` gives it, its bytes read now and parsed
    when the result is called. A reader that pins a ledger only after reading the log
    (so every receipt's attempt.started is in its prefix) parses meanwhile."""
    return _fetch_receipts(case_dir, None)


def read_more_receipts(case_dir: str | os.PathLike[str], log: ReceiptLog | None
                       ) -> ReceiptLog:
    """The case's receipt log again, after `log` was read: when the file is the same one
    and has not shrunk, only what was appended since is read and parsed, into a copy
    of `log`'s receipts (the provider appends a receipt per request: re-reading 143,904
    lines took ~1 s on every poll of a live console). Else, or without `log`, all of
    it. Equal to reading it all, but for a last line taken before its newline was
    written (`_parse_into`): what follows it then starts a line of its own."""
    return _fetch_receipts(case_dir, log)()


def _fetch_receipts(case_dir: str | os.PathLike[str], log: ReceiptLog | None
                    ) -> Callable[[], ReceiptLog]:
    """Pin what `read_more_receipts` reads now (the file, open, and its size); read and
    parse it when called. The provider only appends, so the bytes up to that size are
    the same then, and they are read a batch at a time: holding them all from the pin
    on cost their size (~200 bytes a receipt) beside the columns parsed from them."""
    path = Path(case_dir) / RECEIPTS_RELPATH
    # only a log read from disk has a tail, and only its columns can be appended to
    tail = log.tail if log is not None and isinstance(log.receipts, Receipts) else None
    try:
        got = open_regular_since(Path(case_dir), RECEIPTS_RELPATH, limit=RECEIPTS_LIMIT,
                                 since=(tail.file, tail.offset) if tail is not None else None)
    except LedgerError as exc:
        unreadable = ReceiptLog(True, problems=((0, f"unreadable: {exc}"),), path=path)
        return lambda: unreadable
    if got is None:
        absent = ReceiptLog(False, path=path)
        return lambda: absent
    fd, file, start, size = got
    pinned = _Pinned(fd)
    held: list[ReceiptLog] = []

    def parse() -> ReceiptLog:
        if not held:
            try:
                held.append(_parse(pinned, file, start, size, log, tail, path))
            except OSError as exc:
                held.append(ReceiptLog(True, problems=(
                    (0, f"unreadable: {path}: cannot read ({exc.strerror})"),), path=path))
            finally:
                pinned.close()
        return held[0]
    return parse


class _Pinned:
    """An open log file, closed once read or when no longer referenced."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd

    def read(self, size: int, offset: int) -> bytes:
        assert self.fd is not None
        return os.pread(self.fd, size, offset)

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


def _parse(file_: _Pinned, file: FileId, start: int, size: int, log: ReceiptLog | None,
           tail: LogTail | None, path: Path) -> ReceiptLog:
    """The log from the bytes [start, size) of the pinned file (all of it, or past
    `tail`)."""
    if start > 0:  # read on from `tail` (start is 0 whenever all of it was read)
        assert log is not None and tail is not None and isinstance(log.receipts, Receipts)
        if size <= start:
            return log
        receipts, problems, first, lineage = (log.receipts.copy(), list(log.problems),
                                              tail.line, tail.lineage)
    else:
        receipts, problems, first, lineage = Receipts(), [], 1, object()
    used, line, truncated = _parse_pieces(file_.read, start, size, receipts, problems, first)
    return ReceiptLog(True, receipts, tuple(problems), truncated, path,
                      LogTail(file, start + used, line, lineage))


def _parse_pieces(read: Callable[[int, int], bytes], start: int, size: int,
                  receipts: Receipts, problems: list[tuple[int, str]], first_line: int
                  ) -> tuple[int, int, bool]:
    """`_parse_into` of the bytes [start, size) that `read(count, offset)` gives, read
    and parsed PARSE_BATCH bytes (whole lines) at a time: the same receipts, problems,
    bytes taken and lines (a file cut short meanwhile: what it still holds)."""
    pos, line, used = start, first_line, 0
    carry = b""
    skipping = False  # in a line longer than LONGEST_LINE, not kept
    while pos < size:
        piece = read(min(PARSE_BATCH, size - pos), pos)
        if not piece:
            break
        pos += len(piece)
        if skipping:
            nl = piece.find(b"\n")
            if nl < 0 and pos < size:
                used += len(piece)
                continue
            skipped = len(piece) if nl < 0 else nl + 1
            used += skipped
            problems.append((line, f"a line longer than {LONGEST_LINE} bytes: not read"))
            line += 1 if nl >= 0 else 0
            skipping, piece = False, piece[skipped:]
            if not piece:
                continue
        data = carry + piece if carry else piece
        cut = data.rfind(b"\n") if pos < size else -1
        if pos < size and cut < 0:
            if len(data) > LONGEST_LINE:  # (no receipt is: a log of one endless line
                skipping, carry = True, b""  # was copied again at each batch)
                used += len(data)
                continue
            carry = data  # (a line longer than a batch: read on)
            continue
        whole, carry = (data[:cut + 1], data[cut + 1:]) if pos < size else (data, b"")
        taken, line, truncated = _parse_into(whole, receipts, problems, line)
        used += taken
        if pos >= size:
            return used, line, truncated
    if carry:  # (cut short while read: its last line, as the file now ends)
        taken, line, truncated = _parse_into(carry, receipts, problems, line)
        return used + taken, line, truncated
    return used, line, False
