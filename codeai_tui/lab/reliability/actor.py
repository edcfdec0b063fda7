"""`python -m codeai_tui.lab.reliability.actor [options] -- MODULE ARG...`: run one write
action as its own OS process, instrumented so a harness can race it and kill it at a
named boundary.

The action is the real program (`codeai_tui resume CASE CALL --yes`), run with `runpy`
after the instrumentation is in place: the same code an operator runs, not a copy. The
instrumentation only observes, and pauses when asked:

- `txn.begin`, `txn.before_commit KINDS`, `txn.after_commit KINDS` around every ledger
  write transaction (LedgerWriter.transaction, the one write path);
- `net.connect HOST:PORT` before any socket connects, and `violation ...` when a socket
  connects or sends while one of our write transactions is open (a network call must
  never hold the write lock).

Marks go, one line each, to the file descriptor given by `--marks-fd`. With `--barrier`
the actor prints `ready` there and waits for a line on stdin before running (racers start
together). With `--pause-at MARK [--pause-contains TEXT] [--pause-nth N]` it writes
`paused MARK` and waits for a line on stdin (the harness kills it there, or says go).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import runpy
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Marks:
    """Writes marks unbuffered and pauses where the harness asked."""

    def __init__(self, fd: int, pause_at: str | None, contains: str | None, nth: int) -> None:
        self.fd = fd
        self.pause_at = pause_at
        self.contains = contains
        self.nth = nth
        self.seen = 0
        self.open_txns = 0

    def emit(self, name: str, detail: str = "") -> None:
        line = f"{name} {detail}".rstrip() + "\n"
        with contextlib.suppress(OSError):
            os.write(self.fd, line.encode("utf-8", "replace"))
        if name == self.pause_at and (self.contains is None or self.contains in detail):
            self.seen += 1
            if self.seen == self.nth:
                with contextlib.suppress(OSError):
                    os.write(self.fd, f"paused {name} {detail}\n".encode("utf-8", "replace"))
                sys.stdin.readline()  # killed here, or told to go on


def install(marks: Marks) -> None:
    """Wrap the writer's transaction and the socket layer with marks."""
    from codeai_tui.ledger.writer import LedgerWriter

    original = LedgerWriter.transaction

    @contextmanager
    def transaction(self: LedgerWriter) -> Iterator[Any]:
        marks.emit("txn.begin")
        kinds = ""
        with original(self) as txn:
            marks.open_txns += 1
            try:
                yield txn
                kinds = ",".join(e.kind for e in txn.appended)
                marks.emit("txn.before_commit", kinds)
            finally:
                marks.open_txns -= 1
        marks.emit("txn.after_commit", kinds)

    LedgerWriter.transaction = transaction  # type: ignore[method-assign]

    connect = socket.socket.connect
    sendall = socket.socket.sendall

    def checked_connect(sock: socket.socket, address: Any) -> Any:
        if marks.open_txns:
            marks.emit("violation", f"connect to {address!r} inside a write transaction")
        marks.emit("net.connect", repr(address))
        return connect(sock, address)

    def checked_sendall(sock: socket.socket, data: Any, *args: Any) -> Any:
        if marks.open_txns:
            marks.emit("violation", "send inside a write transaction")
        return sendall(sock, data, *args)

    socket.socket.connect = checked_connect  # type: ignore[method-assign]
    socket.socket.sendall = checked_sendall  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="codeai_tui.lab.reliability.actor")
    p.add_argument("--marks-fd", type=int, required=True)
    p.add_argument("--barrier", action="store_true")
    p.add_argument("--pause-at", default=None)
    p.add_argument("--pause-contains", default=None)
    p.add_argument("--pause-nth", type=int, default=1)
    p.add_argument("--warm", action="append", default=[], help="modules to import first")
    p.add_argument("module")
    p.add_argument("args", nargs=argparse.REMAINDER)
    ns = p.parse_args(argv)
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    marks = Marks(ns.marks_fd, ns.pause_at, ns.pause_contains, ns.pause_nth)
    for name in ns.warm:  # import time must not decide who wins a race
        importlib.import_module(name)
    install(marks)
    if ns.barrier:
        marks.emit("ready")
        sys.stdin.readline()
    marks.emit("start")
    sys.argv = [ns.module, *args]
    code: Any = 0
    try:
        runpy.run_module(ns.module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
    sys.stdout.flush()
    sys.stderr.flush()
    rc = code if isinstance(code, int) else (0 if code is None else 1)
    marks.emit("exit", str(rc))
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
