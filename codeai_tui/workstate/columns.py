"""Settled calls kept in columns instead of Python objects.

A call that is settled for good (completed, nothing to do, no tool operations, no
anomaly names it, never resumed) can no longer change on an append-only ledger, so the
projection keeps only what its verdict and the panes' counts read: its ids as joined
texts, its seqs, counts and verdict code in arrays (~100 bytes a call, where its
evidence and verdict as Python objects cost ~1,300). Its reason, evidence and JSON are
derived again when asked, through the same ladder, from the call's own events read by
the injected function time travel uses (`CallBefore`). The columns are only appended
to: a snapshot that reads a settled call sees what it saw when it was taken.

A call in flight that has been quiet for a while (`rests`: no tool operations, no
anomaly, never resumed) is kept here too, its verdict as the ladder judged it: most
such calls wait for good on a crash or a lost provider. The projector takes it back to
objects, derived from its events, when its next event comes.
"""

from __future__ import annotations

import copy
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from codeai_tui.ledger.blocks import BLOCK, appended, extended
from codeai_tui.ledger.text_column import RepeatingTextColumn, TextColumn
from codeai_tui.workstate.evidence import AttemptEvidence, CallEvidence, ReceiptIndex
from codeai_tui.workstate.ladder import Contribution
from codeai_tui.workstate.tool_ops import ToolsState
from codeai_tui.workstate.tool_receipts import ToolReceipts
from codeai_tui.workstate.verdicts import CallState, CallVerdict
from codeai_tui.workstate.vocab import CallStage, NextOperation

# Re-derive one call's evidence from its own events with seq <= n: (id, n, position).
CallLoader = Callable[[str, int, int], CallEvidence | None]

_EMPTY = -1
_GONE = -2  # a slot taken back to live objects (an event or anomaly named it again)
# slots, positions, task numbers and attempt counts: 4 bytes each (a count of calls or
# attempts beyond 2^31 would need more memory than any machine has for the rest)
_SMALL = "i"
_SMALL_MAX = (1 << 31) - 1
# a call's completion and its cover's start (seqs after its first), its attempt count and
# its status and verdict codes: a byte each where they fit, as where a call's events
# follow on (most calls), else the column widened (`blocks.appended`: 2, 4 or 8 bytes)
_NARROW, _NARROW_CODE = "B", "b"
# how a text is kept: not at all, as it is, or as what follows the call id (a key equal
# to the call id; an attempt id that begins with it)
_NONE, _KEPT, _SAME_AS_ID = 0, 1, 2
_AFTER_ID = 2
# how a slot came to be kept (`rest`): settled for good, or a call at rest (not settled)
# with or without its call.completed
_SETTLED, _RESTING_DONE, _RESTING = 0, 1, 2


def _too_full(entries: int, size: int) -> bool:
    """True when an index of `size` entries would hold more than two thirds of them
    (linear probing then takes about two probes to find a slot): at half, the two
    indexes of 1.37M calls took 4M entries each, 33 MB where 17 do."""
    return entries * 3 > size * 2


def _larger(size: int) -> int:
    """The next size of an index: a quarter larger. A console following a ledger grows
    its indexes as calls settle; doubling made each step as large as the index (1 MB
    each for the id and key indexes at 174,763 settled calls: 2 MB at once, a tenth of
    what ten minutes of following at 1,000 events/s may add), and left them filled a
    third to two thirds. A quarter at a time fills them from ~0.53 to two thirds, for
    about four times the re-placing (each entry placed again ~4 times over the index's
    life instead of ~once). Entries are found by remainder, not by mask, so any size
    works."""
    return size + max(1, size >> 2)


def _fitting(entries: int, size: int) -> int:
    """`size`, or the first larger size (`_larger` steps) not too full for `entries`."""
    while _too_full(entries, size):
        size = _larger(size)
    return size


def settles(st: CallState, anomalous: bool) -> bool:
    """True when `st` can be kept in columns: completed, nothing left to do, and what a
    call at rest needs (`rests`: no tool operations, no anomaly, never resumed)."""
    v = st.verdict
    return (v.stage is CallStage.COMPLETED and v.next_operation is NextOperation.NONE
            and st.evidence.completed_seq is not None and rests(st, anomalous))


def rests(st: CallState, anomalous: bool) -> bool:
    """True when `st`, not settled, can be kept in columns while it is quiet: what the
    columns hold of it is its verdict and facts as for a settled call (no tool
    operations, no anomaly, never resumed), and its next event takes it back."""
    ev = st.evidence
    # (the attempts that started are at most all of them: counted only when stored)
    return (not anomalous and not st.verdict.anomalous and ev.tools is None
            and ev.rare is None and len(ev.attempts) <= _SMALL_MAX
            and ev.position <= _SMALL_MAX)


