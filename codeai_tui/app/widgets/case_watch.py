"""The open case's watch: alerts when a call enters effect_unknown, an effect is
duplicated or the ledger file is replaced, and the drift checks of resumable calls.

A widget with nothing to draw, so its timer and its worker end with it. It reads and
writes the alert memory in the console's session (which the one reset forgets), says
an alert in the action log and a toast, and posts the drift checks up
(`DriftChecked`): the screen keeps them and paints them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path

from textual import work
from textual.widget import Widget
from textual.worker import Worker, WorkerState, get_current_worker

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.protocol import ActionOptions, GatedAction
from codeai_tui.actions.resume import RESUME, Resume, ResumePlan
from codeai_tui.app import messages as m
from codeai_tui.app.widgets.cells import DUPLICATE_TEXT, WARN
from codeai_tui.console.actions import ActionLog, Outcome
from codeai_tui.console.drift import DriftCheck, DriftStatus, check_from_plan
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.console.session import CaseSession, Note
from codeai_tui.ledger import LedgerError
from codeai_tui.textsafe import visible

TICK_EVERY_S = 0.5  # the alerts and drift checks come due between snapshots too
ALERT_NAMES = 3  # the calls an alert of several names (the Calls pane has them all)


def resume_read(actions: Mapping[str, GatedAction], options: Callable[[], ActionOptions]
                ) -> Callable[[Path, str], ResumePlan]:
    """Resume's read-only plan of a call (nothing sent), as this console runs resume, with
    the options given now: what a drift check shows."""
    given = actions.get("resume")
    resume = given if isinstance(given, Resume) else RESUME  # (the drift read is resume's)
    return lambda case, call_id: resume.read(case, call_id, options())


class CaseWatch(Widget):
    """Alerts and drift checks for the open case's live projection."""

    DEFAULT_CSS = "CaseWatch { display: none; }"

    def __init__(self, session: CaseSession, log: ActionLog, clock: Callable[[], datetime],
                 read_plan: Callable[[Path, str], ResumePlan], *,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.session, self.action_log = session, log
        # resume's read-only plan of a call (nothing sent): what its drift check shows
        self.clock, self.read_plan = clock, read_plan
        # the calls the running drift check reads (one check at a time: a new snapshot
        # that cancelled it lost every plan it had read)
        self._checking: frozenset[str] = frozenset()
        self._drift_worker: Worker[None] | None = None

    def on_mount(self) -> None:
        self.set_interval(TICK_EVERY_S, self._tick)

    def saw(self, case: Path, snap: CaseSnapshot, first: bool) -> None:
        """A new live snapshot: alert on duplicates at once, remember effect_unknown calls
        (they alert if still there ALERT_AFTER_S later), check new resumable calls."""
        now = time.monotonic()
        for group in self.session.note_changes(snap, first, now):
            self.alert(None, f"{DUPLICATE_TEXT}: receipts {', '.join(group)}",
                       "duplicate effect")
        self._drift_due(case, snap, now, first)

    def _drift_due(self, case: Path, snap: CaseSnapshot, now: float, first: bool = False
                   ) -> None:
        """Start a drift check of the resumable calls due (`drift_todo`) unless one runs:
        the calls it leaves are asked again at the next snapshot or tick."""
        worker = self._drift_worker
        if worker is not None:
            if not worker.is_finished:
                return
            if worker.state is not WorkerState.SUCCESS:  # (its checks never come)
                self._checking = frozenset()
        # (checks read but not yet taken by the screen are not asked for again)
        asked = {c for c in self._checking if c not in self.session.drift}
        if todo := self.session.drift_todo(snap, now, first, asked):
            self._checking = frozenset(todo)
            self._drift_worker = self._check_drift(case, todo)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.post_message(m.WorkerFailed(event.worker.group, event.worker.error))

    def stop(self) -> None:
        """The case or its file changed: its drift checks are not wanted any more."""
        self.workers.cancel_group(self, "drift")
        self._drift_worker, self._checking = None, frozenset()

    def _tick(self) -> None:
        """What came due since the last snapshot: the drift checks of calls that stayed
        resumable (a writer that stopped makes no later snapshot), and the
        effect_unknown alert."""
        now = time.monotonic()
        live = self.session.live
        if live is not None and self.session.case is not None:
            self._drift_due(self.session.case, live, now)
        self._flush_alerts(now)

    def _flush_alerts(self, now: float) -> None:
        """The calls due now make one alert (the session holds them to one every
        ALERT_EVERY_S): a writer that leaves many calls in flight made a toast and a
        log entry a call (ten a second at 1,000 events/s)."""
        due = self.session.due_alerts(now)
        if len(due) == 1:
            self.alert(due[0], f"{WARN} call {due[0]} entered effect_unknown: "
                       "duplicate risk", "effect unknown")
        elif due:
            named = ", ".join(due[:ALERT_NAMES]) + (", …" if len(due) > ALERT_NAMES else "")
            self.alert(None, f"{WARN} {len(due)} calls entered effect_unknown: duplicate "
                       f"risk ({named}; e steps through them)", "effect unknown")

    def replaced(self, case: Path) -> None:
        """Another file now sits at the case's ledger path (after the one reset): the
        header's note, the action log and a toast say so."""
        text = (f"{WARN} ledger file replaced at {self.clock():%H:%M:%S}: everything shown "
                "is re-read from the new file")
        self.session.note = Note(case, "", text, ok=False)
        self.action_log.add(self.clock(), self.session.case_label(case), None, Outcome.ALERT,
                            text)
        self.notify(text, title="ledger replaced", severity="warning", markup=False,
                    timeout=15)

    def alert(self, call_id: str | None, text: str, title: str) -> None:
        line = visible(text, one_line=True, limit=200)
        self.action_log.add(self.clock(), self.session.case_label(), call_id, Outcome.ALERT,
                            line)
        self.notify(line, title=title, severity="error", markup=False, timeout=10)

    def worker_failed(self, group: str, error: BaseException) -> None:
        """A widget's worker died of a bug (ledger problems are messages): say so plainly
        in the action log and a toast; a dead follow is the session's state too."""
        what = f"{group}: {type(error).__name__}: {error}"
        if group == "follow":
            self.session.state = "stopped"
            self.session.trouble = f"live follow stopped by an internal error ({what})"
        line = visible(f"internal error in {what}", one_line=True, limit=300)
        self.action_log.add(self.clock(), self.session.case_label(), None, Outcome.ALERT, line)
        self.notify(line, title="internal error", severity="error", markup=False, timeout=15)

    @work(thread=True, exit_on_error=False, group="drift", exclusive=True)
    def _check_drift(self, case: Path, call_ids: list[str]) -> None:
        """Read-only: each plan reads the call's events and a few artifacts."""
        checks: list[DriftCheck] = []
        for call_id in call_ids:
            if get_current_worker().is_cancelled:
                return
            try:
                checks.append(check_from_plan(self.read_plan(case, call_id)))
            except ActionRefused as exc:  # e.g. an altered case directory: say so
                checks.append(DriftCheck(call_id, -1, DriftStatus.UNAVAILABLE, (exc.reason,)))
            except (LedgerError, OSError, ValueError) as exc:
                checks.append(DriftCheck(call_id, -1, DriftStatus.UNAVAILABLE,
                                         (f"{type(exc).__name__}: {exc}",)))
        self.post_message(m.DriftChecked(case, checks))
