"""A receipt log read on as the provider appends gives what reading it all gives, and
the live receipt check carried forward gives what a fresh check gives: the log written
in arbitrary pieces (lines cut anywhere, bad lines, blank lines), replaced or cut
short under the reader; and a following console shows appended receipts without
reading the log again."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hypothesis import given, settings
from hypothesis import strategies as st

from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.ledger.receipts import (
    ReceiptLog,
    read_more_receipts,
    read_receipts,
    read_receipts_later,
)
from codeai_tui.ledger.schema import Event
from codeai_tui.workstate import Projector, check_receipts
from codeai_tui.workstate.receipts import check_coverage, coverage_pairs

if TYPE_CHECKING:
    from codeai_tui.console.model import CaseSnapshot

# whole lines; no proper prefix of any of them parses as JSON, so a line cut short is
# never taken for a line (`read_more_receipts`: a last line is taken before its newline)
_receipt_line = st.builds(
    lambda n, k, h, drop: json.dumps({f: v for f, v in {
        "receipt_id": f"r{n}", "received_at": f"2026-11-29T00:00:{n % 60:02d}Z",
        "idempotency_key": k, "body_sha256": h, "bytes": 1}.items() if f != drop}),
    st.integers(0, 5), st.sampled_from(["k", "k2"]), st.sampled_from(["h1", "h2"]),
    st.sampled_from([None, None, None, "bytes", "received_at"]))
_line = st.one_of(_receipt_line, _receipt_line, st.sampled_from(["not json", "[1, 2]", "", "  "]))


@st.composite
def pieces(draw: st.DrawFn) -> list[bytes]:
    """A log's bytes (the last line may lack its newline), cut at arbitrary points."""
    lines = draw(st.lists(_line, max_size=12))
    data = "".join(line + "\n" for line in lines).encode()
    if lines and draw(st.booleans()):
        data = data[:-1]
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=6)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


def _same(got: ReceiptLog, whole: ReceiptLog) -> None:
    assert list(got.receipts) == list(whole.receipts)
    assert got.problems == whole.problems
    assert got == whole


@settings(max_examples=150, deadline=None)
@given(pieces())
def test_reading_on_equals_reading_it_all(tmp_path_factory: object, parts: list[bytes]) -> None:
    case = Path(tmp_path_factory.mktemp("case"))  # type: ignore[attr-defined]
    path = case / RECEIPTS_RELPATH
    path.parent.mkdir()
    log = read_more_receipts(case, None)
    assert not log.exists
    with open(path, "wb") as out:
        for part in parts:
            out.write(part)
            out.flush()
            log = read_more_receipts(case, log)
            if part.endswith(b"\n"):  # every line read so far is whole
                _same(log, read_receipts(case))
    _same(log, read_receipts(case))


def test_a_log_replaced_or_cut_short_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / RECEIPTS_RELPATH
    path.parent.mkdir()
    line = '{"receipt_id": "r%d", "idempotency_key": "k", "body_sha256": "h", "bytes": 1}\n'
    path.write_text(line % 1 + line % 2)
    first = read_more_receipts(tmp_path, None)
    path.write_text(line % 3)  # shorter: cut short (or rewritten in place)
    again = read_more_receipts(tmp_path, first)
    _same(again, read_receipts(tmp_path))
    assert again.tail is not None and first.tail is not None
    assert again.tail.lineage is not first.tail.lineage
    replacement = tmp_path / "new.jsonl"
    replacement.write_text(line % 3 + line % 4 + line % 5)
    os.replace(replacement, path)  # a new file in its place, longer than the old
    swapped = read_more_receipts(tmp_path, again)
    _same(swapped, read_receipts(tmp_path))
    assert [r.receipt_id for r in swapped.receipts] == ["r3", "r4", "r5"]
    path.unlink()
    assert not read_more_receipts(tmp_path, swapped).exists


