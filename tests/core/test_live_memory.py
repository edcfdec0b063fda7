"""What a live projection keeps per call while it follows a writer: each cut here is a
number of bytes a call that ten minutes of following at 1,000 events/s (~90,000 new
calls) multiplies."""

from __future__ import annotations

from codeai_tui.ledger.schema import Event
from codeai_tui.workstate.projector import Projector
from tests.core.test_call_columns import _LIFE, _kept_bytes_a_call


def _life_events(call: str, seqs: list[int]) -> list[Event]:
    """`_LIFE` of one call (a task of its own) at these seqs."""
    return [Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, f"t-{call}", call,
                  f"{call}-a" if a else None,
                  payload={k: (call if v == "K" else f"{call}-a" if v == "A" else v)
                           for k, v in p.items()})
            for seq, (kind, a, p) in zip(seqs, _LIFE, strict=True)]


def test_a_calls_first_and_last_seq_take_4_bytes_each_widened_where_one_does_not_fit(
        ) -> None:
    """Each position's first and last seq is kept by the projector (and lent to the
    settled columns): at 8 bytes each a call kept ~119 bytes here, at 4 ~111. A seq
    beyond 4 bytes (a hostile ledger's) widens the column; the calls settled before and
    after it read their seqs back unchanged."""
    kept = _kept_bytes_a_call(_LIFE, 8192)
    assert kept < 115, kept
    far = 1 << 40
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(lambda call_id, n, position: None)
    projector.feed(_life_events("near", list(range(1, 8))))
    projector.snapshot()  # ("near" settles: the columns read its seqs by position)
    projector.feed(_life_events("far", list(range(far, far + 7))))
    calls = projector.snapshot().calls
    assert projector.settled_count == 2
    assert [(c.call_id, c.first_seq, c.last_seq, c.completed_seq) for c in calls] == [
        ("near", 1, 7, 7), ("far", far, far + 6, far + 6)]

