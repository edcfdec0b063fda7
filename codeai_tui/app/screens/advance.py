"""Advance the selected call from the console: `v` runs what the projection names next.

reinterpret, redecide, finalize, start the next attempt, or (at decide_duplicate)
finalize as failed / accept a duplicate: codeai_tui/actions/advance.py does the work, gated by
the projection inside its write transaction. Here: a confirmation that shows the step,
what it appends, and (for a next attempt) where the request goes, with Cancel focused;
accepting a duplicate needs the call id typed. The decision is pinned to the evidence
shown (the service refuses if the call changed). Everywhere the projection names none
of these, `v` refuses with the reason and writes nothing; in read-only mode it is hidden.
Results, refusals and cancellations go to the action log.

`AdvanceFlow` is composed by the main screen (one binding, one worker group); it
talks to the screen through `FlowHost`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from codeai_tui.actions import advance
from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.protocol import ActionOptions, Decision
from codeai_tui.actions.registry import BY_NAME
from codeai_tui.app.screens.flow_host import FlowHost
from codeai_tui.console.actions import SELECT_A_CALL, Outcome
from codeai_tui.ledger.errors import LedgerError
from codeai_tui.textsafe import visible
from codeai_tui.workstate import CallState, NextOperation

# the projected next operation -> the steps an operator may take there
STEPS: dict[NextOperation, tuple[str, ...]] = {
    NextOperation.REINTERPRET: ("reinterpret",),
    NextOperation.REDECIDE: ("redecide",),
    NextOperation.FINALIZE: ("finalize",),
    NextOperation.START_NEXT_ATTEMPT: ("next-attempt",),
    NextOperation.DECIDE_DUPLICATE: ("finalize", "accept-duplicate"),
}
APPENDS = advance.APPENDS
LABELS = {"reinterpret": "Reinterpret (y)", "redecide": "Redecide (y)",
          "finalize": "Finalize (y)", "next-attempt": "Send next attempt (y)",
          "accept-duplicate": "Accept duplicate"}


def steps_for(call: CallState | None) -> tuple[str, ...]:
    """The steps the projection permits on this call (none: refuse)."""
    if call is None or call.anomalous or call.superseded_by is not None:
        return ()
    return STEPS.get(call.next_operation, ())


def _v(value: object) -> str:
    return visible(value if value is not None else "\u2014", one_line=True, limit=160)


@dataclass(frozen=True)
class AdvanceView:
    """What the dialog shows, pinned to the call's evidence."""

    case: Path
    call_id: str
    stage: str
    next_operation: str
    reason: str
    steps: tuple[str, ...]
    evidence: tuple[int, int]
    plan: advance.NextAttemptPlan | None = None  # next-attempt: where it goes


class AdvanceReady(Message):
    def __init__(self, view: AdvanceView) -> None:
        super().__init__()
        self.view = view
        self.chosen: str | None = None  # the step `f` chose; `y` takes it


class AdvanceFinished(Message):
    def __init__(self, case: Path, call_id: str, outcome: Outcome, text: str) -> None:
        super().__init__()
        self.case, self.call_id, self.outcome, self.text = case, call_id, outcome, text


