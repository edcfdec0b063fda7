"""The read commands: inspect, report, export, verify and receipts verify. None of them
writes to a ledger; each prints what it found."""

from __future__ import annotations

import argparse
import sys

from codeai_tui.cli import arguments as arg
from codeai_tui.cli.common import EXIT_FAILED, EXIT_OK, CliError, Command
from codeai_tui.ledger.reader import SEQ_MAX
from codeai_tui.textsafe import visible


def _inspect_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=arg.path_text,
                   help="a case directory, a ledger file, or a bundle")
    p.add_argument("--json", action="store_true",
                   help="the codeai.work_state.v1 JSON document (docs/ledger.md section 7); "
                        "it names its JSON Schema, shipped in codeai_tui/schemas/")
    p.add_argument("--as-of", type=arg.whole(0, SEQ_MAX), default=None, metavar="SEQ",
                   help="project only events with seq <= SEQ")


def cmd_inspect(args: argparse.Namespace) -> int:
    from codeai_tui.read.inspection import write_json, write_table
    from codeai_tui.services.forked import helper_plan
    from codeai_tui.services.glibc_malloc import fix_mmap_threshold, limit_malloc_arenas

    limit_malloc_arenas()  # (before the first thread or helper: as the console does)
    fix_mmap_threshold()
    # streamed: calls are written (the table: spooled) as the projection finishes them;
    # a big case's calls are rendered by two processes where two cores are ours
    write = write_json if args.json else write_table
    write(args.path, args.as_of, sys.stdout, helper_plan())
    return EXIT_OK


def _report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("case", type=arg.path_text, help="a case directory or its ledger file")
    p.add_argument("--as-of", type=arg.whole(0, SEQ_MAX), default=None, metavar="SEQ",
                   help="report the case as it stood at seq SEQ")
    p.add_argument("--format", choices=("html", "md"), default="html",
                   help="html (default: inline CSS and SVG, no script, no network) or md")
    p.add_argument("-o", "--output", type=arg.path_text, default=None, metavar="OUT",
                   help="write the report here (never inside the case directory); "
                        "default: standard output")


def cmd_report(args: argparse.Namespace) -> int:
    from codeai_tui.read.report import report_text, write_report

    if args.output is None:
        sys.stdout.write(report_text(args.case, args.as_of, args.format))
        return EXIT_OK
    size = write_report(args.case, args.output, args.as_of, args.format)
    print(visible(f"wrote the report of {args.case} to {args.output} ({size:,} bytes)",
                  one_line=True))
    return EXIT_OK


def _export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("case", type=arg.path_text)
    p.add_argument("out", type=arg.path_text, help="a new (or empty) directory")


def cmd_export(args: argparse.Namespace) -> int:
    from codeai_tui.read.export import export_case

    print(visible(export_case(args.case, args.out).summary(), one_line=True))
    return EXIT_OK


def _verify_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", type=arg.path_text)


def cmd_verify(args: argparse.Namespace) -> int:
    from codeai_tui.verify import run_verify_command

    return run_verify_command(args.path)


def _receipts_arguments(p: argparse.ArgumentParser) -> None:
    rsub = p.add_subparsers(dest="receipts_command", metavar="ACTION", required=True)
    v = rsub.add_parser("verify", help="check every receipt: exit 0 all valid, 1 any invalid or missing")
    v.add_argument("case", type=arg.path_text)
    v.add_argument("--trusted-key", type=arg.path, default=None, metavar="PATH",
                   help="the kernel public key (PEM) to trust; default the case's tools/kernel.pub")


def cmd_receipts_verify(args: argparse.Namespace) -> int:
    from codeai_tui.tools import KeyProblem, ReceiptsInputError, verify_case_receipts
    from codeai_tui.tools.verify import render_report

    try:
        report = verify_case_receipts(args.case, args.trusted_key)
    except (KeyProblem, ReceiptsInputError) as exc:
        raise CliError(str(exc)) from None
    for line in render_report(report):
        print(visible(line, one_line=True))
    return EXIT_OK if report.ok else EXIT_FAILED


COMMANDS = (
    Command("inspect", "print the work-state projection", _inspect_arguments, cmd_inspect),
    Command("report", "a self-contained incident report of one case (HTML with the lanes "
                      "drawn, or Markdown)", _report_arguments, cmd_report),
    Command("export", "a consistent, self-contained copy of a case to share",
            _export_arguments, cmd_export),
    Command("verify", "independently verify a demo bundle's claims", _verify_arguments,
            cmd_verify),
    Command("receipts", "tool receipts: verify every signed receipt of a case",
            _receipts_arguments, cmd_receipts_verify),
)
