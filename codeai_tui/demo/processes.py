"""Starting, watching and killing the separate OS processes of the experiment.

Every phase is its own process; the harness only starts them, reads their stdout, polls
files with deadlines, and sends SIGKILL (Popen.kill: no cleanup runs in the victim).
"""

from __future__ import annotations

import json
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeai_tui.demo.evidence import receipt_count
from codeai_tui.demo.producer import CHECKPOINT_PREFIX

PHASE_TIMEOUT_S = 60.0
CHECKPOINT_TIMEOUT_S = 30.0
RECEIPT_TIMEOUT_S = 15.0


class DemoError(RuntimeError):
    """The experiment did not go as designed (a phase failed or timed out)."""


@dataclass(frozen=True, slots=True)
class Phase:
    """A finished CLI phase: its argv (as run, relative to the bundle) and results."""

    argv: list[str]
    exit_code: int
    stdout: str
    stderr: str

    def as_json(self) -> dict[str, Any]:
        return {"argv": self.argv, "exit_code": self.exit_code,
                "stdout": self.stdout, "stderr": self.stderr}


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def run_phase(cwd: Path, module: str, *args: str) -> Phase:
    """Run `python -m module args` to completion in its own process, cwd = the bundle."""
    argv = python_module(module, *args)
    try:
        done = subprocess.run(argv, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=PHASE_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:  # run() has killed it already
        raise DemoError(f"{module} {' '.join(args)}: timed out after {exc.timeout} s") from None
    shown = ["python", "-m", module, *args]
    return Phase(shown, done.returncode, done.stdout, done.stderr)


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """One stdout line, or "" when none arrives in time (or the process ended)."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            return ""
    return proc.stdout.readline()


def wait_for_receipts(case: Path, count: int, timeout: float) -> int:
    """Poll the provider's own receipt log until it holds `count` lines."""
    deadline = time.monotonic() + timeout
    while True:
        seen = receipt_count(case)
        if seen >= count:
            return seen
        if time.monotonic() > deadline:
            raise DemoError(f"{case.name}: provider logged {seen} receipts, expected {count}")
        time.sleep(0.01)


def kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def produce_and_kill(case: Path, producer_args: list[str], in_flight: bool) -> dict[str, Any]:
    """Run a producer until its checkpoint commits (and, in flight, until the provider
    logs the request), SIGKILL it, and return the termination record."""
    proc = subprocess.Popen(
        python_module("codeai_tui.demo.producer", str(case), *producer_args),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = read_line(proc, CHECKPOINT_TIMEOUT_S)
        if not line.startswith(CHECKPOINT_PREFIX):
            err = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
            raise DemoError(f"{case.name}: producer gave no checkpoint "
                            f"({(line or err).strip()[-300:] or 'timed out'})")
        checkpoint = json.loads(line[len(CHECKPOINT_PREFIX):])
        receipts = wait_for_receipts(case, 1, RECEIPT_TIMEOUT_S) if in_flight else receipt_count(case)
        if proc.poll() is not None:
            raise DemoError(f"{case.name}: producer exited by itself before the kill")
        proc.kill()
        proc.wait(timeout=10)
    finally:
        kill(proc)
    return {
        "event": checkpoint["kind"],
        "seq": checkpoint["seq"],
        "event_id": checkpoint["event_id"],
        "task_id": checkpoint["task_id"],
        "call_id": checkpoint["call_id"],
        "pid": proc.pid,
        "signal": "SIGKILL",
        "returncode": proc.returncode,
        "point": "provider_holding_request" if in_flight else "after_commit",
        "receipts_at_kill": receipts,
        "killed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
