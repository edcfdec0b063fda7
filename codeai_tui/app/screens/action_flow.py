"""One console flow for every gated action (the registry's: codeai_tui/actions/registry.py).

A key (`r`, `x`, `v`, `R`) starts the first action the projection permits on the
selected call; where none does (or the console is read-only, or shows the past, or
another action is in progress) the key says why and nothing is written. Otherwise the
same four steps for every action:

1. plan, in a thread worker (read-only: nothing written, nothing sent);
2. the action's confirmation dialog (a ModalScreen, Cancel focused, keyboard-first; no
   single key both chooses and writes), refused while open if the call moves on;
3. run, in a thread worker, through the gate (pinned to the evidence the dialog showed);
4. report: the action log, the header's note and a toast.

The flow is a widget with nothing to draw: it holds the one "an action is in progress"
state (`busy`), runs its workers and handles the messages they post, so they end with
it; it talks to the screen only through `FlowHost`. Adding an action's dialog: a ModalScreen and one entry
in DIALOGS (dialogs.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from textual.message import Message
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.protocol import Decision, Done, GatedAction, Selected
from codeai_tui.actions.registry import keyed
from codeai_tui.app import messages as m
from codeai_tui.app.screens.dialogs import DIALOGS, PinnedDialog
from codeai_tui.app.screens.flow_host import FlowHost
from codeai_tui.console.actions import SELECT_A_CALL, Outcome
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.console.session import Note
from codeai_tui.ledger import LedgerError
from codeai_tui.textsafe import visible

# the console key -> the word its bindings, toasts and refusals use
GROUPS = {"r": "resume", "x": "reconcile", "v": "advance", "R": "replay"}


T = TypeVar("T")

def _line(text: str, limit: int = 400) -> str:
    return visible(text, one_line=True, limit=limit)


@dataclass
class ActionPlanned(Message):
    case: Path
    action: str
    plan: Any


@dataclass
class ActionProgressed(Message):
    case: Path
    text: str


@dataclass
class ActionEnded(Message):
    """An action ended: refused, failed or done (with `done`)."""

    case: Path
    action: str
    call_id: str
    outcome: Outcome
    text: str
    done: Done | None = None


class ActionFlow(Widget):
    """The main screen's one flow for every gated action: a widget it composes."""

    DEFAULT_CSS = "ActionFlow { display: none; }"

    def __init__(self, host: FlowHost, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.host = host
        self.busy: str | None = None  # the action in progress (plan, dialog or run)
        self.dialog: ModalScreen[Any] | None = None  # the open dialog, with its plan
        self.plan: Any = None

    # ---------------------------------------------------------------- gating

    def selected(self) -> Selected:
        host = self.host
        return Selected(host.selected_call(), host.live.state if host.live else None,
                        host.options)

    def action_for(self, key: str) -> GatedAction | None:
        """The action `key` starts on the selected call now (None: none is permitted)."""
        selected = self.selected()
        if selected.call is None:
            return None
        return next((a for a in self._keyed(key) if a.permitted(selected)), None)

    def _keyed(self, key: str) -> list[GatedAction]:
        actions = self.host.actions
        return [actions[a.name] for a in keyed(key)]

    def permitted(self, key: str) -> bool:
        """The key's write answers (and shows in the footer): live, nothing in progress,
        and the projection permits one of its actions on the selected call."""
        return (self.host.as_of is None and self.busy is None
                and self.action_for(key) is not None)

    def explain(self, key: str) -> None:
        """The key where its write is not permitted: say why (refusals are kept in the
        action log); in read-only mode, that the console writes nothing."""
        host, group = self.host, GROUPS[key]
        if host.read_only:  # the write's key says so (and writes nothing)
            host.notify(f"{group}: this console is read-only (started with --read-only): "
                        "it writes nothing; run it without --read-only to act",
                        title="read-only", severity="warning", markup=False)
            return
        if self.busy is not None:
            host.notify(f"{self.busy} is in progress: one action at a time", markup=False)
            return
        call = host.selected_call()
        if call is None:
            host.notify(SELECT_A_CALL, severity="warning", markup=False)
            return
        if host.as_of is not None:
            self.refuse(call.call_id, group, _line(
                f"{call.call_id}: time travel shows the past: go back to live (t or esc) "
                f"to {group}"))
            return
        first = self._keyed(key)[0]
        self.refuse(call.call_id, group, _line(first.explain(self.selected())))

    # ---------------------------------------------------------------- plan

    def start(self, key: str) -> None:
        """Plan the key's action on the selected call in a worker (the dialog follows)."""
        host = self.host
        action = self.action_for(key)
        call = host.selected_call()
        if host.read_only or host.case is None or call is None or host.as_of is not None:
            return
        if action is None or self.busy is not None:
            self.explain(key)
            return
        self.busy = action.name
        host.activity = f"{action.name}: reading {call.call_id}\u2026"
        host.paint_status()
        host.refresh_bindings()
        self.run_worker(partial(self._plan, action, host.case, call.call_id), name="_plan",
                        group="action", exclusive=True, exit_on_error=False, thread=True)

    def _plan(self, action: GatedAction, case: Path, call_id: str) -> None:
        """In a worker thread: the plan the dialog shows (read-only)."""
        plan = self._step("plan", action, case, call_id,
                          lambda: action.plan(case, call_id, self.host.options))
        if plan is not None:
            self.post_message(ActionPlanned(case, action.name, plan))

    def _step(self, stage: str, action: GatedAction, case: Path, call_id: str,
              step: Callable[[], T]) -> T | None:
        """One step of an action in this worker thread (its plan, or its run): a refusal,
        a ledger problem or anything else that goes wrong (an unreadable artifact, the
        provider, the network, a tool) ends the flow with one line; None then."""
        try:
            return step()
        except ActionRefused as exc:
            op = exc.next_operation.value if exc.next_operation is not None else "none"
            said = f" (next operation {op})" if stage == "plan" else ""
            self._end(case, action.name, call_id, Outcome.REFUSED,
                      f"{call_id}: {action.name} refused{said}: {exc.reason}")
        except LedgerError as exc:
            self._end(case, action.name, call_id, Outcome.FAILED, str(exc))
        except Exception as exc:  # noqa: BLE001 - whatever it is, the operator is told
            what = f"cannot plan {action.name}" if stage == "plan" else f"{action.name} failed"
            self._end(case, action.name, call_id, Outcome.FAILED,
                      f"{call_id}: {what}: {type(exc).__name__}: {exc}")
        return None

    # ---------------------------------------------------------------- dialog

    def on_action_planned(self, message: ActionPlanned) -> None:
        host = self.host
        host.activity = None
        host.paint_status()
        case, plan = message.case, message.plan
        if case != host.case or host.as_of is not None or host.read_only:
            self._idle()  # the operator moved on (another case, time travel) first
            return
        action = host.actions[message.action]
        dialog = DIALOGS[action.name]
        dialog.shown(host, plan)
        modal = dialog.open(plan, host.clock())
        self.dialog, self.plan = modal, plan
        if host.live is not None:
            self.check_evidence(host.live)

        def decided(answer: Any) -> None:
            self.dialog = self.plan = None
            refused = modal.refused if isinstance(modal, PinnedDialog) else None
            decision = dialog.decision(plan, answer)
            if decision is None:
                why = refused or dialog.refused(plan) or "cancelled by the operator"
                outcome = Outcome.REFUSED if why != "cancelled by the operator" \
                    else Outcome.CANCELLED
                host.record(case, plan.call_id, outcome,
                            _line(f"{GROUPS[action.key]}: {why}", 300))
                self._idle()
                return
            if host.read_only or host.case != case or refused:
                self._idle()
                return
            host.record(case, plan.call_id, Outcome.CONFIRMED, dialog.confirmed(plan, answer))
            host.note = None
            host.activity = f"{action.name} {plan.call_id}\u2026"
            host.paint_status()
            self.run_worker(partial(self._run, action, case, plan, decision), name="_run",
                            group="action", exclusive=True, exit_on_error=False, thread=True)

        host.push_screen(modal, decided)

    def check_evidence(self, snap: CaseSnapshot) -> None:
        """The open dialog is pinned to the call's evidence it showed: a new event on the
        call (or the action no longer permitted there) refuses it."""
        modal, plan = self.dialog, self.plan
        if not isinstance(modal, PinnedDialog) or modal.refused or plan is None:
            return
        action = self.host.actions.get(self.busy or "")
        if action is None:
            return
        call = snap.call(plan.call_id)
        if call is None or call.last_seq != plan.pinned.last_seq or not action.permitted(
                Selected(call, snap.state, self.host.options)):
            modal.evidence_changed(DIALOGS[action.name].moved(plan, call))

    def evidence_gone(self, why: str) -> None:
        """What the open dialog showed was read from a file that is no longer there."""
        if isinstance(self.dialog, PinnedDialog):
            self.dialog.evidence_changed(why)

    # ---------------------------------------------------------------- run

    def _run(self, action: GatedAction, case: Path, plan: Any, decision: Decision) -> None:
        """In a worker thread: run through the gate, pinned to the plan the dialog showed."""
        host = self.host
        call_id = plan.call_id

        def progress(text: str) -> None:
            self.post_message(ActionProgressed(case, f"{action.name}: {text}"))

        done = self._step("run", action, case, call_id,
                          lambda: action.run(plan, decision, host.options, progress))
        if done is None:
            return
        outcome = Outcome(action.done_word) if done.ok else Outcome.FAILED
        self._end(case, action.name, call_id, outcome, done.text, done)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A plan or a run died of a bug (refusals and failures are outcomes): the screen
        says so plainly."""
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            self.post_message(m.WorkerFailed(event.worker.group, event.worker.error))

    def _end(self, case: Path, action: str, call_id: str, outcome: Outcome, text: str,
             done: Done | None = None) -> None:
        self.post_message(ActionEnded(case, action, call_id, outcome, text, done))

    # ---------------------------------------------------------------- report

    def on_action_progressed(self, message: ActionProgressed) -> None:
        host = self.host
        if message.case == host.case:
            host.activity = _line(message.text)
            host.paint_status()

    def on_action_ended(self, message: ActionEnded) -> None:
        self.busy = None
        done, outcome = message.done, message.outcome
        warning = done.warning if done is not None else None
        ok = done is not None and done.ok
        title = (f"{message.action} done" if ok and warning is None
                 else f"{message.action} done, with a warning" if ok
                 else f"{message.action} {outcome.value}")
        self.report(message.case, message.call_id, outcome, _line(message.text, 500),
                    ok=ok, title=title, severity="warning" if warning is not None
                    or outcome is Outcome.REFUSED else None if ok else "error")

    def refuse(self, call_id: str | None, action: str, text: str) -> None:
        """A gated action refused before anything was written: the action log and a
        toast titled "<action> refused" (resume, reconcile, advance and replay alike)."""
        self.host.record(None, call_id, Outcome.REFUSED, text)
        self.host.notify(text, title=f"{action} refused", severity="warning", markup=False,
                         timeout=10)

    def report(self, case: Path, call_id: str, outcome: Outcome, text: str, *, ok: bool,
               title: str, severity: str | None = None) -> None:
        """An action ended: say it once everywhere it belongs (the action log, the
        header's note, replacing an earlier action's words, and a toast), then poll at
        once so the call's new verdict shows."""
        host = self.host
        host.activity = None
        host.record(case, call_id, outcome, text)
        host.note = Note(case, call_id, ("\u2714 " if ok else "\u2716 ") + text, ok=ok)
        host.notify(text, title=title, severity=severity or ("information" if ok else "warning"),
                    markup=False, timeout=15)
        host.wake_follower()
        host.paint_status()
        host.refresh_bindings()

    def _idle(self) -> None:
        host = self.host
        self.busy = None
        host.activity = None
        host.paint_status()
        host.refresh_bindings()
