"""The Detail pane: what the selected row means, in words first, then its JSON."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.widgets import Static

from codeai_tui.app.constants import PANES
from codeai_tui.app.detail import ago, detail_text
from codeai_tui.app.rows import (
    WARN,
    CallSource,
)
from codeai_tui.app.timeline import FilteredTimeline, TimelineSource
from codeai_tui.app.widgets.table import TableView
from codeai_tui.workstate import CallState

if TYPE_CHECKING:
    from codeai_tui.app.app import CodeAIApp as _Base
else:
    _Base = object


class DetailPane(_Base):
    """Detail rendering and selection tracking (mixed into CodeAIApp)."""

    def _palette(self) -> dict[str, str]:
        theme = self.current_theme
        return {
            "key": f"bold {theme.primary}",
            "string": theme.success or "green",
            "number": theme.warning or "yellow",
            "literal": theme.accent or "magenta",
            "punct": "dim",
            "note": "dim italic",
            "danger": f"bold {theme.error or 'red'}",
        }

    def _paint_detail_text(self, text: Text) -> None:
        self.query_one("#detail", Static).update(text)

    def _show_detail(self, kind: str, obj: Any) -> None:
        self._detail = (kind, obj)
        self._repaint_detail()

    def _repaint_detail(self) -> None:
        if self._detail is None:
            return
        kind, obj = self._detail
        now = self.clock()
        snap = self.shown
        lines: list[tuple[str, str]] = []
        title = ""
        body: Any = {}
        if kind == "call":
            call: CallState = obj
            current = snap.call(call.call_id) if snap else None
            call = current or call
            title = f"call {call.call_id}"
            verdict = f"stage {call.stage.value}, next operation {call.next_operation.value}"
            if call.effect_unknown:
                lines.append((f"{WARN} verdict", f"effect unknown: duplicate risk ({verdict})"))
            else:
                lines.append(("verdict", verdict))
            lines.append(("provider effect", call.provider_effect.value))
            lines.append(("why", call.reason))
            if call.resumable:
                lines.append(("resume", "permitted by the projection (press r)"
                              if not self.read_only else "permitted, but read-only mode"))
            body = call.as_json()
        elif kind == "event":
            ev = obj
            title = f"event seq {ev.seq}: {ev.kind}"
            lines.append(("recorded", f"{ev.recorded_at} ({ago(ev.recorded_at, now)})"))
            if ev.payload_error:
                lines.append((f"{WARN} payload", ev.payload_error))
            if ev.call_id and snap is not None:
                call = snap.call(ev.call_id)
                if call is not None:
                    label = f"{WARN} call verdict" if call.effect_unknown else "call verdict"
                    lines.append((label, f"{call.stage.value}: {call.reason}"))
            body = {
                "seq": ev.seq, "event_id": ev.event_id, "recorded_at": ev.recorded_at,
                "kind": ev.kind, "task_id": ev.task_id, "call_id": ev.call_id,
                "attempt_id": ev.attempt_id, "compilation_id": ev.compilation_id,
                "payload": ev.payload if ev.payload is not None else ev.payload_text,
            }
        elif kind == "task":
            title = f"task {obj.task_id}"
            lines.append(("next operation", obj.next_operation.value))
            lines.append(("why", obj.reason))
            body = obj.as_json() | {"title": obj.title}
        elif kind == "compilation":
            title = f"compilation {obj.compilation_id}"
            lines.append(("next operation", obj.next_operation.value))
            lines.append(("why", obj.reason))
            body = obj.as_json() | {"package_id": obj.package_id,
                                    "rendered_sha256": obj.rendered_sha256}
        elif kind == "receipt":
            r = obj
            title = f"receipt {r.receipt_id}"
            check = snap.state.receipts if snap else None
            covered = check.covered_by.get(r.receipt_id) if check else None
            dup = bool(check and any(r.receipt_id in g for g in check.duplicates))
            if covered is None:
                lines.append((f"{WARN} coverage", "uncovered effect: no attempt.started with "
                              "this key and request hash"))
            else:
                lines.append(("covered by", f"attempt {covered}"))
            if dup:
                lines.append((f"{WARN} duplicate", "another receipt has the same key and body "
                              "hash: the provider served this request more than once"))
            body = {"receipt_id": r.receipt_id, "received_at": r.received_at,
                    "idempotency_key": r.idempotency_key, "body_sha256": r.body_sha256,
                    "bytes": r.bytes, "line": r.line_no}
        elif kind == "case":
            title = f"case {obj}"
            summary = self.summaries.get(obj)
            if isinstance(summary, tuple):
                lines.append(("worst state", summary[0].label))
            elif isinstance(summary, str):
                lines.append((f"{WARN} unreadable", summary))
            body = {"case": str(obj), "active": obj == self.case}
        elif kind == "loading":
            self._paint_detail_text(Text(f"seq {obj}: loading\u2026"))
            return
        self._paint_detail_text(detail_text(title, lines, body, palette=self._palette(),
                                            now=now, full_hashes=self.full_hashes))

    def on_table_view_cursor_moved(self, message: TableView.CursorMoved) -> None:
        table = message.table
        # The detail pane follows the focused pane; the Calls cursor also defines the
        # selected call before anything has focus.
        if table.has_focus or (table.id == "calls" and self.selected_call_id is None):
            self._detail_from(table, message.index)
        if table.id == "timeline":
            self._paint_new_marker()
        self.refresh_bindings()

    def _detail_from(self, table: TableView, index: int) -> None:
        pane = table.id
        source = table.source
        if pane == "calls":
            if isinstance(source, CallSource):
                call = source.call_at(index)
                if call is not None:
                    self.selected_call_id = call.call_id
                    self._show_detail("call", call)
        elif pane == "timeline":
            ev = source.event_at(index) if isinstance(source, TimelineSource | FilteredTimeline) \
                else None
            if ev is not None:
                if ev.call_id:
                    self.selected_call_id = ev.call_id
                self._show_detail("event", ev)
            elif len(source):
                self._show_detail("loading", index + 1)
        else:
            row = table.current_row()
            if row is not None and pane is not None:
                self._detail_for_key(pane, row.key)

    def _detail_for_key(self, pane: str, key: str) -> None:
        snap = self.shown
        if pane == "cases":
            self._show_detail("case", Path(key))
            return
        if snap is None:
            return
        if pane == "tasks":
            task = snap.state.task(key)
            if task:
                self._show_detail("task", task)
        elif pane == "compilations":
            comp = snap.state.compilation(key)
            if comp:
                self._show_detail("compilation", comp)
        elif pane == "receipts":
            for r in snap.receipts.receipts:
                if f"{r.line_no}:{r.receipt_id}" == key:
                    self._show_detail("receipt", r)
                    break

    def on_descendant_focus(self, event: Any) -> None:
        widget = getattr(event, "widget", None)
        if isinstance(widget, TableView) and widget.id in PANES:
            self._detail_from(widget, widget.cursor)
        self.refresh_bindings()

    # ------------------------------------------------------------------ selection helpers

    def selected_call(self) -> CallState | None:
        """The operator's selected call, in the live projection."""
        snap = self.live
        return snap.call(self.selected_call_id) if snap else None

    def focused_pane(self) -> str | None:
        focused = self.focused
        if isinstance(focused, TableView) and focused.id in PANES:
            return focused.id
        return None
