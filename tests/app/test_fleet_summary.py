"""A bundle's Cases rows: the lean per-case summary says exactly what the full
projection of the open case says (issue 8/9 B), for every vector, hostile case and a
case too big for one page."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from apphelpers import CONFORMANCE, make_case

from codeai_tui.console.fleet import summarize
from codeai_tui.console.model import PROJECT_PAGE, CaseFollower
from codeai_tui.console.severity import CaseVerdict, case_verdict
from codeai_tui.ledger import LedgerError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "security"))
from hostile import CORPUS, Hostile  # noqa: E402


def followed(case: Path) -> CaseVerdict:
    """What the console's follower projects for the open case (the reference)."""
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        snap = follower.snapshot()
    finally:
        follower.close()
    return case_verdict(snap.state, snap.event_count)


def outcome(fn: object, case: Path) -> CaseVerdict | str:
    try:
        return fn(case)  # type: ignore[operator]
    except LedgerError as exc:
        return f"LedgerError: {exc}"


VECTORS = sorted(p.stem for p in CONFORMANCE.glob("*.json"))


@pytest.mark.parametrize("name", VECTORS)
def test_summary_equals_the_full_projection_for_every_vector(tmp_path: Path, name: str) -> None:
    case = make_case(tmp_path / name, name)
    got = summarize(case)
    assert got == followed(case)
    assert got.event_count > 0


HOSTILE = [h for h in CORPUS if h.pending is None]


@pytest.mark.parametrize("hostile", HOSTILE, ids=[h.name for h in HOSTILE])
def test_summary_equals_the_full_projection_on_hostile_cases(tmp_path: Path,
                                                              hostile: Hostile) -> None:
    case = tmp_path / "case"
    hostile.build(case)
    assert outcome(summarize, case) == outcome(followed, case)


def test_a_case_bigger_than_one_page_is_summarised_alike(tmp_path: Path) -> None:
    from ledgerfactory import write_ledger

    events = [{"seq": 1, "kind": "task.created", "task_id": "t", "payload": {"title": "x"}}]
    seq = 1
    n = 0
    while seq < PROJECT_PAGE + 500:
        n += 1
        for kind in ("call.requested", "call.manifest", "attempt.started"):
            seq += 1
            events.append({"seq": seq, "kind": kind, "task_id": "t", "call_id": f"c{n}",
                           "attempt_id": f"c{n}-a" if kind.startswith("attempt") else None,
                           "payload": {"idempotency_key": f"k{n}",
                                       "request_sha256": "ab" * 32}})
    case = write_ledger(tmp_path / "big", events)
    got = summarize(case)
    assert got == followed(case)
    assert got.event_count == seq
    assert got.effect_unknown == n
