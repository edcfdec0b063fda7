"""The console's session (console/session.py): one reset forgets everything read from a
ledger file; time travel swaps what is shown and lets the machine's own projection go."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson

from codeai_tui.console.drift import DriftCheck, DriftStatus
from codeai_tui.console.filters import Needle
from codeai_tui.console.model import CaseFollower, TimeMachine
from codeai_tui.console.session import (
    ALERT_AFTER_S,
    ALERT_EVERY_S,
    DRIFT_AFTER_S,
    CaseSession,
    Note,
)
from codeai_tui.console.severity import case_verdict
from codeai_tui.ledger.blocks import BLOCK
from codeai_tui.ledger.receipts import parse_receipt_lines
from codeai_tui.workstate.receipts import DuplicateGroups
from tests.core.test_fast_path import _write
from tests.core.test_time_travel_bound import EVENTS_A, EVENTS_B
from tests.support import held_by


def _snapshot(case: Path):  # type: ignore[no-untyped-def]
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        return follower.snapshot(), follower.as_of(2)
    finally:
        follower.close()


def test_one_reset_forgets_what_was_read_and_keeps_the_operators_choices(
        tmp_path: Path) -> None:
    case = _write(tmp_path / "a", EVENTS_A, [], unique_ids=True)
    other = _write(tmp_path / "b", EVENTS_B, [], unique_ids=True)
    live, past = _snapshot(case)
    verdict = case_verdict(live.state, live.event_count)
    session = CaseSession(tmp_path, cases=[case, other])
    session.reset(case, TimeMachine(case))
    session.following = False
    session.opened(5, 5, None)
    assert session.state == "paused"
    assert session.take_live(live, verdict) is True
    assert session.take_live(live, verdict) is False  # not the first any more
    session.selected_call_id = "c1"
    session.filters["calls"] = Needle("c1")
    session.drift["c1"] = DriftCheck("c1", 5, DriftStatus.DRIFT)
    session.note = Note(case, "c1", "done", ok=True)
    session.travel_to(2)
    assert session.progress == ("re-projecting", 0, 2)
    assert session.take_as_of(case, past, verdict)
    machine = TimeMachine(other)

    session.reset(other, machine)

    assert session.case == other and session.machine is machine
    assert (session.live, session.shown, session.skeleton, session.as_of) == (None,) * 4
    assert (session.live_verdict, session.shown_verdict, session.live_base) == (None,) * 3
    assert session.selected_call_id is None and session.progress is None
    assert session.filters == {} and session.drift == {} and session.note is None
    assert session.seen_unknown is None and session.pending_alerts == {}
    assert session.state == "opening"
    # what the operator chose for the console, not for a file, stays
    assert session.following is False and session.cases == [case, other]


def test_time_travel_shows_the_past_and_back_to_live_shows_live(tmp_path: Path) -> None:
    case = _write(tmp_path / "a", EVENTS_A, [], unique_ids=True)
    live, past = _snapshot(case)
    verdict = case_verdict(live.state, live.event_count)
    session = CaseSession(tmp_path)
    bound = TimeMachine(case, lambda: None)
    session.reset(case, bound)
    session.take_live(live, verdict)
    session.travel_to(3)
    assert not session.take_as_of(case, past, verdict)  # as of 2: not what was asked
    assert session.shown is live
    session.travel_to(2)
    assert not session.take_as_of(tmp_path / "elsewhere", past, verdict)  # another case
    assert session.take_as_of(case, past, verdict) and session.shown is past
    # a newer live projection does not move the panes while they show the past
    session.take_live(live, verdict)
    assert session.shown is past
    session.back_to_live()
    assert session.as_of is None and session.shown is live and session.progress is None
    assert session.machine is not bound and session.machine is not None
    assert session.machine.live is bound.live  # the same live follower, nothing of its own


def test_an_effect_unknown_call_alerts_once_after_it_stays(tmp_path: Path) -> None:
    case = _write(tmp_path / "b", EVENTS_B, [], unique_ids=True)
    live, _past = _snapshot(case)
    verdict = case_verdict(live.state, live.event_count)
    session = CaseSession(tmp_path)
    session.reset(case, None)
    session.take_live(live, verdict)
    assert session.note_changes(live, True, 100.0) == []  # the first snapshot: no news
    session.seen_unknown = set()  # as if the last snapshot had none in effect_unknown
    assert session.note_changes(live, False, 100.0) == []
    assert live.unknown_ids  # (b2 is in flight)
    assert session.due_alerts(100.0 + ALERT_AFTER_S / 2) == []
    assert session.due_alerts(100.0 + ALERT_AFTER_S) == sorted(live.unknown_ids)
    assert session.due_alerts(200.0) == []  # once


def test_the_duplicates_seen_are_remembered_without_a_copy(tmp_path: Path) -> None:
    """The session remembers the last snapshot's duplicate groups as the check gave
    them: a set of them made on every snapshot read every group's ids anew (~17 MB held
    and ~90 ms a snapshot at 10M events). A group that appears still alerts, once."""
    count = 3 * BLOCK
    log = parse_receipt_lines(b"".join(orjson.dumps({
        "receipt_id": f"r-{i}", "received_at": "2026-11-29T00:00:00Z",
        "idempotency_key": f"k-{i // 2}", "body_sha256": "ab", "bytes": 1,
    }) + b"\n" for i in range(count)))
    pairs = [[i, i + 1] for i in range(0, count - 2, 2)]

    def snap(groups: list[list[int]]) -> Any:
        check = SimpleNamespace(duplicates=DuplicateGroups.of(log.receipts, groups))
        return SimpleNamespace(unknown_ids=frozenset(), state=SimpleNamespace(receipts=check))

    session = CaseSession(tmp_path)
    before, after = snap(pairs), snap([*pairs, [count - 2, count - 1]])
    assert session.note_changes(before, True, 0.0) == []
    new, held = held_by(lambda: session.note_changes(after, False, 1.0))
    assert new == [(f"r-{count - 2}", f"r-{count - 1}")]
    assert session.note_changes(after, False, 2.0) == []  # once
    # (the groups themselves are the check's: nothing per group is kept besides)
    assert held / len(pairs) < 8, held / len(pairs)


def test_drift_checks_are_kept_for_the_calls_resumable_now(tmp_path: Path) -> None:
    """A followed writer's calls pass through start_call by the thousand: the check of a
    call that moved on goes (it was of evidence that is no longer the call's), and a call
    resumable again is checked again."""

    def snap(*calls: tuple[str, int]) -> Any:
        resumable = [SimpleNamespace(call_id=c, last_seq=s) for c, s in calls]
        return SimpleNamespace(state=SimpleNamespace(resumable_calls=lambda: iter(resumable)))

    session = CaseSession(tmp_path)
    assert session.drift_todo(snap(("c1", 5), ("c2", 7)), 0.0, first=True) == ["c1", "c2"]
    session.take_drift([DriftCheck("c1", 5, DriftStatus.MATCH),
                        DriftCheck("c2", 7, DriftStatus.DRIFT)])
    assert session.drift_todo(snap(("c1", 5), ("c2", 7)), 1.0) == []
    assert session.drift_todo(snap(("c2", 7)), 2.0) == []  # c1 moved on
    assert list(session.drift) == ["c2"]
    assert session.drift_todo(snap(("c1", 5), ("c2", 7)), 3.0) == []  # resumable again:
    assert session.drift_todo(snap(("c1", 5), ("c2", 7)), 3.0 + DRIFT_AFTER_S) == ["c1"]


def test_a_call_passing_through_start_call_is_not_drift_checked(tmp_path: Path) -> None:
    """Each drift check reads the call's events from the table alone (a scan of the
    ledger): a call resumable in the first snapshot is checked at once, one that turns
    resumable while the case is followed once it stayed so DRIFT_AFTER_S, so a live
    writer's calls, resumable for milliseconds, are never checked. Calls a running
    check reads are not asked for twice."""

    def snap(*calls: str) -> Any:
        resumable = [SimpleNamespace(call_id=c, last_seq=1) for c in calls]
        return SimpleNamespace(state=SimpleNamespace(resumable_calls=lambda: iter(resumable)))

    session = CaseSession(tmp_path)
    assert session.drift_todo(snap("crashed"), 10.0, first=True) == ["crashed"]
    assert session.drift_todo(snap("crashed", "live-1"), 10.1, asked={"crashed"}) == []
    assert session.drift_todo(snap("crashed", "live-2"), 10.2, asked={"crashed"}) == []
    assert session.drift_todo(snap("crashed", "live-2"), 10.1 + DRIFT_AFTER_S,
                              asked={"crashed"}) == []  # (live-2 turned so at 10.2)
    assert session.drift_todo(snap("crashed", "live-2"), 10.2 + DRIFT_AFTER_S) == \
        ["crashed", "live-2"]
    assert session.drift_todo(snap("live-3"), 20.0) == []
    assert session.drift_todo(snap("live-1"), 20.0 + DRIFT_AFTER_S) == []  # (back: anew)


def test_effect_unknown_alerts_come_at_most_every_few_seconds(tmp_path: Path) -> None:
    """The calls due within ALERT_EVERY_S of the last alert wait and make the next one;
    a call that left effect_unknown meanwhile is not named."""
    session = CaseSession(tmp_path)
    unknown = {"c1", "c2", "c3"}
    session.live = SimpleNamespace(unknown_ids=unknown)  # type: ignore[assignment]
    session.pending_alerts = {"c1": 0.0}
    assert session.due_alerts(ALERT_AFTER_S) == ["c1"]  # the first at once
    session.pending_alerts = {"c2": 1.0, "c3": 1.0}
    assert session.due_alerts(1.0 + ALERT_AFTER_S) == []  # held: an alert came just now
    unknown.discard("c3")  # it moved on
    assert session.due_alerts(ALERT_AFTER_S + ALERT_EVERY_S / 2) == []
    assert session.due_alerts(ALERT_AFTER_S + ALERT_EVERY_S) == ["c2"]
    assert session.due_alerts(ALERT_AFTER_S + 3 * ALERT_EVERY_S) == []  # once
