"""A producer process: `python -m codeai_tui.demo.producer CASE --scenario S ...`.

It appends a scenario's events through the one writer and, right after the named
checkpoint event commits (durable), prints one `CHECKPOINT {json}` line on stdout. With
`--then block` it then waits on stdin so the harness can SIGKILL it at exactly that
point; with `--then continue` it carries on (the in-flight case: the harness kills it
once the provider's own receipt log shows the request). If the harness dies first, stdin
reaches EOF and the producer exits rather than linger.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from codeai_tui.demo.scenario import SCENARIOS, run
from codeai_tui.ledger.case import CaseConfig, ProviderConfig
from codeai_tui.ledger.errors import LedgerError
from codeai_tui.ledger.schema import Event
from codeai_tui.ledger.writer import LedgerWriter
from codeai_tui.runtime.runner import CallRunner

CHECKPOINT_PREFIX = "CHECKPOINT "
DONE_PREFIX = "DONE "


class Checkpoint:
    """The commit hook: announce the named event's durable commit, then block or go on."""

    def __init__(self, kind: str | None, occurrence: int, then: str, pace: float) -> None:
        self.kind = kind
        self.occurrence = occurrence
        self.then = then
        self.pace = pace
        self.seen = 0

    def __call__(self, event: Event) -> None:
        if self.pace > 0:
            time.sleep(self.pace)
        if event.kind != self.kind:
            return
        self.seen += 1
        if self.seen != self.occurrence:
            return
        record = {"kind": event.kind, "seq": event.seq, "event_id": event.event_id,
                  "task_id": event.task_id, "call_id": event.call_id, "pid": os.getpid()}
        sys.stdout.write(CHECKPOINT_PREFIX + json.dumps(record, sort_keys=True) + "\n")
        sys.stdout.flush()
        if self.then == "block":
            sys.stdin.read()  # the harness SIGKILLs us here; EOF means it is gone
            os._exit(0)


EXIT_NOT_RECORDED = 75  # EX_TEMPFAIL: the step's events could not all be written


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="codeai_tui.demo.producer")
    p.add_argument("case")
    p.add_argument("--scenario", choices=SCENARIOS, default="call")
    p.add_argument("--n", type=int, default=1, help="task number: ids are task-N, call-N, ...")
    p.add_argument("--base-url", required=True)
    p.add_argument("--model", default="synthetic-small")
    p.add_argument("--checkpoint", default=None, help="event kind to stop after")
    p.add_argument("--occurrence", type=int, default=1, help="stop at the Nth such event")
    p.add_argument("--then", choices=("block", "continue"), default="block")
    p.add_argument("--pace", type=float, default=0.0, help="seconds to wait after each commit")
    p.add_argument("--timeout", type=float, default=30.0, help="provider send timeout")
    p.add_argument("--busy-timeout", type=float, default=10.0,
                   help="seconds to wait for another process's write lock")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    case = Path(args.case)
    config = CaseConfig(provider=ProviderConfig(base_url=args.base_url, model=args.model,
                                                api_key_env=None))
    hook = Checkpoint(args.checkpoint, args.occurrence, args.then, args.pace)
    opener = LedgerWriter.open if (case / "ledger.sqlite3").exists() else LedgerWriter.create
    try:
        with opener(case, busy_timeout=args.busy_timeout) as writer:
            runner = CallRunner(case, writer, config, on_commit=hook, timeout=args.timeout)
            run(args.scenario, runner, args.n, os.getpid())
    except LedgerError as exc:
        # e.g. another process held the write lock past our busy timeout: say what was
        # not recorded, one line, and let whoever runs us decide to go on
        sys.stderr.write(f"task-{args.n} ({args.scenario}): {exc}\n")
        return EXIT_NOT_RECORDED
    sys.stdout.write(DONE_PREFIX + json.dumps({"pid": os.getpid()}) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
