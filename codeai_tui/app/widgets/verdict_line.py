"""One line that is never squeezed out: the selected call and its verdict."""

from __future__ import annotations

from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from codeai_tui.actions.replay import follow_up_due
from codeai_tui.app.widgets.calls_pane import RESUMABLE_TEXT, drift_status
from codeai_tui.app.widgets.cells import EFFECT_UNKNOWN_TEXT, cell
from codeai_tui.console.drift import DriftCheck, DriftStatus
from codeai_tui.console.model import SkeletonCall
from codeai_tui.console.session import CaseSession
from codeai_tui.console.tools import summary as tool_summary
from codeai_tui.workstate import CallState, NextOperation

# the key that takes a call's next operation, and what it does (the footer shows the
# same key while that call is selected)
NEXT_KEYS: dict[NextOperation, str] = {
    NextOperation.START_CALL: "r: resume",
    NextOperation.RECONCILE_EFFECT: "x: reconcile",
    NextOperation.REINTERPRET: "v: reinterpret",
    NextOperation.REDECIDE: "v: redecide",
    NextOperation.FINALIZE: "v: finalize",
    NextOperation.START_NEXT_ATTEMPT: "v: next attempt",
    NextOperation.DECIDE_DUPLICATE: "v: finalize or accept the duplicate",
    NextOperation.START_TOOL: "R: replay",
}
FOLLOW_UP_KEY = "R: record the follow-up call"


