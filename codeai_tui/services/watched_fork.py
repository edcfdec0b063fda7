"""Work done by a forked process that may be forked from a process running threads.

The console gathers its projection in a worker thread while Textual runs others, so a
child forked there inherits locks those threads may hold (SQLite's, the allocator's): it
may hang where a child of a single-threaded process would not. The child here reports
its progress through a shared counter; its parent gives up on it (kills it, and does the
work itself) once it ends badly, stops moving for `stall` seconds, or outlasts the
grace. Signal handlers the parent set (Textual's, asyncio's wake-up pipe) are reset in
the child at once (`forked.quiet_signals`, as services/forked.py's helper does too). The
result comes back pickled through an unlinked temporary file (parent and child are one
program: nothing else writes it). Beside services/forked.py, whose helper has no watch:
its parent waits out the grace.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar

from codeai_tui.services.forked import (
    dump_result,
    exited_well,
    kill_and_reap,
    pickled_result,
    quiet_signals,
)

S = TypeVar("S")

STALL_S = 2.0  # a child whose counter has not moved for this long is taken for hung
_POLL_S = 0.005
_COUNTER = struct.Struct("<Q")

Beat = Callable[[int], None]  # the child's work reports how far it got


class WatchedFork(Generic[S]):
    """`work(beat)` in a forked child, begun at construction; `result` waits for it."""

    def __init__(self, work: Callable[[Beat], S]) -> None:
        """Fork now (raises OSError when no process, file or shared page can be had)."""
        import mmap
        import pickle  # noqa: F401 - imported before the fork, so the child finds it
        import tempfile

        self._out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by `close`
        self._pid: int | None = None
        try:
            self._counter = mmap.mmap(-1, _COUNTER.size)  # shared with the child
        except OSError:
            self._out.close()
            raise
        parent = os.getpid()
        try:
            with warnings.catch_warnings():
                # (Python 3.12 on warns that a child forked from a process with threads
                # may deadlock: what the watch is for; the warning would land on the
                # console's screen)
                warnings.simplefilter("ignore", DeprecationWarning)
                self._pid = os.fork()
        except OSError:
            self.close()
            raise
        if self._pid == 0:  # the child: never returns
            _run_child(work, self._counter, self._out, parent)

    def result(self, grace: float, stall: float = STALL_S,
               stop: Callable[[], bool] | None = None) -> S | None:
        """What the work returned; None (the child killed) when it failed, died, did not
        move for `stall` seconds, did not end within `grace` seconds, or `stop()` turned
        true meanwhile (the caller is told to stop: a console quitting)."""
        if not exited_well(self._wait(grace, stall, stop)):
            return None
        got: S | None = pickled_result(self._out)
        return got

    def _wait(self, grace: float, stall: float, stop: Callable[[], bool] | None
              ) -> int | None:
        pid = self._pid
        if pid is None:
            return None
        now = time.monotonic()
        deadline, seen, moved = now + grace, self._progress(), now
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                self._pid = None
                return status
            now = time.monotonic()
            progress = self._progress()
            if progress != seen:
                seen, moved = progress, now
            if now >= deadline or now - moved >= stall or (stop is not None and stop()):
                self.stop()
                return None
            time.sleep(_POLL_S)

    def _progress(self) -> int:
        return int(_COUNTER.unpack_from(self._counter, 0)[0])

    def stop(self) -> None:
        """Kill the child if it still runs, and reap it."""
        pid, self._pid = self._pid, None
        if pid is not None:
            kill_and_reap(pid)

    def close(self) -> None:
        self.stop()
        self._out.close()
        with contextlib.suppress(AttributeError):
            self._counter.close()


def _run_child(work: Callable[[Beat], object], counter: object, out: object,
               parent: int) -> None:
    """The child's whole life: exit 0 only when the result is written. `os._exit` skips
    the parent's buffers, atexit handlers and connections it inherited."""
    code = 1
    try:
        quiet_signals()

        def beat(done: int) -> None:
            _COUNTER.pack_into(counter, 0, done + 1)  # type: ignore[arg-type]
            if os.getppid() != parent:
                raise SystemExit(1)  # the parent is gone: nobody wants the result

        beat(0)
        result = work(beat)
        dump_result(result, out)  # type: ignore[arg-type]
        out.flush()  # type: ignore[attr-defined]
        code = 0
    except BaseException:  # noqa: BLE001 - any failure: the parent does the work itself
        code = 1
    finally:
        os._exit(code)
