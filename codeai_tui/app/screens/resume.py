"""The resume confirmation: everything the operator must see, Cancel focused.

Drift: there is no confirm button at all. Rung 4 (no manifest): no drift check is
possible, so the operator types the call id. The decision is pinned to the plan shown:
if the call's evidence changes while the modal is open, the modal says so and refuses.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from codeai_tui.textsafe import visible


def _v(value: Any) -> str:
    return visible(value if value is not None else "\u2014 none recorded", one_line=True,
                   limit=120)


class ResumeModal(ModalScreen[bool]):
    CSS_PATH = "resume.tcss"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="resume.cancel_escape"),
        Binding("n", "cancel", "Cancel", id="resume.cancel"),
        Binding("y", "confirm", "Confirm", id="resume.confirm"),
    ]

    def __init__(self, plan: Any) -> None:
        super().__init__()
        self.plan = plan
        self.reason: str | None = None
        self.refused: str | None = None

    # ---- what the operator sees

    @property
    def drift(self) -> bool:
        return bool(self.plan.drift_check_possible and self.plan.drift)

    @property
    def needs_typed_id(self) -> bool:
        return not self.plan.drift_check_possible

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
            yield Static(
                Content.assemble(
                    ("call id                   ", "bold"), _v(plan.call_id), "\n",
                    ("idempotency key           ", "bold"), _v(plan.idempotency_key), "\n",
                    ("stage                     ", "bold"), _v(getattr(plan.stage, "value", plan.stage)),
                ),
                classes="pair",
            )
            yield self._pair("model", plan.model_recorded, plan.model_configured)
            yield self._pair("request sha256", plan.request_sha256_recorded,
                             plan.request_sha256_rebuilt)
            yield self._pair("context package", plan.context_package_recorded,
                             plan.context_package_now)
            yield self._pair("rendered context sha256", plan.rendered_sha256_recorded,
                             plan.rendered_sha256_now)
            dest = plan.destination
            yield Static(
                Content.assemble(
                    ("destination               ", "bold"), _v(dest.base_url),
                    f"  (from {dest.base_url_from})", "\n",
                    ("credential                ", "bold"),
                    _v(dest.credential_line(send=dest.trusted)),
                ),
                classes="pair", id="resume-destination",
            )
            yield Static(self._verdict(), id="resume-verdict")
            if self.needs_typed_id:
                yield Input(placeholder="type the call id to confirm", id="resume-typed-id")
            if not self.drift:
                yield Input(placeholder="reason (optional, recorded in call.resumed)",
                            id="resume-reason", max_length=300)
            yield Static("", id="resume-refused")
            with Horizontal(id="resume-buttons"):
                yield Button("Cancel (n / esc)", id="resume-cancel", variant="primary")
                if not self.drift:
                    yield Button("Resume (y)", id="resume-confirm", variant="error",
                                 disabled=self.needs_typed_id)

    def _verdict(self) -> Content:
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
                "refused. Fix the configuration or inputs first.",
            ]
            for line in plan.drift:
                parts += ["\n  \u2022 ", (_v(line), "$error")]
            return Content.assemble(*parts)
        return Content.assemble(
            ("\u2714 match", "bold $success"),
            ": the request rebuilt now is the one recorded; nothing was sent before.",
        )

    def on_mount(self) -> None:
        self.query_one("#resume-cancel", Button).focus()

    # ---- decisions

    def confirmable(self) -> bool:
        if self.drift or self.refused:
            return False
        if self.needs_typed_id:
            return self.query_one("#resume-typed-id", Input).value.strip() == self.plan.call_id
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "confirm":
            return True if self.confirmable() else (None if not self.drift else False)
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "resume-typed-id":
            buttons = self.query("#resume-confirm")
            if buttons:
                buttons.first(Button).disabled = not self.confirmable()
            self.refresh_bindings()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "resume-confirm":
            self.action_confirm()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(False)

    def action_confirm(self) -> None:
        if not self.confirmable():
            return
        reason_inputs = self.query("#resume-reason")
        if reason_inputs:
            text = reason_inputs.first(Input).value.strip()
            self.reason = text or None
        self.dismiss(True)

    def evidence_changed(self, why: str) -> None:
        """The ledger moved under the modal: refuse, and say why."""
        self.refused = why
        self.query_one("#resume-refused", Static).update(
            Content.assemble(("\u2716 evidence changed: ", "bold $error"), _v(why),
                             " \u2014 resume refused; cancel and look again.")
        )
        for button in self.query("#resume-confirm"):
            button.remove()
        self.query_one("#resume-cancel", Button).focus()
        self.refresh_bindings()
