"""Must hold 4 (short): the follower beside a 200 events/s writer keeps the -wal bounded,
never holds a read transaction across a poll, and sees every event; resumes meanwhile
make no network call inside a write transaction. The full 10-minute soak, with the
writer's p99 judged too (it depends on the machine's load), is `codeai-tui reliability`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeai_tui.lab.reliability.actions import RESUME
from codeai_tui.lab.reliability.follow import POLL_S
from codeai_tui.lab.reliability.soak import WAL_EXTRA_LIMIT, run_soak


def test_short_soak_is_a_good_neighbour(tmp_path: Path, provider: Any) -> None:
    report = run_soak(tmp_path, 5.0, provider.base_url, RESUME, resume_every_s=2.0)
    assert report.attached["events"] >= 500 and report.alone["events"] >= 500
    assert report.wal_extra <= WAL_EXTRA_LIMIT
    assert report.follower["polls"] >= 10
    assert report.follower["longest_read_ms"] < POLL_S * 1000
    assert report.follower["held_between_polls"] == 0
    assert report.follower["last_seq"] == report.attached["events"] + 1
    assert report.resumes >= 2 and report.sends >= report.resumes and report.violations == 0
    assert [p for p in report.problems if "p99" not in p] == []
