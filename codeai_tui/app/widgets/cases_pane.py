"""1 Cases: every case of a bundle with its worst next operation of any kind.

The pane owns the worker that summarises the cases it lists (a thread: each summary is
a CPU-bound projection, so a big bundle is shared with helper processes, see
console/fleet.summarize_all) and posts `Summarized` in batches. Under time travel the
open case's row shows its as-of verdict ("⏲ seq N:") and every other row is marked "● live:" (time travel is per case: the others are not
rewound), and the title says so, so no row can be read as the other's time.

Other processes may still write the other cases. Every RESTAT_S the pane looks at each
summarised case's files (a stat each, in a thread) and summarises again the ones that
changed, so a row never shows a verdict its ledger has moved past.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from textual import work
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.worker import Worker, WorkerState, get_current_worker

from codeai_tui.app import messages as m
from codeai_tui.app.widgets.cells import WARN, cell
from codeai_tui.app.widgets.pane import Pane, TitlePart
from codeai_tui.app.widgets.table import Column, ListSource, Row
from codeai_tui.console.fleet import CaseOrder, CaseStamp, case_stamp, ordered, summarize_all
from codeai_tui.console.model import discover_cases
from codeai_tui.console.severity import CaseVerdict, unreadable_verdict
from codeai_tui.ledger import LedgerError
from codeai_tui.ledger.case import named_case

SUMMARY_BATCH_S = 0.25  # toolong's batching interval: a repaint per batch, not per case
RESTAT_S = 2.0  # how often the other cases' files are looked at (27 ms at 1,000 cases)
CASE_COLUMNS = [Column("case", 26, ident=True), Column("worst next operation", 27), Column("events", 6)]


def case_name(case: Path, root: Path) -> str:
    try:
        return str(case.relative_to(root)) if case != root else case.name
    except ValueError:
        return str(case)


LIVE_MARK = "\u25cf live: "  # another case's row while the open one is time-travelling


def case_row(name: str, verdict: CaseVerdict | None, *, active: bool,
             as_of: int | None = None, live_mark: bool = False) -> Row:
    shown = ("\u25b8 " if active else "  ") + name  # ▸ the case on screen
    if verdict is None:
        return Row(name, (cell(shown), "\u2026 projecting", ""), "dim")
    label = verdict.line
    tone = ""
    if verdict.alarming:
        label, tone = f"{WARN} {label}", "error"
    elif verdict.rank >= 30:
        tone = "warn"
    if as_of is not None:
        label = f"\u23f2 seq {as_of:,}: {label}"
    elif live_mark:
        label = LIVE_MARK + label
    return Row(name, (cell(shown), cell(label), f"{verdict.event_count:,}"), tone)


class CasesPane(Pane):
    TITLE = "Cases"
    KEY = "1"

    @dataclass
    class Summarized(Message):
        """Verdicts of some cases (batched by time: one repaint per batch, not per case)."""

        verdicts: dict[Path, CaseVerdict]
        stamps: dict[Path, CaseStamp]  # each case's files as they were before its summary
        again: bool = False  # summaries of cases that changed: they replace the old

    @dataclass
    class CasesChanged(Message):
        """The bundle's case directories now (one appeared, went, or was replaced)."""

        cases: tuple[Path, ...]
        first: bool = False  # the first discovery: the console opens the first case

    cases: reactive[tuple[Path, ...]] = reactive((), init=False)
    active: reactive[Path | None] = reactive(None, init=False)
    order: reactive[CaseOrder] = reactive(CaseOrder.PATH, init=False)
    as_of: reactive[tuple[int, CaseVerdict] | None] = reactive(None, init=False)

    def rows_known(self) -> bool:
        return True  # read from the ledger directory itself, not from the projection

    def __init__(self, root: Path, **kwargs: object) -> None:
        super().__init__(CASE_COLUMNS, empty_text="looking for cases\u2026", **kwargs)  # type: ignore[arg-type]
        self.root = root
        self.verdicts: dict[Path, CaseVerdict] = {}
        self._stamps: dict[Path, CaseStamp] = {}
        self._looking: Worker[None] | None = None
        self._discovering: Worker[None] | None = None
        self._by_name: dict[str, Path] = {}

    def on_mount(self) -> None:
        self.set_interval(RESTAT_S, self._look_again)

    @work(thread=True, exit_on_error=False, group="discover")
    def discover(self) -> None:
        """Find the bundle's cases the first time (off the UI thread); a ledger problem
        is the console's (`OpenFailed`)."""
        try:
            cases = discover_cases(self.root)
        except LedgerError as exc:
            self.post_message(m.OpenFailed(exc))
            return
        self.post_message(self.CasesChanged(tuple(cases), first=True))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The first discovery died of a bug: the screen says so plainly."""
        worker = event.worker
        if worker.group == "discover" and event.state is WorkerState.ERROR \
                and worker.error is not None:
            self.post_message(m.WorkerFailed(worker.group, worker.error))

    def _look_again(self) -> None:
        looking = self._looking
        if looking is not None and not looking.is_finished:
            return  # (a look that takes longer than RESTAT_S finishes, not starts over)
        others = {c: s for c, s in self._stamps.items() if c != self.active}
        if others:
            self._looking = self._summarize_changed(others)
        discovering = self._discovering
        if self.cases and (discovering is None or discovering.is_finished) \
                and named_case(self.root) is None:  # a bundle: cases come and go
            self._discovering = self._discover_again(self.cases)

    @work(thread=True, exit_on_error=False, group="discover-again", exclusive=True)
    def _discover_again(self, known: tuple[Path, ...]) -> None:
        """Walk the bundle again (off the UI thread): a case directory that appeared (a
        live producer's), went, or came back shows within RESTAT_S."""
        try:
            found = tuple(discover_cases(self.root))
        except (LedgerError, OSError):
            found = ()  # the bundle itself went: its rows stay, their files say gone
        if found and found != known:
            self.post_message(self.CasesChanged(found))

    def watch_cases(self) -> None:
        now = set(self.cases)
        for gone in [c for c in self.verdicts if c not in now and c != self.active]:
            del self.verdicts[gone]  # a removed case no longer counts in the bundle
            self._stamps.pop(gone, None)
        self._by_name = {case_name(c, self.root): c for c in self.cases}
        todo = [c for c in self.cases if c not in self.verdicts and c != self.active]
        if todo:
            # one thread (two are slower: most of a summary holds the GIL); helper
            # processes take a share of a big bundle (console/fleet.summarize_all)
            self._summarize(todo)
        self.paint()

    def watch_active(self, left: Path | None, _opened: Path | None) -> None:
        if left is not None and left in self.verdicts:
            # its row keeps the live verdict it had; from now on it is looked at again
            self._stamps[left] = case_stamp(left)
        self.paint()

    def watch_order(self) -> None:
        self.paint()

    def watch_as_of(self) -> None:
        self.paint()

    def set_verdict(self, case: Path, verdict: CaseVerdict) -> None:
        self.verdicts[case] = verdict
        self.paint()

    def on_cases_pane_summarized(self, message: Summarized) -> None:
        for case, verdict in message.verdicts.items():
            if message.again and case != self.active:
                self.verdicts[case] = verdict
            else:
                self.verdicts.setdefault(case, verdict)  # the open case's live verdict wins
            self._stamps[case] = message.stamps[case]
        self.paint()

    @work(thread=True, exit_on_error=False, group="summaries", exclusive=True)
    def _summarize(self, cases: list[Path]) -> None:
        self._post_summaries({case: case_stamp(case) for case in cases}, again=False)

    @work(thread=True, exit_on_error=False, group="summaries-again", exclusive=True)
    def _summarize_changed(self, stamps: dict[Path, CaseStamp]) -> None:
        now = {case: case_stamp(case) for case in stamps}
        changed = {case: stamp for case, stamp in now.items() if stamp != stamps[case]}
        if changed:
            self._post_summaries(changed, again=True)

    def _post_summaries(self, stamps: dict[Path, CaseStamp], *, again: bool) -> None:
        """Summarise the cases of `stamps` (their files' stamps, taken before) in this
        worker's thread, and post the verdicts in batches, each with its cases' stamps."""
        worker = get_current_worker()
        batch: dict[Path, CaseVerdict] = {}
        sent = time.monotonic()

        def post() -> None:
            self.post_message(self.Summarized(batch, {c: stamps[c] for c in batch}, again))

        for case, summary in summarize_all(list(stamps), lambda: worker.is_cancelled):
            batch[case] = (summary if isinstance(summary, CaseVerdict)
                           else unreadable_verdict(str(summary)))
            if time.monotonic() - sent >= SUMMARY_BATCH_S:
                post()
                batch, sent = {}, time.monotonic()
        if batch and not worker.is_cancelled:
            post()

    def paint(self) -> None:
        rows: list[Row] = []
        travelling = self.as_of is not None
        for case in ordered(list(self.cases), self.verdicts, self.order):
            active = case == self.active
            as_of = self.as_of if active else None
            verdict = as_of[1] if as_of is not None else self.verdicts.get(case)
            row = case_row(case_name(case, self.root), verdict, active=active,
                           as_of=as_of[0] if as_of is not None else None,
                           live_mark=travelling and not active)
            if self.needle is None or self.needle.matches(row.cells):
                rows.append(row)
        self.set_source(ListSource(rows))
        super().paint()

    def title_marks(self) -> list[TitlePart]:
        if self.as_of is None or len(self.cases) < 2:
            return []
        return [(f" \u23f2 open case as of seq {self.as_of[0]:,}; others live", "bold $warning")]

    def idle_subtitle(self) -> Content | None:
        if len(self.cases) < 2:
            return None
        return Content.assemble(f"{self.order.value} \u00b7 o: sort")

    def case_at_cursor(self) -> Path | None:
        row = self.current_row()
        return self._by_name.get(row.key) if row is not None else None

    def next_with_effect_unknown(self, case: Path | None) -> Path | None:
        """The next case after `case` whose verdict has a call or a tool operation in
        effect_unknown (`e` goes on there)."""
        return self.case_after(case, {c for c, v in self.verdicts.items() if (
            v.effect_unknown or v.tool_effect_unknown) and c != case})

    def case_after(self, case: Path | None, wanted: set[Path]) -> Path | None:
        """The next case in the pane's order after `case` (wrapping) that is in `wanted`."""
        order = ordered(list(self.cases), self.verdicts, self.order)
        if not order:
            return None
        start = order.index(case) if case in order else -1
        for step in range(1, len(order) + 1):
            candidate = order[(start + step) % len(order)]
            if candidate in wanted:
                return candidate
        return None

    def select_case(self, case: Path) -> None:
        self.select_key(case_name(case, self.root))
