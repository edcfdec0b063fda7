"""A report worker process: runs or replays one "publish report" turn, and can SIGKILL
itself at a named moment, so effects are counted after real kills.

    python -m codeai_tui.tools.worker run|replay|reask CASE BASE_URL KERNEL_KEY
        [--stream] [--kill-at KIND|receipt|tool-effect]

`--kill-at` a ledger kind: right after that event commits; `receipt`: right after the
first receipt line is saved (the seed's recovery exercise); `tool-effect`: inside the
tool, right after its publication committed and before the kernel records the outcome.
Prints one JSON line {complete, stopped_at, text, provider_calls_made} (or {refused}),
exit 0, or 3 when replay refuses. Bad input: one line on stderr, exit 2.

`reask` is the naive restart the demo measures on a copy of a killed case: it asks the
provider for the turn's decision again and runs the new answer's tool calls under their
own ids (tools/reask.py); it prints what it did as one JSON line, exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from codeai_tui.ledger.case import CaseConfig, ProviderConfig
from codeai_tui.ledger.errors import LedgerError
from codeai_tui.ledger.schema import Event
from codeai_tui.ledger.writer import LedgerWriter
from codeai_tui.tools.kernel import JsonObject, ToolContext, ToolKernel
from codeai_tui.tools.publish import PUBLISH_REPORT, PUBLISH_REPORT_TOOL, PublishReport
from codeai_tui.tools.reask import reask_decision
from codeai_tui.tools.receipts import KeyProblem
from codeai_tui.tools.turn import TurnError, TurnRefused, TurnSpec, replay_turn, run_turn

NAMESPACE = "report-v1"
TASK_ID = "t1"


def report_spec(stream: bool) -> TurnSpec:
    """The run plan fixed for every attempt, so a replacement worker addresses the same turn."""
    return TurnSpec(TASK_ID, "thread-1", "turn-1", "write and publish the weekly report",
                    (PUBLISH_REPORT_TOOL,), stream=stream)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _KillAfterEffect(PublishReport):
    def __call__(self, context: ToolContext, arguments: JsonObject) -> JsonObject:
        result = super().__call__(context, arguments)
        _die()
        return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m codeai_tui.tools.worker")
    p.add_argument("mode", choices=["run", "replay", "reask"])
    p.add_argument("case", type=Path)
    p.add_argument("base_url")
    p.add_argument("key", type=Path, help="the kernel's private key (kept outside the case)")
    p.add_argument("--stream", action="store_true")
    p.add_argument("--kill-at", default=None)
    args = p.parse_args(argv)

    def on_commit(event: Event) -> None:
        if event.kind == args.kill_at:
            _die()

    def on_receipt(_text: str) -> None:
        if args.kill_at == "receipt":
            _die()

    case: Path = args.case
    tool = _KillAfterEffect(case) if args.kill_at == "tool-effect" else PublishReport(case)
    try:
        writer = LedgerWriter.create(case) if args.mode == "run" else LedgerWriter.open(case)
        with writer:
            if args.mode == "run":
                writer.append("task.created", TASK_ID, {"title": "weekly report"})
            kernel = ToolKernel.open(case, writer, args.key, {PUBLISH_REPORT: tool},
                                     namespace=NAMESPACE, on_commit=on_commit,
                                     on_receipt=on_receipt)
            if args.mode == "reask":
                reasked = reask_decision(case, kernel, report_spec(args.stream), args.base_url,
                                         timeout=30)
                print(json.dumps(reasked.as_json()), flush=True)
                return 0
            config = CaseConfig(ProviderConfig(base_url=args.base_url))
            go = run_turn if args.mode == "run" else replay_turn
            out = go(case, writer, config, kernel, report_spec(args.stream), on_commit=on_commit,
                     on_text=None, timeout=30)
    except TurnRefused as exc:
        print(json.dumps({"refused": str(exc)}), flush=True)
        return 3
    except (TurnError, KeyProblem, LedgerError) as exc:
        print(f"worker: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({"complete": out.complete, "stopped_at": out.stopped_at, "text": out.text,
                      "provider_calls_made": out.provider_calls_made}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