class SettledCalls:
    """The columns of settled calls, by slot (order of settling), with an index from
    call id to slot (open addressing over an array: a dict cost a str and an int object
    per call). `load` derives a call's evidence when one is asked for its reason.

    A projector that keeps every call's first and last seq by position already lends
    them (`share_seqs`) instead of a second copy here; a slot taken back keeps the last
    seq it had (`forget`), so a snapshot reading it is unchanged."""

    __slots__ = ("_codes", "_gone", "_index", "_key_index", "_keyed", "_live",
                 "cover_attempt", "cover_seq", "cover_sha", "_load", "_statuses", "_task_of", "_tasks",
                 "attempts", "completed", "_firsts", "ids", "keys", "_lasts", "positions",
                 "status", "task", "verdicts", "has_key", "has_manifest", "_by_position",
                 "_gone_lasts", "cover_form", "rest", "_lent", "_keys_coming")

    def __init__(self, load: CallLoader) -> None:
        self._load = load
        self.ids = TextColumn()
        # a key equal to the call id (as many writers make it) is not kept twice
        self.keys = TextColumn()  # ("" where `has_key` is not _KEPT)
        self.has_key = array("b")  # _NONE, _KEPT, or _SAME_AS_ID
        self.has_manifest = array("b")
        self.task = array(_SMALL)  # index into `_tasks`
        # (the projector's own task ids and index once it lends them: `share_tasks`)
        self._tasks: list[str] = []
        self._task_of: dict[str, int] = {}
        self.positions = array(_SMALL)
        # by slot; by position instead when lent (`share_seqs`)
        self._firsts: array[int] | list[int] = array("q")
        self._lasts: array[int] | list[int] = array("q")
        self._by_position = False
        self._gone_lasts: dict[int, int] = {}  # slot taken back -> its last seq then
        # a call's completion and its cover's start as seqs after its first: 4 bytes
        # each, 8 in a column where one does not fit (`_append_off`; a hostile ledger's)
        self.completed: array[int] | list[int] = array(_NARROW)  # (0 where `rest` says
        # there is none)
        # _SETTLED, or a call at rest (see `rests`) with or without a completion
        self.rest = bytearray()
        self.attempts: array[int] | list[int] = array(_NARROW)
        self.status: array[int] | list[int] = array(_NARROW_CODE)  # index into `_statuses`
        # (-1: none)
        self._statuses: list[str] = []
        self.verdicts: array[int] | list[int] = array(_NARROW_CODE)  # index into `_codes`
        self._codes: list[CallVerdict] = []
        self._index = array(_SMALL, [_EMPTY]) * 1024
        self._live = 0  # slots in the index (taken back ones included: tombstones)
        self._gone: set[int] = set()  # slots taken back (rare: a hostile ledger)
        # the receipt coverage a settled call's attempt gives its key (see
        # `SettledCoverage`): its attempt id, started seq and request hash (32 bytes),
        # found by key through the id index where the key is the call id, else through
        # a second index (`_cover_slot`)
        # (the attempt id without the call id where it begins with it, as the runtime
        # names attempts: `cover_form`)
        self.cover_attempt = RepeatingTextColumn()
        self.cover_form = array("b")  # _NONE (no cover), _KEPT, or _AFTER_ID
        self.cover_seq: array[int] | list[int] = array(_NARROW)  # (after the call's first
        # seq, as `completed`)
        self.cover_sha = Digests()
        # from the first slot whose cover's request hash a receipt of the followed log
        # holds (see `LentHashes`), the slots' hashes read there or kept in `cover_sha`
        self._lent: LentHashes | None = None
        self._key_index = array(_SMALL, [_EMPTY]) * 1024
        self._keyed = 0
        self._keys_coming = 0  # (`reserve`: how many keys the key index may take soon)

    def __len__(self) -> int:
        return len(self.positions)

    def share_seqs(self, firsts: array[int] | list[int], lasts: array[int] | list[int]
                   ) -> None:
        """Read each call's first and last seq from these arrays by position (the
        projector's own, which it changes only for calls kept as objects), instead of
        keeping them by slot: 16 bytes a settled call. Only before any call is added,
        or again once lent: the lender's columns widened (`blocks.appended`), the same
        seqs in wider items."""
        if len(self.positions) and not self._by_position:
            raise ValueError("seqs can only be lent to empty columns")
        self._firsts, self._lasts, self._by_position = firsts, lasts, True

    def share_tasks(self, ids: list[str], positions: dict[str, int]) -> None:
        """Code each call's task as its position among the projector's tasks (`ids`, and
        `positions` from id to position, both kept and appended to by the projector,
        which gives every task a position before any of its calls is added here),
        instead of in a table of these columns' own: ~126 bytes a task fewer (a dict
        entry, an int and a list slot; a task in ten calls while following). The codes
        of the calls added so far are translated."""
        if self._tasks is ids:
            return
        if len(self.task):
            translate = [positions[task_id] for task_id in self._tasks]
            self.task = array(_SMALL, map(translate.__getitem__, self.task))
        self._tasks, self._task_of = ids, positions

    def first_seq(self, slot: int) -> int:
        return self._firsts[self.positions[slot] if self._by_position else slot]

    def last_seq(self, slot: int) -> int:
        gone = self._gone_lasts.get(slot) if self._gone_lasts else None
        if gone is not None:
            return gone
        return self._lasts[self.positions[slot] if self._by_position else slot]

    # ---- the id index

    # (linear probing from the text's hash, written out in each user: a generator of
    # probe positions cost a fifth of a fast start's time spent settling calls)

    @staticmethod
    def _look_up(index: array[int], text: str, text_of: Callable[[int], str | None]
                 ) -> int | None:
        """The slot `index` holds for `text` (`text_of(slot)` equal to it), None if none;
        a slot taken back (below 0) is stepped over."""
        size = len(index)
        at = hash(text) % size
        while (slot := index[at]) != _EMPTY:
            if slot >= 0 and text_of(slot) == text:
                return slot
            at = at + 1 if at + 1 < size else 0
        return None

    def find(self, call_id: str) -> int | None:
        """The slot of a settled call, None if it is not settled."""
        return self._look_up(self._index, call_id, self.ids.__getitem__)

    @staticmethod
    def _place_in(index: array[int], text: str, slot: int, free: int) -> None:
        """Put `slot` at the first probe position of `text` whose entry is below `free`
        (0: empty or taken back; -1+1: empty only)."""
        size = len(index)
        at = hash(text) % size
        while index[at] >= free:
            at = at + 1 if at + 1 < size else 0
        index[at] = slot

    def _place(self, call_id: str, slot: int, index: array[int] | None = None) -> None:
        self._place_in(self._index if index is None else index, call_id, slot, 0)

    def reserve(self, more: int, keys: int | None = None) -> None:
        """Make the indexes hold `more` calls and `keys` covered keys kept apart from
        their call ids (`_place_key`) without growing: a fast start knows how many calls
        it will settle at most, so each index is built once, not at each step. With
        `keys` not given (not known yet: at most one a call), the key index is sized for
        `more` when its first key comes, so a ledger whose calls are keyed by their ids
        holds none."""
        size = _fitting(self._live + more, len(self._index))
        if size != len(self._index):
            self._grow(size)
        if keys is None:
            self._keys_coming = self._keyed + more
            return
        size = _fitting(self._keyed + keys, len(self._key_index))
        if size != len(self._key_index):
            self._grow_keys(size)

    def _grow(self, size: int = 0) -> None:
        """A larger index (`_larger`, or `size` entries), built aside and then swapped in:
        a reader on another thread (the screen finding a row by id) never sees one half
        filled."""
        index = array(_SMALL, [_EMPTY]) * (size or _larger(len(self._index)))
        live = 0
        gone, place = self._gone, self._place_in
        for slot, call_id in enumerate(self.ids):
            if slot not in gone:
                place(index, call_id, slot, 0)
                live += 1
        self._index, self._live = index, live

    def forget(self, slot: int) -> None:
        """Take a slot back (its call lives as objects again); its columns stay, so a
        snapshot that reads it is unchanged, but the index no longer finds it."""
        call_id = self.ids[slot]
        if self._by_position:  # (the lender changes it as the call's events come)
            self._gone_lasts[slot] = self.last_seq(slot)
        if self.cover_form[slot] != _NONE and self.has_key[slot] == _SAME_AS_ID:
            # (its cover was found through the id index: it covers its key as before)
            self._index_key(call_id, slot)
        self._gone.add(slot)
        index = self._index
        size = len(index)
        at = hash(call_id) % size
        while index[at] != _EMPTY:
            if index[at] == slot:
                index[at] = _GONE
                return
            at = at + 1 if at + 1 < size else 0

    # ---- the columns

    def add(self, st: CallState, position: int, cover: AttemptEvidence | None = None,
            resting: bool = False, lent_at: tuple[Sequence[str], int] | object = None
            ) -> int:
        """Keep `st` (which `settles`, or `rests` where `resting`) in columns; returns its
        slot. `cover`: the started attempt that covers the call's key in the receipt
        check, kept here instead of in the coverage dict (the caller removes it there);
        None if it cannot be. `lent_at`: a followed log's column of body hashes and the
        place in it of one equal to the cover's request hash, read there instead of kept;
        or LEND_LATER: the receipt may come later (`lend_late`)."""
        ev = st.evidence
        slot = len(self.positions)
        self.ids.append(st.call_id)
        key = ev.key
        if key is None or key == st.call_id:
            self.keys.append("")
            self.has_key.append(_NONE if key is None else _SAME_AS_ID)
        else:
            self.keys.append(key)
            self.has_key.append(_KEPT)
        self.has_manifest.append(ev.manifest_seq is not None)
        self.task.append(self._code_of(self._tasks, self._task_of, ev.task_id))
        self.positions.append(position)
        if not self._by_position:
            self._firsts.append(ev.first_seq)
            self._lasts.append(ev.last_seq)
        first, done = ev.first_seq, ev.completed_seq
        self._append_off("completed", done - first if done is not None else 0)
        self.rest.append(_SETTLED if not resting else
                         _RESTING if done is None else _RESTING_DONE)
        self._append_off("attempts", st.attempts)
        self._append_off("status", self._code(self._statuses, ev.status))
        self._append_off("verdicts", self._code(self._codes, st.verdict))
        if _too_full(self._live + 1, len(self._index)):
            self._grow()
        self._place(st.call_id, slot)
        self._live += 1
        if cover is None:
            self.cover_attempt.append("")
            self.cover_form.append(_NONE)
        elif cover.attempt_id.startswith(st.call_id):
            self.cover_attempt.append(cover.attempt_id[len(st.call_id):])
            self.cover_form.append(_AFTER_ID)
        else:
            self.cover_attempt.append(cover.attempt_id)
            self.cover_form.append(_KEPT)
        self._append_off("cover_seq", cover.started_seq - first  # type: ignore[operator]
                         if cover is not None else 0)
        digest = bytes.fromhex(cover.request_sha256) if cover is not None \
            else bytes(32)  # type: ignore[arg-type]
        lent = self._lent
        if cover is None or lent_at is None:
            if lent is None:
                self.cover_sha.append(digest)
            else:
                lent.keep(digest)
        else:
            if lent is None:
                lent = self._lent = LentHashes(slot, self.cover_sha)
            if lent_at is LEND_LATER:
                lent.wait(slot, digest)
            else:
                lent.lend(*lent_at)  # type: ignore[misc]
        if cover is not None:
            if key != st.call_id:
                self._index_key(key, slot)  # type: ignore[arg-type]  # (a cover has a key)
            elif self._keyed:
                self._place_key(key, slot, new=False)
        return slot

    def lend_late(self, slot: int, shas: Sequence[str], at: int) -> None:
        """The receipt whose hash slot `slot`'s cover waits for (`add`'s LEND_LATER) is
        at `shas[at]`: read it there from now on."""
        if self._lent is not None:
            self._lent.lend_late(slot, shas, at)

    def read_on(self, shas: Sequence[str]) -> None:
        """The followed log read on: its column of body hashes, where the hashes lent
        are read from now on (an older column lent would keep its last block's texts,
        ~460 KB, after the log's own have been packed)."""
        if self._lent is not None:
            self._lent.shas = shas

    def own_digests(self) -> None:
        """Keep every cover's request hash here again, the lent column let go (the log
        is read anew or was rewritten: its places may hold other receipts)."""
        if self._lent is None:
            return
        own = Digests()
        for slot in range(len(self.positions)):
            own.append(bytes.fromhex(self.cover_sha_of(slot)))
        self.cover_sha = own  # (before: a reader that sees no lent state reads this)
        self._lent = None

    def cover_sha_of(self, slot: int) -> str:
        """The request hash of the attempt covering the call in `slot`, as hex text
        (64 zeros for none)."""
        lent = self._lent
        return self.cover_sha[slot].hex() if lent is None else lent.sha_of(slot)

    def _append_off(self, column: str, off: int) -> None:
        """Append `off` to a narrow column (`_NARROW`), widened where it does not fit
        (checked, never wrapped: `blocks.appended`)."""
        values = getattr(self, column)
        try:
            values.append(off)
        except OverflowError:
            setattr(self, column, appended(values, off))

    def _extend_offs(self, column: str, more: array[int] | list[int]) -> None:
        """Extend an offsets column by another's (either may have been widened)."""
        setattr(self, column, extended(getattr(self, column), more))

    def _extend_codes(self, column: str, codes: list[int], more: array[int] | list[int]
                      ) -> None:
        """Extend a code column by another's codes, each `c` becoming `codes[c]` (-1
        stays -1): in this column's items where they fit (never a list of them all:
        700,000 at 10M events), else widened."""
        values = getattr(self, column)
        if type(values) is array:
            try:
                values.extend(array(values.typecode, (codes[c] if c >= 0 else -1 for c in more)))
                return
            except OverflowError:
                pass
        self._extend_offs(column, [codes[c] if c >= 0 else -1 for c in more])

    def to_extend(self) -> SettledCalls:
        """These columns (shared, not copied) without their indexes, for another
        process's `extend`, which places every slot in its own indexes: 8 bytes a call
        fewer handed over, and held at once by the taker."""
        if self._lent is not None:
            raise ValueError("columns with lent hashes stay in their process")
        shipped = copy.copy(self)
        shipped.cover_sha = self.cover_sha.copy()  # (`extend` takes its chunks)
        shipped._index = array(_SMALL, [_EMPTY])
        shipped._key_index = array(_SMALL, [_EMPTY])
        return shipped

    def cover_keys(self) -> Iterator[str]:
        """The keys whose covering attempt is kept here."""
        for slot, form in enumerate(self.cover_form):
            if form != _NONE:
                yield self.key_of(slot)  # type: ignore[misc]  # (a cover has a key)

    def extend(self, other: SettledCalls, shift: int) -> None:
        """Append `other`'s slots in order (columns settled in another process, of calls
        whose positions follow this projection's: each moved by `shift`), as if each had
        been `add`ed here. Both read seqs by position (`share_seqs`): the lender's seqs
        of those positions must be in place. None of `other`'s keys may be covered here
        already (the caller checks: the receipt check keeps one cover a key). `other`
        is left empty (hand over `to_extend()`'s copy to keep the columns it was taken
        from)."""
        if not (self._by_position and other._by_position) or other._gone \
                or self._lent is not None or other._lent is not None:
            raise ValueError("only columns lent seqs by position, none taken back nor lent "
                             "hashes, extend")
        base, added = len(self.positions), len(other.positions)
        # (an int object each was ~36 bytes a covered call held through the copy)
        covered = array(_SMALL, (slot + base for slot, form in enumerate(other.cover_form)
                                 if form != _NONE and other.has_key[slot] == _KEPT))
        # (both indexes grown first: growing the id index places every slot the columns
        # hold)
        self.reserve(added, len(covered))
        # each of `other`'s columns is let go once copied (`_taken`): the half a helper
        # hands over (~90 MB at 10M events) is not held twice at once; the indexes are
        # placed last, from these columns
        _extend_text(self.ids, _taken(other, "ids"))
        _extend_text(self.keys, _taken(other, "keys"))
        self.has_key.extend(_taken(other, "has_key"))
        self.has_manifest.extend(_taken(other, "has_manifest"))
        tasks = [self._code_of(self._tasks, self._task_of, t) for t in other._tasks]
        self.task.extend(array(_SMALL, (tasks[t] for t in _taken(other, "task"))))
        self.positions.extend(array(_SMALL, (p + shift for p in _taken(other, "positions"))))
        self._extend_offs("completed", _taken(other, "completed"))
        self.rest.extend(_taken(other, "rest"))
        self._extend_offs("attempts", _taken(other, "attempts"))
        self._extend_codes("status", [self._code(self._statuses, s) for s in other._statuses],
                           _taken(other, "status"))
        self._extend_codes("verdicts", [self._code(self._codes, v) for v in other._codes],
                           _taken(other, "verdicts"))
        _extend_text(self.cover_attempt, _taken(other, "cover_attempt"))
        self.cover_form.extend(_taken(other, "cover_form"))
        self._extend_offs("cover_seq", _taken(other, "cover_seq"))
        self.cover_sha.take(_taken(other, "cover_sha"))
        index, place = self._index, self._place_in
        for slot, call_id in enumerate(islice(self.ids, base, None), base):
            place(index, call_id, slot, 0)
        self._live += added
        for slot in covered:
            self._keyed += self._place_key(self.key_of(slot), slot)  # type: ignore[arg-type]
        if self._keyed:
            ids, has_key, cover_form = self.ids, self.has_key, self.cover_form
            for slot in range(base, base + added):
                if cover_form[slot] != _NONE and has_key[slot] == _SAME_AS_ID:
                    self._place_key(ids[slot], slot, new=False)

    @staticmethod
    def _code_of(table: list[str], codes: dict[str, int], value: str) -> int:
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(table)
            table.append(value)
        return code

    @staticmethod
    def can_cover(att: AttemptEvidence) -> bool:
        """True when the columns can keep what coverage reads of `att` (a request hash
        of 64 lower-case hex digits, as every writer records; others stay as objects)."""
        sha = att.request_sha256
        return att.started_seq is not None and sha is not None and _is_hex(sha)

    def _index_key(self, key: str, slot: int) -> None:
        if _too_full(self._keyed + 1, len(self._key_index)):
            coming, self._keys_coming = self._keys_coming, 0
            self._grow_keys(_fitting(max(self._keyed + 1, coming), len(self._key_index)))
        self._keyed += self._place_key(key, slot)

    def _place_key(self, key: str, slot: int, new: bool = True) -> bool:
        """Let `slot` cover `key` in the key index: in place of an earlier slot that
        covered it (a call whose attempt started earlier, settled after the one that
        covered: the cover moves to it, as the coverage moved), else (where `new`) in
        the first empty entry. True when the key is new to the index.

        The key index holds the slots whose key is kept apart from the call id, those
        taken back (`forget`) whose key is their id, and a slot whose key is its id
        where the index holds that key already; any other slot whose key is its own id
        is found through the id index (`_cover_slot`). So a key the index holds has
        its latest cover there, and a ledger whose writers key calls by their ids (as
        the runtime does) keeps no second index of them: ~6 bytes a settled call, and a
        second index grown, with the old one beside the new for a moment, whenever the
        first grows."""
        index = self._key_index
        size = len(index)
        at = hash(key) % size
        while (held := index[at]) != _EMPTY:
            if self.key_of(held) == key:
                index[at] = max(held, slot)
                return False
            at = at + 1 if at + 1 < size else 0
        if new:
            index[at] = slot
        return new

    def _grow_keys(self, size: int = 0) -> None:
        """A larger key index, placed from the one it replaces (one entry a key)."""
        index = array(_SMALL, [_EMPTY]) * (size or _larger(len(self._key_index)))
        place = self._place_in
        for slot in self._key_index:
            if slot >= 0:
                place(index, self.key_of(slot), slot, 0)  # type: ignore[arg-type]
        self._key_index = index

    def covers(self, key: str) -> bool:
        """Whether an attempt kept here covers `key` (`cover`, no Cover made)."""
        return self._cover_slot(key) is not None

    def _cover_slot(self, key: str) -> int | None:
        """The slot whose kept attempt covers `key`: the key index's, else a slot in the
        id index whose key is its id (`_place_key`). `_look_up` and `key_of` written
        out: a first snapshot asks this for every receipt of the log, 144,000 at 1M
        events (a second probe for each key the key index holds cost it ~0.3 s)."""
        index, has_key, ids = self._key_index, self.has_key, self.ids
        h = hash(key)
        size = len(index)
        at = h % size
        while (slot := index[at]) != _EMPTY:
            kept = has_key[slot]
            if (ids[slot] if kept == _SAME_AS_ID else
                    self.keys[slot] if kept == _KEPT else None) == key:
                return slot
            at = at + 1 if at + 1 < size else 0
        index = self._index
        size = len(index)
        at = h % size
        while (slot := index[at]) != _EMPTY:
            if slot >= 0 and ids[slot] == key:
                return slot if has_key[slot] == _SAME_AS_ID and \
                    self.cover_form[slot] != _NONE else None
            at = at + 1 if at + 1 < size else 0
        return None

    def cover(self, key: str) -> Cover | None:
        """The attempt kept here that covers `key`, if any."""
        slot = self._cover_slot(key)
        if slot is None:
            return None
        return Cover(self.cover_attempt_id(slot), self.cover_started_seq(slot),
                     self.cover_sha_of(slot), slot, self)

    def cover_started_seq(self, slot: int) -> int:
        """The attempt.started seq of the attempt covering the call's key."""
        return self.cover_seq[slot] + self.first_seq(slot)

    def cover_slot(self, key: str, sha: str) -> int:
        """The slot whose kept attempt covers `key` with request hash `sha`, -1 for none:
        `covering`'s answer from these columns, without making the Cover (its attempt
        id put together) that a check keeping only the slot would drop."""
        slot = self._cover_slot(key)
        return slot if slot is not None and self.cover_sha_of(slot) == sha else -1

    @staticmethod
    def _code(table: list[Any], value: Any) -> int:
        if value is None:
            return -1
        try:
            return table.index(value)
        except ValueError:
            table.append(value)
            return len(table) - 1

    def contribution(self, slots: Iterable[int]) -> Contribution:
        """What these settled calls give their task's rollup together, as `contribution`
        gives each (ladder.py) and `TaskRollup.take` keeps: a settled call is completed
        with nothing to do and no tool operations, so it offers only its completion when
        its status is succeeded, and of those the rollup keeps the latest. Read from the
        columns: time travel asks this of every call of a task in flight (the time
        travel tests check it against projecting the prefix)."""
        best, best_done = -1, 0
        completed, status, statuses = self.completed, self.status, self._statuses
        for slot in slots:
            if self.rest[slot] != _SETTLED:
                raise ValueError("a call at rest gives what its verdict gives: add it")
            code = status[slot]
            if code >= 0 and statuses[code] == "succeeded":
                done = completed[slot] + self.first_seq(slot)
                if best < 0 or done > best_done:
                    best, best_done = slot, done
        if best < 0:
            return (None, None, None)
        return (None, (best_done, self.ids[best]), None)

    def state(self, slot: int) -> ColumnCallState:
        """The verdict kept in `slot`, as a CallState (its evidence derived when read)."""
        return ColumnCallState(self, slot)

    def key_of(self, slot: int) -> str | None:
        """The call's idempotency key (None: it has none)."""
        kept = self.has_key[slot]
        if kept == _KEPT:
            return self.keys[slot]
        return self.ids[slot] if kept == _SAME_AS_ID else None

    def slots_keyed(self, key: str) -> list[int]:
        """Every slot whose call's idempotency key is `key`, rising, slots taken back
        included (a snapshot may still read them): a key kept apart from the call id
        found in the key column (searched in its joined texts), a key that is its call's
        id through the id index. Reading each slot's key in turn took ~1.5 µs a call.
        Each slot found is checked by its key as read (the follower may append while a
        console asks)."""
        found = self.keys.positions_of(key)
        by_id = self.find(key)
        if by_id is not None:
            found.append(by_id)
        n, key_of = len(self), self.key_of
        return sorted({s for s in (*found, *tuple(self._gone)) if s < n and key_of(s) == key})

    def cover_attempt_id(self, slot: int) -> str:
        """The id of the attempt covering the call's key (see `add`)."""
        kept = self.cover_attempt[slot]
        return self.ids[slot] + kept if self.cover_form[slot] == _AFTER_ID else kept

    def settled(self, slot: int) -> bool:
        """Whether the call in `slot` settled for good (not a call at rest)."""
        return self.rest[slot] == _SETTLED

    def completed_seq(self, slot: int) -> int | None:
        if self.rest[slot] == _RESTING:
            return None
        return self.completed[slot] + self.first_seq(slot)

    def verdict(self, slot: int) -> CallVerdict:
        return self._codes[self.verdicts[slot]]

    def task_id(self, slot: int) -> str:
        return self._tasks[self.task[slot]]

    def status_of(self, slot: int) -> str | None:
        code = self.status[slot]
        return self._statuses[code] if code >= 0 else None

    def load(self, slot: int) -> CallEvidence:
        """The call's evidence from its own events (the same fold and ladder)."""
        call_id = self.ids[slot]
        ev = self._load(call_id, self.last_seq(slot), self.positions[slot])
        if ev is None:
            raise LookupError(f"the events of settled call {call_id[:70]!r} cannot be read")
        return ev


