"""Moving through evidence: next effect_unknown, stepping, a call's events, time travel."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.worker import get_current_worker

from codeai_tui.app import messages as m
from codeai_tui.app.rows import (
    CallSource,
)
from codeai_tui.app.timeline import FilteredTimeline, TimelineSource
from codeai_tui.console.model import (
    PageReader,
    TimeMachine,
)
from codeai_tui.ledger import LedgerError
from codeai_tui.textsafe import visible

if TYPE_CHECKING:
    from codeai_tui.app.app import CodeAIApp as _Base
else:
    _Base = object


class Navigation(_Base):
    """Navigation actions (mixed into CodeAIApp)."""

    def action_next_effect_unknown(self) -> None:
        table = self.table("calls")
        source = table.source
        if not isinstance(source, CallSource) or not len(source):
            self.notify("no calls", markup=False)
            return
        index = source.find(table.cursor, lambda c: c.effect_unknown)
        if index is None:
            if not self._open_next_case_with_effect_unknown():
                self.notify("no call is in effect_unknown", markup=False)
            return
        table.focus()
        table.move_to(index)

    def _open_next_case_with_effect_unknown(self) -> bool:
        """In a bundle: open the next case (in order, wrapping) whose summary counts an
        effect_unknown call; its first such call is selected once it has loaded."""
        if self.as_of is not None or len(self.cases) < 2 or self.case not in self.cases:
            return False
        start = self.cases.index(self.case)
        for step in range(1, len(self.cases)):
            case = self.cases[(start + step) % len(self.cases)]
            summary = self.summaries.get(case)
            if isinstance(summary, tuple) and summary[0].effect_unknown:
                self.jump_to_effect_unknown = True
                self.open_case(case)
                return True
        return False

    def action_toggle_follow(self) -> None:
        self.following = not self.following
        if self.status in ("following", "paused"):
            self.status = "following" if self.following else "paused"
        if self.following:
            self._wake.set()  # poll now rather than at the next tick
        self._paint_status()

    def _timeline_seq(self) -> int | None:
        table = self.table("timeline")
        source = table.source
        if isinstance(source, TimelineSource | FilteredTimeline):
            return source.seq_at(table.cursor)
        return None

    def action_step(self, delta: int) -> None:
        table = self.table("timeline")
        table.focus()
        table.move_to(table.cursor + delta)
        if self.as_of is not None:
            seq = self._timeline_seq()
            if seq is not None and seq != self.as_of:
                self._travel_to(seq)

    def action_call_event(self, direction: int) -> None:
        call_id = self.selected_call_id
        if call_id is None or self.case is None or self._page_reader is None:
            self.notify("select a call first", markup=False)
            return
        self._load_call_seqs(self.case, self._page_reader, call_id, direction)

    @work(thread=True, exit_on_error=False, group="call_seqs", exclusive=True)
    def _load_call_seqs(self, case: Path, reader: PageReader, call_id: str,
                        direction: int) -> None:
        try:
            seqs = reader.call_seqs(call_id)
        except LedgerError as exc:
            self.post_message(m.LedgerTrouble(case, exc, ever_opened=True))
            return
        self.post_message(m.CallSeqs(case, call_id, seqs, direction))

    def on_call_seqs(self, message: m.CallSeqs) -> None:
        if message.case != self.case or not message.seqs:
            return
        current = self._timeline_seq() or 0
        if message.direction > 0:
            target = next((s for s in message.seqs if s > current), None)
        else:
            target = next((s for s in reversed(message.seqs) if s < current), None)
        if target is None:
            self.notify(visible(f"no {'later' if message.direction > 0 else 'earlier'} event "
                                f"of call {message.call_id}", one_line=True), markup=False)
            return
        table = self.table("timeline")
        table.focus()
        if not table.select_key(str(target)):
            self.notify(f"seq {target} is hidden by the timeline filter", markup=False)
            return
        if self.as_of is not None:
            self._travel_to(target)

    def action_time_travel(self) -> None:
        if self.as_of is not None:
            self.action_back_to_live()
            return
        seq = self._timeline_seq()
        if seq is None:
            self.notify("select an event in the timeline (5) first", markup=False)
            return
        self._travel_to(seq)

    def _travel_to(self, seq: int) -> None:
        if self.case is None:
            return
        self.as_of = seq
        self.progress = ("re-projecting", 0, seq)
        self._paint_status()
        self._project_as_of(self.case, seq)

    @work(thread=True, exit_on_error=False, group="as_of", exclusive=True)
    def _project_as_of(self, case: Path, seq: int) -> None:
        worker = get_current_worker()
        last = 0.0

        def progress(done: int, total: int) -> None:
            nonlocal last
            now = time.monotonic()
            if now - last >= 0.1:
                last = now
                self.post_message(m.ProjectionProgress(case, done, total, "re-projecting"))

        machine = self._time_machine
        if machine is None or machine.case_dir != case:
            machine = self._time_machine = TimeMachine(case)
        try:
            snap = machine.to(seq, progress, lambda: worker.is_cancelled)
        except LedgerError as exc:
            self.post_message(m.LedgerTrouble(case, exc, ever_opened=True))
            return
        if snap is not None:
            self.post_message(m.AsOfReady(case, snap))

    def on_as_of_ready(self, message: m.AsOfReady) -> None:
        if message.case != self.case or self.as_of != message.snapshot.as_of:
            return
        self.progress = None
        self.shown = message.snapshot
        self._paint_panes()
        self.refresh_bindings()

    def action_back_to_live(self) -> None:
        if self.as_of is None:
            return
        self.as_of = None
        self.progress = None
        self.shown = self.live
        self._time_machine = None
        self.workers.cancel_group(self, "as_of")
        self._paint_panes()
        self.refresh_bindings()

    def action_back(self) -> None:
        if self.as_of is not None:
            self.action_back_to_live()
            return
        pane = self.focused_pane()
        if pane and pane in self.filters:
            self.filter_target = pane
            self.apply_filter("")

    def action_toggle_hashes(self) -> None:
        self.full_hashes = not self.full_hashes
        self._repaint_detail()

    def action_open_case(self) -> None:
        row = self.table("cases").current_row()
        if row is not None:
            self.open_case(Path(row.key))
