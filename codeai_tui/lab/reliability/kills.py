"""Kills mid-action: SIGKILL an action at every boundary, then check the case.

Run k of an action targets boundary k mod B, until the asked number of SIGKILLs is done. Even runs kill exactly at the boundary
(the actor is paused there); odd runs let it go on and kill after a random delay of up
to `jitter_s` (a random moment just past the boundary). A `hold` boundary is killed
once the provider has fsync'd its receipt, while it still holds the request (the
provider runs with --latency). Then: the ledger opens, the projection is consistent,
receipts never exceed attempts started, `verify CASE` passes, the ledger only grew,
and if the action is still permitted on its subject it runs again to completion
(recovery), after which the same checks hold.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codeai_tui.lab.reliability.actions import Action, Boundary, Target
from codeai_tui.lab.reliability.harness import (
    ActorProc,
    Cli,
    Deadline,
    appended_only,
    check_case,
    read_events,
    receipt_count,
)

RUN_TIMEOUT_S = 120.0


@dataclass
class KillRun:
    run_no: int
    boundary: str
    exact: bool
    killed: bool
    landed: str  # what the evidence shows afterwards
    recovered: bool | None  # None: the action was no longer permitted, nothing to re-run
    violations: int
    sends: int
    problems: list[str] = field(default_factory=list)


@dataclass
class KillReport:
    action: str
    runs: list[KillRun] = field(default_factory=list)

    @property
    def kills(self) -> int:
        return sum(1 for r in self.runs if r.killed)

    @property
    def inconsistent(self) -> int:
        return sum(1 for r in self.runs if r.problems)

    @property
    def violations(self) -> int:
        return sum(r.violations for r in self.runs)

    @property
    def sends(self) -> int:
        return sum(r.sends for r in self.runs)

    def by_boundary(self) -> Counter[str]:
        return Counter(r.boundary for r in self.runs if r.killed)

    def landings(self) -> Counter[str]:
        return Counter(r.landed for r in self.runs)


def _landed(doc: dict[str, object], subject: str) -> str:
    calls = {str(c["call_id"]): c for c in doc.get("calls") or []}  # type: ignore[union-attr]
    old = calls.get(subject) or {}
    if old.get("stage") != "superseded":
        return f"not acted on ({old.get('stage')})"
    new = calls.get(str(old.get("superseded_by"))) or {}
    return f"acted on, successor {new.get('stage')}"


def kill_run(action: Action, workdir: Path, provider_url: str, run_no: int, cli: Cli,
             rng: random.Random, jitter_s: float = 0.03) -> KillRun:
    boundary: Boundary = action.boundaries[run_no % len(action.boundaries)]
    exact = (run_no // len(action.boundaries)) % 2 == 0
    case = workdir / f"kill-{action.name}-{run_no}"
    target = action.setup(case, provider_url)
    before = read_events(case)
    receipts_before = receipt_count(case)
    deadline = Deadline(RUN_TIMEOUT_S)
    actor = ActorProc(action, target, workdir, boundary=boundary)
    try:
        if actor.wait_mark("paused", deadline):
            if boundary.hold:
                actor.say("go")
                deadline.wait_for(lambda: receipt_count(case) > receipts_before,
                                  "the provider's receipt")
            elif not exact:
                actor.say("go")
                time.sleep(rng.uniform(0.0, jitter_s))  # the random moment itself
            actor.kill()
        actor.finish(deadline)
    finally:
        actor.kill()
    actor.output()
    run = KillRun(run_no, boundary.name, exact, actor.killed, "", None,
                  len(actor.violations), actor.connects)
    check = check_case(case, cli)
    run.problems += check.problems + _guarded(action.invariants, target)
    describe = action.landed or (lambda t, doc: _landed(doc, t.subject))
    try:
        run.landed = describe(target, check.doc) if check.doc else "unreadable"
    except Exception as exc:  # noqa: BLE001 - an unreadable case is a finding, not a crash
        run.landed = "unreadable"
        run.problems.append(f"cannot read what the kill left: {type(exc).__name__}: {exc}")
    after = read_events(case)
    if not appended_only(before, after):
        run.problems.append("events before the action changed")
    if run.violations:
        run.problems.append(f"{run.violations} network calls inside a write transaction")
    if check.doc and _guarded(lambda t: [] if action.permitted(t, check.doc) else ["no"],
                              target) == []:
        # the action was killed before it took effect: it must still work, exactly once
        sent_before = receipt_count(case)
        rerun = ActorProc(action, target, workdir)
        rc = rerun.finish(Deadline(RUN_TIMEOUT_S))
        err = rerun.output()[1]
        run.violations += len(rerun.violations)
        run.sends += rerun.connects
        again = check_case(case, cli)
        again.problems += _guarded(action.invariants, target)
        run.recovered = rc in action.won_codes and not again.problems and (
            not action.sends or receipt_count(case) == sent_before + 1)
        if not run.recovered:
            run.problems.append(f"re-run after the kill: exit {rc} {err.strip()[:120]} "
                                f"{again.problems[:2]}")
    return run


def _guarded(hook: Callable[[Target], list[str]], target: Target) -> list[str]:
    """Run an action's hook; an exception is a problem to report, not a harness crash."""
    try:
        return hook(target)
    except Exception as exc:  # noqa: BLE001
        return [f"{getattr(hook, '__name__', 'hook')} raised {type(exc).__name__}: {exc}"]


def run_kills(action: Action, workdir: Path, provider_url: str, kills: int, cli: Cli,
              seed: int = 12) -> KillReport:
    """Run until `kills` runs were really SIGKILLed. A run killed a random moment after
    its boundary may finish first (it still counts as a checked run, not as a kill);
    at most twice as many runs as kills are made."""
    workdir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    report = KillReport(action.name)
    run_no = 0
    while report.kills < kills and run_no < 2 * kills:
        report.runs.append(kill_run(action, workdir, provider_url, run_no, cli, rng))
        run_no += 1
    return report
