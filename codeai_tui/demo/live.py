"""The live producer: `python -m codeai_tui.demo.live BUNDLE --rate R`.

Keeps a `live` case in the bundle changing at a steady rate (R events per second) so the
console can be watched: new tasks and calls, most completed, some producers SIGKILLed
after a manifest or an observation, some killed while the provider holds the request
(effect unknown), a failed compilation now and then. It runs its own providers and one
producer process at a time; on SIGTERM or SIGINT it kills what it started and exits 0.
Its children die with it even if it is SIGKILLed (PR_SET_PDEATHSIG on Linux; a blocked
producer also exits on stdin EOF).
"""

from __future__ import annotations

import argparse
import ctypes
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from codeai_tui.demo import DEMO_PROVIDER_PORT
from codeai_tui.demo.evidence import receipt_count, write_json
from codeai_tui.demo.processes import kill, python_module, read_line
from codeai_tui.demo.producer import CHECKPOINT_PREFIX, DONE_PREFIX
from codeai_tui.lab.provider import bundle_case_url, bundle_id_in
from codeai_tui.ledger.reader import LedgerReader

LIVE_CASE = "live"
SLOW_LATENCY_S = 3600.0
STEP_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class Step:
    """One producer run in the live case: its scenario, where it dies, and how."""

    scenario: str = "call"
    checkpoint: str | None = None
    in_flight: bool = False
    tasks: int = 1


CYCLE: tuple[Step, ...] = (
    Step(),
    Step(checkpoint="call.manifest"),
    Step(),
    Step(checkpoint="attempt.started", in_flight=True),
    Step(),
    Step(checkpoint="attempt.observed"),
    Step(scenario="compile_fail"),
    Step(scenario="accept", tasks=2),
    Step(checkpoint="call.requested"),
)


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes the child get SIGKILL when this process dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None

    def preexec() -> None:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG

    return preexec


def spawn(argv: list[str], **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, text=True, preexec_fn=_die_with_parent(),
                            **kwargs)  # type: ignore[call-overload]


def stop(proc: subprocess.Popen[str] | None) -> None:
    if proc is not None:
        kill(proc)


class LiveProducer:
    def __init__(self, bundle: Path, rate: float, busy_timeout: float = 10.0,
                 case_port: int = DEMO_PROVIDER_PORT) -> None:
        self.bundle = bundle
        self.busy_timeout = busy_timeout
        self.case_port = case_port  # where case.json sends resumes (`demo --open` serves it)
        # the bundle's id (its providers answer only under it; they read the same one)
        self.bundle_id = bundle_id_in(bundle)
        self.case = bundle / LIVE_CASE
        self.pace = 1.0 / rate if rate > 0 else 0.25
        self.providers: list[subprocess.Popen[str]] = []
        self.producer: subprocess.Popen[str] | None = None
        self.fast_url = self.slow_url = ""

    def start_provider(self, latency: float) -> str:
        named = ["--bundle-id", self.bundle_id] if self.bundle_id is not None else []
        proc = spawn(python_module("codeai_tui", "provider", "--port", "0", "--receipts-root",
                                   str(self.bundle), "--latency", str(latency), *named),
                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
        self.providers.append(proc)
        line = read_line(proc, 15.0)
        if not line.startswith("listening on "):
            raise RuntimeError("live: provider did not start")
        port = int(line.split("listening on ", 1)[1].strip().rsplit(":", 1)[1].split("/")[0])
        return bundle_case_url(port, LIVE_CASE, self.bundle_id)

    def next_task_number(self) -> int:
        """Continue numbering after an earlier live run (task-N ids stay unique)."""
        if not (self.case / "ledger.sqlite3").exists():
            return 1
        with LedgerReader(self.case) as reader:
            return sum(1 for e in reader.events() if e.kind == "task.created") + 1

    def run_step(self, step: Step, n: int) -> None:
        args = ["--scenario", step.scenario, "--n", str(n), "--pace", str(self.pace),
                "--base-url", self.slow_url if step.in_flight else self.fast_url,
                "--busy-timeout", str(self.busy_timeout)]
        if step.checkpoint:
            args += ["--checkpoint", step.checkpoint,
                     "--then", "continue" if step.in_flight else "block"]
        receipts = receipt_count(self.case)
        self.producer = spawn(python_module("codeai_tui.demo.producer", str(self.case), *args),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        deadline = time.monotonic() + STEP_TIMEOUT_S
        while time.monotonic() < deadline:
            line = read_line(self.producer, 1.0)
            if line.startswith(CHECKPOINT_PREFIX) and step.in_flight:
                while receipt_count(self.case) <= receipts and time.monotonic() < deadline:
                    time.sleep(0.02)
                break
            if line.startswith(CHECKPOINT_PREFIX) or line.startswith(DONE_PREFIX):
                break
            if not line and self.producer.poll() is not None:
                break
        ended_itself = self.producer.poll()
        said = ""
        if ended_itself not in (None, 0) and self.producer.stderr is not None:
            said = self.producer.stderr.read().strip()  # it has exited: this cannot block
        stop(self.producer)  # SIGKILL when it is still blocked at its checkpoint
        if ended_itself not in (None, 0):
            last = said.splitlines()[-1] if said else f"exit {ended_itself}"
            print(f"live: task-{n} ({step.scenario}) was not recorded in full: {last}; "
                  "going on with the next task", file=sys.stderr, flush=True)
        self.producer = None

    def run(self) -> None:
        self.case.mkdir(parents=True, exist_ok=True)
        write_json(self.case / "case.json", {
            "provider": {"base_url": bundle_case_url(self.case_port, LIVE_CASE, self.bundle_id),
                         "model": "synthetic-small", "api_key_env": "CODEAI_API_KEY",
                         "identity": self.bundle_id},
            "description": "Live: a producer keeps appending; some calls are killed mid-way.",
        })
        self.fast_url = self.start_provider(0.0)
        self.slow_url = self.start_provider(SLOW_LATENCY_S)
        n = self.next_task_number()
        i = 0
        while True:
            step = CYCLE[i % len(CYCLE)]
            self.run_step(step, n)
            n += step.tasks
            i += 1

    def close(self) -> None:
        stop(self.producer)
        for proc in self.providers:
            stop(proc)


class Stop(Exception):
    """Raised from the signal handler to unwind into the cleanup."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise Stop(signum)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="codeai_tui.demo.live")
    p.add_argument("bundle")
    p.add_argument("--rate", type=float, default=4.0, help="events per second")
    p.add_argument("--busy-timeout", type=float, default=10.0,
                   help="seconds a producer waits for another process's write lock")
    p.add_argument("--case-port", type=int, default=DEMO_PROVIDER_PORT,
                   help="the port case.json names for resumes")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    live = LiveProducer(Path(args.bundle), args.rate, args.busy_timeout, args.case_port)
    try:
        live.run()
    except Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        live.close()
    return 0


def start_live(bundle: Path, rate: float, busy_timeout: float = 10.0,
               case_port: int = DEMO_PROVIDER_PORT) -> subprocess.Popen[str]:
    """Start the live producer as its own process (the caller terminates it). What it
    has to say (a step that could not be recorded) goes to `<bundle>/live.log`."""
    log = open(Path(bundle) / "live.log", "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(
            python_module("codeai_tui.demo.live", str(bundle), "--rate", str(rate),
                          "--busy-timeout", str(busy_timeout), "--case-port", str(case_port)),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, text=True,
            start_new_session=True, preexec_fn=_die_with_parent(),
        )
    finally:
        log.close()


if __name__ == "__main__":
    raise SystemExit(main())
