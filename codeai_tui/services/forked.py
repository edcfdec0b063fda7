"""Half of a long projection done by a forked helper process, on the other core.

`inspect --json` spends most of its time in Python per call (fold, ladder, document
line), which one process cannot spread over two cores (the GIL). A child forked once
the SQL preparation is done inherits it for free (copy on write), renders the second
half of the calls into an unlinked temporary file, and hands back a small summary
(pickled, from our own process, through a second one). The parent waits at most a grace
period once its own half is done; a helper that fails, dies or hangs is killed and its
half is done by the parent, so the result never depends on the helper. A helper may
be forked from a thread of the console (the suspect scan): the parent's signal handlers
are reset in the child first (`quiet_signals`).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import struct
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any, Generic, TypeVar

S = TypeVar("S")

HELPER_MIN_CALLS = 10_000  # below, the whole document takes a second or two anyway
# the helper's share of the calls: a little over half, since the parent's part also
# reads the task and compilation events, to the end of the table (~0.1-0.25 s at
# 137,000 calls); what follows (the helper's lines copied out, the finish) waits for
# both parts whatever the split
HELPER_SHARE = 0.51
SCAN_MIN_EVENTS = 100_000  # below, the suspect scan takes a few tenths of a second
_FRAME = struct.Struct("<I")
_POLL = 0.005
_CHECK_EVERY = 256  # lines (~20 ms of a helper's work)


@dataclass(frozen=True, slots=True)
class HelperPlan:
    """When to fork helpers: one rendering half the calls from `min_calls` calls on,
    two scanning half the ledger each for suspect rows from `min_events` events on
    (services/gather.py). Once the parent's own part is done, it waits for a helper at
    most `grace` seconds or twice what that part took, whichever is longer. `share`:
    the part of the calls the helper renders (the later ones)."""

    min_calls: int = HELPER_MIN_CALLS
    grace: float = 10.0
    min_events: int = SCAN_MIN_EVENTS
    share: float = HELPER_SHARE

    def split(self, calls: int) -> int:
        """Where the helper's calls begin, of `calls` (at least one on each side)."""
        return max(1, min(calls - 1, calls - round(calls * self.share)))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def helper_plan(min_calls: int = HELPER_MIN_CALLS) -> HelperPlan | None:
    """A plan where a helper can run on another core (fork exists, two cores are ours),
    else None."""
    if not hasattr(os, "fork") or not hasattr(os, "sched_getaffinity"):
        return None
    if len(os.sched_getaffinity(0)) < 2:
        return None
    return HelperPlan(min_calls)


class ParentGone(Exception):
    """The process that forked the helper ended: nobody will read its lines."""


class LineWriter:
    """What the helper's work writes its lines to (length-framed UTF-8). Every
    `_CHECK_EVERY` lines it checks that the parent is still there, so a parent killed
    outright (SIGKILL, SIGTERM) leaves no helper working on for seconds."""

    def __init__(self, file: IO[bytes], parent: int) -> None:
        self._file = file
        self._parent = parent
        self._count = 0

    def flush(self) -> None:
        self._file.flush()

    def write(self, line: str) -> None:
        data = line.encode("utf-8")
        self._file.write(_FRAME.pack(len(data)) + data)
        self._count += 1
        if not self._count % _CHECK_EVERY and os.getppid() != self._parent:
            raise ParentGone


