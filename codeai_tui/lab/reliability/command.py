"""`codeai-tui reliability [--quick] [--rounds N] [--kills N] [--soak-minutes M]`.

Runs every part against every registered write action, as real processes on loopback,
and prints one Markdown table of what was tried and what held (README "Reliability").
Exit 0 when everything held, 1 otherwise. Progress goes to stderr, one line per part.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codeai_tui.lab.provider import ProviderProcess
from codeai_tui.lab.reliability.actions import CONTROLS, REGISTRY
from codeai_tui.lab.reliability.cases import make_call_case
from codeai_tui.lab.reliability.faults import run_faults
from codeai_tui.lab.reliability.harness import subprocess_cli
from codeai_tui.lab.reliability.kills import run_kills
from codeai_tui.lab.reliability.races import run_races
from codeai_tui.lab.reliability.readonly import cli_tools, console_in_pty, run_matrix
from codeai_tui.lab.reliability.soak import run_soak

KILL_LATENCY_S = 0.3  # the provider holds each request this long, so kills land inside


@dataclass(frozen=True, slots=True)
class Settings:
    rounds: int
    racers: int
    kills: int
    soak_minutes: float
    quick: bool

    @classmethod
    def make(cls, quick: bool, rounds: int | None, kills: int | None,
             soak_minutes: float | None) -> Settings:
        return cls(
            rounds=rounds if rounds is not None else (3 if quick else 50),
            racers=8,
            kills=kills if kills is not None else (12 if quick else 100),
            soak_minutes=soak_minutes if soak_minutes is not None else (1 / 3 if quick else 10),
            quick=quick,
        )


Row = tuple[str, str, str, str]


def _ok(held: bool) -> str:
    return "held" if held else "**FAILED**"


def run_all(settings: Settings, workdir: Path, say: Callable[[str], None]) -> list[Row]:
    rows: list[Row] = []
    cli = subprocess_cli
    sends = violations = 0  # connects seen by the instrumentation, and those inside a txn
    with ProviderProcess(receipts_root=workdir) as provider:
        for action in [*REGISTRY.values(), *CONTROLS.values()]:
            say(f"races: {action.name}, {settings.racers} racers x {settings.rounds} rounds")
            t0 = time.monotonic()
            races = run_races(action, workdir, provider.base_url, settings.rounds,
                              settings.racers)
            if not action.control:
                sends += races.sends
                violations += races.violations
            spent = time.monotonic() - t0
            n = len(races.rounds)
            tried = f"{settings.racers} processes x {n} rounds ({spent:.0f} s)"
            if action.control:
                rows.append((f"Races: {action.name} (control)", tried,
                             f"duplicates shown in {races.duplicated} of {n} rounds "
                             "(must be > 0: the harness can fail)", _ok(races.duplicated > 0)))
            else:
                receipts = (f"; receipts {sum(r.receipts for r in races.rounds)}"
                            if action.sends else "")
                rows.append((f"Races: {action.name}", tried,
                             f"won by exactly one in {races.held} of {n} rounds; losers: "
                             f"refused {sum(r.refused for r in races.rounds)}, found nothing "
                             f"to do {sum(r.noops for r in races.rounds)}, appended in "
                             f"{sum(r.losers_committed for r in races.rounds)} transactions"
                             f"{receipts}",
                             _ok(races.held == n)))
    with ProviderProcess(receipts_root=workdir / "kills", latency=KILL_LATENCY_S) as slow:
        for action in REGISTRY.values():
            say(f"kills: {action.name}, {settings.kills} runs")
            t0 = time.monotonic()
            kills = run_kills(action, workdir / "kills", slow.base_url, settings.kills, cli)
            spent = time.monotonic() - t0
            spread = ", ".join(f"{k} {v}" for k, v in kills.by_boundary().items())
            landed = ", ".join(f"{k}: {v}" for k, v in sorted(kills.landings().items()))
            recovered = [r.recovered for r in kills.runs if r.recovered is not None]
            rows.append((f"Kills: {action.name}",
                         f"{kills.kills} SIGKILLs in {len(kills.runs)} runs over "
                         f"{len(action.boundaries)} boundaries ({spread}) ({spent:.0f} s)",
                         f"{kills.inconsistent} inconsistencies; landed {landed}; killed "
                         f"before it took effect and re-run: {sum(recovered)} of "
                         f"{len(recovered)} completed once",
                         _ok(kills.inconsistent == 0 and kills.kills >= settings.kills)))
            sends += kills.sends
            violations += kills.violations
    say("faults")
    with ProviderProcess(receipts_root=workdir / "faults") as provider:
        faults = run_faults(workdir / "faults", provider.base_url, cli, quick=settings.quick)
    handled = sum(1 for f in faults if f.handled)
    notes = sorted({n for f in faults for n in f.notes})
    rows.append(("Faults", f"{len(faults)}: " + "; ".join(f.name for f in faults),
        f"{handled} of {len(faults)} handled" + (f"; note: {'; '.join(notes)}" if notes else "")
        + "".join(f"; {f.name}: {f.problems[:2]}" for f in faults if not f.handled),
        _ok(handled == len(faults))))
    say("read-only matrix")
    tools = {**cli_tools(cli), "console": console_in_pty}
    cells = run_matrix(workdir / "readonly", tools,
                       lambda case: _quiet_case(case))
    ran = [c for c in cells if c.skipped is None]
    changed = sum(c.bytes_changed for c in ran)
    runs = sum(len(c.outcomes) for c in ran)
    failed = [f"{o.tool}: {o.sentence}" for c in ran for o in c.outcomes if not o.opened]
    skipped = sorted({c.skipped or "" for c in cells if c.skipped})
    rows.append(("Read-only", f"{len(ran)} of {len(cells)} cells x {len(tools)} tools "
                 f"({', '.join(tools)}) = {runs} runs; skipped: {'; '.join(skipped) or 'none'}",
                 f"bytes changed in {changed} runs; opened {runs - len(failed)}, failed with "
                 f"one sentence {len(failed)}; writer wrote afterwards in "
                 f"{sum(1 for c in ran if c.wrote_after)} of {len(ran)}",
                 _ok(not any(c.problems for c in ran))))
    say(f"soak: {settings.soak_minutes:g} min at 200 events/s, alone, then with the follower")
    with ProviderProcess(receipts_root=workdir / "soak") as provider:
        soak = run_soak(workdir / "soak", settings.soak_minutes * 60, provider.base_url,
                        next(iter(REGISTRY.values())))
    mb = 1024 * 1024
    length = f"{settings.soak_minutes * 60:.0f} s"
    rows.append(("Soak", f"{length} at {soak.attached.get('rate')} events/s "
                 f"with the follower ({soak.follower.get('polls')} polls), "
                 f"{length} alone; {soak.resumes} resumes beside it",
                 f"-wal max {soak.attached.get('wal_max_bytes', 0) / mb:.1f} MB vs "
                 f"{soak.alone.get('wal_max_bytes', 0) / mb:.1f} MB alone "
                 f"({soak.wal_extra / mb:+.2f} MB, limit +8); longest read transaction "
                 f"{soak.follower.get('longest_read_ms')} ms (poll 100 ms); writer p99 "
                 f"{soak.alone.get('p99_ms')} -> {soak.attached.get('p99_ms')} ms "
                 f"({soak.p99_rise_ms:+.1f}, limit +10); follower reached seq "
                 f"{soak.follower.get('last_seq')}",
                 _ok(not soak.problems)))
    total_sends = sends + soak.sends
    total_viol = violations + soak.violations
    rows.append(("No network call inside a write transaction",
                 f"every instrumented run (races, kills, soak): {total_sends} connects",
                 f"{total_viol} inside a write transaction",
                 _ok(total_viol == 0)))
    return rows


def _quiet_case(case: Path) -> None:
    make_call_case(case, "http://127.0.0.1:9/v1")  # readers never send


def render(rows: list[Row]) -> str:
    lines = ["| Part | Tried | Held | Verdict |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def run_reliability(*, quick: bool = False, rounds: int | None = None, kills: int | None = None,
                    soak_minutes: float | None = None, keep: bool = False) -> int:
    settings = Settings.make(quick, rounds, kills, soak_minutes)
    workdir = Path(tempfile.mkdtemp(prefix="codeai-reliability-"))
    started = time.monotonic()

    def say(msg: str) -> None:
        print(f"[{time.monotonic() - started:6.0f} s] {msg}", file=sys.stderr, flush=True)

    try:
        rows = run_all(settings, workdir, say)
    finally:
        if keep:
            say(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(render(rows))
    say("done")
    return 0 if all(r[3] == "held" for r in rows) else 1
