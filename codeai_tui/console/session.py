"""The console's session: which case is open, what of it is shown, and as of when.

Textual-free on purpose: the main screen holds one `CaseSession` and paints it; whatever
it must forget when the case or its ledger file changes, `reset` forgets, in one place.
Time travel goes through the `TimeMachine` the session is handed with its case (bound
to that case's live follower), never through a lookup by path.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from codeai_tui.console.drift import DriftCheck, DriftStatus
from codeai_tui.console.filters import Needle
from codeai_tui.console.model import CaseSnapshot, Skeleton, SkeletonCall, TimeMachine
from codeai_tui.console.severity import CaseVerdict, case_verdict
from codeai_tui.ledger import LedgerError, LedgerProblem
from codeai_tui.workstate import CallState

T = TypeVar("T")

ALERT_AFTER_S = 2.0  # an effect_unknown shorter than this was a call in flight, not news
# effect_unknown alerts come at most this often (a toast stays as long): the calls due
# meanwhile wait and make the next one (a writer leaving calls in flight made a toast
# each half second, stacked down half the screen)
ALERT_EVERY_S = 10.0
DRIFT_CHECKS_PER_SNAPSHOT = 50
# a call that turned resumable while the case is followed has its drift checked once it
# stayed so this long (a live writer's calls pass through start_call for milliseconds,
# and each check reads the call's events from the table alone: a scan of the ledger)
DRIFT_AFTER_S = 2.0


@dataclass(frozen=True)
class Note:
    """The last action's outcome: it belongs to one case and one call."""

    case: Path
    call_id: str
    text: str
    ok: bool