LEND_LATER = object()  # (`SettledCalls.add`: the cover's receipt may come later)
_WAITING = -(1 << 31)  # (`LentHashes.at_of`: the slot's hash waits in `pending`)


class LentHashes:
    """The covers' request hashes from slot `start` on, where a receipt of the followed
    log holds the same hash (the receipt each covers): that receipt's place in the log's
    column of body hashes (4 bytes) instead of 32 bytes of its own. The column lent is
    the log's last read (a receipt keeps its place as a log is read on; the caller lets
    these go when it reads another log: `SettledCalls.own_digests`).

    A call can settle before its receipt is read (the log is read on a second or so
    apart): its hash waits in `pending` for it (`lend_late`), and is kept in `own` once
    WAIT_MAX have waited longer. A reader on another thread sees each slot's hash in
    one of the places the writer moves it through in turn."""

    __slots__ = ("at_of", "own", "pending", "shas", "start")

    WAIT_MAX = 4096

    def __init__(self, start: int, own: Digests) -> None:
        self.start = start
        self.own = own  # the hashes kept: slot s < start at s, later ones where `at_of` says
        # per slot from `start`: its index in `own`, -1 - its receipt's place, or _WAITING
        self.at_of = array("i")
        self.shas: Sequence[str] = ()
        self.pending: dict[int, bytes] = {}

    def sha_of(self, slot: int) -> str:
        if slot < self.start:
            return self.own[slot].hex()
        at = self.at_of[slot - self.start]
        if at == _WAITING:
            digest = self.pending.get(slot)
            if digest is not None:
                return digest.hex()
            at = self.at_of[slot - self.start]  # (lent or kept meanwhile)
        return self.own[at].hex() if at >= 0 else self.shas[-1 - at]

    def keep(self, digest: bytes) -> None:
        at = len(self.own)
        self.own.append(digest)  # (first: a reader then finds what `at_of` names)
        self.at_of.append(at)

    def lend(self, shas: Sequence[str], at: int) -> None:
        self.shas = shas
        self.at_of.append(-1 - at)

    def wait(self, slot: int, digest: bytes) -> None:
        self.pending[slot] = digest
        self.at_of.append(_WAITING)
        if len(self.pending) > self.WAIT_MAX:
            oldest = next(iter(self.pending))
            at = len(self.own)
            self.own.append(self.pending[oldest])
            self.at_of[oldest - self.start] = at
            del self.pending[oldest]

    def lend_late(self, slot: int, shas: Sequence[str], at: int) -> None:
        digest = self.pending.get(slot)
        if digest is None or shas[at] != digest.hex():
            return  # (not waiting, or not its hash: kept as it is)
        self.shas = shas
        self.at_of[slot - self.start] = -1 - at
        del self.pending[slot]


