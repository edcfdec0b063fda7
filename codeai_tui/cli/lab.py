"""The lab's commands: the synthetic provider, the reliability harness and the bench. The
lab is imported only when one of them runs, so no other command pays for it."""

from __future__ import annotations

import argparse

from codeai_tui.cli import arguments as arg
from codeai_tui.cli.common import EXIT_OK, CliError, Command


def _provider_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=arg.whole(0, 65535), default=8768)
    rec = p.add_mutually_exclusive_group(required=True)
    rec.add_argument("--receipts", type=arg.path, help="the receipt log to append to")
    rec.add_argument("--receipts-root", type=arg.path,
                     help="bundle mode: /c/<case>/v1 logs to <root>/<case>/provider/receipts.jsonl")
    p.add_argument("--bundle-id", default=None, metavar="ID",
                   help="bundle mode: serve only /b/ID/c/<case>/v1 (default: the root's "
                        "bundle.json bundle_id, when it names one)")
    p.add_argument("--latency", type=arg.seconds, default=0.0, help="seconds to hold each request")
    p.add_argument("--fail-first", type=arg.whole(0), default=0,
                   help="answer --fail-status to the first N requests")
    p.add_argument("--fail-status", type=int, default=503, choices=(503, 429),
                   help="the status of those answers (default 503)")
    p.add_argument("--retry-after", default=None, metavar="VALUE",
                   help="send `Retry-After: VALUE` with them (seconds or an HTTP-date)")
    p.add_argument("--truncate-after", type=arg.whole(0), default=None, metavar="N",
                   help="cut every streamed answer after N chunks (connection closed mid-body)")
    p.add_argument("--stall-after", type=arg.whole(0), default=None, metavar="N",
                   help="stop every streamed answer after N chunks but keep it open with "
                        "keep-alive comments (a hung generation)")
    p.add_argument("--fresh-tool-call-ids", action="store_true",
                   help="answer every request with new tool-call ids, as a model asked again "
                        "does (default: ids derived from the request bytes, the same for the "
                        "same bytes)")


def cmd_provider(args: argparse.Namespace) -> int:
    from codeai_tui.lab.provider import serve

    try:
        serve(args.host, args.port, args.receipts, args.latency, args.fail_first,
              receipts_root=args.receipts_root, truncate_after=args.truncate_after,
              stall_after=args.stall_after, fresh_tool_call_ids=args.fresh_tool_call_ids,
              bundle_id=args.bundle_id,
              fail_status=args.fail_status, retry_after=args.retry_after)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    return EXIT_OK


def _reliability_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="a few of each (about a minute)")
    p.add_argument("--rounds", type=arg.whole(1), default=None, help="race rounds (default 50)")
    p.add_argument("--kills", type=arg.whole(1), default=None, help="kills per action (default 100)")
    p.add_argument("--soak-minutes", type=arg.finite("minutes", positive=True), default=None,
                   help="default 10")
    p.add_argument("--keep", action="store_true", help="keep the work directory")


def cmd_reliability(args: argparse.Namespace) -> int:
    from codeai_tui.lab.reliability.command import run_reliability

    return run_reliability(quick=args.quick, rounds=args.rounds, kills=args.kills,
                           soak_minutes=args.soak_minutes, keep=args.keep)


def _bench_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--events", type=arg.whole(100), default=1_000_000,
                   help="events in the interleaved ledger (default 1,000,000)")
    p.add_argument("--runs", type=arg.whole(1), default=3, help="runs per measure (medians)")
    p.add_argument("--cases", type=arg.whole(0), default=1000,
                   help="cases in the bundle measure (0: skip)")
    p.add_argument("--live-seconds", type=arg.seconds, default=30.0,
                   help="how long the live measure follows a writer (0: skip)")
    p.add_argument("--keep", type=arg.path_text, default=None,
                   help="write the ledgers here and keep them")
    p.add_argument("--shapes", type=arg.whole(0, 10_000_000), default=100_000,
                   help="size of the shape ledgers beside ordinary ones: one call with N "
                        "attempts, one task with N calls, one call with N tool operations, "
                        "one task with N compilations (default 100,000; 0: skip)")
    p.add_argument("--shape-tasks", type=arg.whole(0, 10_000_000), default=0,
                   help="also a ledger of N tasks beside an ordinary one (0, the default: "
                        "skip; 1,000,000 takes minutes to write and measure)")
    p.add_argument("--huge-events", type=arg.whole(0, 100_000_000), default=0,
                   help="also the huge ledger's rows, written by the bench itself (the "
                        "targets' size: 10,000,000; 0, the default: skip)")
    p.add_argument("--markdown", action="store_true",
                   help="print the table as Markdown (docs/benchmarks.md's is made so)")


def cmd_bench(args: argparse.Namespace) -> int:
    from codeai_tui.lab.bench import run_bench

    return run_bench(args.events, args.keep, args.runs, args.cases, args.live_seconds,
                     args.shapes, args.shape_tasks, markdown=args.markdown,
                     huge_events=args.huge_events)


COMMANDS = (
    Command("provider", "run the synthetic provider on loopback", _provider_arguments,
            cmd_provider),
    Command("reliability", "races, kills, faults, read-only, soak (minutes)",
            _reliability_arguments, cmd_reliability),
    Command("bench", "print the speed and memory target table", _bench_arguments, cmd_bench),
)
