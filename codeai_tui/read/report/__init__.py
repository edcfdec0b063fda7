"""`codeai-tui report CASE`: a self-contained incident report of one case, to hand over.

What the case is; its verdicts, worst first, with their reasons and evidence; the
timeline as lanes; the operator's actions (who, when, what); the effect table of a tool
case; what is still unknown. HTML (inline CSS, an inline SVG, no script, no network)
or Markdown. Read-only: a report is never written inside the case directory, which it
describes and does not belong to.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

from codeai_tui.ledger.errors import LedgerError, LedgerProblem
from codeai_tui.read.report.facts import ReportFacts, gather, one_case
from codeai_tui.read.report.html import render_html
from codeai_tui.read.report.markdown import render_markdown

FORMATS = ("html", "md")
SUFFIX = {"html": ".html", "md": ".md"}


def render(facts: ReportFacts, fmt: str = "html") -> str:
    return render_markdown(facts) if fmt == "md" else render_html(facts)


def report_text(case: str | os.PathLike[str], as_of: int | None = None,
                fmt: str = "html") -> str:
    """The report of one case (raises LedgerError: not one case, or unreadable)."""
    return render(gather(case, as_of), fmt)


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.resolve().relative_to(directory.resolve())
    except ValueError:
        return False
    return True


def write_report(case: str | os.PathLike[str], out: str | os.PathLike[str],
                 as_of: int | None = None, fmt: str = "html") -> int:
    """Write the report to `out` (replaced whole, never half-written); returns its size
    in bytes. Raises LedgerError for an `out` inside the case directory."""
    case_dir = one_case(case)
    target = Path(out)
    if _inside(target, case_dir):
        raise LedgerError(LedgerProblem.NOT_A_LEDGER,
                          f"{out}: inside the case directory; a report describes the case "
                          "and is not part of it: write it elsewhere")
    if target.is_dir():
        raise LedgerError(LedgerProblem.NOT_A_LEDGER, f"{out}: a directory; name a file")
    if not target.parent.is_dir():
        raise LedgerError(LedgerProblem.MISSING, f"{out}: no directory {target.parent} to "
                          "write it in")
    return write_whole(target, report_text(case, as_of, fmt).encode("utf-8"))


def write_whole(target: Path, data: bytes) -> int:
    """`data` at `target` through a temporary file beside it and a rename: a reader
    never sees half a report, and a failed write leaves no file behind."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:  # named by what was asked for, not by the temporary name
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OSError(exc.errno, exc.strerror, str(target)) from None
        raise
    return len(data)


def report_to_temp(case: Path, as_of: int | None = None) -> tuple[Path, int]:
    """The console's report of the open case: HTML in a new private temporary directory
    (never in the case directory, and nothing beside it is touched). (path, bytes)."""
    directory = Path(tempfile.mkdtemp(prefix="codeai-tui-report-"))
    # the case's name as given by its directory: kept to safe characters, and short
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", case.resolve().name)[:80].lstrip(".") or "case"
    name = f"{safe}-report" + (f"-seq{as_of}" if as_of is not None else "")
    target = directory / (name + ".html")
    return target, write_whole(target, report_text(case, as_of).encode("utf-8"))


__all__ = ["FORMATS", "ReportFacts", "gather", "render", "report_text", "report_to_temp",
           "write_report"]
