"""A follower hands the timeline the newest events it read, ending where its snapshot
does, so the end of a growing ledger is drawn from the same read as the count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledgerfactory import append_to_case, write_ledger

from codeai_tui.console.model import TIMELINE_PAGE, CaseFollower


def _ev(seq: int) -> dict[str, Any]:
    return {"seq": seq, "event_id": f"e{seq}", "recorded_at": "2026-12-01T20:00:00Z",
            "kind": "task.created", "task_id": f"t{seq}", "call_id": None,
            "attempt_id": None, "compilation_id": None, "payload": "{}"}


def test_each_snapshot_carries_the_newest_events_read(tmp_path: Path) -> None:
    case = tmp_path / "case"
    write_ledger(case, [_ev(s) for s in range(1, 301)])
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        snap = follower.snapshot()
        assert [e.seq for e in snap.recent] == list(range(301 - TIMELINE_PAGE, 301))
        append_to_case(case, [_ev(s) for s in range(301, 306)])
        grown = follower.poll()
        assert grown is not None and grown.max_seq == 305
        assert [e.seq for e in grown.recent] == list(range(306 - TIMELINE_PAGE, 306))
        assert [e.seq for e in snap.recent][-1] == 300  # the snapshot shown keeps its own
    finally:
        follower.close()
