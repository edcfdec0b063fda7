"""Must hold 3: readers are read-only for real.

For every cell of directory read-only/writable x -shm absent/present x writer
live/stopped/killed, each reading tool (inspect, verify, export, the console) opens the
case or fails with one sentence, and leaves the ledger's bytes, any non-empty -wal and
the receipt log exactly as they were; afterwards the writer (the same live one, or a new
one) can still append. A read-only directory is a read-only bind mount of the case
(root can write through a chmod); cells are skipped, with the reason, where that mount
is impossible. "Live writer, -shm absent" is not a state SQLite can be in (a live WAL
writer always has its -shm), so that cell is reported as not applicable.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pty
import re
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from codeai_tui.lab.reliability.harness import Cli, Deadline
from codeai_tui.ledger import LedgerReader
from codeai_tui.ledger.schema import LEDGER_FILENAME

WRITER_STATES = ("live", "stopped", "killed")
Tool = Callable[[Path, Path], tuple[bool, str]]  # (case as readers see it, scratch dir)


@dataclass(frozen=True, slots=True)
class Cell:
    read_only_dir: bool
    shm: bool
    writer: str

    @property
    def name(self) -> str:
        return (f"{'ro' if self.read_only_dir else 'rw'}-dir, -shm "
                f"{'present' if self.shm else 'absent'}, writer {self.writer}")


def all_cells() -> list[Cell]:
    return [Cell(ro, shm, w) for ro in (False, True) for shm in (False, True)
            for w in WRITER_STATES]


@dataclass
class Outcome:
    tool: str
    opened: bool
    sentence: str
    changed: list[str] = field(default_factory=list)


@dataclass
class CellResult:
    cell: Cell
    skipped: str | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    wrote_after: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def bytes_changed(self) -> int:
        return sum(1 for o in self.outcomes if o.changed)


class WriterProc:
    """A `--serve` writer process, commanded line by line with deadlines."""

    def __init__(self, case: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codeai_tui.lab.reliability.writer", str(case), "--serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self._expect("ready")

    def _expect(self, word: str, seconds: float = 60.0) -> str:
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(seconds):
                raise TimeoutError(f"writer did not say {word!r}")
            line = self.proc.stdout.readline()
        finally:
            sel.close()
        if not line.startswith(word):
            err = self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
            raise RuntimeError(f"writer said {line.strip()!r} {err.strip()[-300:]}")
        return line

    def append(self, n: int) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"append {n}\n")
        self.proc.stdin.flush()
        return int(self._expect("ok").split()[1])

    def quit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self._expect("closed")
        self.proc.wait(timeout=30)
        self._close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._close()

    def _close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def evidence_digest(case: Path) -> dict[str, str]:
    """sha256 of the ledger file, of the -wal when it is not empty, and of the receipts.
    (Read with open/close only while this process holds no SQLite connection to them.)"""
    out: dict[str, str] = {}
    for name in (LEDGER_FILENAME, f"{LEDGER_FILENAME}-wal", "provider/receipts.jsonl"):
        p = case / name
        data = p.read_bytes() if p.exists() else b""
        if data or name == LEDGER_FILENAME:
            out[name] = hashlib.sha256(data).hexdigest()
    return out


def read_only_mount_problem(scratch: Path) -> str | None:
    """None if this process can make a read-only bind mount, else why not."""
    src, dst = scratch / "probe-src", scratch / "probe-dst"
    src.mkdir(parents=True, exist_ok=True)
    dst.mkdir(parents=True, exist_ok=True)
    try:
        with read_only_view(src, dst):
            try:
                (dst / "x").write_bytes(b"x")
            except OSError:
                return None
            return "a read-only bind mount still accepted a write"
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"cannot make a read-only bind mount ({exc})"
    finally:
        shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(dst, ignore_errors=True)


@contextmanager
def read_only_view(case: Path, view: Path) -> Iterator[Path]:
    """`view` shows `case` read-only (a bind mount remounted ro), for as long as it lasts."""
    view.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "--bind", str(case), str(view)], check=True, capture_output=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True,
                       capture_output=True)
        yield view
    finally:
        subprocess.run(["umount", "-l", str(view)], capture_output=True)


def cli_tools(cli: Cli) -> dict[str, Tool]:
    """inspect, verify and export through the command line."""

    def sentence(rc: int, out: str, err: str) -> str:
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        if not lines and rc != 0:
            lines = [ln for ln in out.splitlines() if ln.startswith("FAIL")]
        return " / ".join(lines)

    def inspect(case: Path, _scratch: Path) -> tuple[bool, str]:
        rc, out, err = cli(["inspect", str(case), "--json"])
        return rc == 0, sentence(rc, out, err)

    def verify(case: Path, _scratch: Path) -> tuple[bool, str]:
        rc, out, err = cli(["verify", str(case)])
        return rc == 0, sentence(rc, out, err)

    def export(case: Path, scratch: Path) -> tuple[bool, str]:
        out_dir = scratch / f"export-{time.monotonic_ns()}"
        rc, out, err = cli(["export", str(case), str(out_dir)])
        return rc == 0, sentence(rc, out, err)

    return {"inspect": inspect, "verify": verify, "export": export}


_ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b.")


def console_in_pty(case: Path, _scratch: Path, timeout: float = 60.0) -> tuple[bool, str]:
    """The real console (`codeai-tui open CASE`) in a pseudo-terminal: wait until it is
    following the case or shows its error screen, then press q."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: become the console
        env = {**os.environ, "TERM": "xterm-256color", "TEXTUAL_ANIMATIONS": "none"}
        os.execvpe(sys.executable, [sys.executable, "-m", "codeai_tui", "open", str(case)], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    deadline = Deadline(timeout)
    screen = ""
    state = ""
    try:
        while deadline.left() and not state:
            sel = selectors.DefaultSelector()
            sel.register(fd, selectors.EVENT_READ)
            ready = sel.select(min(0.5, deadline.left()))
            sel.close()
            if ready:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                screen += _ANSI.sub("", chunk.decode("utf-8", "replace"))
            if "following" in screen:
                state = "opened"
            elif "Cannot open this ledger" in screen:
                state = "failed"
        if state:
            os.write(fd, b"q")
        exited = _wait_child(pid, deadline, fd)
    finally:
        _reap(pid)
        os.close(fd)
    if state == "opened":
        return exited, "" if exited else "the console did not quit on q"
    if state == "failed":
        after = screen.split("Cannot open this ledger", 1)[1]
        words = " ".join(after.split())
        return False, words[:200]
    return False, "the console showed neither the case nor an error within the deadline"


def _wait_child(pid: int, deadline: Deadline, fd: int) -> bool:
    while deadline.left():
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done:
            return True
        try:  # keep draining so the console never blocks on a full terminal
            sel = selectors.DefaultSelector()
            sel.register(fd, selectors.EVENT_READ)
            if sel.select(0.05):
                os.read(fd, 65536)
            sel.close()
        except OSError:
            pass
    return False


def _reap(pid: int) -> None:
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
        if not done:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _max_seq(case: Path) -> int:
    with LedgerReader(case) as reader:
        return reader.stats()[1]


def run_cell(cell: Cell, workdir: Path, tools: dict[str, Tool], make_case: Callable[[Path], None],
             ro_problem: str | None) -> CellResult:
    """Set the cell up, run every tool against it, check bytes and a later write."""
    result = CellResult(cell)
    if cell.writer == "live" and not cell.shm:
        result.skipped = "not applicable: a live WAL writer always has its -shm"
        return result
    if cell.read_only_dir and ro_problem:
        result.skipped = ro_problem
        return result
    base = workdir / re.sub(r"[^a-z0-9]+", "-", cell.name)
    case = base / "case"
    make_case(case)
    writer = WriterProc(case)
    try:
        writer.append(20)  # commits that live in -wal until a checkpoint
        if cell.writer == "stopped":
            writer.quit()
            if cell.shm:  # a reader of a cleanly closed WAL ledger leaves -shm behind
                with LedgerReader(case) as reader:
                    reader.stats()
        elif cell.writer == "killed":
            writer.kill()
            if not cell.shm:
                (case / f"{LEDGER_FILENAME}-shm").unlink(missing_ok=True)
        shm_now = (case / f"{LEDGER_FILENAME}-shm").exists()
        if shm_now != cell.shm:
            result.skipped = f"could not set up -shm {'present' if cell.shm else 'absent'}"
            return result
        seq_before = _max_seq(case) if cell.writer != "live" else None
        scratch = base / "scratch"
        scratch.mkdir()
        with _view(case, base / "view", cell.read_only_dir) as view:
            for name, tool in tools.items():
                before = evidence_digest(case)
                opened, sentence = tool(view, scratch)
                after = evidence_digest(case)
                changed = sorted(k for k in set(before) | set(after)
                                 if before.get(k) != after.get(k))
                result.outcomes.append(Outcome(name, opened, sentence, changed))
                if changed:
                    result.problems.append(f"{name} changed {changed}")
                if not opened and (not sentence or "\n" in sentence or "Traceback" in sentence
                                   or "internal error" in sentence):
                    result.problems.append(f"{name} failed without one sentence: {sentence!r}")
        # the writer can still write
        if cell.writer == "live":
            seq = writer.append(5)
            result.wrote_after = seq > 0
            writer.quit()
        else:
            again = WriterProc(case)
            seq = again.append(5)
            again.quit()
            result.wrote_after = seq_before is not None and seq == seq_before + 5
        if not result.wrote_after:
            result.problems.append("the writer could not append afterwards")
    finally:
        writer.kill()
    return result


@contextmanager
def _view(case: Path, view: Path, read_only: bool) -> Iterator[Path]:
    if not read_only:
        yield case
        return
    with read_only_view(case, view) as v:
        yield v


def run_matrix(workdir: Path, tools: dict[str, Tool], make_case: Callable[[Path], None],
               cells: list[Cell] | None = None) -> list[CellResult]:
    workdir.mkdir(parents=True, exist_ok=True)
    ro_problem = read_only_mount_problem(workdir / "probe")
    return [run_cell(cell, workdir, tools, make_case, ro_problem)
            for cell in (cells or all_cells())]
