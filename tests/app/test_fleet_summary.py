"""A bundle's Cases rows: the lean per-case summary says exactly what the full
projection of the open case says, for every vector, hostile case and a
case too big for one page."""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from apphelpers import CONFORMANCE, make_case

from codeai_tui.console.fleet import summarize, summarize_all
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


# ---------------------------------------------------------------- summarize_all

def summary_outcome(result: CaseVerdict | LedgerError) -> CaseVerdict | str:
    return result if isinstance(result, CaseVerdict) else f"LedgerError: {result}"


@pytest.fixture
def mixed_bundle(tmp_path: Path) -> list[Path]:
    """Vectors and hostile cases (unreadable ones among them), side by side."""
    cases = [make_case(tmp_path / f"v-{name}", name) for name in VECTORS]
    for hostile in HOSTILE:
        hostile.build(tmp_path / f"h-{hostile.name}")
        cases.append(tmp_path / f"h-{hostile.name}")
    return cases


@pytest.mark.parametrize("helpers", [0, 1, 2])
def test_summarize_all_says_what_summarize_says_with_or_without_helpers(
        mixed_bundle: list[Path], helpers: int) -> None:
    expected = {case: outcome(summarize, case) for case in mixed_bundle}
    assert any(isinstance(v, str) for v in expected.values())  # errors are in the mix
    asked = mixed_bundle * 8  # enough for the helpers to take chunks (25 cases each)
    got = list(summarize_all(asked, helpers=helpers))
    assert Counter(case for case, _ in got) == Counter(asked)  # each case as often as asked
    assert [(case, summary_outcome(result)) for case, result in got] == [
        (case, expected[case]) for case, _ in got]
    problems = {case: result.problem for case, result in got if isinstance(result, LedgerError)}
    for case, problem in problems.items():
        with pytest.raises(LedgerError) as raised:
            summarize(case)
        assert raised.value.problem is problem


def test_summarize_all_does_every_case_itself_when_no_helper_can_start(
        mixed_bundle: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {case: outcome(summarize, case) for case in mixed_bundle}
    monkeypatch.setattr(sys, "executable", str(mixed_bundle[0] / "no-such-python"))
    got = dict(summarize_all(mixed_bundle, helpers=1))
    assert {case: summary_outcome(result) for case, result in got.items()} == expected


def test_summarize_all_does_a_dead_helpers_cases_itself(
        mixed_bundle: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper that ends without answering (here: a Python that exits at once) gives
    its cases back; every case is still summarised, once."""
    expected = {case: outcome(summarize, case) for case in mixed_bundle}
    quitter = mixed_bundle[0].parent / "quitter"
    quitter.write_text("#!/bin/sh\nexit 0\n")
    quitter.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(quitter))
    got = list(summarize_all(mixed_bundle, helpers=2))
    assert len(got) == len(mixed_bundle)
    assert {case: summary_outcome(result) for case, result in got} == expected


def test_a_helper_answers_each_case_and_leaves_other_errors_to_the_caller(
        mixed_bundle: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import json

    from codeai_tui.console import fleet

    real = fleet.summarize
    broken = mixed_bundle[1]

    def summarize_or_fail(case: Path, stop: Callable[[], bool] | None = None) -> CaseVerdict:
        if case == broken:
            raise RuntimeError("a bug")
        return real(case, stop)

    monkeypatch.setattr(fleet, "summarize", summarize_or_fail)
    chunk = mixed_bundle[:3]
    out = io.StringIO()
    fleet.serve(io.StringIO(json.dumps([str(c) for c in chunk]) + "\n"), out)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(answers) == 1 and len(answers[0]) == 3
    assert answers[0][1] == {"other": True}
    assert CaseVerdict(**answers[0][0]["verdict"]) == real(chunk[0])
    with pytest.raises(RuntimeError, match="a bug"):  # raised by the caller, as without helpers
        list(fleet.summarize_all(chunk, helpers=0))


def _children() -> set[int]:
    """This process's child processes (Linux /proc)."""
    me = str(os.getpid())
    kids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            kids.add(int(stat.parent.name))
    return kids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_stopping_ends_the_helpers(mixed_bundle: list[Path]) -> None:
    before = _children()
    stop = threading.Event()
    seen = []
    for case, _result in summarize_all(mixed_bundle * 20, stop.is_set, helpers=1):
        seen.append(case)
        assert _children() - before  # the helper runs while the list is made
        stop.set()
    assert len(seen) == 1
    assert _children() - before == set()  # killed and reaped when the list stopped
