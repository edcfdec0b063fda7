"""A real terminal: tmux runs the console, keys go in, `capture-pane -p` comes out."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from apphelpers import make_case

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                          text=True, check=False).stdout


def wait_screen(session: str, needle: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = capture(session)
        if needle in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} not on screen after {timeout}s:\n{text}")


def start(tmp_path: Path, target: Path, width: int, height: int) -> str:
    session = f"codeai-smoke-{uuid.uuid4().hex[:8]}"
    code = "from codeai_tui.app import create_app; import sys; create_app(sys.argv[1]).run()"
    command = " ".join(shlex.quote(p) for p in (sys.executable, "-c", code, str(target)))
    env = {**os.environ, "TEXTUAL_ANIMATIONS": "none", "HOME": str(tmp_path)}
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(width), "-y",
                    str(height), command], check=True, env=env)
    return session


def key(session: str, name: str) -> None:
    subprocess.run(["tmux", "send-keys", "-t", session, name], check=True)


@pytest.fixture
def tmux_app(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    case = make_case(tmp_path / "case", "killed_in_flight")
    session = start(tmp_path, case, 160, 48)
    try:
        yield session, case
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False,
                       capture_output=True)


@pytest.mark.parametrize("size", [(80, 24), (100, 30)], ids=["80x24", "100x30"])
def test_small_terminals_keep_the_warning_and_the_action(tmp_path: Path,
                                                         size: tuple[int, int]) -> None:
    """The header's counts, the selected call's verdict and its next key stay on screen; a
    pane switch shows the pane asked for."""
    make_case(tmp_path / "bundle" / "a_done", "completed_task")
    make_case(tmp_path / "bundle" / "b_in_flight", "killed_in_flight")
    session = start(tmp_path, tmp_path / "bundle", *size)
    try:
        wait_screen(session, "following")
        wait_screen(session, "1/2 cases effect-unknown")  # the bundle's counts, short form
        key(session, "e")
        screen = wait_screen(session, "call call-16: \u26a0 effect unknown: duplicate risk")
        assert "1 unknown" in screen  # this case's counts
        # the footer names the next step's key (it follows the selection a refresh later)
        screen = wait_screen(session, "x Reconcile")
        assert "x Reconcile" in screen.splitlines()[-1]
        key(session, "6")
        screen = wait_screen(session, "6 Receipts (")
        assert "call call-16: \u26a0 effect unknown" in screen
        key(session, "q")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False,
                       capture_output=True)


def test_console_in_a_real_terminal(tmux_app: tuple[str, Path]) -> None:
    session, _case = tmux_app
    wait_screen(session, "effect unknown: duplicate risk")
    wait_screen(session, "8 events")  # the header repaints on its own refresh
    wait_screen(session, "following")
    subprocess.run(["tmux", "send-keys", "-t", session, "r"], check=True)
    wait_screen(session, "resume refused")
    # one key at a time, each waited on: keys sent in a burst can be lost under load
    key(session, "5")
    wait_screen(session, "event seq 8")  # the timeline's cursor follows the tail
    key(session, "[")
    wait_screen(session, "event seq 7")
    subprocess.run(["tmux", "send-keys", "-t", session, "t"], check=True)
    wait_screen(session, "AS OF seq 7 of 8")
    subprocess.run(["tmux", "send-keys", "-t", session, "Escape"], check=True)
    deadline = time.monotonic() + 10
    while "AS OF" in capture(session) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "AS OF" not in capture(session)
    subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        alive = subprocess.run(["tmux", "has-session", "-t", session], capture_output=True,
                               check=False).returncode == 0
        if not alive:
            break
        time.sleep(0.1)
    assert not alive, "q did not quit the console"


def start_in_shell(tmp_path: Path, prefix: str, python_args: list[str]) -> tuple[str, int]:
    """Run `python ARGS` in a tmux shell that prints EXITED=<code> and the tty's canonical
    mode (TTY=icanon. or TTY=-icanon.) when it ends; returns the session and the pid."""
    session = f"{prefix}-{uuid.uuid4().hex[:8]}"
    marker = tmp_path / "pid"
    command = (f"echo $$ > {shlex.quote(str(marker))}; exec "
               + " ".join(shlex.quote(a) for a in (sys.executable, *python_args)))
    shell = " ".join(shlex.quote(p) for p in (
        "bash", "--norc", "-c", f"bash --norc -c {shlex.quote(command)}; echo EXITED=$?; "
        "echo TTY=$(stty -a | grep -o -- '-\\?icanon' | head -1).; sleep 30"))
    env = {**os.environ, "TEXTUAL_ANIMATIONS": "none", "HOME": str(tmp_path)}
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "30",
                    shell], check=True, env=env)
    deadline = time.monotonic() + 15
    while not marker.exists() or not marker.read_text().strip():
        assert time.monotonic() < deadline, "the shell never started"
        time.sleep(0.05)
    return session, int(marker.read_text().strip())


@pytest.mark.parametrize("sig", ["TERM", "HUP"])
def test_a_signal_ends_the_console_and_gives_the_terminal_back(tmp_path: Path, sig: str) -> None:
    """SIGTERM/SIGHUP used to kill the console in the alternate screen with mouse
    reporting on; now it ends as `q` does: terminal restored, summary printed, 128+N."""
    case = make_case(tmp_path / "case", "killed_in_flight")
    session, pid = start_in_shell(tmp_path, "codeai-sig", ["-m", "codeai_tui", str(case)])
    try:
        wait_screen(session, "effect unknown")
        signum = getattr(signal, f"SIG{sig}")
        os.kill(pid, signum)
        # the stty line comes after EXITED=: wait for it, not just for the exit
        text = wait_screen(session, "TTY=")  # one echo: the stty result comes whole
        assert f"EXITED={128 + int(signum)}" in text
        assert "this session" in text  # the summary line the console prints on exit
        assert "TTY=icanon." in text  # canonical mode back (raw would read "-icanon")
        flags = subprocess.run(["tmux", "display", "-p", "-t", session,
                                "#{alternate_on} #{mouse_any_flag}"], capture_output=True,
                               text=True, check=True).stdout.split()
        assert flags == ["0", "0"]
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False,
                       capture_output=True)


def test_a_signal_ends_the_process_even_when_the_app_cannot_finish(tmp_path: Path) -> None:
    """A closed terminal can stall the app's own ending (the restore writes to a gone
    pty); a console left behind keeps a read connection on the ledger. Here the app
    ignores its exit outright: SIGTERM must still end the process, with 128+15."""
    case = make_case(tmp_path / "case", "killed_in_flight")
    code = ("import sys; from codeai_tui.app import create_app; app = create_app(sys.argv[1]); "
            "app.exit = lambda *a, **k: None; app.run()")
    session, pid = start_in_shell(tmp_path, "codeai-stall", ["-c", code, str(case)])
    try:
        wait_screen(session, "effect unknown")
        os.kill(pid, signal.SIGTERM)
        text = wait_screen(session, "EXITED=", timeout=20)
        assert "EXITED=143" in text
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False,
                       capture_output=True)
