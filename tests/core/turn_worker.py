"""A worker process for turn tests: runs or replays one turn, and can SIGKILL itself at a
named moment (after a ledger kind commits, or after the first receipt line is saved)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from codeai_tui.ledger import CaseConfig, LedgerWriter, ProviderConfig
from codeai_tui.ledger.schema import Event
from codeai_tui.tools import PUBLISH_REPORT, PUBLISH_REPORT_TOOL, PublishReport, ToolKernel
from codeai_tui.tools.turn import TurnRefused, TurnSpec, replay_turn, run_turn


def spec(stream: bool) -> TurnSpec:
    return TurnSpec("t1", "thread-1", "turn-1", "write and publish the weekly report",
                    (PUBLISH_REPORT_TOOL,), stream=stream)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["run", "replay"])
    p.add_argument("case", type=Path)
    p.add_argument("base_url")
    p.add_argument("key", type=Path)
    p.add_argument("--stream", action="store_true")
    p.add_argument("--kill-at", default=None, help="a ledger kind, or 'receipt'")
    args = p.parse_args(argv)

    def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def on_commit(event: Event) -> None:
        if event.kind == args.kill_at:
            die()

    def on_receipt(_text: str) -> None:
        if args.kill_at == "receipt":
            die()

    case: Path = args.case
    writer = LedgerWriter.create(case) if args.mode == "run" else LedgerWriter.open(case)
    with writer:
        if args.mode == "run":
            writer.append("task.created", "t1", {"title": "weekly report"})
        kernel = ToolKernel.open(case, writer, args.key, {PUBLISH_REPORT: PublishReport(case)},
                                 namespace="report-v1", on_commit=on_commit, on_receipt=on_receipt)
        config = CaseConfig(ProviderConfig(base_url=args.base_url))
        go = run_turn if args.mode == "run" else replay_turn
        try:
            out = go(case, writer, config, kernel, spec(args.stream), on_commit=on_commit,
                     timeout=10)
        except TurnRefused as exc:
            print(json.dumps({"refused": str(exc)}))
            return 3
    print(json.dumps({"complete": out.complete, "stopped_at": out.stopped_at, "text": out.text,
                      "provider_calls_made": out.provider_calls_made}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
