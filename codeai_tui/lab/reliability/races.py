"""Races: N processes perform the same write action on the same subject at once.

Each round makes a fresh case where the action is permitted, starts N instrumented
actors, waits until every one has imported and is ready (a barrier), releases them
together and audits the ledger and the provider's receipts afterwards. A round holds
when exactly one actor committed the action's claim and exited as a winner, every other
actor appended nothing in any write transaction and was refused (or, arriving after the
winner finished, found nothing to do), the claim was recorded once in the ledger, no
event belongs to a loser, and (for an action that sends) exactly one receipt was written.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codeai_tui.lab.reliability.actions import Action
from codeai_tui.lab.reliability.harness import (
    ActorProc,
    Deadline,
    appended_only,
    read_events,
    receipt_count,
)

ROUND_TIMEOUT_S = 180.0


@dataclass
class RoundResult:
    round_no: int
    winners: int
    refused: int
    noops: int
    losers_committed: int
    other_exits: list[int]
    claims: int
    foreign: int
    receipts: int
    rewritten: bool
    violations: int
    sends: int
    problems: list[str] = field(default_factory=list)

    @property
    def held(self) -> bool:
        return not self.problems

    @property
    def duplicated(self) -> bool:
        """More than one claim or more than one request sent: an effect was repeated."""
        return self.claims > 1 or self.receipts > 1


@dataclass
class RaceReport:
    action: str
    racers: int
    rounds: list[RoundResult] = field(default_factory=list)

    @property
    def held(self) -> int:
        return sum(1 for r in self.rounds if r.held)

    @property
    def duplicated(self) -> int:
        return sum(1 for r in self.rounds if r.duplicated)

    @property
    def violations(self) -> int:
        return sum(r.violations for r in self.rounds)

    @property
    def sends(self) -> int:
        return sum(r.sends for r in self.rounds)


def race_round(action: Action, workdir: Path, provider_url: str, round_no: int,
               racers: int = 8) -> RoundResult:
    case = workdir / f"race-{action.name}-{round_no}"
    target = action.setup(case, provider_url)
    before = read_events(case)
    receipts_before = receipt_count(case)
    deadline = Deadline(ROUND_TIMEOUT_S)
    actors = [ActorProc(action, target, workdir, barrier=True) for _ in range(racers)]
    try:
        for actor in actors:
            if not actor.wait_mark("ready", deadline):
                raise RuntimeError(f"racer exited before the barrier: {actor.output()[1][-300:]}")
        for actor in actors:  # release them as close together as a pipe write allows
            actor.say("go")
        codes = [actor.finish(deadline) for actor in actors]
    finally:
        for actor in actors:
            actor.kill()
    for actor in actors:
        actor.output()
    after = read_events(case)
    audit = action.audit(target, before, after)
    sent = receipt_count(case) - receipts_before
    claimed = [a.committed(action.claim_kind) > 0 for a in actors]
    winners = [c for c, won in zip(codes, claimed, strict=True) if won]
    losers = [(a, c) for a, c, won in zip(actors, codes, claimed, strict=True) if not won]
    result = RoundResult(
        round_no=round_no,
        winners=sum(1 for c in winners if c in action.won_codes),
        refused=sum(1 for _a, c in losers if c == action.refused_code),
        noops=sum(1 for _a, c in losers if c in action.noop_codes),
        losers_committed=sum(1 for a, _c in losers
                             if a.committed_outside(action.loser_may_record)),
        other_exits=[c for c in winners if c not in action.won_codes] + [
            c for _a, c in losers if c != action.refused_code and c not in action.noop_codes],
        claims=audit.claims, foreign=audit.foreign, receipts=sent,
        rewritten=not appended_only(before, after),
        violations=sum(len(a.violations) for a in actors),
        sends=sum(a.connects for a in actors),
    )
    p = result.problems
    if result.winners != 1:
        p.append(f"{result.winners} winners")
    if result.refused + result.noops != racers - 1 or result.other_exits:
        p.append(f"{result.refused} refused and {result.noops} with nothing to do of "
                 f"{racers - 1} (other exits {result.other_exits})")
    if result.losers_committed:
        p.append(f"{result.losers_committed} losers appended in a write transaction")
    if result.claims != 1:
        p.append(f"claim recorded {result.claims} times")
    if result.foreign:
        p.append(f"{result.foreign} events appended by losers")
    if action.sends and sent != 1:
        p.append(f"{sent} receipts (want exactly 1)")
    if result.rewritten:
        p.append("events before the race changed")
    if result.violations:
        p.append(f"{result.violations} network calls inside a write transaction")
    try:
        p += action.invariants(target)
    except Exception as exc:  # noqa: BLE001 - unreadable evidence is a finding
        p.append(f"invariants raised {type(exc).__name__}: {exc}")
    return result


def run_races(action: Action, workdir: Path, provider_url: str, rounds: int, racers: int = 8,
              *, stop_when: Callable[[RaceReport], bool] | None = None) -> RaceReport:
    """`rounds` rounds (fewer if `stop_when` says so, e.g. the control showed duplicates)."""
    workdir.mkdir(parents=True, exist_ok=True)
    report = RaceReport(action.name, racers)
    for round_no in range(rounds):
        report.rounds.append(race_round(action, workdir, provider_url, round_no, racers))
        if stop_when is not None and stop_when(report):
            break
    return report