class VerdictLine(Static):
    DEFAULT_CSS = """
    VerdictLine { height: 1; padding: 0 1; background: $boost; }
    VerdictLine.-danger { background: $error 30%; }
    """

    call: reactive[CallState | None] = reactive(None, init=False, always_update=True,
                                              repaint=False)
    drift: reactive[dict[str, DriftCheck]] = reactive(dict, init=False, always_update=True,
                                                       repaint=False)
    read_only: reactive[bool] = reactive(False, init=False)
    as_of: reactive[int | None] = reactive(None, init=False)
    # the selected call before the projection: what its kinds decide (the skeleton)
    early: reactive[SkeletonCall | None] = reactive(None, init=False)
    # what the provider's log says about the verdict's attempt (console/evidence.py)
    # (the reason's words, a short form for a narrow line)
    log_phrase: reactive[tuple[str, str] | None] = reactive(None, init=False)
    # the selected call's turn goes on with a follow-up call replay records
    follow_up_due: reactive[bool] = reactive(False, init=False)

    _shown: tuple[object, ...] | None = None  # the parts on screen (see `show`)

    def on_mount(self) -> None:
        self.paint()

    def watch_call(self) -> None:
        self.paint()

    def watch_drift(self) -> None:
        self.paint()

    def watch_as_of(self) -> None:
        self.paint()

    def watch_early(self) -> None:
        self.paint()

    def watch_log_phrase(self) -> None:
        self.paint()

    def watch_follow_up_due(self) -> None:
        self.paint()

    def show_selected(self, session: CaseSession, early: SkeletonCall | None) -> None:
        """The session's selected call as shown (as of, when travelling), its drift, and
        `early`: what the skeleton knows of it before the projection."""
        s, snap = session, session.shown
        self.drift, self.as_of = dict(s.drift), s.as_of
        self.call = call = snap.call(s.selected_call_id) if snap is not None else None
        self.follow_up_due = follow_up_due(snap.state, call) if snap and call else False
        self.early = early

    def next_key(self, call: CallState) -> str | None:
        """The key for the call's next step (none in the past or read-only)."""
        if self.read_only or self.as_of is not None:
            return None
        tools = call.tools
        if tools is not None and tools.effect_unknown_count:
            return NEXT_KEYS[NextOperation.RECONCILE_EFFECT]
        if tools is not None and any(o.next_operation is NextOperation.START_TOOL
                                     for o in tools.operations):
            return NEXT_KEYS[NextOperation.START_TOOL]
        if self.follow_up_due:
            return FOLLOW_UP_KEY
        if call.anomalous or call.superseded_by is not None:
            return None
        return NEXT_KEYS.get(call.next_operation)

    def on_resize(self) -> None:
        self.paint()

    def paint(self) -> None:
        call = self.call
        tools = tool_summary(call.tools) if call is not None else None
        self.set_class(bool(call and call.effect_unknown) or bool(tools and tools[1] == "error"),
                       "-danger")
        if call is None and self.early is not None:
            self._paint_early(self.early)
            return
        if call is None:
            self.show(("selected call: ", "bold"), ("none (3 focuses Calls)", "$text-muted"))
            return
        parts: list[str | tuple[str, str]] = []
        if self.as_of is not None:  # the past: nothing here can be acted on
            parts.append((f"\u23f2 as of seq {self.as_of:,}: ", "bold $warning"))
        parts += [("call ", "bold"), (cell(call.call_id, 30), "bold")]
        if call.effect_unknown:
            parts += [": ", (EFFECT_UNKNOWN_TEXT, "bold $error")]
            act = [] if self.read_only or self.as_of is not None else ["x: reconcile"]
            phrase = self.log_phrase or ("", "")
            # the receipt evidence matters more than the operation's name
            # (reconcile_effect), and its words more than the key
            tail = self._widest(parts, ([call.next_operation.value, phrase[0], *act],
                                        [phrase[0], *act], [phrase[1], *act], [phrase[1]]))
            parts += [f" \u00b7 {cell(t, 120)}" for t in tail]
        elif call.resumable:
            status = drift_status(call, self.drift)
            style = "bold $warning" if status is DriftStatus.DRIFT else "bold $success"
            parts += [": ", (RESUMABLE_TEXT[status], style)]
            if not self.read_only and status is not DriftStatus.DRIFT and self.as_of is None:
                parts.append(" \u00b7 r: resume")
        else:
            parts.append(f": {call.stage.value}")
            if tools is not None:  # the tool operations first: they are what is pending
                parts += [" \u00b7 ", (tools[0], "bold $error" if tools[1] == "error"
                                        else "bold $warning")]
            key = self.next_key(call)
            if key is not None:  # the next step's key before what a narrow line cuts
                parts += [" \u00b7 ", (key, "bold $accent")]
            parts.append(f" \u00b7 next {call.next_operation.value}"
                         f" \u00b7 effect {call.provider_effect.value}")
            if self.log_phrase and self.log_phrase[0]:
                parts.append(f" \u00b7 {cell(self.log_phrase[0], 120)}")
        self.show(*parts)

    def _paint_early(self, early: SkeletonCall) -> None:
        """A call before the projection: what its events' kinds decide, said as such.
        No action is offered: resume and reconcile need the payloads (an anomaly, the
        key, the receipts), which the projection is still reading."""
        self.set_class(early.effect_unknown, "-danger")
        parts: list[str | tuple[str, str]] = [("call ", "bold"),
                                              (cell(early.call_id, 30), "bold"), ": "]
        if early.effect_unknown:
            parts.append((EFFECT_UNKNOWN_TEXT, "bold $error"))
        elif early.stage is None:
            parts.append(("verdict: its payloads decide", "$text-muted"))
        else:
            parts.append(early.stage.value)
        detail = ""
        if early.next_operation is not None and early.provider_effect is not None:
            detail = early.next_operation.value if early.effect_unknown else (
                f"next {early.next_operation.value}"
                f" \u00b7 effect {early.provider_effect.value}")
        # that the rest is still being read always shows, last
        reading = "reading its evidence\u2026"
        *shown, rest = self._widest(parts, ([detail, reading], [reading], ["reading\u2026"]))
        parts += [f" \u00b7 {t}" for t in shown]
        parts += [" \u00b7 ", (rest, "$text-muted")]
        self.show(*parts)

    def _widest(self, parts: list[str | tuple[str, str]], choices: tuple[list[str], ...]
                ) -> list[str]:
        """The first of `choices` (its empty items left out) that fits, each item after
        a " · ", on the line beside `parts`; else the last."""
        room = max(self.size.width - 2, 40) - sum(
            len(p if isinstance(p, str) else p[0]) for p in parts)
        tail: list[str] = []
        for choice in choices:
            tail = [t for t in choice if t]
            if sum(3 + len(t) for t in tail) <= room:
                break
        return tail

    def show(self, *parts: str | tuple[str, str]) -> None:
        """Update only when the parts differ from those on screen: every live snapshot
        sets the call again, and an update lays the screen out anew."""
        if parts != self._shown:
            self._shown = parts
            self.update(Content.assemble(*parts))
