"""Processes, deadlines and the invariants every write action must keep.

Everything here drives real OS processes: actors (codeai_tui.lab.reliability.actor), the
synthetic provider on 127.0.0.1, and the command line for `inspect --json` and `verify`
(a `Cli` callable, so a test may run the same command in-process to save time).
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeai_tui.lab.reliability.actions import Action, Boundary, Target
from codeai_tui.lab.reliability.sendgate import unsafe_sends
from codeai_tui.ledger import LedgerReader, read_receipts
from codeai_tui.ledger.schema import Event

Cli = Callable[[Sequence[str]], tuple[int, str, str]]


def subprocess_cli(args: Sequence[str], timeout: float = 120.0) -> tuple[int, str, str]:
    """The real command line in its own process."""
    done = subprocess.run([sys.executable, "-m", "codeai_tui", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return done.returncode, done.stdout, done.stderr


class Deadline:
    """Poll until a condition holds or the time is up (never a bare sleep as a wait)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())

    def wait_for(self, predicate: Callable[[], bool], what: str, step: float = 0.005) -> None:
        while not predicate():
            if time.monotonic() >= self.end:
                raise TimeoutError(f"timed out waiting for {what}")
            time.sleep(step)


class ActorProc:
    """One instrumented action process: marks on a pipe, control lines on stdin."""

    def __init__(self, action: Action, target: Target, workdir: Path, *, barrier: bool = False,
                 boundary: Boundary | None = None) -> None:
        read_fd, write_fd = os.pipe()
        self._marks_fd = read_fd
        self._buf = b""
        self.marks: list[str] = []
        # closed in output(); files, not pipes, so a chatty actor never blocks
        self.out = tempfile.TemporaryFile(dir=workdir)  # noqa: SIM115
        self.err = tempfile.TemporaryFile(dir=workdir)  # noqa: SIM115
        cmd = [sys.executable, "-m", "codeai_tui.lab.reliability.actor", "--marks-fd", str(write_fd)]
        for module in action.warm:
            cmd += ["--warm", module]
        if barrier:
            cmd.append("--barrier")
        if boundary is not None:
            cmd += ["--pause-at", boundary.mark]
            if boundary.contains:
                cmd += ["--pause-contains", boundary.contains]
            if boundary.nth != 1:
                cmd += ["--pause-nth", str(boundary.nth)]
        cmd += [action.module, "--", *action.args(target)]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=self.out, stderr=self.err, pass_fds=(write_fd,),
            env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )
        os.close(write_fd)
        self.killed = False

    def _pump(self, timeout: float) -> bool:
        """Read whatever marks arrived within `timeout`; False at end of stream."""
        sel = selectors.DefaultSelector()
        sel.register(self._marks_fd, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                return True
        finally:
            sel.close()
        chunk = os.read(self._marks_fd, 65536)
        if not chunk:
            return False
        self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        self.marks += [line.decode("utf-8", "replace") for line in lines]
        return True

    def wait_mark(self, prefix: str, deadline: Deadline) -> bool:
        """True once a mark starting with `prefix` arrived; False if the actor ended first."""
        while True:
            if any(m.startswith(prefix) for m in self.marks):
                return True
            if not deadline.left():
                raise TimeoutError(f"actor never reached {prefix!r}: {self.marks[-3:]}")
            if not self._pump(min(0.2, deadline.left())):
                return any(m.startswith(prefix) for m in self.marks)

    def say(self, line: str = "go") -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(f"{line}\n".encode())
            self.proc.stdin.flush()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.killed = True

    def finish(self, deadline: Deadline) -> int:
        """Wait for the exit, drain marks, close pipes; returns the exit code."""
        try:
            rc = self.proc.wait(timeout=max(0.1, deadline.left()))
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.wait(timeout=10)
            self.marks.append("timeout killed by the harness")
        while self._pump(0.05):
            pass
        os.close(self._marks_fd)
        if self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        return rc

    def output(self) -> tuple[str, str]:
        texts = []
        for fh in (self.out, self.err):
            fh.seek(0)
            texts.append(fh.read().decode("utf-8", "replace"))
            fh.close()
        return texts[0], texts[1]

    @property
    def violations(self) -> list[str]:
        return [m for m in self.marks if m.startswith("violation")]

    def _commits(self) -> list[set[str]]:
        """The kinds each write transaction this actor committed appended. A transaction
        that re-checked, found nothing to do and appended nothing commits empty: that is
        not an append, and is left out."""
        commits = []
        for m in self.marks:
            name, _, kinds = m.partition(" ")
            if name == "txn.after_commit" and kinds:
                commits.append(set(kinds.split(",")))
        return commits

    def committed(self, kind: str | None = None) -> int:
        """Write transactions this actor committed that appended something (`kind`, if
        given)."""
        return sum(1 for kinds in self._commits() if kind is None or kind in kinds)

    def committed_outside(self, allowed: frozenset[str]) -> int:
        """Write transactions this actor committed that appended a kind not in `allowed`."""
        return sum(1 for kinds in self._commits() if not kinds <= allowed)

    @property
    def connects(self) -> int:
        return sum(1 for m in self.marks if m.startswith("net.connect"))


def read_events(case: Path) -> list[Event]:
    with LedgerReader(case) as reader:
        return reader.events()


def receipt_count(case: Path) -> int:
    return len(read_receipts(case).receipts)


def consistency_problems(doc: dict[str, Any]) -> list[str]:
    """What `inspect --json` must show after any kill: no anomaly, every superseded call
    has its successor (and the successor names it), receipts never above attempts
    started (in total and per idempotency key), no uncovered or duplicate effect."""
    problems: list[str] = []
    if doc.get("anomalies"):
        problems.append(f"anomalies: {doc['anomalies'][:3]}")
    calls = {str(c["call_id"]): c for c in doc.get("calls") or []}
    for call_id, call in calls.items():
        if call.get("stage") == "superseded":
            successor = calls.get(str(call.get("superseded_by")))
            if successor is None or successor.get("resumed_from") != call_id:
                problems.append(f"{call_id} superseded without its successor")
    receipts = doc.get("receipts") or {}
    started = sum(int(c.get("attempts") or 0) for c in calls.values())
    if int(receipts.get("count") or 0) > started:
        problems.append(f"{receipts.get('count')} receipts > {started} attempts started")
    if receipts.get("uncovered"):
        problems.append(f"uncovered effects: {receipts['uncovered'][:3]}")
    if receipts.get("duplicates"):
        problems.append(f"duplicate effects: {receipts['duplicates'][:3]}")
    return problems


def receipts_per_key_problems(case: Path, doc: dict[str, Any]) -> list[str]:
    started: dict[str, int] = {}
    for call in doc.get("calls") or []:
        key = str(call.get("idempotency_key"))
        started[key] = started.get(key, 0) + int(call.get("attempts") or 0)
    seen: dict[str, int] = {}
    for receipt in read_receipts(case).receipts:
        seen[receipt.idempotency_key] = seen.get(receipt.idempotency_key, 0) + 1
    return [f"key {k}: {n} receipts > {started.get(k, 0)} attempts started"
            for k, n in seen.items() if n > started.get(k, 0)]


@dataclass
class CaseCheck:
    """The verdict on a case after an action ran or was killed."""

    problems: list[str] = field(default_factory=list)
    doc: dict[str, Any] = field(default_factory=dict)
    verify_output: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def check_case(case: Path, cli: Cli) -> CaseCheck:
    """The ledger opens, its projection is consistent, receipts are covered, and
    `codeai-tui verify CASE` passes."""
    check = CaseCheck()
    rc, out, err = cli(["inspect", str(case), "--json"])
    if rc != 0:
        check.problems.append(f"inspect exit {rc}: {err.strip()[:200]}")
        return check
    try:
        check.doc = json.loads(out)
    except ValueError as exc:
        check.problems.append(f"inspect printed no JSON: {exc}")
        return check
    check.problems += consistency_problems(check.doc)
    check.problems += unsafe_sends(read_events(case))  # no send past the gate (sendgate.py)
    check.problems += receipts_per_key_problems(case, check.doc)
    rc, out, err = cli(["verify", str(case)])
    check.verify_output = out
    if rc != 0:
        failed = [line for line in out.splitlines() if line.startswith("FAIL")]
        check.problems.append(f"verify exit {rc}: {(failed or [err.strip()])[:3]}")
    return check


def appended_only(before: Sequence[Event], after: Sequence[Event]) -> bool:
    """The ledger only grew: every earlier event is still there, unchanged, in place."""
    return len(after) >= len(before) and all(
        (a.seq, a.event_id, a.kind, a.payload) == (b.seq, b.event_id, b.kind, b.payload)
        for a, b in zip(before, after, strict=False)
    )