class AdvanceModal(ModalScreen[str | None]):
    """Cancel focused; `y` takes the single step; accepting a duplicate needs the typed id."""

    DEFAULT_CSS = """
    AdvanceModal { align: center middle; background: $background 60%; }
    #advance-dialog { width: 100%; max-width: 110; height: auto; max-height: 100%;
                      border: thick $warning; background: $surface; padding: 0 1; }
    #advance-title { height: 1; }
    #advance-body { height: auto; max-height: 60vh; }
    #advance-body Static { height: auto; }
    #advance-say { height: auto; }
    #advance-buttons { height: auto; align-horizontal: right; }
    #advance-buttons Button { margin-left: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="advance.cancel_escape"),
        Binding("n", "cancel", "Cancel", id="advance.cancel"),
        Binding("y", "confirm", "Confirm", id="advance.confirm"),
        # with two choices `y` is ambiguous: `f` chooses finalize (it focuses that
        # button and says so); `y` or Enter then takes it. No single key both chooses
        # and writes.
        Binding("f", "choose_finalize", "Choose finalize", id="advance.finalize"),
    ]

    def __init__(self, view: AdvanceView) -> None:
        super().__init__()
        self.view = view
        self.chosen: str | None = None  # the step `f` chose; `y` takes it

    @property
    def single(self) -> str | None:
        """The one step `y` takes (none at decide_duplicate: press a button)."""
        return self.view.steps[0] if len(self.view.steps) == 1 else None

    def compose(self) -> ComposeResult:
        v = self.view
        with Vertical(id="advance-dialog"):
            yield Static(Content.assemble(("Advance call ", "bold"),
                                          (_v(v.call_id), "bold $accent"),
                                          (f": {v.next_operation}", "bold")), id="advance-title")
            with VerticalScroll(id="advance-body"):
                yield Static(Content.assemble(("stage      ", "bold"), _v(v.stage), "\n",
                                              ("evidence   ", "bold"),
                                              f"{v.evidence[0]} events to seq {v.evidence[1]}",
                                              "\n", ("why        ", "bold"),
                                              visible(v.reason, one_line=True, limit=300)))
                for step in v.steps:
                    yield Static(Content.assemble((f"{step:<17}", "bold"),
                                                  ("appends " + APPENDS[step], "")))
                if v.plan is not None:
                    dest = v.plan.destination
                    yield Static(Content.assemble(
                        ("request goes to  ", "bold"), (_v(dest.base_url), "bold"),
                        f"  (from {dest.base_url_from}); attempt {v.plan.attempt_no}", "\n",
                        ("credential       ", "bold"),
                        _v(dest.credential_line(send=dest.trusted))), id="advance-destination")
                if "accept-duplicate" in v.steps:
                    yield Input(placeholder="type the call id to accept a duplicate",
                                id="advance-typed-id")
            yield Static("", id="advance-say")
            with Horizontal(id="advance-buttons"):
                yield Button("Cancel (n / esc)", id="advance-cancel", variant="primary")
                for step in v.steps:
                    label = LABELS[step] if self.single else (
                        "Finalize as failed (f)" if step == "finalize" else LABELS[step])
                    yield Button(label, id=f"advance-{step}", variant="error",
                                 disabled=step == "accept-duplicate")

    def on_mount(self) -> None:
        self.query_one("#advance-cancel", Button).focus()

    def _typed(self) -> bool:
        inputs = self.query("#advance-typed-id")
        return bool(inputs) and inputs.first(Input).value.strip() == self.view.call_id

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_one("#advance-accept-duplicate", Button).disabled = not self._typed()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the typed-id field moves to Accept duplicate once the id is right (a
        second Enter confirms): the field itself never records anything."""
        event.stop()
        if self._typed():
            self.chosen = "accept-duplicate"
            self.query_one("#advance-accept-duplicate", Button).focus()
        else:
            self._say("type the call id to accept a duplicate: " + _v(self.view.call_id))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        step = (event.button.id or "").removeprefix("advance-")
        if step == "accept-duplicate" and not self._typed():
            self._say("type the call id first")
        elif step in self.view.steps:
            self.dismiss(step)
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_confirm(self) -> None:
        step = self.single or self.chosen
        if step is None:
            self._say("two choices here: f chooses finalize (as failed), or type the call "
                      "id to accept a duplicate; then y")
            return
        if step == "accept-duplicate" and not self._typed():
            self._say("type the call id first")
            return
        self.dismiss(step)

    def action_choose_finalize(self) -> None:
        """Choose, never write: the button takes the focus and the dialog says how to
        confirm."""
        if "finalize" not in self.view.steps or self.single is not None:
            return
        self.chosen = "finalize"
        self.query_one("#advance-finalize", Button).focus()
        self._say("finalize as failed chosen: y or Enter records it, n or esc cancels")

    def _say(self, text: str) -> None:
        self.query_one("#advance-say", Static).update(
            Content.assemble(("\u26a0 ", "bold $warning"), (text, "bold $warning")))


def _run(view: AdvanceView, step: str, options: ActionOptions) -> tuple[Outcome, str]:
    """Take the chosen step through its registered action (in a worker thread): the
    gate re-checks the projection and the evidence the dialog showed."""
    name = "finalize" if step == "accept-duplicate" else step
    plan = advance.AdvancePlan(view.case, view.call_id, view.stage, view.next_operation,
                               view.reason, view.steps, view.evidence, view.plan)
    send = view.plan.destination.trusted if view.plan is not None else False
    done = BY_NAME[name].run(plan, Decision(send_credential=send,
                                            accept_duplicate=step == "accept-duplicate"),
                             options, lambda _line: None)
    return (Outcome.ADVANCED if done.ok else Outcome.FAILED), done.text


