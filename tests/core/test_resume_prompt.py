"""`codeai-tui resume` on a real terminal asks, and only a clear yes resumes."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codeai_tui.ledger import read_receipts
from tests.core.cases import STOPPED_AT, make_case


def _run_on_pty(args: list[str], answer: str) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "codeai_tui", *args], stdin=slave, stdout=slave, stderr=slave,
        close_fds=True,
    )
    os.close(slave)
    os.write(master, answer.encode())
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the child closed the pty
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        rc = proc.wait(timeout=60)
    return rc, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize(("answer", "rc", "receipts"), [("n\n", 3, 0), ("y\n", 0, 1)])
def test_manifest_recorded_asks_yes_no(tmp_path: Path, provider: Any, answer: str, rc: int,
                                       receipts: int) -> None:
    case = make_case(tmp_path / "case", provider.base_url, recorded_at=STOPPED_AT)
    code, screen = _run_on_pty(["resume", str(case), "call-1"], answer)
    assert code == rc, screen
    assert "request sha256" in screen and "verdict" in screen and "match" in screen
    assert len(read_receipts(case).receipts) == receipts


def test_no_manifest_requires_typing_the_call_id(tmp_path: Path, provider: Any) -> None:
    case = make_case(tmp_path / "case", provider.base_url, upto="requested")
    code, screen = _run_on_pty(["resume", str(case), "call-1"], "y\n")
    assert code == 3 and "no drift check is possible" in screen
    assert read_receipts(case).receipts == ()
    code, screen = _run_on_pty(["resume", str(case), "call-1"], "call-1\n")
    assert code == 0, screen
    assert len(read_receipts(case).receipts) == 1


def test_a_call_that_moved_moments_ago_requires_typing_the_call_id(tmp_path: Path,
                                                                   provider: Any) -> None:
    """Its events were recorded just now: its process may still be running, so `y` is
    not enough (nothing sent), and the typed id is."""
    case = make_case(tmp_path / "case", provider.base_url)
    code, screen = _run_on_pty(["resume", str(case), "call-1"], "y\n")
    assert code == 3, screen
    assert "may still be running" in screen and "s ago" in screen, screen
    assert read_receipts(case).receipts == ()
    code, screen = _run_on_pty(["resume", str(case), "call-1"], "call-1\n")
    assert code == 0, screen
    assert len(read_receipts(case).receipts) == 1
