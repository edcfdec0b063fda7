"""The receipt cross-check (docs/ledger.md section 5) and the receipts as of a point in time.

Receipts as of seq N are those the provider received before the next event (seq > N)
was recorded; as of the last seq that is all of them (section 7). The cut-off belongs
to the projection, so `inspect --as-of` and the console's time travel agree.
"""

from __future__ import annotations

import copy
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import replace
from datetime import UTC, datetime
from pickle import PickleBuffer
from typing import SupportsIndex, overload

from codeai_tui.ledger.blocks import BLOCK, Blocks, ValueSequence
from codeai_tui.ledger.receipts import Receipt, ReceiptLog, Receipts, micros_of
from codeai_tui.ledger.text_column import OptionalTextColumn, TextColumn
from codeai_tui.workstate.columns import Cover, SettledCalls, SettledCoverage
from codeai_tui.workstate.evidence import AttemptEvidence, CallEvidence, ReceiptIndex
from codeai_tui.workstate.verdicts import Covers, ReceiptCheck


def parse_time(text: str) -> datetime | None:
    """An RFC 3339 time from a ledger or receipt (naive means UTC); None if unreadable."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, TypeError, AttributeError):
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def receipts_before(log: ReceiptLog, next_recorded_at: str | None) -> ReceiptLog:
    """The receipts received before `next_recorded_at` (the recorded_at of the first event
    after the cut-off); None means no later event: all receipts. A receipt whose time
    cannot be read is kept (hiding it could hide an uncovered effect)."""
    if next_recorded_at is None:
        return log
    limit = parse_time(next_recorded_at)
    if limit is None:
        return log
    rs = columns(log.receipts)

    def odd_before(text: str) -> bool:
        when = parse_time(text)
        return when is None or when < limit  # type: ignore[operator]

    kept = rs.positions_before(micros_of(limit), odd_before)
    # a cut is no log read from disk: nothing can be read on from it (`tail`)
    return log if len(kept) == len(rs) else replace(log, receipts=rs.take(kept), tail=None)


def columns(receipts: Sequence[Receipt]) -> Receipts:
    """`receipts` as columns (a log read from disk has them already)."""
    return receipts if isinstance(receipts, Receipts) else Receipts(receipts)


Pair = tuple[str, str]  # (idempotency key, request hash)
_POSITION = "i"  # a receipt's place in the log: 4 bytes


class _Appended:
    """The receipts appended to a log after its `ByKey` table was indexed (positions from
    `base` on), by key: an open-addressing table from each key to its first such receipt
    and, per receipt, the next with its key. Grown in place as the log is read on, by
    the table grown last; every table sharing it reads only the positions below its
    own log's length (receipts are appended in log order, so a chain is cut there). A
    dict of one list per key, copied on every read of the log, kept ~285 bytes a
    receipt appended (the key's str, the list, the int, the copies); these ~9.

    A receipt joins its key's chain at the end, found by walking it: most keys have
    one receipt (a provider logs one per attempt), and a table of each key's last
    receipt beside the heads cost 6-12 bytes a key. A chain walked `_WALK` steps is
    long (a key repeated by a retrying client, or a hostile log): its last receipt is
    kept by its first (`long`), so appending stays one step."""

    __slots__ = ("base", "end", "heads", "keys", "long", "next", "used")

    _WALK = 8

    def __init__(self, base: int) -> None:
        self.base = self.end = base
        self.heads = array("i", [-1]) * 64  # slot -> a key's first appended receipt
        self.next = array("i")  # receipt - base -> the next appended with its key
        self.long: dict[int, int] = {}  # a long chain's first receipt -> its last so far
        self.keys: Sequence[str] = ()  # the newest log's key column (reads every position)
        self.used = 0

    def _slot(self, key: str, heads: array[int], keys: Sequence[str]) -> int:
        size = len(heads)
        at = hash(key) % size
        while (first := heads[at]) >= 0 and keys[first] != key:
            at = at + 1 if at + 1 < size else 0
        return at

    def extend(self, receipts: Receipts) -> None:
        """Take in the receipts past `end` (the log read on)."""
        keys = self.keys = receipts.keys
        nxt, base, long, walk = self.next, self.base, self.long, self._WALK
        for i in range(self.end, len(receipts)):
            if 3 * (self.used + 1) > 2 * len(self.heads):  # (two thirds full at most)
                self._grow(keys)
            heads = self.heads
            at = self._slot(keys[i], heads, keys)
            first = heads[at]
            nxt.append(-1)
            if first < 0:
                heads[at] = i
                self.used += 1
                continue
            last = long.get(first)
            if last is None:
                last, steps = first, 0
                while (after := nxt[last - base]) >= 0:
                    last, steps = after, steps + 1
                if steps >= walk:
                    long[first] = i
            else:
                long[first] = i
            nxt[last - base] = i
        self.end = len(receipts)

    def _grow(self, keys: Sequence[str]) -> None:
        """A quarter more slots, placed anew (a new array: a reader holding the old one
        finds in it what it held). Doubling left the slots filled a third to two thirds
        and made each step as large as the table, with the old one beside it."""
        heads = array("i", [-1]) * (len(self.heads) + len(self.heads) // 4)
        for first in self.heads:
            if first >= 0:
                heads[self._slot(keys[first], heads, keys)] = first
        self.heads = heads

    def positions(self, key: str, limit: int) -> list[int]:
        """The appended receipts with this key below `limit`, in log order."""
        heads = self.heads
        first = heads[self._slot(key, heads, self.keys)]
        found, nxt, base = [], self.next, self.base
        while 0 <= first < limit:
            found.append(first)
            first = nxt[first - base]
        return found

    def firsts(self, limit: int) -> Iterator[int]:
        """Each key's first appended receipt below `limit`."""
        return (i for i in self.heads if 0 <= i < limit)


class ByKey:
    """A log's receipts by idempotency key: an open-addressing table from each key to
    its first receipt (the key read from the log's own column) and, per receipt, the
    next with its key, so a key's receipts are a chain in log order. The keys stay in
    the log's compact column: a sorted list of key strings beside the log cost ~70
    bytes a receipt once the log no longer held str objects; these two arrays cost ~10.
    Receipts appended later (`grown`) are kept by key beside them (`_Appended`): the
    indexed arrays are never changed once made, the appended ones only grow (each table
    reads below its own log's length)."""

    __slots__ = ("_appended", "_groups", "_heads", "_last", "_next", "receipts")

    # a key with more receipts than this has its receipts grouped by body hash when
    # first asked about (kept while the table lives): a pass over all of them for each
    # question made a key with 10^5 receipts and as many attempts cost 10^10 steps
    GROUPED_FROM = 32

    def __init__(self, receipts: Sequence[Receipt]) -> None:
        self.receipts = rs = columns(receipts)
        n = len(rs)
        # filled up to two thirds, found by remainder: a power of two at least twice the
        # receipts was filled a quarter to a half (4M slots, 16.8 MB, for 1.44M receipts)
        size = max(8, n + n // 2 + 1)
        # (positions as 4-byte ints: a log is read up to 256 MB, far fewer receipts)
        self._heads = heads = array("i", [-1]) * size  # slot -> a key's first receipt
        self._next = nxt = array("i", [-1]) * n  # receipt -> the next with its key
        # While building, a slot holds its key's last receipt so far and each chain is a
        # ring (the last receipt's next is the first), so a receipt joins its chain at
        # the end in one step; the rings are then cut and each slot given its first. A
        # table of the last receipts beside the heads cost 6 bytes a receipt more while
        # the table was built (0.9 MB at the 143,904 receipts of the bench's log).
        keys = rs.keys
        for i, key in enumerate(keys):
            at = hash(key) % size
            while (last := heads[at]) >= 0 and keys[last] != key:
                at = at + 1 if at + 1 < size else 0
            if last < 0:
                nxt[i] = i
            else:
                nxt[i] = nxt[last]
                nxt[last] = i
            heads[at] = i
        for at, last in enumerate(heads):
            if last >= 0:
                heads[at] = nxt[last]
                nxt[last] = -1
        self._appended: _Appended | None = None  # receipts appended since, by key
        self._groups: dict[str, dict[str, list[int]]] = {}  # key -> body hash -> positions
        self._last: tuple[str, str, list[int]] | None = None  # the last `matching`

    def grown(self, receipts: Receipts) -> ByKey:
        """The table of `receipts`, whose first receipts are this table's, in proportion
        to what was appended: the indexed arrays are shared, and the appended receipts
        join `_Appended`. They are not indexed again as they grow: building a table of
        the whole log beside the one a snapshot still held (and the check's own) put
        ~10 bytes a receipt of the log on top of the console's memory for a moment (3.3
        MB at 205,000 receipts while following, with the table of last receipts the
        build then made too: the most a ten-minute run held)."""
        before, indexed = len(self.receipts), len(self._next)
        appended = self._appended
        if appended is not None and appended.end != before:
            return ByKey(receipts)  # (another table grew from this one's appended)
        if appended is None:
            appended = _Appended(indexed)
        appended.extend(receipts)
        out = ByKey(())  # (its own `_groups`, `_last`: the appended receipts are not in these)
        out.receipts, out._heads, out._next = receipts, self._heads, self._next
        out._appended = appended
        return out

    def _first(self, key: str) -> int:
        """The first receipt with this key in the indexed ones, or -1."""
        heads, keys = self._heads, self.receipts.keys
        size = len(heads)
        at = hash(key) % size
        while (first := heads[at]) >= 0:
            if keys[first] == key:
                return first
            at = at + 1 if at + 1 < size else 0
        return -1

    def _chain(self, i: int) -> list[int]:
        nxt, found = self._next, []
        while i >= 0:
            found.append(i)
            i = nxt[i]
        return found

    def positions(self, key: str) -> list[int]:
        """The positions of the receipts with this key, in log order."""
        found = self._chain(self._first(key))
        if self._appended is not None:
            found += self._appended.positions(key, len(self.receipts))
        return found

    def repeated_keys(self) -> list[str]:
        """The keys two or more receipts carry, sorted."""
        keys, nxt = self.receipts.keys, self._next
        repeated = {keys[i] for i in self._heads if i >= 0 and nxt[i] >= 0}
        appended = self._appended
        if appended is not None:
            limit = len(self.receipts)
            for first in appended.firsts(limit):
                key = keys[first]
                if (len(appended.positions(key, limit)) > 1 or self._first(key) >= 0):
                    repeated.add(key)
        return sorted(repeated)

    def matching(self, key: str, sha: str) -> list[int]:
        """The positions of the receipts with this key and body hash, in log order."""
        last = self._last
        if last is not None and last[0] == key and last[1] == sha:
            return list(last[2])  # (a call's coverage, then its document, ask in turn)
        found = self._matching(key, sha)
        self._last = (key, sha, found)
        return list(found)

    def _matching(self, key: str, sha: str) -> list[int]:
        grouped = self._groups.get(key)
        if grouped is None:
            positions = self.positions(key)
            if len(positions) <= self.GROUPED_FROM:
                shas = self.receipts.shas
                return [i for i in positions if shas[i] == sha]
            grouped = self._grouped(key, positions)
        return list(grouped.get(sha, ()))

    def by_hash(self, key: str) -> dict[str, list[int]] | None:
        """The positions of this key's receipts by body hash (log order), made on the
        first question and kept; None for a key with few receipts (a scan is quicker)."""
        grouped = self._groups.get(key)
        if grouped is not None:
            return grouped
        positions = self.positions(key)
        if len(positions) <= self.GROUPED_FROM:
            return None
        return self._grouped(key, positions)

    def _grouped(self, key: str, positions: list[int]) -> dict[str, list[int]]:
        shas = self.receipts.shas
        grouped: dict[str, list[int]] = {}
        for i in positions:
            grouped.setdefault(shas[i], []).append(i)
        self._groups[key] = grouped
        return grouped


_BY_KEY: list[tuple[ReceiptLog, ByKey]] = []


def by_key_of(log: ReceiptLog) -> ByKey:
    """The ByKey table of the last log asked about: the gatherer shares its strings
    (`share_receipt_strings`) and the live check reads it, one table."""
    if _BY_KEY and _BY_KEY[0][0] is log:
        return _BY_KEY[0][1]
    table = ByKey(log.receipts)
    _BY_KEY[:] = [(log, table)]
    return table


def share_receipt_strings(call: CallEvidence, by_key: ByKey) -> None:
    """Let a folded call hold the receipt log's own key and hash objects where its text is
    equal (one copy of each instead of a second parsed from the ledger: ~25 MB at 10^5
    calls). Only equal text is ever swapped, so no verdict or document changes."""
    key = call.key
    if key is None:
        return
    rs = by_key.receipts
    # body hash -> a position holding it (looked up per hash the call holds: a key many
    # calls share can have as many hashes)
    grouped: Mapping[str, list[int]] | None = by_key.by_hash(key)
    if grouped is None:
        grouped = {}
        for i in by_key.positions(key):
            grouped.setdefault(rs.shas[i], [i])
    if not grouped:
        return
    shared = rs.keys[next(iter(grouped.values()))[0]]
    if call.idempotency_key == shared:
        call.idempotency_key = shared
    if call.manifest_key == shared:
        call.manifest_key = shared

    def share(sha: str) -> str:
        at = grouped.get(sha)  # type: ignore[union-attr]  # (not None here)
        return rs.shas[at[0]] if at else sha

    if call.request_sha256 is not None:
        call.request_sha256 = share(call.request_sha256)
    for att in call.attempts:
        if att.request_sha256 is not None:
            att.request_sha256 = share(att.request_sha256)


class ReceiptsByPair(Mapping[Pair, tuple[tuple[str, str], ...]]):
    """(key, body hash) -> ((receipt id, received_at), ...) in log order, read from a
    ByKey table when asked instead of held per pair."""

    __slots__ = ("_by_key", "_last")

    def __init__(self, by_key: ByKey) -> None:
        self._by_key = by_key
        # the last answer: a call's document and its reason ask about one attempt in turn
        self._last: tuple[Pair, tuple[tuple[str, str], ...]] | None = None

    def get(self, pair: Pair, default: object = None) -> object:  # type: ignore[override]
        last = self._last
        if last is not None and last[0] == pair:
            found = last[1]
        else:
            rs = self._by_key.receipts
            found = tuple((rs.ids[i], rs.received_at(i)) for i in self._by_key.matching(*pair))
            self._last = (pair, found)
        return found if found else default

    def ids(self, pair: Pair) -> tuple[str, ...]:
        """The ids alone of what `get` gives (ReceiptIndex.ids)."""
        ids = self._by_key.receipts.ids
        return tuple(ids[i] for i in self._by_key.matching(*pair))

    def __getitem__(self, pair: Pair) -> tuple[tuple[str, str], ...]:
        found = self.get(pair)
        if found is None:
            raise KeyError(pair)
        return found  # type: ignore[return-value]

    def __iter__(self) -> Iterator[Pair]:
        rs = self._by_key.receipts
        for key in dict.fromkeys(rs.keys):
            yield from dict.fromkeys((key, rs.shas[i]) for i in self._by_key.positions(key))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def index_receipts(receipts: Sequence[Receipt], problems: Sequence[tuple[int, str]] = (),
                   log_present: bool = False, by_key: ByKey | None = None,
                   after: tuple[str | None, int] | None = None) -> ReceiptIndex:
    """The receipts (already cut to the as-of point) by (key, body hash), so every
    attempt can name the receipts that match it. A log that exists but whose reading
    failed as a whole (a line-0 problem) is "unreadable": no receipt proves nothing.
    `by_key`: the receipts' ByKey table when the caller has built it. `after`: the latest
    received_at among the first n receipts and n, when known (the index of the log they
    extend was built): only the receipts after them are looked at for the latest."""
    if not log_present:
        status = "absent"
    elif any(line == 0 for line, _ in problems):
        status = "unreadable"
    else:
        status = "present"

    def build() -> tuple[Mapping[Pair, tuple[tuple[str, str], ...]], str | None]:
        table = by_key if by_key is not None else ByKey(receipts)
        rs = table.receipts
        latest: tuple[int, int] | None = None  # (micros, position)
        upto, start = None, 0
        if after is not None:
            upto, start = after
            when = parse_time(upto) if upto is not None else None
            latest = (micros_of(when), -1) if when is not None else None
        for i, micros in rs.micros_from(start):
            if micros is None:
                when = parse_time(rs.received_at(i))
                micros = micros_of(when) if when is not None else None
            if micros is not None and (latest is None or micros > latest[0]):
                latest = (micros, i)
        if latest is None:
            return ReceiptsByPair(table), None
        return ReceiptsByPair(table), rs.received_at(latest[1]) if latest[1] >= 0 else upto

    return ReceiptIndex(status, build)


def index_for(log: ReceiptLog | None, by_key: ByKey | None = None) -> ReceiptIndex:
    """The index of `log` (`by_key`: its ByKey table, when the caller has one)."""
    return index_receipts(log.receipts if log else (), log.problems if log else (),
                          bool(log and log.exists), by_key)

# call key -> the earliest started attempt per request hash under that key (by its
# attempt.started seq): the attempt itself, or a dict by request hash once a key has
# several hashes (a list scanned per look-up made a key with 10^5 hashes quadratic).
# The attempt is the value (its started seq, id and hash never change once started):
# a (key, hash) -> (seq, id) dict cost ~150 bytes per call more (20 MB at 10^5 calls).
Coverage = dict[str, "AttemptEvidence | dict[str, AttemptEvidence]"]


class ReceiptCoverage:
    """The coverage one receipt log's check reads (`check_log`), in columns by receipt
    position: for each receipt, the attempt.started seq and id of the earliest started
    attempt with its key and request hash. An attempt whose pair no receipt holds is
    not kept (no receipt of this log can read it): a `Coverage` dict kept an attempt
    object, its key, hash and id strings per call (~440 bytes a call: 600 MB at 1.4
    million calls); these cost 16 bytes a receipt and each covering attempt's id, joined.
    `get` answers as a `Coverage` does, for the keys the log holds.

    A cover's reference is where its attempt id is: n >= 0 in `_ids` (the attempts
    added here), n <= -2 in `_theirs` at -2 - n (the ids a helper's coverage brought:
    kept as they came, not copied in), -1 none."""

    __slots__ = ("_by_key", "_ids", "_refs", "_seqs", "_theirs", "receipts")

    def __init__(self, by_key: ByKey) -> None:
        self._by_key = by_key
        self.receipts = by_key.receipts
        n = len(self.receipts)
        self._seqs = array("q", bytes(8 * n))  # the cover's started seq, where one is
        self._refs = array("i", [-1]) * n  # where the cover's attempt id is; -1: none
        self._ids = TextColumn()
        self._theirs: Sequence[str] = ()

    def add_call(self, call: CallEvidence) -> list[Pair]:
        """`add_coverage` for this log's pairs: the pairs whose covering attempt changed."""
        held = call.held
        if type(held) is AttemptEvidence:  # (the one attempt most calls have)
            key, sha, off = call.key, held.request_sha256, held.started_off
            if key is None or off is None or not sha:
                return []
            return [(key, sha)] if self.add(key, sha, held.first_seq + off,
                                            held.attempt_id) else []
        return [(key, att.request_sha256) for key, att in _started(call)  # type: ignore[misc]
                if self.add(key, att.request_sha256, att.started_seq,  # type: ignore[arg-type]
                            att.attempt_id)]

    def add(self, key: str, sha: str, seq: int, attempt_id: str) -> bool:
        """Let this attempt cover the receipts of (`key`, `sha`) unless one that started
        earlier does (`add_attempt`'s rule); True when it does now."""
        return self._cover(self._by_key.matching(key, sha), seq, attempt_id)

    def _cover(self, positions: Iterable[int], seq: int, attempt_id: str) -> bool:
        seqs, refs = self._seqs, self._refs
        ref = -1
        for i in positions:
            if refs[i] != -1 and seq >= seqs[i]:
                continue
            if ref < 0:
                ref = len(self._ids)
                self._ids.append(attempt_id)
            seqs[i], refs[i] = seq, ref
        return ref >= 0

    def _id_at(self, ref: int) -> str:
        return self._ids[ref] if ref >= 0 else self._theirs[-2 - ref]

    @property
    def by_key(self) -> ByKey:
        """The key table of the receipts this coverage is kept beside."""
        return self._by_key

    def cover_at(self, i: int) -> tuple[str | None, int]:
        """Receipt i's cover: (attempt id, started seq), or (None, NO_COVER)."""
        ref = self._refs[i]
        return (self._id_at(ref), self._seqs[i]) if ref != -1 else (None, NO_COVER)

    def attempt_at(self, i: int) -> str | None:
        """The id of the attempt covering receipt i (None: none does)."""
        ref = self._refs[i]
        return self._id_at(ref) if ref != -1 else None

    def uncovered(self) -> list[int]:
        """The positions of the receipts no attempt covers, rising."""
        return [i for i, ref in enumerate(self._refs) if ref == -1]

    def get(self, key: str, default: object = None) -> object:
        """The attempt covering `key` (a Cover), or by request hash when the key has
        several (as in a `Coverage`); `default` when none covers a receipt of it."""
        shas = self.receipts.shas
        found: dict[str, Cover] = {}
        for i in self._by_key.positions(key):
            attempt_id, seq = self.cover_at(i)
            if attempt_id is not None and shas[i] not in found:
                found[shas[i]] = Cover(attempt_id, seq, shas[i])
        if not found:
            return default
        return next(iter(found.values())) if len(found) == 1 else found

    def merge(self, later: CoverageUpdates) -> None:
        """Add what another ReceiptCoverage of the same log held (`merge_coverage`): the
        first one merged lends its ids column (~16 bytes a covered receipt not copied:
        1.4 million receipts' ids were the parent's peak as `inspect --json` finished)."""
        if self._theirs:  # (a second: its ids are copied in)
            for i, seq, ref in later.covers():
                self._cover((i,), seq, later.ids[ref])
            return
        self._theirs = later.ids
        seqs, refs = self._seqs, self._refs
        for i, seq, ref in later.covers():
            if refs[i] == -1 or seq < seqs[i]:
                seqs[i], refs[i] = seq, -2 - ref

    def __reduce_ex__(self, protocol: SupportsIndex
                      ) -> tuple[type[CoverageUpdates], tuple[object, object, TextColumn]]:
        """Pickled (a helper process hands its half back) as its own columns, without
        the log (the parent has it): a CoverageUpdates to `merge`. With protocol 5 the
        two arrays are written from where they are: building a copy of the covered
        receipts to pickle (arrays, joined ids, then their bytes) took ~55 MB at once in
        the helper of a 10M-event ledger, its peak."""
        refs, ids = self._refs, self._ids
        if self._theirs:  # (merged: one column of ids again, rare)
            ids = TextColumn(ids)
            base = len(ids)
            ids.extend(self._theirs)
            refs = array("i", [r if r >= -1 else base - 2 - r for r in refs])
        if int(protocol) >= 5:
            return CoverageUpdates, (PickleBuffer(refs), PickleBuffer(self._seqs), ids)
        return CoverageUpdates, (refs.tobytes(), self._seqs.tobytes(), ids)


class CoverageUpdates:
    """A ReceiptCoverage's columns as pickled: read in place (no copy of what was
    unpickled), each covered receipt's (position, started seq, attempt id) in turn."""

    __slots__ = ("_refs", "_seqs", "ids")

    def __init__(self, refs: bytes | bytearray, seqs: bytes | bytearray,
                 ids: Sequence[str]) -> None:
        self._refs = memoryview(refs).cast("i")
        self._seqs = memoryview(seqs).cast("q")
        self.ids = ids

    def covers(self) -> Iterator[tuple[int, int, int]]:
        """(position, started seq, where its attempt id is in `ids`) of each covered
        receipt."""
        seqs = self._seqs
        for i, ref in enumerate(self._refs):
            if ref >= 0:
                yield i, seqs[i], ref


def covering(started: Coverage, key: str, sha: str) -> AttemptEvidence | None:
    """The earliest started attempt with this key and request hash, if any."""
    have = started.get(key)
    if have is None:
        return None
    if type(have) is dict:
        return have.get(sha)
    return have if have.request_sha256 == sha else None  # type: ignore[union-attr]

def coverage_pairs(calls: Iterable[CallEvidence]) -> Coverage:
    """Every started attempt's (key, request hash) -> the earliest such attempt (by its
    attempt.started seq: the same answer whatever order calls are visited in, so an
    incremental check and a batch check agree)."""
    started: Coverage = {}
    for call in calls:
        add_coverage(started, call)
    return started


def add_coverage(started: Coverage | ReceiptCoverage, call: CallEvidence) -> list[Pair]:
    """Add one call's started attempts; returns the pairs whose covering attempt changed."""
    if isinstance(started, ReceiptCoverage):
        return started.add_call(call)
    return [(key, att.request_sha256) for key, att in _started(call)  # type: ignore[misc]
            if add_attempt(started, key, att)]


def _started(call: CallEvidence) -> Iterator[tuple[str, AttemptEvidence]]:
    """(the call's key, each attempt) for its started attempts with a request hash: what
    coverage reads of a call (none without a key)."""
    key = call.key
    if key is None:
        return
    for att in call.attempts:
        if att.started_off is not None and att.request_sha256:
            yield key, att


def add_started(started: Coverage, call: CallEvidence, att: AttemptEvidence | None
                ) -> list[Pair]:
    """`add_coverage` for one attempt of `call` that has just started, the call's other
    attempts being in already under the same key (a pass over them all on every start
    made a call of 10^5 attempts cost 10^10 steps)."""
    key = call.key
    if key is None or att is None or att.started_off is None or not att.request_sha256:
        return []
    return [(key, att.request_sha256)] if add_attempt(started, key, att) else []


def add_attempt(started: Coverage, key: str, att: AttemptEvidence) -> bool:
    """Let a started attempt with a request hash cover (`key`, its hash) unless one that
    started earlier does; True when it does now."""
    sha: str = att.request_sha256  # type: ignore[assignment]  # only attempts with one come
    seq: int = att.started_seq  # type: ignore[assignment]  # only started attempts come
    have = started.get(key)
    if have is None:
        started[key] = att
    elif type(have) is dict:
        old = have.get(sha)
        if old is not None and seq >= old.started_seq:  # type: ignore[operator]
            return False
        have[sha] = att
    elif have.request_sha256 != sha:  # type: ignore[union-attr]
        started[key] = {have.request_sha256: have, sha: att}  # type: ignore[union-attr, dict-item]
    elif seq < have.started_seq:  # type: ignore[operator, union-attr]
        started[key] = att
    else:
        return False
    return True


def merge_coverage(started: Coverage | ReceiptCoverage, later: Coverage) -> None:
    """Add `later`'s attempts (the coverage of calls that come after `started`'s in
    first-seq order, built on its own) as if their calls had been added one by one."""
    if isinstance(started, ReceiptCoverage):
        started.merge(later)  # type: ignore[arg-type]  # (what a ReceiptCoverage pickles to)
        return
    for key, have in later.items():
        for att in have.values() if type(have) is dict else (have,):
            add_attempt(started, key, att)  # type: ignore[arg-type]


def repoint_coverage(started: Coverage, before: CallEvidence, after: CallEvidence) -> None:
    """`after` is a copy of `before` (copy on write): let coverage hold its attempts, so
    the attempts of verdicts no longer held can be freed. (Two or more attempts are
    shared by the copy until one changes, and what coverage reads of an attempt never
    changes once it started: only the one copied attempt of a call is looked at.)"""
    key = before.key
    if key is None or type(before.held) is not AttemptEvidence:
        return
    have = started.get(key)
    if have is None:
        return
    for old, new in zip(before.attempts, after.attempts, strict=False):
        if type(have) is dict:
            sha = old.request_sha256
            if sha is not None and have.get(sha) is old:
                have[sha] = new
        elif have is old:
            started[key] = have = new


def check_coverage(
    receipts: Sequence[Receipt],
    started: Coverage | ReceiptCoverage,
    *,
    upto: int | None = None,
    settled: bool = False,
    problems: Sequence[tuple[int, str]] = (),
    log_present: bool = False,
    index: ReceiptIndex | None = None,
    by_key: ByKey | None = None,
    duplicates: DuplicateGroups | None = None,
    started_seqs: StartedSeqs | None = None,
) -> ReceiptCheck:
    """Every receipt covered by an attempt.started with the same key and request hash;
    two or more receipts with one key and body hash are a duplicate. `upto`: only
    attempts started at or before that seq cover (time travel). `index`, `by_key`,
    `duplicates`: the receipts' index, ByKey table and `_repeat_groups` when the
    caller built them already (else the index builds its table when first read: time
    travel checks at every step, and reads no index). `started_seqs`: filled with the
    attempt.started seq of each receipt's cover (NO_COVER: none), whatever `upto`.
    `settled`: `started` will not change again, so the check may read a coverage in
    the log's columns in place instead of copying its covers."""
    rs = by_key.receipts if by_key is not None else columns(receipts)
    covers: Sequence[str | None]
    if settled and upto is None and started_seqs is None \
            and isinstance(started, ReceiptCoverage) and started.receipts is rs:
        covers, uncovered = CoversInPlace(started), started.uncovered()
    else:
        column: CoverColumn | TextCovers = CoverColumn(started.cols) \
            if isinstance(started, SettledCoverage) else TextCovers()
        seqs: list[int] = []  # (taken into `started_seqs` a block at a time)
        for have, seq in _covers_of(rs, started):
            if started_seqs is not None:
                seqs.append(seq)
                if len(seqs) == BLOCK:
                    started_seqs.extend(seqs)
                    seqs = []
            column.append_cover(have if upto is None or seq <= upto else None)
        if started_seqs is not None:
            started_seqs.extend(seqs)
        covers, uncovered = column, column.uncovered()
    return ReceiptCheck(
        count=len(rs),
        uncovered=_ids_at(rs, uncovered),
        duplicates=duplicates if duplicates is not None else _repeat_groups(rs, by_key),
        covered_by=Covers(rs, covers),
        problems=tuple(problems),
        log_present=log_present,
        index=index if index is not None else index_receipts(rs, problems, log_present,
                                                             by_key),
    )


def _covers_of(rs: Receipts, started: Coverage | ReceiptCoverage
               ) -> Iterator[tuple[AttemptEvidence | Cover | str | int | None, int]]:
    """(cover, started seq) of each receipt's cover, (None, NO_COVER) for none: the
    cover as `covering` gives it, its attempt id (a ReceiptCoverage's), or its slot in
    a SettledCoverage's columns."""
    if isinstance(started, ReceiptCoverage) and started.receipts is rs:
        yield from map(started.cover_at, range(len(rs)))
        return
    if isinstance(started, SettledCoverage):
        yield from _settled_covers_of(rs, started)
        return
    for key, sha in zip(rs.keys, rs.shas, strict=True):
        have = covering(started, key, sha)  # type: ignore[arg-type]  # (answers as one)
        if have is None:
            yield None, NO_COVER
        else:
            yield have, have.started_seq  # type: ignore[misc]


def _settled_covers_of(rs: Receipts, started: SettledCoverage
                       ) -> Iterator[tuple[AttemptEvidence | Cover | int | None, int]]:
    """`_covers_of` a SettledCoverage: a cover in its columns as its slot alone
    (`SettledCalls.cover_slot`), no Cover made: the first snapshot of the 1M-event
    ledger, which asks for each of its 143,904 receipts, took 0.50-0.53 s of CPU instead
    of 0.75 s."""
    held, cols = dict.get, started.cols
    for key, sha in zip(rs.keys, rs.shas, strict=True):
        if held(started, key) is None:
            slot = cols.cover_slot(key, sha)
            yield (slot, cols.cover_started_seq(slot)) if slot >= 0 else (None, NO_COVER)
        else:
            have = covering(started, key, sha)
            yield (None, NO_COVER) if have is None else (have, have.started_seq)  # type: ignore[misc]


class _CoversView(Sequence["str | None"]):
    """Covers by receipt position read through `_at` (an IndexError past the end,
    negative positions from it)."""

    __slots__ = ()

    def _at(self, j: int) -> str | None:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> str | None: ...

    @overload
    def __getitem__(self, i: slice) -> list[str | None]: ...

    def __getitem__(self, i: int | slice) -> str | None | list[str | None]:
        if isinstance(i, slice):
            return [self._at(j) for j in range(len(self))[i]]
        return self._at(range(len(self))[i])


def _attempt_id(have: AttemptEvidence | Cover | str | None) -> str | None:
    return have if have is None or type(have) is str else have.attempt_id  # type: ignore[union-attr]


class TextCovers(OptionalTextColumn):
    """The attempt covering each receipt, its id's text, by the receipt's place in the
    log: a check whose coverage keeps no columns (`CoverColumn`'s ways of adding)."""

    __slots__ = ()

    def append_cover(self, have: AttemptEvidence | Cover | str | None) -> None:
        self.append(_attempt_id(have))

    def set_cover(self, i: int, have: AttemptEvidence | Cover | None) -> None:
        self.set(i, _attempt_id(have))

    def uncovered(self) -> list[int]:
        """The positions of the receipts no attempt covers, rising."""
        return [i for i, att in enumerate(self) if att is None]


class CoverColumn(ValueSequence["str | None"], _CoversView):
    """The attempt covering each receipt (its id, or None), by the receipt's place in the
    log, for a check whose coverage keeps settled calls in columns: a cover read from
    those columns is kept as its call's slot (4 bytes), and read back as the attempt id
    they derive; only a cover held as an object keeps its id's text. (The ids' text, a
    column of its own, cost ~21 bytes a receipt: 31 MB at 10M events.) A slot's columns
    never change, so what a copy reads never moves. Copies share the texts, which are
    only appended to, and the sealed blocks of slots."""

    __slots__ = ("_cols", "_refs", "_texts")

    def __init__(self, cols: SettledCalls | None) -> None:
        self._cols = cols
        # per receipt: a slot in `_cols`, -1 for no cover, -2 - n for `_texts[n]`
        self._refs: Blocks[int] = Blocks((), "i")
        self._texts = TextColumn()

    def _ref(self, have: AttemptEvidence | Cover | str | int | None) -> int:
        """`have` as kept; an int is a slot in these columns (`_settled_covers_of`)."""
        if have is None:
            return -1
        if type(have) is int:
            return have
        if type(have) is Cover and have.cols is self._cols and have.slot is not None:
            return have.slot
        self._texts.append(_attempt_id(have))  # type: ignore[arg-type]
        return -1 - len(self._texts)

    def append_cover(self, have: AttemptEvidence | Cover | str | int | None) -> None:
        self._refs.append(self._ref(have))

    def set_cover(self, i: int, have: AttemptEvidence | Cover | None) -> None:
        self._refs.set(i, self._ref(have))

    def copy(self) -> CoverColumn:
        out = CoverColumn(self._cols)
        out._refs, out._texts = self._refs.copy(), self._texts
        return out

    def uncovered(self) -> list[int]:
        """The positions of the receipts no attempt covers, rising."""
        return [i for i, ref in enumerate(self._refs) if ref == -1]

    def __len__(self) -> int:
        return len(self._refs)

    def _id_of(self, ref: int) -> str | None:
        if ref >= 0:
            return self._cols.cover_attempt_id(ref)  # type: ignore[union-attr]
        return None if ref == -1 else self._texts[-2 - ref]

    def _at(self, j: int) -> str | None:
        return self._id_of(self._refs[j])

    def __iter__(self) -> Iterator[str | None]:
        return map(self._id_of, self._refs)

    def __reduce__(self) -> tuple[type[OptionalTextColumn], tuple[list[str | None]]]:
        return (OptionalTextColumn, (list(self),))  # (the ids: no columns pickled with them)


def _ids_at(rs: Receipts, positions: Iterable[int]) -> tuple[str, ...]:
    """The ids of the receipts at `positions`, in that order, each id once (read in one
    pass over the column when they are many: a log no attempt covers)."""
    at = list(positions)
    ids: Sequence[str] = list(rs.ids) if len(at) > 1024 else rs.ids
    return tuple(dict.fromkeys(ids[i] for i in at))


def _repeat_groups(rs: Receipts, by_key: ByKey | None) -> DuplicateGroups:
    """The positions, in log order, of the receipts of every (key, body hash) that two
    or more hold (a duplicate effect)."""
    return DuplicateGroups.of(rs, (g for _sha, g in _hash_groups(rs, _shared_keys(rs, by_key))))


def _shared_keys(rs: Receipts, by_key: ByKey | None) -> Iterable[list[int]]:
    """The positions of the receipts of each key that two or more hold, key by key, in
    log order: from the key table when there is one (one key's at a time), else from a
    count of the keys (time travel)."""
    if by_key is not None:
        return (by_key.positions(k) for k in by_key.repeated_keys())
    keys = rs.keys
    repeated = {k for k, n in Counter(keys).items() if n > 1}
    found: dict[str, list[int]] = {}
    for i in [i for i, k in enumerate(keys) if k in repeated]:
        found.setdefault(keys[i], []).append(i)
    return found.values()


def duplicate_effect(receipts_of_pair: Sized) -> bool:
    """True when the receipts of one (key, body hash) pair are a duplicate effect (one
    duplicate group): two or more. The lanes read it of an attempt's receipts."""
    return len(receipts_of_pair) > 1


def _hash_groups(rs: Receipts, shared: Iterable[list[int]]) -> Iterator[tuple[str, list[int]]]:
    """Of receipts sharing a key (`shared`: positions per key, in log order), those of
    each body hash that two or more hold, with the hash: one key's receipts grouped at a
    time, so only the duplicates are held (a group per (key, hash) of every shared key,
    kept until the end, was ~40 MB at once at 1.4 million receipts)."""
    shas = rs.shas
    for positions in shared:
        by_sha: dict[str, list[int]] = {}
        for i in positions:
            by_sha.setdefault(shas[i], []).append(i)
        if len(by_sha) < len(positions):
            for sha, group in by_sha.items():
                if duplicate_effect(group):
                    yield sha, group


def _first_position(group: array[int]) -> int:
    return group[0]


class DuplicateGroups(ValueSequence[tuple[str, ...]]):
    """The duplicate effects of a log: each group's receipt ids (a tuple, in log order),
    the groups ordered by their first receipt's place. Kept as positions in two arrays
    and read from the log's id column when asked: reads and compares equal to the tuple
    of tuples of ids it stands for. That tuple, and a dict by (key, hash) of each
    group's positions kept to update it, cost ~590 bytes a group (41 MB for the 68,786
    groups of a 10M-event ledger); these cost 4 bytes a receipt in a group and 4 a
    group. Never changed once made.

    Which group holds a line of the log (`group_at`, `group_of`) is answered by bisection
    on the members in log order, made on the first question and kept (4 bytes a receipt
    in a group): a set of every grouped receipt's id, made on each repaint, took ~90 ms
    at 68,786 groups, and an id can stand on two lines of a hostile log.

    Grown by a followed log (`grown`): the packed arrays (and their lookup) are shared
    with the groups grown from, and what grew since is kept beside them (receipts
    appended to a packed group, groups made since), packed anew once that is a
    sixteenth of the receipts in groups: a rebuild of every group took ~30 ms at 68,786
    groups each time a receipt joined one."""

    __slots__ = ("_added", "_added_at", "_by_place", "_extra", "_first_of", "_members",
                 "_packed_ranks", "_starts", "receipts")

    def __init__(self, receipts: Receipts, members: array[int], starts: array[int]) -> None:
        self.receipts = receipts
        self._members = members  # every packed group's positions, group after group
        self._starts = starts  # where each packed group begins in `_members`, and the end
        # the places in `_members` ordered by the position each holds, once made (one
        # holder shared by every groups object grown from these arrays)
        self._by_place: list[array[int]] = []
        # grown since packed: receipts appended to packed group k (k -> positions), the
        # groups made since (ordered by first position) with how many packed groups
        # begin before each and its place among all groups, and the first position of
        # the group of each of these receipts
        self._extra: dict[int, array[int]] = {}
        self._added: list[array[int]] = []
        self._packed_ranks: list[int] = []
        self._added_at: list[int] = []
        self._first_of: dict[int, int] = {}

    @classmethod
    def of(cls, receipts: Receipts, groups: Iterable[Sequence[int]]) -> DuplicateGroups:
        """The groups of `receipts` at these positions (each in log order, any order of
        groups; a group of fewer than two is left out)."""
        members, starts = array(_POSITION), array(_POSITION, [0])
        for group in groups:
            if len(group) > 1:
                members.extend(group)
                starts.append(len(members))
        firsts = [members[at] for at in starts[:-1]]
        if all(a < b for a, b in zip(firsts, firsts[1:], strict=False)):
            return cls(receipts, members, starts)
        ordered, ordered_starts = array(_POSITION), array(_POSITION, [0])
        for g in sorted(range(len(firsts)), key=firsts.__getitem__):
            ordered.extend(members[starts[g]:starts[g + 1]])
            ordered_starts.append(len(ordered))
        return cls(receipts, ordered, ordered_starts)

    def __len__(self) -> int:
        return len(self._starts) - 1 + len(self._added)

    def _locate(self, g: int) -> tuple[bool, int]:
        """Group g (0 <= g < len) as (True, its place among the groups made since) or
        (False, its packed group)."""
        j = bisect_right(self._added_at, g) - 1
        if j >= 0 and self._added_at[j] == g:
            return True, j
        return False, g - (j + 1)

    def positions(self, g: int) -> array[int]:
        """Group g's receipt positions, in log order."""
        added, k = self._locate(g)
        if added:
            return self._added[k]
        own = self._members[self._starts[k]:self._starts[k + 1]]
        more = self._extra.get(k)
        return own + more if more is not None else own

    def groups(self) -> Iterator[array[int]]:
        """Each group's receipt positions, in turn."""
        members, starts, extra, added = self._members, self._starts, self._extra, self._added
        j = 0
        for k in range(len(starts) - 1):
            own = members[starts[k]:starts[k + 1]]
            while j < len(added) and added[j][0] < own[0]:
                yield added[j]
                j += 1
            more = extra.get(k)
            yield own + more if more is not None else own
        yield from added[j:]

    def _ids(self, g: int) -> tuple[str, ...]:
        ids = self.receipts.ids
        return tuple(ids[i] for i in self.positions(g))

    @overload
    def __getitem__(self, g: int) -> tuple[str, ...]: ...

    @overload
    def __getitem__(self, g: slice) -> tuple[tuple[str, ...], ...]: ...

    def __getitem__(self, g: int | slice) -> tuple[str, ...] | tuple[tuple[str, ...], ...]:
        if isinstance(g, slice):
            return tuple(self._ids(k) for k in range(len(self))[g])
        return self._ids(range(len(self))[g])

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        ids = self.receipts.ids
        for group in self.groups():
            yield tuple(ids[i] for i in group)

    def __repr__(self) -> str:
        return repr(tuple(self))

    def _in_log_order(self) -> array[int]:
        """The places in `_members` ordered by the position each holds: made once (the
        packed arrays never change; two threads asking at once make equal copies)."""
        if not self._by_place:
            members = self._members
            order = array(_POSITION, sorted(range(len(members)), key=members.__getitem__))
            self._by_place[:] = [order]
        return self._by_place[0]

    def _packed_group_at(self, position: int) -> int | None:
        members, order = self._members, self._in_log_order()
        at = bisect_left(order, position, key=members.__getitem__)
        if at == len(order) or members[order[at]] != position:
            return None
        return bisect_right(self._starts, order[at]) - 1

    def _packed_before(self, position: int) -> int:
        """How many packed groups begin before this position."""
        members, starts = self._members, self._starts
        return bisect_left(range(len(starts) - 1), position,
                           key=lambda k: members[starts[k]])

    def group_at(self, position: int) -> int | None:
        """The group holding the receipt at this position of the log (None: none)."""
        first = self._first_of.get(position)
        if first is None:
            k = self._packed_group_at(position)
            if k is None:
                return None
            packed, first = k, self._members[self._starts[k]]
        else:
            packed = self._packed_before(first)
        return packed + bisect_left(self._added, first, key=_first_position)

    def group_of(self, receipt: Receipt) -> int | None:
        """The group holding this line of the log (None: none, or not a line of it): by
        its place, so a receipt id that a hostile log repeats on another line does not
        mark this one."""
        at = self.receipts.position_of(receipt)
        return None if at is None else self.group_at(at)

    def grown(self, receipts: Receipts, before: int,
              shared: Iterable[list[int]]) -> DuplicateGroups:
        """The groups of `receipts`, whose first `before` receipts' groups are these,
        given the positions of the receipts of each key a receipt appended since carries
        (`shared`): these groups themselves when no appended receipt joined one; else a
        new object sharing these arrays (this one, which a snapshot may hold, is left as
        it is), in proportion to the groups that changed."""
        changed = [g for _sha, g in _hash_groups(receipts, shared) if g[-1] >= before]
        if not changed:  # (a group of old receipts alone was known already)
            if receipts is self.receipts:
                return self
            # the same groups, reading the log last read: the log these were made from
            # would be kept for them, and its last block's texts (~1 MB of str objects
            # once the log's own are packed) with it
            out = copy.copy(self)
            out.receipts = receipts
            return out
        out = DuplicateGroups(receipts, self._members, self._starts)
        out._by_place = self._by_place
        extra, added, first_of = dict(self._extra), list(self._added), dict(self._first_of)
        ranks = list(self._packed_ranks)
        for group in changed:
            head = group[0]
            g = self.group_at(head)
            if g is None:  # a group made now (at most one of its receipts was there)
                at = bisect_left(added, head, key=_first_position)
                added.insert(at, array(_POSITION, group))
                ranks.insert(at, self._packed_before(head))
                first_of.update(dict.fromkeys(group, head))
                continue
            new = group[len(self.positions(g)):]  # (the known receipts come first)
            first_of.update(dict.fromkeys(new, head))
            is_added, k = self._locate(g)
            if is_added:  # (found by its first place: groups made now may stand before it)
                added[bisect_left(added, head, key=_first_position)] = array(_POSITION, group)
            else:
                extra[k] = extra.get(k, array(_POSITION)) + array(_POSITION, new)
        out._extra, out._added, out._first_of = extra, added, first_of
        if len(first_of) > max(1024, len(self._members) // 16):
            return DuplicateGroups.of(receipts, out.groups())  # packed anew
        out._packed_ranks = ranks
        out._added_at = [j + rank for j, rank in enumerate(ranks)]
        return out


def duplicate_group(duplicates: Sequence[tuple[str, ...]], receipt: Receipt,
                    found: tuple[Receipts, int] | None = None) -> int | None:
    """Which of a check's duplicate groups holds this line of its log (None: none): the
    one question the receipts pane and the detail view ask of a receipt. `found`: a log
    and the receipt's place in it, when the caller looked it up already (the pane does,
    for its cover: a second search cost a third of a filter's pass over every row).
    Groups given as ids alone (no places: made by hand) are asked by the receipt's id."""
    if isinstance(duplicates, DuplicateGroups):
        if found is not None and found[0] is duplicates.receipts:
            return duplicates.group_at(found[1])
        return duplicates.group_of(receipt)
    return next((g for g, ids in enumerate(duplicates) if receipt.receipt_id in ids), None)


def check_receipts(
    receipts: Sequence[Receipt],
    calls: Iterable[CallEvidence],
    *,
    problems: Sequence[tuple[int, str]] = (),
    log_present: bool = False,
) -> ReceiptCheck:
    """Section 5's cross-check of `receipts` against the calls' started attempts."""
    return check_coverage(receipts, coverage_pairs(calls), problems=problems,
                          log_present=log_present)


def check_log(log: ReceiptLog | None, started: Coverage | ReceiptCoverage,
              index: ReceiptIndex | None = None, *, upto: int | None = None,
              settled: bool = False) -> ReceiptCheck:
    receipts = log.receipts if log else ()
    # a coverage in the log's columns brings its key table: the duplicates are found
    # from it, not from a count of every key (~150 bytes a receipt at once)
    by_key = started.by_key if isinstance(started, ReceiptCoverage) \
        and started.receipts is receipts else None
    return check_coverage(
        receipts, started, upto=upto, settled=settled,
        problems=log.problems if log else (), log_present=bool(log and log.exists),
        index=index, by_key=by_key,
    )


def _share_hash(rs: Receipts, i: int, att: AttemptEvidence) -> None:
    """Receipt i, just read on, keeps its covering attempt's equal body-hash string, not
    a second one parsed from the log (the first projection shares them all: see
    `share_receipt_strings`). 113 bytes a receipt: ~10 MB in ten minutes of a provider
    logging 140 receipts a second."""
    if att.request_sha256 is not None:
        rs.shas.share(i, att.request_sha256)


# a receipt no attempt covers, in a column of its covers' started seqs: later than any
# seq but the very last an int64 holds (a seq may be 0 or below on a hostile ledger)
NO_COVER = (1 << 63) - 1
_INT32_MAX = (1 << 31) - 1


class StartedSeqs:
    """The attempt.started seq of each receipt's cover by position, `none` where no
    attempt covers it: 4 bytes a receipt while every seq fits below the largest int32
    (`none` then), 8 once one does not (`none` is NO_COVER then). 8 bytes each cost
    11.8 MB for the 1.44M receipts of a 10M-event ledger."""

    __slots__ = ("none", "values")

    def __init__(self) -> None:
        self.values: array[int] = array("i")
        self.none = _INT32_MAX  # what `values` holds for a receipt no attempt covers

    def _widen(self) -> None:
        """8 bytes a seq from now on (a seq that does not fit in 4 came)."""
        self.values = array("q", [NO_COVER if v == _INT32_MAX else v for v in self.values])
        self.none = NO_COVER

    def _kept(self, seq: int) -> int:
        """`seq` (NO_COVER: none) as `values` holds it, widened first if it must be."""
        if seq == NO_COVER:
            return self.none
        if self.none != NO_COVER and not -_INT32_MAX - 1 <= seq < _INT32_MAX:
            self._widen()
        return seq

    def append(self, seq: int) -> None:
        kept = self._kept(seq)
        self.values.append(kept)

    def extend(self, seqs: list[int]) -> None:
        """`append` each of `seqs`, in a pass at C speed where they fit."""
        if self.none != NO_COVER:
            real = [s for s in seqs if s != NO_COVER] if NO_COVER in seqs else seqs
            if real and not -_INT32_MAX - 1 <= min(real) <= max(real) < _INT32_MAX:
                self._widen()
            elif real is not seqs:
                seqs = [_INT32_MAX if s == NO_COVER else s for s in seqs]
        self.values.extend(seqs)

    def __setitem__(self, i: int, seq: int) -> None:
        kept = self._kept(seq)
        self.values[i] = kept

    def __len__(self) -> int:
        return len(self.values)


class CoversInPlace(_CoversView):
    """A settled coverage's covers read where it keeps them (`check_coverage`'s
    `settled`): a column of its own held every covering attempt's id a second time
    (~47 MB at once for the 1.44M receipts of a 10M-event ledger, `inspect --json`'s
    peak as it finished)."""

    __slots__ = ("_coverage",)

    def __init__(self, coverage: ReceiptCoverage) -> None:
        self._coverage = coverage

    def __len__(self) -> int:
        return len(self._coverage.receipts)

    def _at(self, j: int) -> str | None:
        return self._coverage.attempt_at(j)


class CoversAsOf(_CoversView):
    """A cut's covers as a view of the whole log's column (which its owner then copies
    before it changes it): the cover at each taken position, None where it had not
    started yet (`blank`). A column of its own cost a pass appending 10^5 covers on
    every step of time travel."""

    __slots__ = ("_blank", "_covers", "_len", "_positions")

    def __init__(self, covers: Blocks[str | None], positions: Sequence[int],
                 blank: set[int], length: int) -> None:
        self._covers, self._positions = covers, positions
        self._blank, self._len = blank, length

    def __len__(self) -> int:
        return self._len

    def _at(self, j: int) -> str | None:
        return None if j in self._blank else self._covers[self._positions[j]]


class LiveReceiptCheck:
    """Section 5's check kept up to date as attempts start, in proportion to what changed:
    a receipt's cover only changes when its (key, hash) pair does, and duplicates depend
    on the log alone. Gives the same ReceiptCheck as `check_coverage` (tests). One
    column of covers by receipt position is kept: the check handed out shares it until an
    update (copy on write)."""

    def __init__(self, log: ReceiptLog | None, started: Coverage) -> None:
        self.log = log
        receipts = log.receipts if log else ()
        problems = log.problems if log else ()
        present = bool(log and log.exists)
        self._by_key = by_key_of(log) if log else ByKey(())
        # the duplicate groups, by position in the log (`as_of` cuts them, `grow` adds)
        self._duplicates = _repeat_groups(self._by_key.receipts, self._by_key)
        # the attempt.started seq of each receipt's cover (`none`: none): as of a seq,
        # a receipt is covered when its cover started by then (`as_of`)
        self._seqs = StartedSeqs()
        full = check_coverage(receipts, started, problems=problems, log_present=present,
                              index=index_receipts(receipts, problems, present, self._by_key),
                              by_key=self._by_key, duplicates=self._duplicates,
                              started_seqs=self._seqs)
        self._receipts = full.covered_by.receipts
        self._covers: CoverColumn | TextCovers = full.covered_by.attempts  # type: ignore[assignment]
        self._shared = True  # `full` (handed out) holds _covers
        # positions of the receipts no attempt covers
        self._uncovered = dict.fromkeys(self._covers.uncovered())
        self._problems = full.problems
        self._present = full.log_present
        self._index = full.index
        self._check: ReceiptCheck | None = full
        # the log read on and its key table, indexed ahead of `grow` (`read_on`)
        self._read_on: tuple[ReceiptLog, ByKey] | None = None

    def update(self, started: Coverage, pairs: Iterable[Pair]) -> None:
        for pair in pairs:
            have = covering(started, *pair)
            for i in self._by_key.matching(*pair):
                self._own_covers()
                self._covers.set_cover(i, have)
                self._seqs[i] = have.started_seq if have else NO_COVER  # type: ignore[assignment]
                if have is None:
                    self._uncovered[i] = None
                else:
                    self._uncovered.pop(i, None)
                    _share_hash(self._receipts, i, have)
                self._check = None

    def hash_place(self, key: str | None, sha: str) -> tuple[Sequence[str], int] | None:
        """This check's log's column of body hashes and the place in it of a receipt
        with this key and hash (None: there is none): the settled columns read a
        cover's request hash there (`SettledCalls.add`'s `lent_at`)."""
        if key is None:
            return None
        table = self._read_on[1] if self._read_on is not None else self._by_key
        found = table.matching(key, sha)
        rs = table.receipts
        return (rs.shas, found[0]) if found and isinstance(rs, Receipts) else None

    def read_on(self, log: ReceiptLog) -> None:
        """Index by key the receipts appended to the log (`extended_by(log)`), their
        covers left to `grow`: calls that settle meanwhile find their receipts' hashes
        there (`hash_place`), and the covers `grow` then reads of them are their slots
        in the columns (4 bytes), not their attempt ids' text."""
        if self._read_on is None or self._read_on[0] is not log:
            self._read_on = (log, self._by_key.grown(log.receipts))  # type: ignore[arg-type]

    def _own_covers(self) -> None:
        """Copy the covers column before changing it if a check handed out holds it."""
        if self._shared:
            self._covers = self._covers.copy()
            self._shared = False

    def extended_by(self, log: ReceiptLog | None) -> bool:
        """True if `log` is this check's log read on from where it ended (the same
        lineage: see ledger.receipts.LogTail), so `grow` can take it in."""
        mine = self.log.tail if self.log is not None else None
        theirs = log.tail if log is not None else None
        return (mine is not None and theirs is not None and mine.lineage is theirs.lineage
                and isinstance(log.receipts, Receipts)  # type: ignore[union-attr]
                and len(log.receipts) >= len(self._receipts))  # type: ignore[union-attr]

    def grow(self, log: ReceiptLog, started: Coverage) -> None:
        """Take in the receipts appended to the log (`extended_by(log)`): their covers,
        and the duplicate groups of their keys; in proportion to what was appended."""
        before = len(self._receipts)
        ahead, self._read_on = self._read_on, None
        table = ahead[1] if ahead is not None and ahead[0] is log \
            else self._by_key.grown(log.receipts)  # type: ignore[arg-type]
        _BY_KEY[:] = [(log, table)]
        rs = table.receipts
        self._own_covers()
        keys: dict[str, None] = {}
        for i in range(before, len(rs)):
            have = covering(started, rs.keys[i], rs.shas[i])
            if type(have) is Cover and have.slot is not None:  # (its call settled first)
                have.cols.lend_late(have.slot, rs.shas, i)  # type: ignore[union-attr]
            self._covers.append_cover(have)
            self._seqs.append(have.started_seq if have is not None else NO_COVER)  # type: ignore[arg-type]
            if have is None:
                self._uncovered[i] = None
            else:
                _share_hash(rs, i, have)
            keys[rs.keys[i]] = None
        self._duplicates = self._duplicates.grown(rs, before,
                                                  [table.positions(k) for k in keys])
        known = self._index  # (never kept by the next index: that would chain them all)
        self._index = index_receipts(
            rs, log.problems, log.exists, table,
            after=(known.complete_up_to, before) if known is not None and known.built else None)
        self.log, self._by_key, self._receipts = log, table, rs
        self._problems, self._present = log.problems, log.exists
        self._check = None

    def as_of(self, log: ReceiptLog, n: int) -> ReceiptCheck | None:
        """The check of `log`, this check's log cut as of seq `n` (`receipts_before`),
        from this check's columns in one pass over the cut: a receipt is covered as of n
        when its cover (the earliest attempt started with its key and hash) started by
        n, and a duplicate when two receipts of its pair are in the cut. Equals
        `check_coverage(log.receipts, started, upto=n)` for the coverage this check was
        last updated with. None when `log` is not cut from this check's log (or `n`
        reaches what the seqs column holds for no cover, where "no cover" and "started
        at n" read alike)."""
        rs = log.receipts
        if n >= self._seqs.none:
            return None
        if rs is self._receipts:
            positions: Sequence[int] = range(len(rs))
        elif isinstance(rs, Receipts) and rs.origin is not None \
                and rs.origin[0] is self._receipts:
            positions = rs.origin[1]
        else:
            return None
        k, seqs = len(rs), self._seqs.values
        blank = [j for j, p in enumerate(positions) if seqs[p] > n]
        groups: list[list[int]] = []
        prefix = type(positions) is range and positions.start == 0 and positions.step == 1
        for group in self._duplicates.groups():
            if prefix:  # (a cut in time order: a receipt keeps its place)
                kept = [i for i in group if i < k]
            else:
                kept = []
                for i in group:  # (its place in the cut: the positions taken rise)
                    j = bisect_left(positions, i)
                    if j < k and positions[j] == i:
                        kept.append(j)
            if len(kept) > 1:
                groups.append(kept)
        self._shared = True  # the cut's covers read this column: copy it before a change
        problems = tuple(log.problems)
        # nothing cut (time travel past the last receipt): this check's own index, built
        # already, instead of a second table of every receipt's key
        index = self._index if log is self.log and self._index is not None \
            else index_receipts(rs, problems, log.exists)
        return ReceiptCheck(
            count=k,
            uncovered=_ids_at(rs, blank),
            duplicates=DuplicateGroups.of(rs, groups),
            covered_by=Covers(rs, CoversAsOf(self._covers, positions, set(blank), k)),
            problems=problems,
            log_present=log.exists,
            index=index,
        )

    def check(self) -> ReceiptCheck:
        if self._check is None:
            rs = self._receipts
            self._check = ReceiptCheck(len(rs), _ids_at(rs, sorted(self._uncovered)),
                                       self._duplicates, Covers(rs, self._covers),
                                       self._problems, self._present, self._index)
            self._shared = True
        return self._check
