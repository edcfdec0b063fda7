"""A full disk during resume: one line that names the cause (exit 74), and a ledger that
is consistent at every fill level. The disk is a real, tiny tmpfs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.core.cases import STOPPED_AT, make_case
from tests.support import cli

FS_BYTES = 1024 * 1024


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_BYTES}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()[:80]})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(disk: Path, leave: int) -> Path:
    """Take all free space but `leave` bytes."""
    filler = disk / "filler"
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with open(filler, "wb") as fh:
        fh.truncate(0)
        fh.write(b"\0" * max(0, free - leave))
    return filler


@pytest.fixture
def plain_provider(tmp_path: Path) -> Iterator[Any]:
    """A provider logging to a file outside the tiny disk (so it never runs out itself)."""
    from codeai_tui.lab.provider import ProviderProcess

    with ProviderProcess(tmp_path / "receipts.jsonl") as proc:
        yield proc


@pytest.mark.parametrize("leave", [0, 4096, 32768, 98304, 163840, 393216])
def test_resume_on_a_full_disk_says_so_and_leaves_a_consistent_ledger(
    tiny_disk: Path, tmp_path: Path, plain_provider: Any, leave: int
) -> None:
    case = make_case(tiny_disk / f"c{leave}", plain_provider.base_url, recorded_at=STOPPED_AT)
    filler = _fill(tiny_disk, leave)
    proc = cli("resume", str(case), "call-1", "--yes", "--base-url", plain_provider.base_url)
    assert "Traceback" not in proc.stderr and "cannot rollback" not in proc.stderr
    assert "internal error" not in proc.stderr
    if proc.returncode != 0:
        assert proc.returncode == 74, proc.stderr
        assert "disk is full" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) <= 2  # the note before sending, the cause
    filler.unlink()
    doc = json.loads(cli("inspect", str(case), "--json").stdout)
    assert doc["anomalies"] == []
    calls = {c["call_id"]: c for c in doc["calls"]}
    old = calls["call-1"]
    if old["stage"] == "superseded":  # call.resumed commits with its successor, never alone
        new = calls[old["superseded_by"]]
        assert new["resumed_from"] == "call-1"
    else:
        assert old["stage"] == "manifest_recorded" and len(calls) == 1
    started = sum(c["attempts"] for c in doc["calls"])
    receipts = tmp_path / "receipts.jsonl"
    sent = len(receipts.read_text().splitlines()) if receipts.exists() else 0
    assert sent <= started
    if proc.returncode == 0:
        assert "succeeded" in proc.stdout and sent == 1
    shutil.rmtree(case)
