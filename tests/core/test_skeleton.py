"""The skeleton (every call's stage from the covering index, no payload) never says
what the full ladder would not: on random ledgers, hostile ones included, and at every
as_of, each final verdict equals the oracle's and the effect-unknown set is the oracle's."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ledgerfactory import append_to_case, write_ledger

from codeai_tui.console.model import CaseFollower
from codeai_tui.lab.bench import write_ledger as write_bench_ledger
from codeai_tui.ledger.evidence_sql import EvidenceSQL, FastPathUnfit
from codeai_tui.services.skeleton import SkeletonCalls, build_skeleton
from codeai_tui.services.stage_reads import StageReads
from codeai_tui.workstate import CallStage
from tests.core.test_fast_path import _ev, _oracle, _write, drawn_case, ledgers
from tests.support import examples, held_by


def _check(case: Path, as_of: int | None, resolve_max: int) -> int:
    """Compare skeleton and oracle; returns how many calls the skeleton left pending."""
    oracle = _oracle(case, as_of)
    with EvidenceSQL(case) as sql:
        sk = build_skeleton(sql, as_of, resolve_max=resolve_max)
    calls = oracle["calls"]
    assert [c.call_id for c in sk.calls] == [c["call_id"] for c in calls]
    assert sk.effect_unknown_ids == {c["call_id"] for c in calls
                                     if c["stage"] == CallStage.EFFECT_UNKNOWN.value}
    for mine, theirs in zip(sk.calls, calls, strict=True):
        assert mine.effect_unknown == (theirs["stage"] == "effect_unknown")
        if mine.pending:
            continue
        assert mine.stage is not None and mine.next_operation is not None
        assert mine.provider_effect is not None
        assert (mine.stage.value, mine.next_operation.value, mine.provider_effect.value,
                mine.attempts) == (theirs["stage"], theirs["next_operation"],
                                   theirs["provider_effect"], theirs["attempts"]), theirs
    return sk.pending_count


@settings(max_examples=examples(35), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledgers(), st.sampled_from([0, 2000]))
def test_final_skeleton_verdicts_equal_the_oracle_at_every_as_of(ledger: Any,
                                                                  resolve_max: int) -> None:
    with drawn_case(ledger, unique_ids=True) as (case, as_ofs):
        for as_of in as_ofs:
            pending = _check(case, as_of, resolve_max)
            if resolve_max:
                assert pending == 0  # small ledgers: every undecided call was re-read


def _case(tmp_path: Path, events: list[dict[str, Any]]) -> Path:
    case = tmp_path / "case"
    write_ledger(case, events)
    return case


def _started(seq: int, call: str, attempt: str | None = "a1") -> list[dict[str, Any]]:
    """A call requested and planned (key k<n> for call c<n>), its attempt started."""
    key = {"idempotency_key": "k" + call[1:]}
    return [_ev(seq, "call.requested", call, payload=key),
            _ev(seq + 1, "call.manifest", call, payload=key),
            _ev(seq + 2, "attempt.started", call, attempt, {"attempt_no": 1})]


def test_payload_dependent_verdicts_wait_instead_of_guessing(tmp_path: Path) -> None:
    """Without re-reads: a retry decision, a finding, and an observation that says
    nothing was sent are pending; a finding on the last attempt is still re-read, so
    the effect-unknown set stays final."""
    events = [
        # c1: interpreted, then retry decided (the decision's payload decides)
        _ev(1, "call.requested", "c1", payload={"idempotency_key": "k1"}),
        _ev(2, "call.manifest", "c1", payload={"idempotency_key": "k1"}),
        _ev(3, "attempt.started", "c1", "a1", {"attempt_no": 1}),
        _ev(4, "attempt.observed", "c1", "a1", {"transport": {"status": 500}}),
        _ev(5, "attempt.interpreted", "c1", "a1", {"outcome": "retryable_error"}),
        _ev(6, "attempt.retry_decided", "c1", "a1", {"decision": "retry"}),
        # c2: observed, never sent (transport.sent false): effect none, not happened
        *_started(7, "c2"),
        _ev(10, "attempt.observed", "c2", "a1", {"transport": {"sent": False}}),
        # c3: an invalid finding is ignored: still effect_unknown
        *_started(11, "c3"),
        _ev(14, "attempt.reconciled", "c3", "a1", {"finding": "maybe"}),
        # c4: effect_unknown from kinds alone
        *_started(15, "c4"),
    ]
    case = _case(tmp_path, events)
    with EvidenceSQL(case) as sql:
        sk = build_skeleton(sql, resolve_max=0)
        full = build_skeleton(sql)
    by_id = {c.call_id: c for c in sk.calls}
    assert by_id["c1"].pending and by_id["c2"].pending
    assert by_id["c3"].stage is CallStage.EFFECT_UNKNOWN  # re-read despite no budget
    assert sk.effect_unknown_ids == {"c3", "c4"} == full.effect_unknown_ids
    assert full.pending_count == 0
    assert _check(case, None, 2000) == 0


def test_kinds_that_need_their_attempt_or_finding_are_judged_as_the_oracle(
        tmp_path: Path) -> None:
    """Without re-reads the kinds alone still never decide: attempt evidence with no
    attempt id (each such event is its own attempt), and an ended call whose attempt
    was reconciled (the finding decides whether the effect happened)."""
    events = [
        # c1: started and observed, neither naming its attempt
        *_started(1, "c1", None),
        _ev(4, "attempt.observed", "c1", None, {"transport": {"status": 200}}),
        # c2: completed after an operator found the request never arrived
        *_started(5, "c2"),
        _ev(8, "attempt.reconciled", "c2", "a1", {"finding": "not_received"}),
        _ev(9, "call.completed", "c2", payload={"status": "failed"}),
        # c3: a second attempt, its first one observed: the kinds decide this one
        *_started(10, "c3"),
        _ev(13, "attempt.observed", "c3", "a1", {"transport": {"status": 500}}),
        _ev(14, "attempt.started", "c3", "a2", {"attempt_no": 2}),
    ]
    case = _case(tmp_path, events)
    assert _check(case, None, 0) == 1
    with EvidenceSQL(case) as sql:
        sk = build_skeleton(sql, resolve_max=0)
    by_id = {c.call_id: c for c in sk.calls}
    assert by_id["c2"].pending  # the finding's word decides: it waits for the payload
    assert not by_id["c1"].pending  # re-read despite no budget (checked by _check)
    assert by_id["c3"].attempts == 2 and by_id["c3"].stage is CallStage.EFFECT_UNKNOWN
    for seq in range(1, len(events) + 1):
        _check(case, seq, 0)


@pytest.mark.parametrize(("column", "value", "unfit"), [
    ("payload", 42, False),  # payloads are never read: the skeleton is unchanged
    ("call_id", b"c1", True),  # id or kind cells of other types: no skeleton, say why
    ("kind", b"attempt.observed", True),
    ("attempt_id", b"a1", True),
])
def test_cells_of_other_types_give_no_skeleton(tmp_path: Path, column: str, value: object,
                                               unfit: bool) -> None:
    events = [_ev(1, "call.requested", payload={"idempotency_key": "k"}),
              _ev(2, "call.manifest", payload={"idempotency_key": "k"}),
              _ev(3, "attempt.started", attempt="a1", payload={"attempt_no": 1})]
    case = _write(tmp_path, events, [], unique_ids=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute(f"UPDATE events SET {column} = ? WHERE seq = 3", (value,))
    conn.close()
    with EvidenceSQL(case) as sql:
        if unfit:
            with pytest.raises(FastPathUnfit):
                build_skeleton(sql)
        else:
            assert build_skeleton(sql).effect_unknown_ids == {"c1"}



def _shape_events(n: int, seq: int, manifest: bool, earlier: bool,
                  last: tuple[str, ...] | None, ending: str | None) -> list[dict[str, Any]]:
    """Call c{n} with the given kinds (`last` None: no last attempt started); payloads
    never carry what a payload decides (no `sent`, no finding)."""
    cid, out = f"c{n}", []

    def add(kind: str, attempt: str | None = None, payload: dict[str, Any] | None = None
            ) -> None:
        out.append(_ev(seq + len(out), kind, cid, attempt, payload))

    add("call.requested", payload={"idempotency_key": f"k{n}"})
    if manifest:
        add("call.manifest", payload={"idempotency_key": f"k{n}"})
    if earlier:
        add("attempt.started", "a0", {"attempt_no": 1})
        add("attempt.observed", "a0", {"transport": {"status": 200}})
    if last is not None:
        add("attempt.started", "a1", {"attempt_no": 2})
        for kind in last:
            add(kind, "a1", {"transport": {"status": 200}} if kind == "attempt.observed"
                else {"outcome": "success", "status": "succeeded", "decision": "stop"})
    if ending == "call.completed":
        add("call.completed", payload={"status": "succeeded"})
    elif ending == "call.preparation_failed":
        add("call.preparation_failed", payload={"error": "x"})
    return out


def test_every_shape_the_kinds_decide_equals_the_oracle(tmp_path: Path) -> None:
    """Every combination of a call's kinds (manifest, an earlier observed attempt, the
    last attempt's later evidence, how the call ended), judged from kinds alone (no
    re-reads), equals the oracle wherever the skeleton gives a verdict."""
    later = ("attempt.observed", "attempt.interpreted", "attempt.retry_decided",
             "attempt.completed")
    events: list[dict[str, Any]] = []
    n = 0
    for manifest in (False, True):
        for earlier in (False, True):
            for mask in range(-1, 16):  # -1: no last attempt started
                last = None if mask < 0 else tuple(k for i, k in enumerate(later)
                                                    if mask >> i & 1)
                for ending in (None, "call.completed", "call.preparation_failed"):
                    n += 1
                    events += _shape_events(n, len(events) + 1, manifest, earlier, last,
                                            ending)
    case = _case(tmp_path, events)
    with EvidenceSQL(case) as sql:
        sk = build_skeleton(sql, resolve_max=0)
    decided = sum(1 for c in sk.calls if not c.pending)
    assert len(sk.calls) == n and decided > n * 3 // 4  # kinds alone decide most shapes
    _check(case, None, 0)


def test_a_skeleton_from_reads_begun_earlier_is_the_one_as_of_their_seq(
        tmp_path: Path) -> None:
    """The console's head start begins the skeleton's reads before it opens the follower
    (services/stage_reads.py), and a writer may commit meanwhile: the skeleton is the
    one as of the seq the reads began at, not a mix."""
    case = _case(tmp_path, _started(1, "c1") + _started(4, "c2"))
    with EvidenceSQL(case) as sql:
        reads = StageReads(sql, sql.max_seq())
        reads.result()  # (read before the commit below)
        append_to_case(case, [_ev(7, "attempt.observed", "c1", "a1", {}),
                         *_started(8, "c3")])
        early = build_skeleton(sql, None, reads=reads)
        now = build_skeleton(sql, None)
    assert early.limit == 6 and now.limit == 10
    assert [c.call_id for c in early.calls] == ["c1", "c2"]
    assert early.effect_unknown_ids == {"c1", "c2"}
    assert now.effect_unknown_ids == {"c2", "c3"}


def test_a_follower_leaves_reads_of_a_longer_ledger_than_its_own(tmp_path: Path) -> None:
    """Reads begun as of a seq the follower has not seen (the ledger was replaced by a
    longer one between the two opens) are not used: its skeleton is as of its own seq."""
    case = tmp_path / "case"
    write_bench_ledger(case, 6_000, writers=4, tasks=4)
    follower = CaseFollower(case)
    try:
        append_to_case(case, _started(follower.max_seq + 1, "c-late"))
        with EvidenceSQL(case) as sql:
            reads = StageReads(sql, sql.max_seq())
            skeleton = follower.skeleton(reads)
        assert reads.limit == follower.max_seq + 3
        assert skeleton is not None and skeleton.limit == follower.max_seq
        assert "c-late" not in {c.call_id for c in skeleton.calls}
    finally:
        follower.close()


def test_the_skeleton_keeps_its_call_ids_joined(tmp_path: Path) -> None:
    """The console holds the skeleton it painted until the projection replaces it, so
    beside the projection being built: its calls are columns, ids as joined texts. A
    str per id held ~99 bytes a call here (~7,500 calls, one block of ids left open);
    joined, ~70 (~45 once every block is sealed). The ids read back as they were."""
    case = tmp_path / "case"
    write_bench_ledger(case, 60_000)
    with EvidenceSQL(case) as sql:
        build_skeleton(sql)  # (what a first build imports is not counted)
        sk, held = held_by(lambda: build_skeleton(sql))
    with sqlite3.connect(case / "ledger.sqlite3") as conn:
        order = [str(r[0]) for r in conn.execute(
            "SELECT call_id FROM events WHERE call_id IS NOT NULL GROUP BY call_id "
            "ORDER BY min(seq)")]
    assert len(sk.calls) > 4096
    # (a last seq after the first, and the attempts, in 4 bytes each: ~62; 8 each, ~70)
    assert held / len(sk.calls) < 66, held / len(sk.calls)
    assert list(sk.calls.ids) == order == [c.call_id for c in sk.calls]
    assert [c.last_seq for c in sk.calls] == last_seqs(case, order)


def last_seqs(case: Path, order: list[str]) -> list[int]:
    with sqlite3.connect(case / "ledger.sqlite3") as conn:
        last = dict(conn.execute("SELECT call_id, max(seq) FROM events "
                                 "WHERE call_id IS NOT NULL GROUP BY call_id").fetchall())
    return [last[c] for c in order]


def test_a_skeleton_call_beyond_four_bytes_reads_back_as_written() -> None:
    """A hostile ledger's seqs may be 63-bit and far apart: the columns widen, never
    wrap."""
    calls = SkeletonCalls()
    calls.append("a", 1, 2, 1, None)
    calls.append("b", 5, (1 << 62) + 7, (1 << 40), None)
    calls.append("c", -(1 << 62), 1 << 62, 3, None)
    assert [(c.call_id, c.first_seq, c.last_seq, c.attempts) for c in calls] == [
        ("a", 1, 2, 1), ("b", 5, (1 << 62) + 7, 1 << 40), ("c", -(1 << 62), 1 << 62, 3)]
