"""One part of the skeleton's grouped read, in a process of its own.

Two threads running grouped reads on two connections do not use two cores: each part
of a split read took 2.2 s beside the other against 1.3 s alone (SQLite's allocator
and the progress handler's GIL serialise them). Two processes did: 1.35 and 1.49 s at
once, on the 1M-event ledger.

`GroupedChild.start` starts `sys.executable` in isolated mode (-I: no environment variables,
no current directory on the path, so a directory the console was started from cannot
put its own code there) on this very package, pipes it the task and reads the rows
back, both pickled (parent and child are one program: nothing else writes that pipe).
POSIX only (the parent waits on the pipe with select); elsewhere the caller reads.
The child opens the ledger read-only, as every reader does, and stops its read when
its parent is gone. It imports only the ledger's modules.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import codeai_tui
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.ledger.stage_columns import StageColumns

if TYPE_CHECKING:
    import subprocess

Task = tuple[str, int, tuple[tuple[str, int], ...], tuple[object, object], int]

_CHILD = ("import sys; sys.path.insert(0, sys.argv[1]); "
          "from codeai_tui.ledger.grouped_worker import main; "
          "sys.exit(main(sys.stdin.buffer, sys.stdout.buffer))")
_WAIT_S = 0.05  # how often the parent looks at `stop` while the child reads
# below the console's own priority: two children on a 2-core machine had the console
# paint its first screen 0.5-0.8 s later, and answer `q` pressed during start-up in
# 0.87-1.37 s instead of ~0.4 s; niced, 1.57-1.75 s to the first paint (the code before
# the children: 1.42-1.65 s) and `q` in 0.40-0.42 s, the answer still ~0.4-0.7 s sooner
NICENESS = 10


def run(task: Task) -> tuple[str, object]:
    """The child's work: ("columns", its rows as StageColumns) or ("error", what went
    wrong). (Columns: the parent holds a part at once while it builds the skeleton.)"""
    path, as_of, codes, ids, parent = task
    try:
        with EvidenceSQL(path) as sql:
            sql.abort_when(lambda: os.getppid() != parent)
            sql.for_one_pass()
            return "columns", StageColumns.of(sql.call_stage_rows(as_of, codes, ids))
    except Exception as exc:  # noqa: BLE001 - the parent reads that part itself
        return "error", f"{type(exc).__name__}: {exc}"


def main(stdin: BinaryIO, stdout: BinaryIO) -> int:
    import pickle

    os.nice(NICENESS)
    task: Task = pickle.load(stdin)
    pickler = pickle.Pickler(stdout, protocol=pickle.HIGHEST_PROTOCOL)
    # no memo: the columns hold no object twice, and a memo makes the parent's
    # unpickler hold a table of every object it made until the load ends
    pickler.fast = True
    pickler.dump(run(task))
    stdout.flush()
    return 0


class GroupedChild:
    """A child process reading `EvidenceSQL.call_stage_rows(as_of, codes, ids)` of the
    ledger at `path`, begun by `start`; `rows` waits for its answer. The answer is
    unpickled in the thread that asks (one malloc arena: rows unpickled in threads of
    their own left ~3 MB more of the console's peak)."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self._child = child

    @classmethod
    def start(cls, path: str | Path, as_of: int, codes: Sequence[tuple[str, int]],
              ids: tuple[object, object]) -> GroupedChild | None:
        """The child under way with its task; None when none could be started (no
        interpreter, not POSIX: the parent waits on the pipe with select)."""
        import pickle  # (here: only a big ledger's reads start a child)
        import subprocess

        root = str(Path(codeai_tui.__file__).resolve().parent.parent)
        if not sys.executable or os.name != "posix":
            return None
        try:
            child = subprocess.Popen([sys.executable, "-I", "-c", _CHILD, root],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        except OSError:
            return None
        started = cls(child)
        try:  # the task fits in the pipe (~1 KB): written at once, read first thing
            child.stdin.write(pickle.dumps(  # type: ignore[union-attr]  # (piped)
                (str(path), as_of, tuple(codes), ids, os.getpid())))
            child.stdin.close()  # type: ignore[union-attr]
        except OSError:
            started.close()
            return None
        return started

    def columns(self, stop: Callable[[], bool]) -> StageColumns | None:
        """The child's rows as columns; None when it failed, died or `stop()` turned
        true (it is killed then). The caller reads that part itself on None, and meets
        any error of the ledger's there."""
        import pickle

        stdout = self._child.stdout
        assert stdout is not None  # (piped)
        try:
            while not select.select([stdout], [], [], _WAIT_S)[0]:
                if stop():
                    return None
            # read as it is unpickled, not gathered first (~5 MB on the 1M-event ledger)
            kind, value = pickle.load(stdout)
        except Exception:  # noqa: BLE001 - a broken pipe, a child that died: read it here
            return None
        finally:
            self.close()
        return value if kind == "columns" and isinstance(value, StageColumns) else None

    def close(self) -> None:
        """Kill the child if it still runs, and reap it."""
        child = self._child
        if child.poll() is None:
            child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
