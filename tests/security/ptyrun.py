"""Run the real command on a real pseudo-terminal and keep every byte it wrote there."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

CLI = str(Path(sys.executable).with_name("codeai-tui"))


def run_on_pty(args: Sequence[str], *, timeout: float, keys: Sequence[tuple[bytes, bytes]] = (),
               env: dict[str, str] | None = None, size: tuple[int, int] = (48, 160)
               ) -> tuple[int, bytes]:
    """(exit code, the raw bytes the program wrote to its terminal).

    `keys` are (wait-for, send) pairs: once `wait-for` has appeared in the output, `send` is
    typed. Polls with a deadline; a program still running at `timeout` is killed and the
    test fails (a hang is a failure, never a skip)."""
    master, slave = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    proc = subprocess.Popen([CLI, *args], stdin=slave, stdout=slave, stderr=slave,
                            close_fds=True, start_new_session=True,
                            env={**os.environ, "TERM": "xterm-256color", **(env or {})})
    os.close(slave)
    out = bytearray()
    pending = list(keys)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed its side
                    break
                if not data:
                    break
                out += data
            if pending and pending[0][0] in out:
                os.write(master, pending.pop(0)[1])
            if not ready and proc.poll() is not None:
                break
        else:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
            raise AssertionError(f"{args[0]} still running after {timeout} s; output tail: "
                                 f"{bytes(out[-400:])!r}")
    finally:
        os.close(master)
    return proc.wait(timeout), bytes(out)