def test_a_log_read_later_is_the_log_as_it_was_when_asked(tmp_path: Path) -> None:
    """`read_receipts_later` reads the bytes when asked and parses them when called: a
    receipt the provider appends in between is not in it (`inspect` pins the ledger
    between the two: every receipt it reads had its attempt.started written before)."""
    path = tmp_path / RECEIPTS_RELPATH
    path.parent.mkdir()
    line = '{"receipt_id": "r%d", "idempotency_key": "k", "body_sha256": "h", "bytes": 1}\n'
    path.write_text(line % 1 + line % 2)
    parse = read_receipts_later(tmp_path)
    asked = read_receipts(tmp_path)
    with path.open("a") as log:
        log.write(line % 3)
    _same(parse(), asked)
    assert [r.receipt_id for r in parse().receipts] == ["r1", "r2"]
    path.unlink()
    unread = read_receipts_later(tmp_path)
    path.write_text(line % 4)
    assert not unread().exists


_coverage_events = st.lists(
    st.tuples(st.sampled_from(["call.requested", "call.manifest", "attempt.started"]),
              st.sampled_from(["c1", "c2", "c3"]), st.sampled_from(["k", "k2"]),
              st.sampled_from(["h1", "h2"])), max_size=12)


@settings(max_examples=100, deadline=None)
@given(_coverage_events, st.lists(st.lists(_receipt_line, max_size=4), max_size=5))
def test_the_live_check_carried_forward_equals_a_fresh_check(
        tmp_path_factory: object, events: list[tuple[str, str, str, str]],
        batches: list[list[str]]) -> None:
    """Receipts appended between events: the check the projector carries forward (covers,
    uncovered, duplicates, the index's latest time) equals checking everything anew."""
    case = Path(tmp_path_factory.mktemp("case"))  # type: ignore[attr-defined]
    path = case / RECEIPTS_RELPATH
    path.parent.mkdir()
    path.write_bytes(b"")
    projector = Projector()
    log = read_more_receipts(case, None)
    seq = 0
    for i, batch in enumerate(batches):
        with open(path, "a") as out:
            out.write("".join(line + "\n" for line in batch))
        log = read_more_receipts(case, log)
        for kind, call, key, sha in events[i * 3:i * 3 + 3]:
            seq += 1
            projector.add(Event(seq, f"e{seq}", "t", kind, "t1", call,
                                f"{call}-a" if kind == "attempt.started" else None,
                                payload={"idempotency_key": key, "request_sha256": sha}))
        got = projector.receipt_check(log)
        fresh = check_receipts(log.receipts, projector.calls.values(), problems=log.problems,
                               log_present=True)
        assert got == fresh
        assert got.covered_by.attempts == fresh.covered_by.attempts
        assert got.index is not None and fresh.index is not None
        assert got.index.complete_up_to == fresh.index.complete_up_to
        assert dict(got.index.by_pair) == dict(fresh.index.by_pair)
        # as of every seq (time travel), from the check carried forward: a receipt is
        # covered by an attempt started by then
        started = coverage_pairs(projector.calls.values())
        for n in range(seq + 1):
            as_of = projector.receipt_check_as_of(log, n)
            anew = check_coverage(log.receipts, started, upto=n, problems=log.problems,
                                  log_present=True)
            assert as_of == anew, n
            assert list(as_of.covered_by.attempts) == list(anew.covered_by.attempts), n


def test_a_following_console_reads_on_from_where_it_ended(tmp_path: Path) -> None:
    """The provider appends receipts while the console follows: the next snapshots
    carry them, read on from the log read first (the same lineage), and a receipt for
    an attempt that started is covered by it."""
    from ledgerfactory import write_ledger

    from codeai_tui.console.model import CaseFollower

    sha = "a" * 64
    write_ledger(tmp_path, [
        {"seq": 1, "kind": "call.requested", "task_id": "t1", "call_id": "c1",
         "payload": {"idempotency_key": "k"}},
        {"seq": 2, "kind": "call.manifest", "task_id": "t1", "call_id": "c1",
         "payload": {"idempotency_key": "k", "request_sha256": sha}},
        {"seq": 3, "kind": "attempt.started", "task_id": "t1", "call_id": "c1",
         "attempt_id": "c1-a1", "payload": {"request_sha256": sha}}])
    path = tmp_path / RECEIPTS_RELPATH
    path.parent.mkdir(exist_ok=True)
    path.write_text('{"receipt_id": "r0", "received_at": "2026-11-29T00:00:00Z", '
                    '"idempotency_key": "other", "body_sha256": "b", "bytes": 1}\n')
    follower = CaseFollower(tmp_path)
    try:
        follower.catch_up()
        first = follower.snapshot()
        assert first.state.receipts.uncovered == ("r0",)
        with open(path, "a") as out:
            out.write('{"receipt_id": "r1", "received_at": "2026-11-29T00:00:01Z", '
                      f'"idempotency_key": "k", "body_sha256": "{sha}", "bytes": 1}}\n')
        deadline = time.monotonic() + 10
        snap = None
        while time.monotonic() < deadline:
            got = follower.poll()
            if got is not None and len(got.receipts.receipts) == 2:
                snap = got
                break
            time.sleep(0.05)
        assert snap is not None, "the appended receipt never reached a snapshot"
        assert first.receipts.tail is not None and snap.receipts.tail is not None
        assert snap.receipts.tail.lineage is first.receipts.tail.lineage  # read on
        assert len(first.receipts.receipts) == 1  # the snapshot shown did not change
        assert snap.state.receipts.covered_by.of(snap.receipts.receipts[1]) == "c1-a1"
        assert snap.state.receipts.uncovered == ("r0",)
        assert snap.receipts == read_receipts(tmp_path)
    finally:
        follower.close()


