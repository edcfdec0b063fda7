"""`codeai-tui demo --live` without an out dir: builds the bundle in the temporary
directory (naming it on stdout at once), the same bundle in its states as another build
(the shared one), keeps the live case changing, and Ctrl-C stops everything it started.

One build serves both checks: each build of the bundle costs ~20 s of CPU on two cores."""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.harness.test_demo_bundle import _normalised, load
from tests.harness.test_live import alive, children_of, event_count


def _first_line(proc: subprocess.Popen[str], deadline: float) -> str:
    """The first line the command prints (the bundle's path), without waiting for it to
    end: the path is printed, and flushed, before the live producer starts."""
    assert proc.stdout is not None
    while not select.select([proc.stdout], [], [], 0.2)[0]:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the bundle's path was never printed"
    return proc.stdout.readline().strip()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_demo_live_builds_the_same_bundle_and_runs_until_ctrl_c(demo_bundle: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeai_tui", "demo", "--live", "--rate", "40"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # as a script's pipe sees it: block-buffered (this workplace sets PYTHONUNBUFFERED,
        # under which a path printed without a flush arrived at once all the same)
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
             "PYTHONWARNINGS": "ignore"},
        # Ctrl-C reaches a foreground command with SIGINT at its default; a test runner
        # started as a background job passes SIG_IGN down to every child instead.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    live_pids: set[int] = set()
    out: Path | None = None
    try:
        deadline = time.monotonic() + 120
        out = Path(_first_line(proc, deadline))
        assert out.parent == Path(tempfile.gettempdir()).resolve()
        while event_count(out / "live") < 10:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no live events"
            time.sleep(0.05)
        # built apart from the shared bundle, with other pids, ids and clocks: the same
        assert _normalised(out) == _normalised(demo_bundle)
        assert load(out / "effects.json") == load(demo_bundle / "effects.json")
        live_pids = {p for p in children_of(proc.pid)}
        live_pids |= {c for p in live_pids for c in children_of(p)}
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
        if out is not None and out.parent == Path(tempfile.gettempdir()).resolve():
            shutil.rmtree(out, ignore_errors=True)
    assert proc.returncode == 130
    assert stdout.strip() == ""  # (the path was the one line, read above)
    assert "Traceback" not in stderr
    assert live_pids
    deadline = time.monotonic() + 10
    while any(alive(p) for p in live_pids):
        assert time.monotonic() < deadline, [p for p in live_pids if alive(p)]
        time.sleep(0.05)
