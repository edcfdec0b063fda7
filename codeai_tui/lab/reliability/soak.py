"""Must hold 4: a good neighbour. A writer appends 200 events/s (one transaction each)
for the soak's length, alone on one fresh ledger and then with the console's follower
attached on another; meanwhile instrumented resumes check that no write transaction of
ours spans a network call.

Figures: the -wal's largest size with and without us, our longest read transaction, the
writer's p99 commit latency with and without us. Bounds: -wal at most 8 MB
beyond the writer alone, longest read shorter than one poll, p99 up by at most 10 ms,
no network call inside a write transaction, and the follower reached the last seq.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeai_tui.lab.reliability.actions import Action
from codeai_tui.lab.reliability.follow import POLL_S
from codeai_tui.lab.reliability.harness import ActorProc, Deadline

WAL_EXTRA_LIMIT = 8 * 1024 * 1024
P99_RISE_LIMIT_MS = 10.0


@dataclass
class SoakReport:
    seconds: float
    rate: float
    alone: dict[str, Any] = field(default_factory=dict)
    attached: dict[str, Any] = field(default_factory=dict)
    follower: dict[str, Any] = field(default_factory=dict)
    resumes: int = 0
    sends: int = 0
    violations: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def wal_extra(self) -> int:
        return int(self.attached.get("wal_max_bytes", 0)) - int(self.alone.get("wal_max_bytes", 0))

    @property
    def p99_rise_ms(self) -> float:
        return float(self.attached.get("p99_ms", 0.0)) - float(self.alone.get("p99_ms", 0.0))


def _writer(case: Path, rate: float, seconds: float, stats: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "codeai_tui.lab.reliability.writer", str(case), "--rate", str(rate),
         "--seconds", str(seconds), "--stats", str(stats)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen[bytes], stats: Path, what: str, timeout: float) -> dict[str, Any]:
    try:
        _out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _out, err = proc.communicate()
        raise RuntimeError(f"{what} did not finish in time") from None
    if proc.returncode != 0 or not stats.exists():
        raise RuntimeError(f"{what} exit {proc.returncode}: {err.decode(errors='replace')[-300:]}")
    return dict(json.loads(stats.read_text(encoding="utf-8")))


def run_soak(workdir: Path, seconds: float, provider_url: str, action: Action, *,
             rate: float = 200.0, resume_every_s: float = 30.0) -> SoakReport:
    workdir.mkdir(parents=True, exist_ok=True)
    report = SoakReport(seconds, rate)
    slack = 60.0 + seconds
    proc = _writer(workdir / "alone", rate, seconds, workdir / "alone.json")
    report.alone = _finish(proc, workdir / "alone.json", "the writer alone", slack)

    case = workdir / "attached"
    writer = _writer(case, rate, seconds, workdir / "attached.json")
    Deadline(30).wait_for(lambda: (case / "ledger.sqlite3").exists(), "the writer's ledger",
                          step=0.01)
    follower = subprocess.Popen(
        [sys.executable, "-m", "codeai_tui.lab.reliability.follow", str(case),
         "--stats", str(workdir / "follower.json")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert follower.stdout is not None
        follower.stdout.readline()  # "ready": caught up, following
        next_resume = time.monotonic()
        while writer.poll() is None:
            if time.monotonic() >= next_resume:  # a real write action beside the soak
                _instrumented_resume(report, action, workdir, provider_url)
                next_resume = time.monotonic() + resume_every_s
            with contextlib.suppress(subprocess.TimeoutExpired):
                writer.wait(timeout=max(0.01, next_resume - time.monotonic()))
        report.attached = _finish(writer, workdir / "attached.json", "the writer", slack)
        follower.communicate(b"stop\n", timeout=60)
        report.follower = json.loads((workdir / "follower.json").read_text(encoding="utf-8"))
    finally:
        for p in (writer, follower):
            if p.poll() is None:
                p.kill()
                p.wait()
    _judge(report)
    return report


def _instrumented_resume(report: SoakReport, action: Action, workdir: Path,
                         provider_url: str) -> None:
    target = action.setup(workdir / f"resume-{report.resumes}", provider_url)
    actor = ActorProc(action, target, workdir)
    rc = actor.finish(Deadline(120))
    actor.output()
    report.resumes += 1
    report.sends += actor.connects
    report.violations += len(actor.violations)
    if rc not in action.won_codes:
        report.problems.append(f"a resume during the soak exited {rc}")


def _judge(report: SoakReport) -> None:
    p = report.problems
    if report.wal_extra > WAL_EXTRA_LIMIT:
        p.append(f"-wal {report.wal_extra} bytes beyond the writer alone")
    if float(report.follower.get("longest_read_ms", 0)) >= POLL_S * 1000:
        p.append(f"a read transaction of {report.follower['longest_read_ms']} ms")
    if report.follower.get("held_between_polls"):
        p.append("a read transaction was held between polls")
    if report.p99_rise_ms > P99_RISE_LIMIT_MS:
        p.append(f"writer p99 up {report.p99_rise_ms:.1f} ms")
    if report.violations:
        p.append(f"{report.violations} network calls inside a write transaction")
    expected = int(report.attached.get("events", 0)) + 1  # + the writer's task.created
    if int(report.follower.get("last_seq", 0)) != expected:
        p.append(f"the follower reached seq {report.follower.get('last_seq')}, not {expected}")