class Digests:
    """32-byte digests by slot, in chunks of 1 MiB: appending never moves what is held.
    One bytearray of 1.37M digests (44 MB) grew by a copy beside itself as a 10M-event
    start took its helper's half, the console's peak."""

    __slots__ = ("_chunks",)

    PER_CHUNK = 1 << 15  # digests

    def __init__(self) -> None:
        self._chunks: list[bytearray] = [bytearray()]

    def __len__(self) -> int:
        return (len(self._chunks) - 1) * self.PER_CHUNK + len(self._chunks[-1]) // 32

    def __getitem__(self, slot: int) -> bytes:
        if not 0 <= slot < len(self):
            raise IndexError("digest slot out of range")
        chunk, at = divmod(slot, self.PER_CHUNK)
        # (a slice, not a memoryview: an export would stop the follower's thread from
        # appending to the last chunk while the screen's reads it)
        return bytes(self._chunks[chunk][at * 32:at * 32 + 32])

    def append(self, digest: bytes) -> None:
        if len(digest) != 32:
            raise ValueError("a digest is 32 bytes")
        last = self._chunks[-1]
        if len(last) == self.PER_CHUNK * 32:
            last = bytearray()
            self._chunks.append(last)
        last += digest

    def copy(self) -> Digests:
        """These digests, the full chunks shared (never changed again: only the last one
        is appended to, so it is copied)."""
        out = Digests()
        out._chunks = [*self._chunks[:-1], bytearray(self._chunks[-1])]
        return out

    def take(self, other: Digests) -> None:
        """Append `other`'s digests, filling this one's last chunk first, and let each of
        its chunks go once copied (the half a helper handed over is then never held
        twice: 22 MB at 10M events); `other` is left empty."""
        full = self.PER_CHUNK * 32
        chunks, other._chunks = other._chunks, [bytearray()]
        chunks.reverse()
        while chunks:
            chunk = chunks.pop()
            view, at = memoryview(chunk), 0
            while at < len(view):
                last = self._chunks[-1]
                if len(last) == full:
                    last = bytearray()
                    self._chunks.append(last)
                take = full - len(last)
                last += view[at:at + take]
                at += take


