"""Must hold 1: racing write actions, exactly one winner; the naive claim is caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codeai_tui.lab.reliability import CONTROLS, REGISTRY
from codeai_tui.lab.reliability.harness import consistency_problems
from codeai_tui.lab.reliability.races import run_races

QUICK_ROUNDS = 2  # (the full run: `codeai-tui reliability`, 50 rounds of 8)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_eight_racers_exactly_one_wins_every_round(
    tmp_path: Path, provider: Any, cli: Any, name: str
) -> None:
    action = REGISTRY[name]
    report = run_races(action, tmp_path, provider.base_url, QUICK_ROUNDS, racers=8)
    assert len(report.rounds) == QUICK_ROUNDS
    for result in report.rounds:
        assert result.problems == [], result
        assert (result.winners, result.claims, result.foreign) == (1, 1, 0)
        assert result.refused + result.noops == 7 and result.losers_committed == 0
        if action.sends:
            assert result.receipts == 1
    assert report.violations == 0
    if action.sends:
        assert report.sends >= QUICK_ROUNDS
    # the projection of a raced case is consistent too
    doc = json.loads(cli(["inspect", str(tmp_path / f"race-{name}-0"), "--json"])[1])
    assert consistency_problems(doc) == []


def test_the_naive_claim_shows_duplicates_so_the_harness_can_fail(
    tmp_path: Path, provider: Any, cli: Any
) -> None:
    """Check-then-append outside one write transaction: several racers win and each
    sends the request. If this passed as 'exactly one', the race test would prove nothing."""
    report = run_races(CONTROLS["naive-claim"], tmp_path, provider.base_url, 5, racers=8,
                       stop_when=lambda r: r.duplicated > 0)
    dup = next((r for r in report.rounds if r.duplicated), None)
    assert dup is not None, [r.problems for r in report.rounds]
    assert dup.winners > 1 and dup.claims > 1 and dup.receipts > 1
    assert not dup.held
    doc = json.loads(cli(["inspect", str(tmp_path / f"race-naive-claim-{dup.round_no}"),
                          "--json"])[1])
    assert any("duplicate effects" in p for p in consistency_problems(doc))
