"""A bundle's cases, each summarised by its verdict (for the Cases pane and header)."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from codeai_tui.console.model import CaseFollower
from codeai_tui.console.severity import CaseVerdict, case_verdict


def summarize(case_dir: Path) -> CaseVerdict:
    """Project one case once and name its worst next operation; raises LedgerError."""
    follower = CaseFollower(case_dir)
    try:
        follower.catch_up()
        snap = follower.snapshot()
    finally:
        follower.close()
    return case_verdict(snap.state, snap.event_count)


class CaseOrder(StrEnum):
    """How the Cases pane is sorted (`o` cycles)."""

    PATH = "by path"
    WORST = "worst first"

    def next(self) -> CaseOrder:
        return CaseOrder.WORST if self is CaseOrder.PATH else CaseOrder.PATH


def ordered(cases: list[Path], verdicts: dict[Path, CaseVerdict], order: CaseOrder
            ) -> list[Path]:
    if order is CaseOrder.PATH:
        return list(cases)
    position = {case: i for i, case in enumerate(cases)}
    return sorted(cases, key=lambda c: (-(verdicts[c].rank if c in verdicts else -1),
                                        position[c]))