def _taken(columns: SettledCalls, name: str) -> Any:
    """`columns`' column `name`, an empty one left in its place: the caller's reference
    is then the last (`extend`'s, which lets each go once copied)."""
    column = getattr(columns, name)
    setattr(columns, name, array(column.typecode) if isinstance(column, array)
            else type(column)())
    return column


def _extend_text(column: TextColumn, texts: Iterable[str]) -> None:
    """Append `texts` a block at a time: a column's `extend` lists everything it is
    given before it seals blocks (70,000 ids: ~6 MB of str objects at once)."""
    it = iter(texts)
    while chunk := list(islice(it, BLOCK)):
        column.extend(chunk)


_HEX = frozenset("0123456789abcdef")


def _is_hex(text: str) -> bool:
    return len(text) == 64 and _HEX.issuperset(text)


class Cover:
    """What the receipt check reads of the attempt covering a key (see receipts.covering),
    made from the columns when asked; `slot` and `cols`: the settled call's slot in the
    columns it was read from (None: not read from columns), so a check can keep the
    cover as that slot instead of the attempt id's text."""

    __slots__ = ("attempt_id", "cols", "request_sha256", "slot", "started_seq")

    def __init__(self, attempt_id: str, started_seq: int, request_sha256: str,
                 slot: int | None = None, cols: SettledCalls | None = None) -> None:
        self.attempt_id = attempt_id
        self.started_seq = started_seq
        self.request_sha256 = request_sha256
        self.slot = slot
        self.cols = cols


