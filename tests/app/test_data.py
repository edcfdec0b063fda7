"""The console's read helpers: same verdicts as the library projection, no writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apphelpers import CONFORMANCE, ledger_digest
from ledgerfactory import write_ledger

from codeai_tui.console.model import CaseFollower, FollowProjector, TimeMachine
from codeai_tui.ledger import LedgerReader, read_receipts
from codeai_tui.workstate import project

VECTORS = sorted(p.stem for p in CONFORMANCE.glob("*.json"))


@pytest.mark.parametrize("name", VECTORS)
def test_follow_projector_matches_library_projection(tmp_path: Path, name: str) -> None:
    data = json.loads((CONFORMANCE / f"{name}.json").read_text(encoding="utf-8"))
    case = tmp_path / name
    write_ledger(case, data["events"], receipts=data.get("receipts"))
    before = ledger_digest(case)
    with LedgerReader(case) as reader:
        events = reader.events()
    log = read_receipts(case)
    expected = project(events, log)
    follower = CaseFollower(case)
    try:
        follower.catch_up(page=3)  # small pages: the paging itself is under test
        got = follower.snapshot().state
    finally:
        follower.close()
    assert got == expected
    # a second snapshot reuses the receipt check and is still the same
    again = FollowProjector()
    again.feed(events)
    assert again.snapshot(log) == again.snapshot(log) == expected
    for seq in range(1, len(events) + 1):
        machine_state = TimeMachine(case).to(seq)
        assert machine_state is not None
        # one projection: the receipt cut-off is project()'s, not the console's
        assert machine_state.state == project(events, log, as_of=seq)
    assert ledger_digest(case) == before


def test_time_machine_steps_forward_incrementally_and_back(tmp_path: Path) -> None:
    data = json.loads((CONFORMANCE / "resumed_then_completed.json").read_text())
    case = tmp_path / "c"
    write_ledger(case, data["events"], receipts=data.get("receipts"))
    with LedgerReader(case) as reader:
        events = reader.events()
    machine = TimeMachine(case)
    for seq in (3, 7, 12, 5, 15, 1):
        snap = machine.to(seq)
        assert snap is not None and snap.as_of == seq
        assert snap.state == project(events, read_receipts(case), as_of=seq)
