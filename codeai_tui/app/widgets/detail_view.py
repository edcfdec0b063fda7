"""The detail view: what the selected row means, in words first, then its JSON.

It owns what it shows (`subject`, the snapshot the words come from, `full_hashes`); the
screen sets them. Text is a Rich `Text` built by `detail_text` (never markup).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from codeai_tui.app.widgets.cells import WARN
from codeai_tui.app.widgets.detail_text import ago, detail_text
from codeai_tui.app.widgets.laid_out import show_laid_out
from codeai_tui.console.drift import DriftCheck, DriftStatus
from codeai_tui.console.evidence import (
    DETAIL_SHOWN,
    call_detail_lines,
    receipt_detail_lines,
    receipt_index,
)
from codeai_tui.console.model import CaseSnapshot, SkeletonCall
from codeai_tui.console.severity import CaseVerdict
from codeai_tui.console.tools import ToolDetails, load_tool_details, tool_body, tool_lines
from codeai_tui.ledger import Event, Receipt
from codeai_tui.workstate import CallState, CompilationState, TaskState
from codeai_tui.workstate.receipts import duplicate_group


def receipt_lines(r: Receipt, snap: CaseSnapshot | None) -> list[tuple[str, str]]:
    """A receipt's detail, warned a duplicate when this line of the log is in a
    duplicate group (asked by its place: one question, not a scan of every group)."""
    lines = receipt_detail_lines(r, snap)
    check = snap.state.receipts if snap is not None else None
    if check is not None and duplicate_group(check.duplicates, r) is not None:
        lines.append((f"{WARN} duplicate", "another receipt has the same key and body "
                      "hash: the provider served this request more than once"))
    return lines


def verdict_lines(stage: str, op: str, effect: str, effect_unknown: bool
                  ) -> list[tuple[str, str]]:
    """A call's verdict and provider effect, as the detail's first lines."""
    verdict = f"stage {stage}, next operation {op}"
    if effect_unknown:
        return [(f"{WARN} verdict", f"effect unknown: duplicate risk ({verdict})"),
                ("provider effect", effect)]
    return [("verdict", verdict), ("provider effect", effect)]


@dataclass(frozen=True)
class Subject:
    """What is selected: one of call, early call (the skeleton's, before the projection),
    event, task, compilation, receipt, case, loading."""

    kind: str
    item: Any


class DetailView(VerticalScroll):
    DEFAULT_CSS = """
    DetailView { border: round $panel-lighten-2; background: $surface; padding: 0 1; }
    DetailView:focus-within { border: round $primary; }
    """

    subject: reactive[Subject | None] = reactive(None, init=False, always_update=True,
                                                 repaint=False)
    snapshot: reactive[CaseSnapshot | None] = reactive(None, init=False, always_update=True,
                                                        repaint=False)
    full_hashes: reactive[bool] = reactive(False, init=False)
    drift: reactive[dict[str, DriftCheck]] = reactive(dict, init=False, always_update=True,
                                                       repaint=False)

    def __init__(self, clock: Callable[[], datetime], read_only: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.clock = clock
        self.read_only = read_only
        self.case_verdicts: dict[Path, CaseVerdict] = {}
        self.tool_details: ToolDetails | None = None  # of the call shown (read off-thread)
        self._shown: Text | None = None
        self._repaint_pending = False

    def compose(self) -> ComposeResult:
        yield Static(Text("Select a row to see its evidence."), id="detail")

    def on_mount(self) -> None:
        self.border_title = Content("Detail")

    def watch_subject(self) -> None:
        self.repaint()

    def watch_snapshot(self) -> None:
        self.repaint()

    def watch_full_hashes(self) -> None:
        self.repaint()

    def watch_drift(self) -> None:
        self.repaint()

    def text(self) -> str:
        """What the view shows, as plain text (tests, the 80x24 verdict line)."""
        return str(self.query_one("#detail", Static).render())

    def _palette(self) -> dict[str, str]:
        theme = self.app.current_theme
        return {
            "key": f"bold {theme.primary}",
            "string": theme.success or "green",
            "number": theme.warning or "yellow",
            "literal": theme.accent or "magenta",
            "punct": "dim",
            "note": "dim italic",
            "danger": f"bold {theme.error or 'red'}",
        }

    def repaint(self) -> None:
        """Describe the subject again, once for every change made in one go: a live
        snapshot sets the subject, the snapshot and the drift one after another, and
        each description (highlighted JSON) costs milliseconds on a big call."""
        if not self._repaint_pending:
            self._repaint_pending = True
            self.call_later(self._repaint_now)

    def _repaint_now(self) -> None:
        self._repaint_pending = False
        subject = self.subject
        if subject is None or not self.is_mounted:
            return
        if subject.kind == "loading":
            self._show(Text(f"seq {subject.item}: loading\u2026"))
            return
        title, lines, body = self._describe(subject)
        self._show(detail_text(title, lines, body, palette=self._palette(), now=self.clock(),
                               full_hashes=self.full_hashes))

    def _show(self, text: Text) -> None:
        """Update only when the text or its styles differ from what is on screen: every
        live snapshot repaints, and an update lays the screen out anew."""
        if text != self._shown:
            self._shown = text
            show_laid_out(self.query_one("#detail", Static), text)

    @staticmethod
    def _describe_early(early: SkeletonCall) -> tuple[str, list[tuple[str, str]], Any]:
        """A call before the projection: the verdict its events' kinds decide, what is
        still being read, and why nothing acts on it yet."""
        reading = "reading\u2026"
        stage, op, effect = early.stage, early.next_operation, early.provider_effect
        if stage is None or op is None or effect is None:
            lines = [("verdict", f"{reading} (a payload decides)"),
                     ("provider effect", reading)]
        else:
            lines = verdict_lines(stage.value, op.value, effect.value, early.effect_unknown)
        lines.append(("why", f"{reading} the kinds of this call's events are counted; "
                             "its payloads, anomalies and the provider's receipts are "
                             "still being read, and nothing acts on it until they are"))
        body = {"call_id": early.call_id, "first_seq": early.first_seq,
                "last_seq": early.last_seq, "attempts": early.attempts}
        return f"call {early.call_id}", lines, body

    def _describe(self, subject: Subject) -> tuple[str, list[tuple[str, str]], Any]:
        snap = self.snapshot
        lines: list[tuple[str, str]] = []
        kind, obj = subject.kind, subject.item
        if kind == "early call":
            return self._describe_early(obj)
        if kind == "call":
            call: CallState = (snap.call(obj.call_id) if snap else None) or obj
            lines += verdict_lines(call.stage.value, call.next_operation.value,
                                   call.provider_effect.value, call.effect_unknown)
            index = receipt_index(snap)
            lines.append(("why", call.reason_with(index)))
            lines += call_detail_lines(call, snap)
            if call.resumable:
                lines += self._resume_lines(call)
            body = call.as_json(index, limit=DETAIL_SHOWN)
            tools = call.tools
            if tools is not None:  # docs/tools.md: plan, operations, signed receipts
                details = self._details_for(call)
                lines += tool_lines(tools, details)
                body["tools"] = tool_body(tools, details)
            return f"call {call.call_id}", lines, body
        if kind == "event":
            ev: Event = obj
            lines.append(("recorded", f"{ev.recorded_at} ({ago(ev.recorded_at, self.clock())})"))
            if ev.payload_error:
                lines.append((f"{WARN} payload", ev.payload_error))
            if ev.call_id and snap is not None:
                call_state = snap.call(ev.call_id)
                if call_state is not None:
                    label = f"{WARN} call verdict" if call_state.effect_unknown \
                        else "call verdict"
                    lines.append((label, f"{call_state.stage.value}: {call_state.reason}"))
            body = {"seq": ev.seq, "event_id": ev.event_id, "recorded_at": ev.recorded_at,
                    "kind": ev.kind, "task_id": ev.task_id, "call_id": ev.call_id,
                    "attempt_id": ev.attempt_id, "compilation_id": ev.compilation_id,
                    "payload": ev.payload if ev.payload is not None else ev.payload_text}
            return f"event seq {ev.seq}: {ev.kind}", lines, body
        if kind == "task":
            task: TaskState = (snap.state.task(obj.task_id) if snap else None) or obj
            lines += [("next operation", task.next_operation.value), ("why", task.reason)]
            return f"task {task.task_id}", lines, task.as_json() | {"title": task.title}
        if kind == "compilation":
            comp: CompilationState = obj
            lines += [("next operation", comp.next_operation.value), ("why", comp.reason)]
            return (f"compilation {comp.compilation_id}", lines,
                    comp.as_json() | {"package_id": comp.package_id,
                                      "rendered_sha256": comp.rendered_sha256})
        if kind == "receipt":
            r: Receipt = obj
            lines += receipt_lines(r, snap)
            body = {"receipt_id": r.receipt_id, "received_at": r.received_at,
                    "idempotency_key": r.idempotency_key, "body_sha256": r.body_sha256,
                    "bytes": r.bytes, "line": r.line_no}
            return f"receipt {r.receipt_id}", lines, body
        # a case of the bundle
        case: Path = obj
        verdict_of = self.case_verdicts.get(case)
        if verdict_of is not None:
            label = f"{WARN} worst" if verdict_of.alarming else "worst next operation"
            lines.append((label, verdict_of.line))
        return f"case {case}", lines, {"case": str(case)}

    def _details_for(self, call: CallState) -> ToolDetails | None:
        """The call's tool arguments and receipts if read for this state of it; else
        start reading them (a thread: artifact and receipt files) and say so meanwhile."""
        got = self.tool_details
        if got is not None and got.call_id == call.call_id and got.last_seq == call.last_seq:
            return got
        snap = self.snapshot
        if snap is not None:
            self._read_tool_details(snap.case_dir, call)
        return None

    @work(thread=True, exclusive=True, group="tool-details", exit_on_error=False)
    def _read_tool_details(self, case_dir: Path, call: CallState) -> None:
        details = load_tool_details(case_dir, call)
        self.app.call_from_thread(self._tool_details_read, details)

    def _tool_details_read(self, details: ToolDetails) -> None:
        self.tool_details = details
        self.repaint()

    def _resume_lines(self, call: CallState) -> list[tuple[str, str]]:
        if self.read_only:
            return [("resume", "permitted by the projection, but read-only mode")]
        check = self.drift.get(call.call_id)
        if check is None or check.last_seq != call.last_seq:
            return [("resume", "start_call; drift not checked yet (r checks and asks)")]
        if check.status is DriftStatus.DRIFT:
            return [(f"{WARN} resume", "refused: drift")] + [
                ("fix", fix) for fix in check.fixes]
        if check.status is DriftStatus.NO_CHECK_POSSIBLE:
            return [("resume", "permitted; no manifest, so no drift check is possible "
                     "(r asks for the call id)")]
        if check.status is DriftStatus.UNAVAILABLE:
            return [(f"{WARN} resume", "the plan cannot be read: " + "; ".join(check.fixes))]
        return [("resume", "permitted: the rebuilt request matches the recorded one (press r)")]
