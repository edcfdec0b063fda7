"""Who wrote an operator's event: the user, the host and the process.

Recorded in the events an operator action appends (`decided_by`, `by`, `recorded_by`),
so that a later reader can tell the operator's own writes from a producer's: a call an
operator recorded seconds ago by a process that has ended is not a live producer's.
"""

from __future__ import annotations

import getpass
import os
import socket
from typing import Any


def who() -> dict[str, Any]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid-{os.getuid()}"
    return {"user": user, "host": socket.gethostname(), "pid": os.getpid()}


def ended_here(writer: object) -> str | None:
    """Why the process named by a `who()` record cannot be writing any more, when that
    can be known from here: it ran on this host and is gone, or it is this process
    (which is not running a producer). None when it may be running or is elsewhere."""
    if not isinstance(writer, dict):
        return None
    pid, host = writer.get("pid"), writer.get("host")
    if type(pid) is not int or pid <= 0 or host != socket.gethostname():
        return None
    if pid == os.getpid():
        return f"recorded by this process (pid {pid})"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"recorded by an operator's process that has ended (pid {pid} on this host)"
    except PermissionError:
        return None  # alive, another user's
    return None
