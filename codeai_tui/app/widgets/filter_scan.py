"""A pane's filter over many rows, scanned in a thread (the pane owns it).

Matching a filter means building what each row shows: ~0.5 s for the 137,000 calls of a
1M-event ledger and ~2.8 s for its 144,000 receipts, ten times that at 10M. On the
screen's thread, and again for every snapshot while following, that froze the console
(a filtered Receipts pane at 1,000 events/s: the header stuck for over three minutes,
`escape` unanswered, still stuck after the writer stopped). So a filter over
`IN_THREAD_FROM` rows or more is scanned in a worker thread: the pane shows the last
finished scan's rows meanwhile (the same filter of the same case; rows keep their
places as a followed case grows), and "filtering…" until the first scan of a filter
ends. One scan runs at a time; a newer snapshot waits until the last scan ended twice as long
ago as it took, so scanning takes at most about a third of the time while following
(the screen's thread and the follower's share the interpreter, or the cores, with it);
a filter just typed is scanned at once.

A scan of `FORK_FROM` rows or more runs in forked children instead (`WatchedFork`, niced),
its thread waiting: in a thread it held the interpreter for seconds, and every time the
screen's thread waited for it to paint a snapshot it waited up to a switch interval
(~5 ms), many times a paint. A filtered Receipts pane of a 1M-event ledger, followed at
1,000 events/s, left the header unchanged for 1.0-2.4 s while its scan ran, a Calls pane
up to 1.2 s (0.15-0.35 s with the child, about the header's usual step). The child's rows are the snapshot's, copied on write; a child that fails (a read of
the ledger in it is refused: a connection is never used across a fork), dies or stalls
leaves its part of the scan to the thread, so what the pane shows never depends on it.
The rows are split between children, one a core (at most `MAX_CHILDREN`, each with
`FORK_FROM` rows or more): a Receipts filter over a 1M-event ledger that no process
writes to (a crashed case) showed its rows after 3.1-3.4 s with one child, the second
core idle, and 1.8-1.9 s with two (at 10M events: 22.9 s and 12.3 s).
"""

from __future__ import annotations

import contextlib
import os
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from codeai_tui.console.filters import Needle
from codeai_tui.services.forked import usable_cores
from codeai_tui.services.watched_fork import Beat, WatchedFork
from codeai_tui.textsafe import visible

IN_THREAD_FROM = 5_000  # rows; fewer are matched at once (~20 ms of calls)
_CHECK_EVERY = 1024  # rows between looks at whether the scan is still wanted
FORK_FROM = 20_000  # rows; a scan of more runs in a forked child (fewer: ~0.1 s of calls)
MAX_CHILDREN = 4  # children one scan is split between (one a core, `FORK_FROM` rows each)
FORK_NICENESS = 10  # the child's priority below the console's own threads
FORK_GRACE_S = 3600.0  # a child still moving (its counter) is waited for this long
RETRY_MIN_S = 1.0  # a scan that raised waits at least this long before newer items


@dataclass(frozen=True, slots=True)
class ScanRequest:
    """What to scan: `match_at(i)` for every position of `items`; `scope` names the case
    (and as-of) whose items they are, so a scan of another is never shown for this one."""

    needle: Needle
    scope: object
    items: Sequence[Any]
    match_at: Callable[[int], bool]
    length: int  # (of `items` when asked: what the scan covers)

    def same_filter(self, other: ScanRequest | Scanned | Failed | None) -> bool:
        return other is not None and other.needle == self.needle and other.scope == self.scope


@dataclass(frozen=True, slots=True)
class Scanned:
    """A finished scan: the positions of `items` that matched."""

    needle: Needle
    scope: object
    items: Sequence[Any]
    length: int  # (of `items` when scanned: a list may grow in place)
    indices: list[int]


@dataclass(frozen=True, slots=True)
class Failed:
    """A scan that raised: what it was of, and the error in one line."""

    needle: Needle
    scope: object
    items: Sequence[Any]
    problem: str


