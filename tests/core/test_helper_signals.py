"""A forked helper never runs the parent's signal handlers: a signal to the terminal's
process group (a resize) reaches the helpers too, and the console's handlers (Textual's,
asyncio's wake-up pipe) belong to the parent. Both kinds of helper (services/forked.py,
services/watched_fork.py) reset them first."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable, Iterator

import pytest

from codeai_tui.services.forked import Helper
from codeai_tui.services.watched_fork import WatchedFork

GRACE = 20.0


def _signalled() -> int:
    """Send this process a resize signal and run bytecode for a while (a Python handler
    runs between bytecodes); its pid."""
    os.kill(os.getpid(), signal.SIGWINCH)
    total = 0
    for _ in range(200):
        total += sum(range(1000))
    return os.getpid() if total else -1


def _in_helper() -> int | None:
    helper: Helper[int] = Helper(lambda _lines: _signalled())
    try:
        return helper.summary() if helper.ended_well(GRACE) else None
    finally:
        helper.close()


def _in_watched_fork() -> int | None:
    fork: WatchedFork[int] = WatchedFork(lambda _beat: _signalled())
    try:
        return fork.result(GRACE)
    finally:
        fork.close()


@pytest.fixture
def parent_handlers() -> Iterator[tuple[int, socket.socket]]:
    """A parent as the console is: a Python handler for SIGWINCH (it writes the pid of
    the process it runs in to a pipe) and a wake-up socket. Yields the pipe's read end
    and the wake-up socket's."""
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    wake_read, wake_write = socket.socketpair()
    wake_read.setblocking(False)
    wake_write.setblocking(False)

    def handler(_sig: int, _frame: object) -> None:
        os.write(write_end, f"{os.getpid()}\n".encode())

    old_handler = signal.signal(signal.SIGWINCH, handler)
    old_wakeup = signal.set_wakeup_fd(wake_write.fileno())
    try:
        yield read_end, wake_read
    finally:
        signal.set_wakeup_fd(old_wakeup)
        signal.signal(signal.SIGWINCH, old_handler)
        for fd in (read_end, write_end):
            os.close(fd)
        wake_read.close()
        wake_write.close()


def _drained(fd: int) -> bytes:
    try:
        return os.read(fd, 4096)
    except BlockingIOError:
        return b""


@pytest.mark.parametrize("run", [_in_helper, _in_watched_fork], ids=["helper", "watched"])
def test_a_helper_runs_none_of_the_parents_signal_handlers(
        parent_handlers: tuple[int, socket.socket], run: Callable[[], int | None]) -> None:
    pipe, wake = parent_handlers
    child = run()
    assert isinstance(child, int) and child != os.getpid()  # the work ran, in a child
    ran_in = {int(p) for p in _drained(pipe).split()}
    assert child not in ran_in  # the parent's handler did not run in the child
    try:
        woke = wake.recv(64)
    except BlockingIOError:
        woke = b""
    assert woke == b""  # nor did the child write to the parent's wake-up pipe
    # the parent's own handler still works
    os.kill(os.getpid(), signal.SIGWINCH)
    assert _signalled() == os.getpid()
    assert os.getpid() in {int(p) for p in _drained(pipe).split()}
