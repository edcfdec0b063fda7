"""The action log: every resume, refusal, cancellation and alert of this session,
and the open case's incident report (`w`: codeai_tui/report), to hand over.

Writing the report is no ledger write: it goes to a new private temporary directory,
never into the case directory, and the screen says where.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static

from codeai_tui.app.widgets.laid_out import show_laid_out
from codeai_tui.console.actions import ActionLog, Outcome
from codeai_tui.ledger import LedgerError
from codeai_tui.read.report import report_to_temp
from codeai_tui.textsafe import visible

STYLE = {Outcome.RESUMED: "bold $success", Outcome.REPLAYED: "bold $success",
         Outcome.REFUSED: "bold $warning",
         Outcome.FAILED: "bold $error", Outcome.ALERT: "bold $error",
         Outcome.CANCELLED: "$text-muted", Outcome.CONFIRMED: "bold",
         Outcome.ADVANCED: "bold $success",
         Outcome.RECONCILED: "bold $success"}


@dataclass
class ReportWritten(Message):
    """The report worker ended: where the report is, or why there is none."""

    path: Path | None
    size: int
    problem: str | None = None


class ActionLogScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    ActionLogScreen { align: center middle; background: $background 60%; }
    #log-box { width: 100%; max-width: 140; height: 90%; border: thick $primary;
               padding: 0 1; background: $surface; }
    #report-note { color: $text-muted; display: none; }
    #report-note.-shown { display: block; }
    #report-note.-written { color: $success; text-style: bold; }
    #report-note.-failed { color: $error; text-style: bold; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,a", "close", "Close", id="action_log.close"),
        Binding("w", "write_report", "Write report", id="action_log.report"),
    ]

    def __init__(self, log: ActionLog, case: Path | None = None,
                 as_of: int | None = None) -> None:
        super().__init__()
        self.log_model = log
        self.case = case  # the open case: what `w` writes the report of
        self.as_of = as_of

    def compose(self) -> ComposeResult:
        head: list[str | tuple[str, str]] = [
            ("Action log", "bold $accent"),
            " \u2014 this session; w: the case's incident report; esc closes\n",
            (self.log_model.summary(), "$text-muted")]
        parts: list[str | tuple[str, str]] = ["\n"]
        if not self.log_model.entries:
            parts.append(("nothing yet: resumes, refusals and alerts appear here", "italic"))
        for e in self.log_model.entries:
            parts += [e.at.strftime("%H:%M:%S"), "  ",
                      (f"{e.outcome.value:<9}", STYLE.get(e.outcome, "bold")), "  ",
                      visible(e.case, one_line=True, limit=40), "  ",
                      (visible(e.call_id or "\u2014", one_line=True, limit=40), "bold"), "\n",
                      "          ", visible(e.text, one_line=True, limit=300), "\n"]
        with VerticalScroll(id="log-box"):
            yield Static(Content.assemble(*head), id="log-head")
            yield Static("", id="report-note", markup=False)
            yield Static(Content.assemble(*parts), id="log-text")

    def action_write_report(self) -> None:
        note = self.query_one("#report-note", Static)
        note.set_classes("-shown")
        if self.case is None:
            show_laid_out(note, "no case is open: no report to write")
            return
        at = f" as of seq {self.as_of}" if self.as_of is not None else ""
        show_laid_out(note, Content(visible(f"writing the incident report of {self.case}{at}\u2026",
                                            one_line=True)))
        case, as_of = self.case, self.as_of
        self.run_worker(lambda: self._write_report(case, as_of), thread=True,
                        group="report", exclusive=True, exit_on_error=False)

    def _write_report(self, case: Path, as_of: int | None) -> None:
        try:
            path, size = report_to_temp(case, as_of)
        except (LedgerError, OSError, ValueError) as exc:
            self.post_message(ReportWritten(None, 0, str(exc)))
            return
        self.post_message(ReportWritten(path, size))

    def on_report_written(self, message: ReportWritten) -> None:
        note = self.query_one("#report-note", Static)
        if message.path is None:
            text = f"\u2716 no report: {message.problem}"
            note.set_classes("-shown -failed")
        else:
            text = (f"\u2714 incident report written to {message.path} ({message.size:,} "
                    "bytes): open it in a browser")
            note.set_classes("-shown -written")
        shown = visible(text, one_line=True, limit=400)
        show_laid_out(note, Content(shown))
        self.notify(shown, title="report", markup=False, timeout=15,
                    severity="information" if message.path is not None else "error")

    def action_close(self) -> None:
        self.dismiss(None)
