"""The header: where we are, how live it is, and the counts that matter.

The bar owns its state (`facts`, set from above) and its one-second timer (humanized
"last commit" times), so nothing fires after it is gone. A note about an action names
its case; the screen passes only the note of the open case. `Header` is the bar and the
pulse beside it, painted from the console's session in one call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from codeai_tui.app.widgets.cells import WARN, cell
from codeai_tui.app.widgets.detail_text import ago
from codeai_tui.app.widgets.pulse import Pulse
from codeai_tui.console.session import CaseSession
from codeai_tui.console.severity import CaseVerdict, FleetCounts, fleet_counts


@dataclass(frozen=True)
class CaseCounts:
    """None: not known yet (the skeleton, painted before the projection, knows only the
    effect-unknown count); shown as "reading…", never as 0."""

    effect_unknown: int
    duplicates: int | None
    uncovered: int | None
    anomalies: int | None
    # tool operations (docs/tools.md); shown when non-zero, or "reading…" while not known: a
    # silent header would read as none
    tool_effect_unknown: int | None = 0


@dataclass(frozen=True)
class StatusFacts:
    path: str
    case_name: str | None = None
    event_count: int = 0
    state: str = "opening"  # following | paused | opening | file gone | unreadable | stopped
    as_of: int | None = None
    max_seq: int = 0
    last_commit: str | None = None
    counts: CaseCounts | None = None
    fleet: FleetCounts | None = None
    progress: tuple[str, int, int] | None = None
    activity: str | None = None
    note: str | None = None
    note_ok: bool = True
    read_only: bool = False
    provider: str | None = None


def session_facts(session: CaseSession, verdicts: dict[Path, CaseVerdict], *, path: str,
                  read_only: bool, provider: str | None) -> StatusFacts:
    """The header's facts from the console's session; `verdicts`: the Cases pane's (the
    bundle's counts; the open case's is the session's live verdict)."""
    s = session
    snap, counts = s.shown, None
    if snap is not None:
        check = snap.state.receipts
        counts = CaseCounts(len(snap.unknown_ids), len(check.duplicates),
                            len(check.uncovered), len(snap.state.anomalies),
                            snap.state.tool_effect_unknown_count)
    elif s.skeleton is not None and s.as_of is None:
        # final from the skeleton; what needs payloads or receipts is still read
        counts = CaseCounts(len(s.skeleton.effect_unknown_ids), None, None, None,
                            tool_effect_unknown=None)
    fleet = None
    if len(s.cases) > 1:
        verdicts = dict(verdicts)
        if s.case is not None and s.live_verdict is not None:
            verdicts[s.case] = s.live_verdict
        fleet = fleet_counts(verdicts.get(c) for c in s.cases)
    note = s.note_for_case()
    return StatusFacts(
        path=path, case_name=s.case.name if s.case is not None and len(s.cases) > 1 else None,
        event_count=snap.event_count if snap is not None else s.event_count,
        state=s.state, as_of=s.as_of, max_seq=s.max_seq, last_commit=s.last_commit,
        counts=counts, fleet=fleet, progress=s.progress, activity=s.activity,
        note=note.text if note else None, note_ok=note.ok if note else True,
        read_only=read_only, provider=provider)


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: auto; max-height: 5; padding: 0 1; background: $panel; }
    """

    facts: reactive[StatusFacts] = reactive(StatusFacts(""), init=False)

    def __init__(self, clock: Callable[[], datetime], **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.clock = clock

    def on_mount(self) -> None:
        self.set_interval(1.0, self.paint)
        self.paint()

    def watch_facts(self) -> None:
        self.paint()

    def on_resize(self) -> None:
        self.paint()

    def paint(self) -> None:
        f = self.facts
        compact = 0 < self.size.width < 110  # short words keep 80 columns to two lines
        parts: list[str | tuple[str, str]] = [("codeai-tui ", "bold $accent"),
                                              (cell(f.path, 30 if compact else 60), "bold")]
        # what the operator must see first comes first: a narrow line is cut at its end
        if f.read_only:
            parts += [" \u00b7 ", ("read-only", "bold $warning")]
        parts.append(" \u00b7 ")
        if f.as_of is not None:
            parts.append((f"\u23f2 as of seq {f.as_of:,} of {f.max_seq:,}", "bold $warning"))
        else:
            style = {"following": "bold $success", "paused": "bold $warning",
                     "opening": "$text-muted"}.get(f.state, "bold $error")
            # a case still opening is not in trouble: no cross beside it
            glyph = {"following": "\u25cf ", "paused": "\u2016 ",
                     "opening": "\u25cb "}.get(f.state, "\u2716 ")
            parts.append((glyph + f.state, style))
        if f.case_name:
            parts += [" \u00b7 case ", (cell(f.case_name, 40), "bold")]
        if not (f.state == "opening" and not f.event_count):
            # (not counted yet: "0 events" would read as an empty ledger)
            parts.append(f" \u00b7 {f.event_count:,} events")
        if f.as_of is None and f.last_commit:
            parts += [" \u00b7 " if compact else " \u00b7 last commit ",
                      ago(f.last_commit, self.clock())]
        lines = [parts]
        parts = []
        if f.counts is None:
            if f.progress is None:
                parts.append(("projection pending\u2026", "$text-muted"))
        else:
            c = f.counts
            if f.fleet is not None:
                parts.append(("this case: ", "bold"))
            labels = ("unknown", "dup", "uncovered", "anomalies") if compact else (
                "effect unknown", "duplicate effects", "uncovered receipts", "anomalies")
            for count, label in zip((c.effect_unknown, c.duplicates, c.uncovered,
                                     c.anomalies), labels, strict=True):
                if count is None:
                    parts += [(f"{label} reading\u2026", "$text-muted"), "  "]
                    continue
                style = "bold $error" if count else "$text-muted"
                mark = f"{WARN} " if count else ""
                parts += [(f"{mark}{count:,} {label}", style), "  "]
            label = "tool unknown" if compact else "tool effect unknown"
            if c.tool_effect_unknown is None:
                parts += [(f"{label} reading\u2026", "$text-muted"), "  "]
            elif c.tool_effect_unknown:
                parts += [(f"{WARN} {c.tool_effect_unknown:,} {label}", "bold $error"), "  "]
        if f.progress is not None:
            label, done, total = f.progress
            pct = (100 * done // total) if total else 100
            parts.append((f"\u231b {label} {done:,}/{total:,} events ({pct}%)", "bold $warning"))
        elif f.activity:
            parts.append(("\u231b " + cell(f.activity, 120), "bold $warning"))
        elif f.note:
            parts.append((cell(f.note, 160), "$success" if f.note_ok else "bold $warning"))
        if f.fleet is not None:
            style = "bold $error" if f.fleet.alarming else "$text-muted"
            mark = f"{WARN} " if f.fleet.alarming else ""
            line = f.fleet.short_line() if compact else f.fleet.line()
            # under time travel only the open case is rewound: the bundle counts stay live
            label = "bundle: " if f.as_of is None else "bundle (live): "
            lines.append(parts)
            parts = [(label, "bold"), (mark + line, style)]
        if f.provider:
            lines.append(parts)
            parts = [(cell(f.provider, 160), "$text-muted")]
        lines.append(parts)
        # each line is cut to the width, never wrapped: a long note (an action's outcome)
        # must not push every pane down; the whole of it is in the action log (a)
        room = max(self.size.width - 2, 20)
        self.show(Content("\n").join(
            Content.assemble(*line).truncate(room, ellipsis=True) for line in lines))

    def show(self, content: Content) -> None:
        """Lay the screen out again only when the bar's height changes: it repaints on
        every live snapshot and every second, and a layout pass redraws every widget."""
        width, height = self.content_size
        same = width > 0 and content.get_height(self.styles, width) == height
        self.update(content, layout=not same)


class Header(Horizontal):
    """The status bar and the pulse (the stylesheet's `#header`): what the console was
    started on is given once; the session and the Cases pane's verdicts on each paint."""

    def __init__(self, clock: Callable[[], datetime], *, path: str, read_only: bool,
                 provider: str | None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.clock, self.path, self.read_only, self.provider = clock, path, read_only, provider

    def compose(self) -> ComposeResult:
        yield StatusBar(self.clock, id="status")
        yield Pulse(id="pulse")

    def show(self, session: CaseSession, verdicts: dict[Path, CaseVerdict]) -> None:
        s = session
        self.query_one(Pulse).follow(s.case, s.live.event_count if s.live else None)
        self.query_one(StatusBar).facts = session_facts(
            s, verdicts, path=self.path, read_only=self.read_only, provider=self.provider)