def test_a_receipt_read_on_keeps_its_attempts_hash_not_a_copy(tmp_path: Path) -> None:
    """Memory, not meaning: a receipt read on from a growing log holds the body-hash
    string its covering attempt holds, whether the attempt had started when the receipt
    was read or started after (a second copy was ~113 bytes a receipt, kept for as long
    as the console is open)."""
    from ledgerfactory import append_to_case, write_ledger

    from codeai_tui.console.model import CaseFollower

    sha1, sha2 = hashlib.sha256(b"one").hexdigest(), hashlib.sha256(b"two").hexdigest()

    def begun(seq: int, call: str, sha: str) -> list[dict[str, object]]:
        return [{"seq": seq, "kind": "call.requested", "task_id": "t1", "call_id": call,
                 "payload": {"idempotency_key": "k" + call}},
                {"seq": seq + 1, "kind": "call.manifest", "task_id": "t1", "call_id": call,
                 "payload": {"idempotency_key": "k" + call, "request_sha256": sha}}]

    def started(seq: int, call: str, sha: str) -> dict[str, object]:
        return {"seq": seq, "kind": "attempt.started", "task_id": "t1", "call_id": call,
                "attempt_id": call + "-a1", "payload": {"request_sha256": sha}}

    def receipt(rid: str, call: str, sha: str) -> str:
        return (f'{{"receipt_id": "{rid}", "received_at": "2026-11-29T00:00:01Z", '
                f'"idempotency_key": "k{call}", "body_sha256": "{sha}", "bytes": 1}}\n')

    write_ledger(tmp_path, [*begun(1, "c1", sha1), started(3, "c1", sha1),
                            *begun(4, "c2", sha2)])
    path = tmp_path / RECEIPTS_RELPATH
    path.parent.mkdir(exist_ok=True)
    path.write_text(receipt("r0", "other", "b"))
    follower = CaseFollower(tmp_path)

    def follow_until(done: Callable[[CaseSnapshot], bool]) -> CaseSnapshot:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            got = follower.poll()
            if got is not None and done(got):
                return got
            time.sleep(0.05)
        raise AssertionError("the follower never got there")

    try:
        follower.catch_up()
        follower.snapshot()
        with open(path, "a") as out:  # c1 started before its receipt is read
            out.write(receipt("r1", "c1", sha1) + receipt("r2", "c2", sha2))
        snap = follow_until(lambda s: len(s.receipts.receipts) == 3)
        assert snap.state.receipts.uncovered == ("r0", "r2")
        first = follower.projector.calls["c1"].last_attempt()
        assert first is not None and first.request_sha256 == sha1
        assert snap.receipts.receipts.shas[1] is first.request_sha256
        append_to_case(tmp_path, [started(6, "c2", sha2)])  # c2 starts after its receipt
        snap = follow_until(lambda s: s.state.receipts.uncovered == ("r0",))
        second = follower.projector.calls["c2"].last_attempt()
        assert second is not None and second.request_sha256 == sha2
        assert snap.receipts.receipts.shas[2] is second.request_sha256
    finally:
        follower.close()
