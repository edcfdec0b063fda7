"""The reconcile confirmation: the provider's log first, the finding pre-filled from it.

Cancel has the focus. The finding is pre-filled only where the evidence says it:
`received` when a receipt matches the attempt, `not_received` when the log is complete
past the attempt's start with no match, nothing when it is unknowable. `not_received` is
refused (disabled, and refused again on confirm) while a receipt matches. Like the
resume dialog, the decision is pinned to the evidence shown: if the call changes while
the dialog is open, it says so and refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, RadioButton, RadioSet, Static

from codeai_tui.actions.reconcile_plan import ReconcilePlan
from codeai_tui.app.widgets.laid_out import show_laid_out
from codeai_tui.textsafe import visible

FINDING_LABELS = {
    "received": "received: the provider got it (its response is lost)",
    "not_received": "not_received: it never reached the provider",
}


@dataclass(frozen=True)
class ReconcileDecision:
    """What the operator decided, for exactly the plan the dialog showed."""

    confirmed: bool
    finding: str | None = None
    note: str | None = None


def _v(value: object, limit: int = 120) -> str:
    return visible(str(value) if value is not None else "\u2014 none", one_line=True,
                   limit=limit)


class FindingDialog(ModalScreen[ReconcileDecision]):
    """What both reconcile dialogs share: the layout (title, evidence, the findings as
    radio buttons with the chosen one named in words, a note, the facts, Cancel focused
    first), the keys, and a refusal once the evidence shown has changed. Subclasses say
    what is shown and what confirm needs."""

    CSS_PATH = "reconcile.tcss"
    LABELS: ClassVar[dict[str, str]] = {}
    RECORDED_IN: ClassVar[str] = ""  # the event kind the note is recorded in

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="reconcile.cancel_escape"),
        Binding("n", "cancel", "Cancel", id="reconcile.cancel"),
        Binding("y", "confirm", "Record", id="reconcile.confirm"),
        # choosing is its own key, never a write: y (or Enter on Record) records
        Binding("1", "choose(0)", "First finding", id="reconcile.choose_first", show=False),
        Binding("2", "choose(1)", "Second finding", id="reconcile.choose_second",
                show=False),
    ]
    KEYS_LINE = ("keys: 1 / 2 choose a finding · y records it · n or esc cancels "
                 "· tab moves between fields")

    def __init__(self) -> None:
        super().__init__()
        self.refused: str | None = None

    # ---- what a subclass shows

    def heading(self) -> Content:
        raise NotImplementedError

    def evidence(self) -> Content:
        raise NotImplementedError

    def facts(self) -> Content:
        raise NotImplementedError

    def suggested(self) -> str | None:
        """The finding the evidence pre-fills (None: nothing)."""
        return None

    def allowed(self, name: str) -> bool:
        return True

    def inputs(self) -> ComposeResult:
        """Fields between the findings and the note (none by default)."""
        return iter(())

    def compose(self) -> ComposeResult:
        with Vertical(id="reconcile-dialog"):
            yield Static(self.heading(), id="reconcile-title")
            with VerticalScroll(id="reconcile-body"):
                yield Static(self.evidence(), id="reconcile-evidence")
                with RadioSet(id="reconcile-finding"):
                    for name in self.LABELS:
                        chosen = self.suggested() == name
                        yield RadioButton(self.label(name, chosen), id=f"finding-{name}",
                                          value=chosen, disabled=not self.allowed(name))
                yield from self.inputs()
                yield Input(placeholder=f"note (optional, recorded in {self.RECORDED_IN})",
                            id="reconcile-note", max_length=300)
                yield Static(self.facts(), id="reconcile-facts")
            yield Static("", id="reconcile-refused")
            with Horizontal(id="reconcile-buttons"):
                yield Button("Cancel (n / esc)", id="reconcile-cancel", variant="primary")
                yield Button("Record finding (y)", id="reconcile-confirm", variant="error")
            yield Static(self.KEYS_LINE, id="reconcile-keys", markup=False)

    def note(self) -> str | None:
        return self.query_one("#reconcile-note", Input).value.strip() or None

    def label(self, name: str, chosen: bool) -> str:
        """A finding's label with the key that chooses it, saying in words which one is
        chosen: the radio dot differs only by colour, and a monochrome terminal shows
        both alike."""
        text = f"({list(self.LABELS).index(name) + 1}) {self.LABELS[name]}"
        return f"{text}  \u2190 chosen" if chosen else text

    def action_choose(self, index: int) -> None:
        """Choose the finding numbered index+1 (a refused one stays unchosen)."""
        names = list(self.LABELS)
        if self.refused or not 0 <= index < len(names):
            return
        button = self.query_one(f"#finding-{names[index]}", RadioButton)
        if button.disabled:
            self._say(f"{names[index]} cannot be chosen here")
            return
        button.value = True
        show_laid_out(self.query_one("#reconcile-refused", Static), Content.assemble(
            (f"{names[index]} chosen: ", "bold $accent"), "y records it, n or esc cancels"))

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        event.stop()
        for button in self.query(RadioButton):
            name = (button.id or "").removeprefix("finding-")
            if name in self.LABELS:
                button.label = self.label(name, button is event.pressed)

    def on_mount(self) -> None:
        self.query_one("#reconcile-cancel", Button).focus()
        if self.refused:
            self._show_refusal()

    def finding(self) -> str | None:
        pressed = self.query_one(RadioSet).pressed_button
        if pressed is None or pressed.id is None:
            return None
        return pressed.id.removeprefix("finding-")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (action == "confirm" and self.refused)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "reconcile-confirm":
            self.action_confirm()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(ReconcileDecision(False))

    def action_confirm(self) -> None:
        raise NotImplementedError

    def _say(self, text: str) -> None:
        show_laid_out(self.query_one("#reconcile-refused", Static),
            Content.assemble(("\u26a0 ", "bold $warning"), (text, "bold $warning")))

    def evidence_changed(self, why: str) -> None:
        """The ledger moved under the dialog: refuse, and say why (now or once shown)."""
        self.refused = why
        if self.is_mounted:
            self._show_refusal()

    def _show_refusal(self) -> None:
        show_laid_out(self.query_one("#reconcile-refused", Static), Content.assemble(
            ("\u2716 evidence changed: ", "bold $error"), _v(self.refused or "", 300),
            " \u2014 nothing recorded; cancel and look again."))
        for button in self.query("#reconcile-confirm"):
            button.remove()
        self.query_one("#reconcile-cancel", Button).focus()
        self.refresh_bindings()


class ReconcileModal(FindingDialog):
    LABELS = FINDING_LABELS
    RECORDED_IN = "attempt.reconciled"

    def __init__(self, plan: ReconcilePlan) -> None:
        super().__init__()
        self.plan = plan

    # ---- what the operator sees

    def heading(self) -> Content:
        plan = self.plan
        return Content.assemble(
            ("Reconcile call ", "bold"), (_v(plan.call_id), "bold $accent"),
            (": what happened to attempt ", "bold"), (_v(plan.attempt_id), "bold"),
            ("?", "bold"))

    def suggested(self) -> str | None:
        return self.plan.suggested

    def allowed(self, name: str) -> bool:
        return name != "not_received" or self.plan.not_received_allowed

    def label(self, name: str, chosen: bool) -> str:
        if name == "not_received" and not self.plan.not_received_allowed:
            text = "(2) not_received: refused, a receipt matches"
            return f"{text}  \u2190 chosen" if chosen else text
        return super().label(name, chosen)

    def evidence(self) -> Content:
        """What the provider's own log says: the verdict's evidence, then the pre-fill."""
        plan = self.plan
        parts: list[str | tuple[str, str]] = [("provider's log  ", "bold")]
        if plan.matching:
            listed = ", ".join(f"{_v(rid, 60)} at {_v(at, 40)}" for rid, at in plan.matching)
            parts += [("\u2714 received", "bold $warning"), f": receipt {listed} matches "
                      "(same idempotency key, body hash = request hash)"]
            if len(plan.matching) > 1:
                parts += [" ", ("\u29c9 duplicate effect", "bold $error")]
        elif plan.receipt_log == "present":
            upto = _v(plan.complete_up_to or "its start: empty", 40)
            parts += [("\u2716 not in the log", "bold $success"),
                      f" (log complete up to {upto}; the attempt started "
                      f"{_v(plan.started_at, 40)})"]
        else:
            parts += [("? unknowable", "bold $error"), ": " + (
                "no receipt log" if plan.receipt_log == "absent" else "the receipt log "
                "cannot be read")]
        parts += ["\n", ("pre-filled     ", "bold")]
        if plan.suggested:
            parts += [(plan.suggested, "bold $accent"), f": {_v(plan.why_suggested, 300)}"]
        else:
            parts += [("nothing", "bold $warning"), f": {_v(plan.why_suggested, 300)}"]
        if not plan.not_received_allowed:
            parts += ["\n", ("not_received   ", "bold"),
                      ("refused while a receipt matches this attempt", "$error")]
        return Content.assemble(*parts)

    def facts(self) -> Content:
        plan = self.plan
        return Content.assemble(
            ("call / attempt ", "bold"), f"{_v(plan.call_id)} / {_v(plan.attempt_id)} "
            f"(started at seq {plan.started_seq})", "\n",
            ("key            ", "bold"), _v(plan.idempotency_key), "\n",
            ("request sha256 ", "bold"), _v(plan.request_sha256), "\n",
            ("why            ", "bold"), _v(plan.reason, 400), "\n",
            ("records        ", "bold"), "attempt.reconciled {finding, evidence: the "
            "matching receipt ids, decided_by, note}; nothing is sent",
        )

    # ---- decisions

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()

    def action_confirm(self) -> None:
        if self.refused:
            return
        finding = self.finding()
        if finding is None:
            self._say("choose a finding first: 1 received, 2 not_received; then y")
            return
        if finding == "not_received" and not self.plan.not_received_allowed:
            self._say("not_received is refused: a receipt in the provider's log matches "
                      "this attempt")
            return
        self.dismiss(ReconcileDecision(True, finding, self.note()))
