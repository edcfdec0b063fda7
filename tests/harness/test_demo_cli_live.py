"""`codeai-tui demo OUT --live`: builds, keeps the live case changing, Ctrl-C stops all."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.harness.test_live import alive, children_of, event_count


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_demo_live_runs_until_ctrl_c(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeai_tui", "demo", str(out), "--live", "--rate", "40"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        # Ctrl-C reaches a foreground command with SIGINT at its default; a test runner
        # started as a background job passes SIG_IGN down to every child instead.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    live_pids: set[int] = set()
    try:
        deadline = time.monotonic() + 90
        while event_count(out / "live") < 10:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no live events"
            time.sleep(0.05)
        live_pids = {p for p in children_of(proc.pid)}
        live_pids |= {c for p in live_pids for c in children_of(p)}
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert stdout.strip() == str(out.resolve())
    assert "Traceback" not in stderr
    assert live_pids
    deadline = time.monotonic() + 10
    while any(alive(p) for p in live_pids):
        assert time.monotonic() < deadline, [p for p in live_pids if alive(p)]
        time.sleep(0.05)