class AdvanceFlow:
    """The main screen's `advance` action: a plain object the screen composes."""

    def __init__(self, host: FlowHost) -> None:
        self.host = host

    def advance_permitted(self) -> bool:
        """The projection names an advance step for the selected call, live, and no
        other action runs: then `v` shows in the footer and opens the dialog."""
        host = self.host
        return (bool(steps_for(host.selected_call())) and host.as_of is None
                and not host.resuming and not host.planning)

    def action_explain_advance(self) -> None:
        """`v` where no advance step is permitted: say why (in read-only mode, that the
        console writes nothing); the projection's reason otherwise."""
        if not self.host.explain_read_only("advance"):
            self.action_advance()

    def action_advance(self) -> None:
        host = self.host
        call = host.selected_call()
        if host.read_only or host.case is None:
            return
        steps = steps_for(call)
        if call is None:
            host.notify(SELECT_A_CALL, severity="warning", markup=False)
            return
        if host.as_of is not None or not steps or host.resuming or host.planning:
            why = ("time travel shows the past: go back to live first" if host.as_of is not None
                   else "another action is running" if host.resuming or host.planning
                   else f"the projection says next operation is "
                        f"{call.next_operation.value}: {call.reason}")
            text = visible(f"{call.call_id}: advance not permitted; {why}", one_line=True,
                           limit=400)
            host.refuse(call.call_id, "advance", text)
            return
        host.planning = True
        view = AdvanceView(host.case, call.call_id, call.stage.value,
                           call.next_operation.value, call.reason, steps,
                           (call.evidence.event_count, call.last_seq))
        host.run_worker(partial(self._plan, view), name="_advance_plan", group="advance",
                        exclusive=True, exit_on_error=False, thread=True)

    def _plan(self, view: AdvanceView) -> None:
        """In a worker thread: the next attempt's destination, when that is the step."""
        host = self.host
        plan = None
        if "next-attempt" in view.steps:
            options = host.options
            try:
                plan = advance.plan_next_attempt(
                    view.case, view.call_id, base_url=options.base_url,
                    api_key_env=options.api_key_env, ask_destination=True)
            except (ActionRefused, LedgerError, ValueError) as exc:
                host.post_message(AdvanceFinished(view.case, view.call_id, Outcome.REFUSED,
                                                  f"{view.call_id}: next attempt refused: {exc}"))
                return
        host.post_message(AdvanceReady(replace(view, plan=plan)))

    def on_ready(self, message: AdvanceReady) -> None:
        host = self.host
        view = message.view
        if view.case != host.case or host.as_of is not None or host.read_only:
            host.planning = False
            return

        def decided(step: str | None) -> None:
            if step is None:
                host.planning = False
                host.record(view.case, view.call_id, Outcome.CANCELLED,
                            f"advance ({view.next_operation}) cancelled by the operator")
                return
            host.record(view.case, view.call_id, Outcome.CONFIRMED, f"confirmed {step}")
            host.activity = f"{step} {view.call_id}\u2026"
            host.run_worker(partial(self._take_step, view, step), name="_advance_run",
                            group="advance", exclusive=True, exit_on_error=False, thread=True)

        host.push_screen(AdvanceModal(view), decided)

    def _take_step(self, view: AdvanceView, step: str) -> None:
        """In a worker thread: take the step (the service re-checks the gate)."""
        try:
            outcome, text = _run(view, step, self.host.options)
        except ActionRefused as exc:
            op = f" (next operation {exc.next_operation.value})" if exc.next_operation else ""
            outcome, text = Outcome.REFUSED, f"{view.call_id}: {step} refused{op}: {exc.reason}"
        except (LedgerError, ValueError) as exc:
            outcome, text = Outcome.FAILED, f"{view.call_id}: {step} failed: {exc}"
        self.host.post_message(AdvanceFinished(view.case, view.call_id, outcome, text))

    def on_finished(self, message: AdvanceFinished) -> None:
        host = self.host
        host.planning = False
        host.report_outcome(message.case, message.call_id, message.outcome,
                            visible(message.text, one_line=True, limit=400),
                            ok=message.outcome is Outcome.ADVANCED,
                            title="advance " + message.outcome.value)