@dataclass
class CaseSession:
    """What the console knows of the open case, and what the operator chose in it."""

    root: Path | None = None  # the path the console was started on
    cases: list[Path] = field(default_factory=list)
    case: Path | None = None
    # the follower's projection and its verdict; `live_base` before drift is known
    live: CaseSnapshot | None = None
    live_verdict: CaseVerdict | None = None
    live_base: CaseVerdict | None = None
    # what the panes show: the live projection, or the one as of `as_of`
    shown: CaseSnapshot | None = None
    shown_verdict: CaseVerdict | None = None
    skeleton: Skeleton | None = None  # shown until the first snapshot
    as_of: int | None = None
    machine: TimeMachine | None = None  # bound to this case's live follower
    following: bool = True
    state: str = "opening"
    trouble: str | None = None
    progress: tuple[str, int, int] | None = None
    event_count: int = 0
    max_seq: int = 0
    last_commit: str | None = None
    selected_call_id: str | None = None
    filters: dict[str, Needle] = field(default_factory=dict)
    drift: dict[str, DriftCheck] = field(default_factory=dict)
    resumable_since: dict[str, float] = field(default_factory=dict)  # (see `drift_todo`)
    note: Note | None = None
    activity: str | None = None
    jump_to_effect_unknown: bool = False
    # alert memory: what the last snapshot had, and effect_unknown calls waiting to alert
    seen_unknown: AbstractSet[str] | None = None  # the last snapshot's (its own set)
    # the last snapshot's duplicate groups as its check gave them (a set of them, made
    # on every snapshot, read each group's ids anew: ~90 ms and ~17 MB at 10M events)
    seen_duplicates: Sequence[tuple[str, ...]] | None = None
    pending_alerts: dict[str, float] = field(default_factory=dict)
    held_alerts: list[str] = field(default_factory=list)  # due, waiting for ALERT_EVERY_S
    alerted_at: float | None = None  # when the last effect_unknown alert came

    def reset(self, case: Path, machine: TimeMachine | None) -> None:
        """Forget everything read from a ledger file: a new case, or another file at the
        case's path. `machine` travels in this case (bound to its new follower)."""
        self.case = case
        self.machine = machine
        self.live = self.shown = None
        self.live_verdict = self.shown_verdict = self.live_base = None
        self.skeleton = None
        self.as_of = None
        self.selected_call_id = None
        self.trouble = None
        self.state = "opening"
        self.progress = None
        self.note = None
        self.drift = {}
        self.resumable_since = {}
        self.filters = {}
        self.seen_unknown = self.seen_duplicates = None
        self.pending_alerts = {}
        self.held_alerts, self.alerted_at = [], None

    # ---- the ledger's first facts, its projections and its troubles

    def opened(self, event_count: int, max_seq: int, last_commit: str | None) -> None:
        self.trouble = None
        self.state = self.follow_state()
        self.event_count, self.max_seq, self.last_commit = event_count, max_seq, last_commit

    def follow_state(self) -> str:
        return "following" if self.following else "paused"

    def toggle_follow(self) -> None:
        self.following = not self.following
        if self.state in ("following", "paused"):
            self.state = self.follow_state()

    def take_live(self, snap: CaseSnapshot, verdict: CaseVerdict) -> bool:
        """A new live projection; True if it is the case's first. Shown at once unless
        time travel holds the panes still."""
        first = self.live is None
        self.live_base = verdict
        self.live, self.live_verdict = snap, self.verdict_with_drift(snap, verdict)
        self.skeleton = None  # the projection answers everything from here on
        if self.progress and self.progress[0] == "projecting":
            self.progress = None
        self.trouble = None
        self.state = self.follow_state()
        self.event_count, self.max_seq = snap.event_count, snap.max_seq
        self.last_commit = snap.last_recorded_at
        if self.as_of is None:
            self.shown, self.shown_verdict = snap, self.live_verdict
        return first

    def troubled(self, error: LedgerError) -> None:
        gone = error.problem in (LedgerProblem.GONE, LedgerProblem.MISSING)
        self.state = "file gone" if gone else "unreadable"
        self.trouble = str(error)

    def fatal(self, error: LedgerError, ever_opened: bool) -> bool:
        """Whether `error` ends the console (the error screen): a lone case that never
        opened, for any reason but a busy ledger."""
        return (not ever_opened and len(self.cases) <= 1 and self.live is None
                and error.problem is not LedgerProblem.BUSY)

    # ---- time travel

    def travel_to(self, seq: int) -> None:
        self.as_of = seq
        self.progress = ("re-projecting", 0, seq)

    def take_as_of(self, case: Path, snap: CaseSnapshot, verdict: CaseVerdict) -> bool:
        """Show a projection as of a seq, if it is still the one asked for."""
        if case != self.case or self.as_of != snap.as_of:
            return False
        self.progress = None
        self.shown, self.shown_verdict = snap, verdict
        return True

    def back_to_live(self) -> None:
        """Show the live projection again; the machine lets its own projection go."""
        self.as_of = None
        self.progress = None
        self.shown, self.shown_verdict = self.live, self.live_verdict
        if self.machine is not None:
            self.machine = self.machine.fresh()

    # ---- selection

    def selected_call(self) -> CallState | None:
        """The selected call in the live projection (actions act on live)."""
        live = self.live
        return live.call(self.selected_call_id) if live is not None else None

    def skeleton_call(self, call_id: str) -> SkeletonCall | None:
        """A call as the skeleton knows it, before the projection (never in the past)."""
        skeleton = self.skeleton
        if skeleton is None or self.as_of is not None:
            return None
        try:  # one pass over the ids, once per move
            return skeleton.calls[skeleton.calls.ids.index(call_id)]
        except ValueError:
            return None  # not in the skeleton (a later call: the projection will say)

    # ---- alerts

    def note_changes(self, snap: CaseSnapshot, first: bool, now: float
                     ) -> list[tuple[str, ...]]:
        """Remember the snapshot's effect_unknown calls (new ones wait ALERT_AFTER_S: a
        call in flight passes through effect_unknown); returns the new duplicate-effect
        groups, which alert at once."""
        unknown = snap.unknown_ids  # (a snapshot's set never changes: no copy kept)
        dups = snap.state.receipts.duplicates
        if not first and self.seen_unknown is not None:
            for call_id in unknown - self.seen_unknown:  # (by position: `CallIds`)
                self.pending_alerts.setdefault(call_id, now)
        for call_id in list(self.pending_alerts):
            if call_id not in unknown:
                del self.pending_alerts[call_id]  # it moved on: no alert
        seen = self.seen_duplicates
        # (a live check hands out the same groups until a receipt joins one)
        new = [] if first or seen is None or dups is seen else sorted(
            set(dups) - set(seen))
        self.seen_unknown, self.seen_duplicates = unknown, dups
        return new

    def due_alerts(self, now: float) -> list[str]:
        """The calls in effect_unknown for ALERT_AFTER_S now (each alerts once), at most
        once every ALERT_EVERY_S: those due sooner wait for the next, and one that left
        effect_unknown meanwhile is not named."""
        live = self.live
        for call_id, since in list(self.pending_alerts.items()):
            if live is None or call_id not in live.unknown_ids:
                del self.pending_alerts[call_id]
            elif now - since >= ALERT_AFTER_S:
                del self.pending_alerts[call_id]
                self.held_alerts.append(call_id)
        if not self.held_alerts or (
                self.alerted_at is not None and now - self.alerted_at < ALERT_EVERY_S):
            return []
        due = [c for c in self.held_alerts if live is not None and c in live.unknown_ids]
        self.held_alerts = []
        if due:
            self.alerted_at = now
        return due

    # ---- drift

    def drift_todo(self, snap: CaseSnapshot, now: float, first: bool = False,
                   asked: AbstractSet[str] = frozenset()) -> list[str]:
        """Resumable calls whose drift check is missing or older than their evidence,
        once they have been resumable DRIFT_AFTER_S (those resumable in the `first`
        snapshot of the case: at once), less the calls `asked` already. The checks of
        calls no longer resumable go: a check is of one call's evidence (its last seq).
        A followed writer's calls pass through start_call by the thousand, and checking
        each one as it passed kept a core scanning the ledger (and its pages churning
        through the heap) while the console followed."""
        drift, since = self.drift, self.resumable_since
        resumable = {c.call_id: c.last_seq for c in snap.state.resumable_calls()}
        for gone in [k for k in drift if k not in resumable]:
            del drift[gone]
        for gone in [k for k in since if k not in resumable]:
            del since[gone]
        seen_at = now - DRIFT_AFTER_S if first else now
        todo = [call_id for call_id, last_seq in resumable.items()
                if now - since.setdefault(call_id, seen_at) >= DRIFT_AFTER_S
                and call_id not in asked
                and (call_id not in drift or drift[call_id].last_seq != last_seq)]
        return todo[:DRIFT_CHECKS_PER_SNAPSHOT]

    def take_drift(self, checks: list[DriftCheck]) -> bool:
        """Keep drift checks; True when the live verdict was re-ranked by them."""
        live = self.live
        for check in checks:
            call = live.call(check.call_id) if live is not None else None
            if check.status is DriftStatus.UNAVAILABLE and call is not None:
                check = DriftCheck(check.call_id, call.last_seq, check.status, check.fixes)
            self.drift[check.call_id] = check
        if live is None or self.live_base is None:
            return False
        # the Cases row says the drift once it is known, as the Calls pane does
        self.live_verdict = self.verdict_with_drift(live, self.live_base)
        if self.as_of is None:
            self.shown_verdict = self.live_verdict
        return True

    def verdict_with_drift(self, snap: CaseSnapshot, verdict: CaseVerdict) -> CaseVerdict:
        """The follower's verdict, re-ranked when a drift check refuses a start_call
        (a pass over the calls, only then: drift is rare)."""
        drifted = frozenset(
            call_id for call_id, check in self.drift.items()
            if check.status is DriftStatus.DRIFT and (call := snap.call(call_id)) is not None
            and call.last_seq == check.last_seq)
        if not drifted:
            return verdict
        return case_verdict(snap.state, snap.event_count, drifted)

    def case_label(self, case: Path | None = None) -> str:
        """`case` (the open one by default) as the action log names it."""
        case = case or self.case
        if case is None:
            return "?"
        try:
            root = self.root
            return str(case.relative_to(root)) if root and case != root else case.name
        except ValueError:
            return str(case)

    def note_for_case(self) -> Note | None:
        """The last action's note, if it belongs to the open case."""
        note = self.note
        return note if note is not None and note.case == self.case else None


class InSession(Generic[T]):
    """An attribute of an object that holds a `session`, kept in that session: the main
    screen's `as_of` (which the flows read as their host's) is its session's `as_of`."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, holder: Any, owner: type | None = None) -> T:
        return getattr(holder.session, self.name)  # type: ignore[no-any-return]

    def __set__(self, holder: Any, value: T) -> None:
        setattr(holder.session, self.name, value)
