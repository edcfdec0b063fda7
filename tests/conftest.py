"""Shared fixtures: deterministic environment and a real provider process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # `ledgerfactory` for every test package

# The suite starts a thousand or so `codeai-tui` processes. Where the environment sets
# PYTHONDONTWRITEBYTECODE (this workplace does), each of them compiled the whole package
# from source again: cached bytecode is written and reused here, as a plain install does.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Deterministic runs: no animations, no user config from $HOME, no real API key.
os.environ["TEXTUAL_ANIMATIONS"] = "none"
os.environ.pop("CODEAI_API_KEY", None)

# Tests run in two processes (pytest-xdist, README). Its worker processes were seen to
# run with LINES=24 and COLUMNS=80 in their environment (xdist 3.8; nothing of ours sets
# them), which Textual obeys over the terminal's own size: a console started in a 160x48
# tmux or pty by a test drew itself at 80x24. Sizes come from the terminals the tests
# make, not from the environment.
os.environ.pop("LINES", None)
os.environ.pop("COLUMNS", None)
# Each test process drives its own tmux server (its socket lives under TMUX_TMPDIR, which
# every `tmux` the tests run inherits): one process's sessions never meet the other's.
_TMUX_DIR = tempfile.mkdtemp(prefix="codeai-tmux-")
os.environ["TMUX_TMPDIR"] = _TMUX_DIR
os.environ.pop("TMUX", None)  # not the server of a terminal the tests were started from


def pytest_unconfigure(config: pytest.Config) -> None:
    if shutil.which("tmux"):
        subprocess.run(["tmux", "kill-server"], capture_output=True, check=False)
    shutil.rmtree(_TMUX_DIR, ignore_errors=True)


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[Any]:
    """A synthetic provider in its own process, bundle mode rooted at tmp_path."""
    from codeai_tui.lab.provider import ProviderProcess

    with ProviderProcess(receipts_root=tmp_path) as proc:
        yield proc