class SettledCoverage(dict):  # type: ignore[type-arg]
    """The receipt coverage (receipts.Coverage) of a projection that settles calls in
    columns: a key whose covering attempt belongs to a settled call is answered from
    the columns (`get`, the one way coverage is read), not held as objects."""

    __slots__ = ("cols",)

    def __init__(self, started: dict[str, Any], cols: SettledCalls) -> None:
        super().__init__(started)
        self.cols = cols

    def covers(self, key: str) -> bool:
        """Whether some attempt covers `key` (here or in the columns)."""
        return dict.__contains__(self, key) or self.cols.covers(key)

    def get(self, key: str, default: Any = None) -> Any:
        have = dict.get(self, key)
        if have is None:
            have = self.cols.cover(key)
            return default if have is None else have
        return have


class ColumnCallState(CallState):
    """A settled call's verdict read from the columns: its facts without an object per
    call; its evidence (reason, JSON, lanes) derived from its events on first read."""

    __slots__ = ("_cols", "_ev", "_slot")

    def __init__(self, cols: SettledCalls, slot: int) -> None:  # noqa: D107
        object.__setattr__(self, "_cols", cols)
        object.__setattr__(self, "_slot", slot)
        object.__setattr__(self, "_ev", None)

    @property  # type: ignore[override]
    def verdict(self) -> CallVerdict:
        return self._cols.verdict(self._slot)

    @property  # type: ignore[override]
    def evidence(self) -> CallEvidence:
        ev = self._ev
        if ev is None:
            ev = self._cols.load(self._slot)
            object.__setattr__(self, "_ev", ev)
        return ev

    def __reduce__(self) -> tuple[type[CallState], tuple[object, ...]]:
        v = self.verdict
        return (CallState, (v.stage, v.next_operation, v.provider_effect,
                            v.duplicate_effect_risk, v.anomalous, self.evidence))

    @property
    def call_id(self) -> str:
        return self._cols.ids[self._slot]

    @property
    def task_id(self) -> str:
        return self._cols.task_id(self._slot)

    @property
    def idempotency_key(self) -> str | None:
        cols = self._cols
        return cols.key_of(self._slot)

    @property
    def attempts(self) -> int:
        return self._cols.attempts[self._slot]

    @property
    def superseded_by(self) -> str | None:
        return None  # (a resumed call is never settled in columns)

    @property
    def resumed_from(self) -> str | None:
        return None

    @property
    def status(self) -> str | None:
        return self._cols.status_of(self._slot)

    @property
    def first_seq(self) -> int:
        return self._cols.first_seq(self._slot)

    @property
    def last_seq(self) -> int:
        return self._cols.last_seq(self._slot)

    @property
    def completed_seq(self) -> int | None:
        return self._cols.completed_seq(self._slot)

    @property
    def has_manifest(self) -> bool:
        return bool(self._cols.has_manifest[self._slot])

    @property
    def has_tools(self) -> bool:
        return False

    @property
    def tools(self) -> ToolsState | None:
        return None

    @property
    def settled(self) -> bool:
        return self._cols.settled(self._slot) or \
            self.verdict.next_operation is NextOperation.NONE

    def as_json(self, receipts: ReceiptIndex | None = None,
                tool_receipts: ToolReceipts | None = None, *,
                limit: int | None = None) -> dict[str, Any]:
        return CallState.as_json(self, receipts, tool_receipts, limit=limit)


__all__ = ["CallLoader", "ColumnCallState", "Cover", "SettledCalls", "SettledCoverage",
           "rests", "settles"]