class FilterScans:
    """One pane's scans: which is wanted, which runs, the last finished, the last that
    failed. Used from the screen's thread; `scan` alone runs in the worker."""

    def __init__(self) -> None:
        self.done: Scanned | None = None
        self.failed: Failed | None = None
        self.wanted: ScanRequest | None = None
        self.running = False
        self.generation = 0  # bumped when what runs is no longer wanted
        self._ended_at = 0.0
        self._took = 0.0

    def indices(self, request: ScanRequest) -> tuple[list[int], bool]:
        """(positions to show now, whether a scan must start) for `request`: the finished
        scan's when it is of these very items; else the last finished scan of the same
        filter and scope (positions past the items cut off), or none, while one runs, or
        when the scan of these very items raised (`failure` says why)."""
        done = self.done
        if (done is not None and request.same_filter(done) and done.items is request.items
                and done.length == len(request.items)):
            self.wanted = None
            return done.indices, False
        if not request.same_filter(self.wanted) and self.running:
            self.generation += 1  # (the running scan is of another filter or case)
        failed = self.failed
        if failed is not None and request.same_filter(failed) and failed.items is request.items:
            # (scanned again only for newer items, after `delay`: a scan that raises at
            # once would otherwise be begun again at every paint, hundreds a second)
            self.wanted = None
            return self._last_rows(request), False
        self.wanted = request
        return self._last_rows(request), not self.running

    def _last_rows(self, request: ScanRequest) -> list[int]:
        """The last finished scan's positions when it is of this filter and scope (those
        past the items cut off), else none."""
        done = self.done
        if done is None or not request.same_filter(done):
            return []
        n = len(request.items)
        return done.indices if not done.indices or done.indices[-1] < n else [
            i for i in done.indices if i < n]

    def failure(self, needle: Needle | None, scope: object) -> str | None:
        """The error of this filter's last scan of `scope`, when it raised."""
        failed = self.failed
        if failed is None or failed.needle != needle or failed.scope != scope:
            return None
        return failed.problem

    def waiting(self) -> bool:
        """Whether a scan is wanted and none of its filter and scope has ended yet."""
        wanted = self.wanted
        return wanted is not None and not wanted.same_filter(self.done)

    def drop(self) -> None:
        """No filter (or a few rows, matched at once): nothing wanted, nothing kept."""
        if self.running:
            self.generation += 1
        self.wanted = self.done = self.failed = None

    def settle(self) -> None:
        """The caller takes the last finished scan and matches later items itself: no
        newer scan is wanted (one already running still ends as `done`)."""
        self.wanted = None

    def delay(self) -> float:
        """Seconds to wait before the next scan: none for a filter (or case) whose scan
        has not ended yet, which the operator waits for; else, a newer snapshot of a
        followed case, until the last scan ended twice as long ago as it took (scanning
        at most about a third of the time)."""
        wanted = self.wanted
        if wanted is not None and wanted.same_filter(self.failed):
            return max(0.0, self._ended_at + retry_delay(self._took) - time.monotonic())
        if wanted is None or not wanted.same_filter(self.done):
            return 0.0
        return max(0.0, self._ended_at + 2 * self._took - time.monotonic())

    def scan(self, request: ScanRequest, generation: int,
             stop: Callable[[], bool] | None = None) -> list[int] | None:
        """In the worker: the matching positions (`matching_positions`), or None once the
        scan is not wanted (another filter or case, or `stop()`: the pane is going)."""
        return matching_positions(request, lambda: generation != self.generation
                                  or (stop is not None and stop()))

    def ended(self, request: ScanRequest, generation: int, found: list[int] | None,
              took: float, problem: str | None = None) -> bool:
        """On the screen's thread, a scan's end: kept when still wanted, its error
        (`problem`) too when it raised. True when a newer request waits for the next
        scan."""
        self.running = False
        self._ended_at, self._took = time.monotonic(), took
        if generation == self.generation and (found is not None or problem is not None):
            if found is not None:
                self.done = Scanned(request.needle, request.scope, request.items,
                                    request.length, found)
                self.failed = None
            else:
                self.failed = Failed(request.needle, request.scope, request.items,
                                     problem or "")
            if self.wanted is request:
                self.wanted = None
        return self.wanted is not None


def retry_delay(took: float) -> float:
    """Seconds before a scan that raised is tried again with newer items: twice its
    time, at least `RETRY_MIN_S` (one raising at once would be tried at every snapshot,
    each a fork)."""
    return max(RETRY_MIN_S, 2 * took)


def one_line(exc: BaseException) -> str:
    """A scan's error as the pane shows it: its type and first line, printable."""
    text = str(exc).strip()
    return visible(f"{type(exc).__name__}: {text}" if text else type(exc).__name__,
                   one_line=True, limit=200)


def matching_positions(request: ScanRequest, unwanted: Callable[[], bool]
                       ) -> list[int] | None:
    """The positions `request` matches, or None once `unwanted()`. From `FORK_FROM` rows
    in forked children (`parts`), where they can be had; here the parts whose child could
    not be had or did not end well."""
    children: list[tuple[int, int, WatchedFork[array[int]] | None]] = []
    forks = hasattr(os, "fork")
    try:
        for lo, hi in parts(request.length) if forks else [(0, request.length)]:
            child = None
            if forks and hi - lo >= FORK_FROM:
                with contextlib.suppress(OSError):  # (no process to be had: here)
                    child = WatchedFork(lambda beat, lo=lo, hi=hi: _in_child(request, lo, hi, beat))
            children.append((lo, hi, child))
        out: list[int] = []
        for lo, hi, child in children:
            found = child.result(FORK_GRACE_S, stop=unwanted) if child is not None else None
            if unwanted():
                return None
            if isinstance(found, array):
                out.extend(found)
                continue
            here = _matching(request, lo, hi, lambda _i: unwanted())
            if here is None:
                return None
            out.extend(here)
        return out
    finally:
        for _lo, _hi, child in children:
            if child is not None:
                child.close()


def parts(length: int, cores: int | None = None) -> list[tuple[int, int]]:
    """`length` rows as ranges (lo, hi), one a child: as many as the cores this process
    may run on (`cores`, else asked), at most `MAX_CHILDREN`, each of `FORK_FROM` rows
    or more (fewer rows: one range, which the thread matches below `FORK_FROM`)."""
    n = max(1, min(cores if cores is not None else usable_cores(), MAX_CHILDREN,
                   length // FORK_FROM))
    bounds = [length * k // n for k in range(n + 1)]
    return list(zip(bounds, bounds[1:], strict=False))


def _in_child(request: ScanRequest, lo: int, hi: int, beat: Beat) -> array[int]:
    """In a forked child, niced: the positions in [`lo`, `hi`), its counter moved as it
    goes (its parent sees it is not hung)."""
    with contextlib.suppress(OSError):
        os.nice(FORK_NICENESS)

    def moved(i: int) -> bool:
        beat(i)
        return False  # (a child no longer wanted is killed)

    return array("i", _matching(request, lo, hi, moved) or ())


def _matching(request: ScanRequest, lo: int, hi: int, stopped: Callable[[int], bool]
              ) -> list[int] | None:
    """The positions in [`lo`, `hi`) `request` matches; None once `stopped(i)`, asked
    every `_CHECK_EVERY` rows."""
    out: list[int] = []
    match_at = request.match_at
    for i in range(lo, hi):
        if not (i - lo) % _CHECK_EVERY and stopped(i):
            return None
        if match_at(i):
            out.append(i)
    return out
