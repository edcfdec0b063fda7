"""Found by the replay race: two replays of one turn could both record its follow-up call.

record_follow_up checked for the follow-up with a reader, then appended call.requested
and call.manifest each in its own transaction: the naive claim. A replay that found
"nothing to run" (the winner had completed the tool) still records the follow-up, so a
late racer and the winner could both pass the check. Made deterministic here by pausing
the winner after its check, just before it appends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeai_tui.lab.reliability.actions import REPLAY, Boundary
from codeai_tui.lab.reliability.harness import ActorProc, Deadline, read_events


def test_two_replays_record_one_follow_up(tmp_path: Path, provider: Any) -> None:
    target = REPLAY.setup(tmp_path / "case", provider.base_url)
    follow_up = "turn-1-m2"
    # the winner's write transactions: the gate (the planning call is as it was shown),
    # tool.admitted, tool.completed, then the follow-up's gate
    before_follow_up = Boundary("checked, before appending the follow-up", "txn.begin", nth=4)
    deadline = Deadline(120)
    winner = ActorProc(REPLAY, target, tmp_path, boundary=before_follow_up)
    try:
        assert winner.wait_mark("paused", deadline), winner.marks
        assert winner.committed("tool.completed") == 1
        late = ActorProc(REPLAY, target, tmp_path)
        assert late.finish(deadline) == 0  # "nothing to run", and it records the follow-up
        late_out = late.output()[0]
        assert "nothing to run" in late_out
        winner.say("go")
        assert winner.finish(deadline) == 0
    finally:
        winner.kill()
    winner.output()
    requested = [e for e in read_events(target.case)
                 if e.call_id == follow_up and e.kind == "call.requested"]
    manifests = [e for e in read_events(target.case)
                 if e.call_id == follow_up and e.kind == "call.manifest"]
    assert (len(requested), len(manifests)) == (1, 1)
