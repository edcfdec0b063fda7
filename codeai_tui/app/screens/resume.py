"""The resume confirmation: everything the operator must see, Cancel focused.

Drift: there is no confirm button at all. Rung 4 (no manifest): no drift check is
possible, so the operator types the call id. The decision is pinned to the plan shown:
if the call's evidence changes while the modal is open, the modal says so and refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Static

from codeai_tui.actions.resume import ResumePlan
from codeai_tui.app.widgets.laid_out import show_laid_out
from codeai_tui.console.drift import drift_fixes
from codeai_tui.textsafe import visible


@dataclass(frozen=True)
class ResumeDecision:
    """What the operator decided in the dialog, for exactly the plan it showed."""

    confirmed: bool
    reason: str | None = None
    send_credential: bool = False


def _v(value: Any) -> str:
    return visible(value if value is not None else "\u2014 none recorded", one_line=True,
                   limit=120)


class ResumeModal(ModalScreen[ResumeDecision]):
    CSS_PATH = "resume.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="resume.cancel_escape"),
        Binding("n", "cancel", "Cancel", id="resume.cancel"),
        Binding("y", "confirm", "Confirm", id="resume.confirm"),
    ]

    def __init__(self, plan: ResumePlan, now: datetime) -> None:
        super().__init__()
        self.plan = plan
        self.reason: str | None = None
        self.refused: str | None = None
        # the call moved moments ago (a live process may still send it): say so, and
        # ask for its id typed out, as where no drift check is possible
        self.still_active = plan.still_active(now)

    # ---- what the operator sees

    @property
    def drift(self) -> bool:
        return bool(self.plan.drift_check_possible and self.plan.drift)

    @property
    def needs_typed_id(self) -> bool:
        """The riskier resumes ask for the id typed out; a drifted plan has nothing to
        confirm, so no field either."""
        if self.drift:
            return False
        return not self.plan.drift_check_possible or self.still_active is not None

    def _pair(self, label: str, recorded: Any, now: Any, *, compare: bool = True) -> Static:
        if not compare or not self.plan.drift_check_possible:
            # rung 4: nothing was recorded, so nothing was compared; never say "differs"
            mark = ("  \u00b7 not compared", "$text-muted")
        elif recorded != now:
            mark = ("  \u2260 differs", "$error bold")
        else:
            mark = ("  = same", "$success")
        return Static(
            Content.assemble(
                (f"{label:<26}", "bold"),
                "recorded ", (_v(recorded), ""), "\n",
                " " * 26, "now      ", (_v(now), ""), mark,
            ),
            classes="pair",
        )

    def compose(self) -> ComposeResult:
        plan = self.plan
        with Vertical(id="resume-dialog"):
            yield Static(
                Content.assemble(("Resume call ", "bold"), (_v(plan.call_id), "bold $accent"),
                                 ("?", "bold")),
                id="resume-title",
            )
            with VerticalScroll(id="resume-body"):
                yield from self._body()
            yield Static("", id="resume-refused")
            with Horizontal(id="resume-buttons"):
                yield Button("Cancel (n / esc)", id="resume-cancel", variant="primary")
                if not self.drift:
                    yield Button("Resume (y)", id="resume-confirm", variant="error",
                                 disabled=self.needs_typed_id)

    def _body(self) -> ComposeResult:
        plan = self.plan
        # the verdict first: on a small terminal it is what must be seen without scrolling
        yield Static(self._verdict(), id="resume-verdict")
        yield Static(
            Content.assemble(
                ("call id                   ", "bold"), _v(plan.call_id), "\n",
                ("idempotency key           ", "bold"), _v(plan.idempotency_key), "\n",
                ("stage                     ", "bold"), _v(plan.stage.value),
            ),
            classes="pair",
        )
        dest = plan.destination
        if dest.needs_credential_confirmation:
            # a separate, explicit control, off by default: the operator did not name
            # this URL and variable (the case directory or the built-in default did)
            yield Checkbox(Content(visible(f"send the value of {dest.api_key_env} to "
                                           f"{dest.base_url}", one_line=True, limit=160)),
                           value=False, id="resume-send-credential")
        yield Static(self._destination(), classes="pair", id="resume-destination")
        yield self._pair("model", plan.model_recorded, plan.model_configured)
        yield self._pair("request sha256", plan.request_sha256_recorded,
                         plan.request_sha256_rebuilt)
        yield self._pair("context package", plan.context_package_recorded,
                         plan.context_package_now)
        yield self._pair("rendered context sha256", plan.rendered_sha256_recorded,
                         plan.rendered_sha256_now)
        if self.needs_typed_id:
            yield Input(placeholder="type the call id to confirm", id="resume-typed-id")
        if not self.drift:
            yield Input(placeholder="reason (optional, recorded in call.resumed)",
                        id="resume-reason", max_length=300)

    def send_credential(self) -> bool:
        """Trusted destinations get the credential; others only if the box is ticked."""
        dest = self.plan.destination
        if dest.trusted:
            return True
        boxes = self.query("#resume-send-credential")
        return bool(boxes) and boxes.first(Checkbox).value

    def _destination(self) -> Content:
        """Where the request goes, where that came from, and what happens to the
        credential (its variable's name only; the value is never shown)."""
        dest = self.plan.destination
        send = dest.trusted or (self.is_mounted and self.send_credential())
        line = visible(dest.credential_line(send=send), one_line=True, limit=240)
        style = "bold $warning" if send and not dest.trusted else (
            "$success" if not send else "bold")
        return Content.assemble(
            ("request goes to           ", "bold"), (_v(dest.base_url), "bold"),
            f"  (from {dest.base_url_from})", "\n",
            ("credential variable       ", "bold"), _v(dest.api_key_env or "(none)"),
            f"  (from {dest.api_key_env_from}; "
            f"{'set' if dest.credential_set else 'not set'}; its value is never shown)", "\n",
            ("credential                ", "bold"), (line, style))

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.stop()
        show_laid_out(self.query_one("#resume-destination", Static), self._destination())

    def _verdict(self) -> Content:
        verdict = self._drift_verdict()
        if self.still_active is None or self.drift:
            return verdict
        why = visible(self.still_active, one_line=True, limit=400)
        return Content.assemble(
            ("\u26a0 still running? ", "bold $warning"), (why[:1].upper() + why[1:], "$warning"),
            " Type the call id to confirm.\n", verdict)

    def _drift_verdict(self) -> Content:
        plan = self.plan
        if not plan.drift_check_possible:
            return Content.assemble(
                ("\u26a0 no drift check possible", "bold $warning"),
                ": this call has no manifest, so nothing recorded can be compared with the "
                "request that would be sent now. Type the call id to confirm.",
            )
        if plan.drift:
            parts: list[str | tuple[str, str]] = [
                ("\u2716 DRIFT", "bold $error"), ": resuming would send a different request; "
                "refused. What to fix:",
            ]
            for line in drift_fixes(plan) or plan.drift:
                parts += ["\n  \u2022 ", (visible(line, one_line=True, limit=300), "$error")]
            return Content.assemble(*parts)
        return Content.assemble(
            ("\u2714 match", "bold $success"),
            ": the request rebuilt now is the one recorded; nothing was sent before.",
        )

    def on_mount(self) -> None:
        self.query_one("#resume-cancel", Button).focus()
        if self.refused:
            self._show_refusal()

    # ---- decisions

    def confirmable(self) -> bool:
        if self.drift or self.refused:
            return False
        if self.needs_typed_id:
            return self.query_one("#resume-typed-id", Input).value.strip() == self.plan.call_id
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "confirm":
            # a typed-id dialog keeps `y` live so a premature `y` can say what is missing
            if self.drift or self.refused:
                return False
            return True if self.confirmable() or self.needs_typed_id else None
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "resume-typed-id":
            buttons = self.query("#resume-confirm")
            if buttons:
                buttons.first(Button).disabled = not self.confirmable()
            self.refresh_bindings()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the typed-id field moves to Resume once the id is right (a second
        Enter, or y, confirms): never a send from the field itself."""
        event.stop()
        if event.input.id != "resume-typed-id":
            return
        if self.confirmable():
            self.query_one("#resume-confirm", Button).focus()
        elif self.needs_typed_id and not self.refused:
            self._say("that is not the call id: type " + _v(self.plan.call_id))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "resume-confirm":
            self.action_confirm()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(ResumeDecision(False))

    def action_confirm(self) -> None:
        if not self.confirmable():
            if self.needs_typed_id and not self.refused:
                # and go to the field: from the focused Cancel, Enter would cancel
                self._say("type the call id first: " + _v(self.plan.call_id) +
                          " (then Enter, and Enter or y on Resume)")
                self.query_one("#resume-typed-id", Input).focus()
            return
        reason_inputs = self.query("#resume-reason")
        if reason_inputs:
            text = reason_inputs.first(Input).value.strip()
            self.reason = text or None
        self.dismiss(ResumeDecision(True, self.reason, self.send_credential()))

    def _say(self, text: str) -> None:
        show_laid_out(self.query_one("#resume-refused", Static),
            Content.assemble(("\u26a0 ", "bold $warning"), (text, "bold $warning")))

    def evidence_changed(self, why: str) -> None:
        """The ledger moved under the modal: refuse, and say why (now or once shown)."""
        self.refused = why
        if self.is_mounted:
            self._show_refusal()

    def _show_refusal(self) -> None:
        why = self.refused or ""
        show_laid_out(self.query_one("#resume-refused", Static),
            Content.assemble(("\u2716 evidence changed: ", "bold $error"), _v(why),
                             " \u2014 resume refused; cancel and look again.")
        )
        for button in self.query("#resume-confirm"):
            button.remove()
        self.query_one("#resume-cancel", Button).focus()
        self.refresh_bindings()
