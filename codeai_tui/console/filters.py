"""One filter semantics for every pane.

A filter is case-insensitive; its words must all appear (in any order) in the text a
row shows, plus the words an operator would search for that the row only implies
("effect unknown" on a call in effect_unknown). The same function filters the cases,
tasks, calls, compilations and receipts panes and the timeline scan.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from codeai_tui.ledger import Event
from codeai_tui.workstate import CallState


@dataclass(frozen=True, slots=True)
class Needle:
    """What the operator typed, normalised once."""

    text: str

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(self.text.lower().split())

    def __bool__(self) -> bool:
        return bool(self.words)

    def matches(self, fields: Iterable[str]) -> bool:
        hay = " ".join(fields).lower()
        return all(word in hay for word in self.words)


def parse(text: str) -> Needle | None:
    """None for a blank filter (blank means: no filter)."""
    needle = Needle(text.strip())
    return needle if needle else None


def call_fields(call: CallState) -> tuple[str, ...]:
    return (call.call_id, call.idempotency_key or "", call.stage.value,
            call.next_operation.value, call.provider_effect.value, call.task_id,
            call.superseded_by or "", call.resumed_from or "",
            "effect unknown duplicate risk" if call.effect_unknown else "",
            "resumable" if call.resumable else "")


def event_fields(ev: Event) -> tuple[str, ...]:
    return (str(ev.seq), ev.kind, ev.task_id, ev.call_id or "", ev.attempt_id or "",
            ev.compilation_id or "", ev.recorded_at)