class Helper(Generic[S]):
    """A forked process running `work(lines)`: its lines and summary, once it ended well."""

    def __init__(self, work: Callable[[LineWriter], S]) -> None:
        """Fork now (raises OSError when no process or temporary file can be had)."""
        # imported when a helper is made (most commands never fork one), before the fork
        import pickle  # noqa: F401 - so the child finds it imported
        import tempfile

        # both unlinked at once; closed by `close`, whatever happened to the helper
        self._lines = tempfile.TemporaryFile()  # noqa: SIM115
        self._summary = tempfile.TemporaryFile()  # noqa: SIM115
        self._pid: int | None = None
        parent = os.getpid()
        try:
            self._pid = os.fork()
        except OSError:
            self.close()
            raise
        if self._pid == 0:  # the child: never returns
            _run_child(work, LineWriter(self._lines, parent), self._summary)

    def ended_well(self, grace: float) -> bool:
        """Whether the helper exited 0 (its lines and summary are written); False when it
        failed, died or did not end within `grace` seconds (it is killed then)."""
        return exited_well(self._wait(grace))

    def summary(self) -> S | None:
        """What the helper's work returned (after `ended_well`), None if unreadable."""
        return pickled_result(self._summary)

    def lines(self) -> Iterator[str]:
        """The lines the helper wrote, in order (after `ended_well`)."""
        self._lines.seek(0)
        return self._read_lines()

    def _read_lines(self) -> Iterator[str]:
        read = self._lines.read
        while head := read(_FRAME.size):
            (size,) = _FRAME.unpack(head)
            yield read(size).decode("utf-8")

    def _wait(self, grace: float) -> int | None:
        pid = self._pid
        if pid is None:
            return None
        deadline = time.monotonic() + grace
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                self._pid = None
                return status
            if time.monotonic() >= deadline:
                self.stop()
                return None
            time.sleep(_POLL)

    def stop(self) -> None:
        """Kill the helper if it still runs and reap it (the caller gave up)."""
        pid, self._pid = self._pid, None
        if pid is not None:
            kill_and_reap(pid)

    def close(self) -> None:
        self.stop()
        self._lines.close()
        self._summary.close()


def exited_well(status: int | None) -> bool:
    """Whether a child's wait status says it exited 0 (None: it was not seen to end)."""
    return status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def dump_result(result: object, file: IO[bytes]) -> None:
    """Pickle a child's result for `pickled_result`: each array and bytearray as a buffer
    the load lets go of once it is taken in. Pickled as they are, a load keeps every
    array's copy of its items until it ends (its memo), beside the arrays: ~44 MB at
    once as a 10M-event start took its helper's half."""
    _ResultPickler(file, protocol=5).dump(result)


class _ResultPickler(pickle.Pickler):
    def reducer_override(self, obj: object) -> Any:
        kind = type(obj)
        if kind is array:
            return _array_from, (obj.typecode, pickle.PickleBuffer(obj))  # type: ignore[attr-defined]
        if kind is bytearray:
            return _bytearray_from, (pickle.PickleBuffer(obj),)  # type: ignore[arg-type]
        return NotImplemented


def _array_from(typecode: str, items: bytes | bytearray) -> array[Any]:
    """An array of `items`, which is emptied (the load's memo keeps it until the end)."""
    out = array(typecode)
    out.frombytes(items)
    if type(items) is bytearray:
        del items[:]
    return out


def _bytearray_from(items: bytes | bytearray) -> bytearray:
    """The bytearray the load made of a bytearray's buffer (itself: no copy)."""
    return items if type(items) is bytearray else bytearray(items)


def pickled_result(file: IO[bytes]) -> Any:
    """What a child pickled into `file` (`dump_result`, from its start), None if
    unreadable: whatever is wrong with it, the caller does that work itself."""
    file.seek(0)
    try:
        return pickle.load(file)
    except Exception:  # noqa: BLE001
        return None


def kill_and_reap(pid: int) -> None:
    """Kill a child that may still run, and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def quiet_signals() -> None:
    """In a forked child, the parent's signal handlers off: default actions, no wake-up
    pipe. A signal to the terminal's process group (a resize, SIGWINCH) reaches every
    child; left as they were, Textual's handler would run the parent's code in the
    child (posting a resize to the parent's event loop), and the C handler would write
    to the parent's wake-up pipe."""
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
    for sig in signal.valid_signals():
        with contextlib.suppress(ValueError, OSError, TypeError):
            handler = signal.getsignal(sig)
            if callable(handler):
                signal.signal(sig, signal.SIG_DFL)


def _run_child(work: Callable[[LineWriter], object], lines: LineWriter,
               summary: IO[bytes]) -> None:
    """The child's whole life: exit 0 only when the lines and summary are all written.
    `os._exit` skips the parent's buffers, atexit handlers and connections it inherited."""
    code = 1
    try:
        quiet_signals()
        result = work(lines)
        lines.flush()
        dump_result(result, summary)
        summary.flush()
        code = 0
    except BaseException:  # noqa: BLE001 - any failure: the parent does this half itself
        code = 1
    finally:
        os._exit(code)
