"""What a live projection keeps per call while it follows a writer: each cut here is a
number of bytes a call that ten minutes of following at 1,000 events/s (~90,000 new
calls) multiplies."""

from __future__ import annotations

from codeai_tui.ledger.schema import Event
from codeai_tui.workstate.projector import Projector
from tests.core.test_call_columns import _LIFE, _kept_bytes_a_call
from tests.support import held_by


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
    settled columns): at 8 bytes each a call kept ~111 bytes here, at 4 ~103 (with the
    settled columns' narrow offsets and codes; ~122 and ~114 before them). A seq beyond
    4 bytes (a hostile ledger's) widens the column; the calls settled before and after
    it read their seqs back unchanged."""
    kept = _kept_bytes_a_call(_LIFE, 4096)
    assert kept < 106.5, kept
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


def test_a_value_set_beyond_a_columns_items_widens_it_one_step_at_a_time() -> None:
    """A call's last seq set past 4 bytes (a hostile ledger's) widens the column to 8
    bytes, not to a list of int objects (~36 bytes a call where 8 do); past 8 bytes, a
    list. Every other item reads back unchanged."""
    from array import array

    from codeai_tui.ledger.blocks import assigned
    wide = assigned(array("i", [1, 2, 3]), 1, 1 << 40)
    assert (type(wide), getattr(wide, "typecode", None), list(wide)) == (
        array, "q", [1, 1 << 40, 3])
    wider = assigned(array("B", [1, 2, 3]), 2, 300)
    assert (getattr(wider, "typecode", None), list(wider)) == ("h", [1, 2, 300])
    widest = assigned(array("q", [1, 2]), 0, 1 << 70)
    assert (type(widest), widest) == (list, [1 << 70, 2])


def _task_events(t: int, calls: int, seq: int) -> list[Event]:
    """Task `t`'s events from `seq` on: `calls` calls, all completed but the last, left
    in flight (as the bench's writer makes them); fresh texts, as a ledger read gives."""
    task = f"live-task-{t:06d}"
    events = [Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", "task.created", task, None,
                    None, payload={"title": "live task"})]
    for c in range(calls):
        call = f"{task}-c{c}"
        for kind, a, p in _LIFE if c < calls - 1 else _LIFE[:3]:
            seq += 1
            events.append(Event(seq, f"e{seq}", "2026-09-13T12:00:00Z", kind, task, call,
                                f"{call}-a1" if a else None,
                                payload={k: (call if v == "K" else f"{call}-a1" if v == "A"
                                             else v) for k, v in p.items()}))
    return events


def _kept_bytes_a_task(tasks: int, calls: int = 10) -> float:
    """What a projector settling in columns keeps for each of `tasks` tasks (see
    `_task_events`), fed as they follow with a snapshot every 64 tasks: what its ids'
    characters take in columns is counted too, the rest of the events let go."""
    per_task = 1 + (calls - 1) * len(_LIFE) + 3

    def followed() -> Projector:
        projector = Projector(event_ids_unique=True)
        projector.settle_in_columns(lambda call_id, n, position: None)
        projector.rest_after = 64 * per_task  # (the call in flight rests in columns)
        for first in range(0, tasks, 64):
            for t in range(first, min(first + 64, tasks)):
                projector.feed(_task_events(t, calls, 1 + t * per_task))
            projector.snapshot()
        for _ in range(4):
            projector.snapshot()
        return projector

    projector, kept = held_by(followed)
    assert projector.settled_count == tasks * calls - 64  # (the last 64 not at rest yet)
    return kept / tasks


def test_a_task_keeps_no_call_id_for_its_best_succeeded_call() -> None:
    """A task's tally of its calls names the latest that succeeded by position, its id
    read from the columns when the task is judged: holding the id's text (and a third
    item in its tuple) cost ~76 bytes a task, a task in ten calls while following."""
    kept = _kept_bytes_a_task(512)
    # (3,014 with the id kept, 2,950 without, measured with every other cut in; the
    # narrower settled columns made after this one took ~100 off both, and the bound
    # set before them, 3,090, held with the id kept too)
    assert kept < 2985, kept


def test_a_receipt_keeps_its_time_line_and_size_in_offsets_from_its_blocks_least() -> None:
    """A live console reads one receipt per call begun. Each sealed block of times, line
    numbers and sizes keeps offsets from its least item (times of a provider logging
    minutes of receipts in 4 bytes, lines in 2, equal sizes in 1) where 8, 4 and 4 bytes
    took 16; every receipt still reads back as written, including a block whose items
    lie 2^64 apart (a hostile log's)."""
    import json
    from datetime import UTC, datetime, timedelta
    from hashlib import sha256

    from codeai_tui.ledger.blocks import BLOCK
    from codeai_tui.ledger.receipts import Receipt, parse_receipt_lines
    from tests.support import held_by
    n = 2 * BLOCK
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [(f"r-{i}", (start + timedelta(microseconds=7_531 * i)).isoformat(
                 timespec="microseconds").replace("+00:00", "Z"),
             f"key-{i:06d}", sha256(str(i).encode()).hexdigest(), 100, i + 1)
            for i in range(n)]
    rows[-1] = (*rows[-1][:4], 1 << 70, n)  # (the second block's sizes: 2^64 apart)
    texts = sum(len(r[0]) + len(r[2]) for r in rows)
    data = "".join(json.dumps({"receipt_id": r[0], "received_at": r[1], "idempotency_key": r[2],
                               "body_sha256": r[3], "bytes": r[4]}) + "\n"
                   for r in rows).encode()
    log, held = held_by(lambda: parse_receipt_lines(data))
    assert list(log.receipts) == [Receipt(*r) for r in rows]
    # the first block: 32 (hash) + 4 (time) + 2 (line) + 1 (size) + 2 x 4 (ends) + slack;
    # the second's sizes a tuple (~51 bytes a receipt in all; ~58 with 8, 4 and 4)
    assert (held - texts) / n < 55, (held - texts) / n


def test_a_settled_calls_offsets_counts_and_codes_take_a_byte_each_where_they_fit() -> None:
    """A settled call's completion and cover start (seqs after its first), attempt count
    and status and verdict codes: a byte each where a call's events follow on (~102 bytes
    a call here, ~114 at 4, 4, 4, 2 and 2). A call completed 70,000 seqs after its first
    widens those columns; every call reads back as it settled."""
    kept = _kept_bytes_a_call(_LIFE, 4096)
    assert kept < 108, kept
    projector = Projector(event_ids_unique=True)
    projector.settle_in_columns(lambda call_id, n, position: None)
    spans = {"near": [1, 2, 3, 4, 5, 6, 7], "wide": [8, 9, 10, 300, 301, 302, 303],
             "far": [304, 305, 70_000, 70_001, 70_002, 70_003, 70_500]}
    for call, seqs in spans.items():
        projector.feed(_life_events(call, seqs))
        projector.snapshot()
    assert projector.settled_count == 3
    assert [(c.call_id, c.first_seq, c.completed_seq, c.attempts, c.status, c.stage.value)
            for c in projector.snapshot().calls] == [
        ("near", 1, 7, 1, "succeeded", "completed"), ("wide", 8, 303, 1, "succeeded", "completed"),
        ("far", 304, 70_500, 1, "succeeded", "completed")]
    cover = projector.coverage.get("far")
    assert cover is not None and cover.started_seq == 70_000
