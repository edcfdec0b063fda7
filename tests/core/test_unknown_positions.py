"""The effect-unknown calls are kept by position: a writer that leaves one call in ten
in flight (attempt started, nothing after) no longer costs the projection an id string
and a set entry for each of them, and a snapshot's set of them reads ids on demand and
answers as a set of ids does, before and after the calls rest in columns."""

from __future__ import annotations

from array import array
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.ledger.receipts import ReceiptLog, read_more_receipts
from codeai_tui.ledger.schema import Event
from codeai_tui.workstate import Projector, project
from codeai_tui.workstate.calls_view import CallIds
from codeai_tui.workstate.positions import places_of
from tests.core.test_call_columns import _LIFE
from tests.support import held_by

ROUND = 512  # calls a poll
IN_FLIGHT = 3  # a call left in flight lives up to its attempt.started


def _call_events(c: int, first_seq: int) -> list[Event]:
    call = f"call-{c:06d}"
    life = _LIFE[:IN_FLIGHT] if c % 10 == 9 else _LIFE
    return [Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, f"t-{c // 10}", call,
                  f"{call}-a1" if a else None,
                  payload={k: (call if v == "K" else v) for k, v in p.items()})
            for seq, (kind, a, p) in enumerate(life, first_seq)]


def _events(calls: int) -> list[Event]:
    out: list[Event] = []
    for c in range(calls):
        out += _call_events(c, 1 + len(out))
    return out


def _follow(case: Path, calls: int) -> tuple[Projector, ReceiptLog]:
    """A projector following `calls` calls, ROUND a poll, with a snapshot each poll (as
    the console takes); every call rests or settles in columns."""
    (case / RECEIPTS_RELPATH).parent.mkdir(parents=True, exist_ok=True)
    (case / RECEIPTS_RELPATH).write_bytes(b"")
    log = read_more_receipts(case, None)
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(lambda call_id, n, position: None)
    seq = 1
    for start in range(0, calls, ROUND):
        batch: list[Event] = []
        for c in range(start, start + ROUND):
            life = _call_events(c, seq)
            batch += life
            seq += len(life)
        projector.feed(batch)
        projector.snapshot(log)
    projector.snapshot(log)
    return projector, log


def test_the_effect_unknown_calls_cost_a_position_each(tmp_path: Path) -> None:
    calls = 8 * ROUND
    (projector, log), held = held_by(lambda: _follow(tmp_path / "case", calls))
    snap = projector.snapshot(log)
    want = {f"call-{c:06d}" for c in range(calls) if c % 10 == 9}
    assert snap.effect_unknown_ids == want and len(snap.effect_unknown_ids) == len(want)
    # ~387 bytes a call here (no receipt log: each covering hash is kept); ~394 with
    # an id string and a set entry for each effect-unknown call (one in ten)
    assert held / calls < 390, held / calls


def test_a_snapshots_effect_unknown_ids_answer_as_a_set_and_never_change(
        tmp_path: Path) -> None:
    calls = 2 * ROUND
    projector, log = _follow(tmp_path / "case", calls)
    early = projector.snapshot(log).effect_unknown_ids
    assert isinstance(early, CallIds)
    want = {f"call-{c:06d}" for c in range(calls) if c % 10 == 9}
    assert early == want == project(_events(calls), log).effect_unknown_set()
    assert sorted(early) == sorted(want)
    assert "call-000009" in early and "call-000008" not in early and 9 not in early
    assert "no-such-call" not in early and early - {"call-000009"} == want - {"call-000009"}
    # two unknown calls complete, one more call is left in flight
    done = [Event(0, "", "2026-09-13T12:00:01Z", kind, "t-0", call, f"{call}-a1" if a
                  else None, payload={k: (call if v == "K" else v) for k, v in p.items()})
            for call in ("call-000009", "call-000019") for kind, a, p in _LIFE[IN_FLIGHT:]]
    seq = projector.last_seq
    more = [Event(seq + i, f"x{seq + i}", e.recorded_at, e.kind, e.task_id, e.call_id,
                  e.attempt_id, payload=e.payload) for i, e in enumerate(done, 1)]
    late = 10 * (calls // 10) + 19  # (a number ending in 9: left in flight)
    more += _call_events(late, seq + len(more) + 1)
    projector.feed(more)
    later = projector.snapshot(log).effect_unknown_ids
    assert later == (want - {"call-000009", "call-000019"}) | {f"call-{late:06d}"}
    assert early == want  # a snapshot handed out never changes
    assert later.not_in(early) == [f"call-{late:06d}"]  # type: ignore[attr-defined]
    assert later - early == {f"call-{late:06d}"}  # (what the console's alerts ask)
    assert sorted(early.not_in(later)) == ["call-000009", "call-000019"]  # type: ignore[attr-defined]
    assert early.not_in(frozenset(want)) == []  # type: ignore[attr-defined]


@given(st.lists(st.integers(0, 60), unique=True), st.lists(st.integers(0, 60), unique=True))
def test_a_filters_rows_to_look_at_are_the_rows_whose_positions_are_among_them(
        positions: list[int], kept: list[int]) -> None:
    """`e` under a filter: the rows (places among the positions the filter kept) whose
    calls are to be looked at, rising, whichever list is the longer."""
    positions.sort()
    kept.sort()
    expected = [row for row, pos in enumerate(kept) if pos in set(positions)]
    assert places_of(positions, kept) == expected
    assert places_of(array("i", positions), array("i", kept)) == expected
