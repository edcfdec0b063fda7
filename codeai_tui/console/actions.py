"""What the operator did this session, kept.

Toasts vanish; this log does not. Every resume, reconcile, refusal, cancellation and alert goes
here with its time, case and call; the console shows it (`a`) and prints `summary()`
on exit.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

# what an action says when it needs a selected call and there is none
SELECT_A_CALL = "select a call first (3 focuses Calls)"


class Outcome(StrEnum):
    RESUMED = "resumed"
    ADVANCED = "advanced"  # reinterpret / redecide / finalize / next attempt
    RECONCILED = "reconciled"
    REPLAYED = "replayed"  # a saved tool plan ran from the console (no provider)
    REFUSED = "refused"
    FAILED = "failed"
    CANCELLED = "cancelled"
    CONFIRMED = "confirmed"
    ALERT = "alert"


@dataclass(frozen=True, slots=True)
class ActionEntry:
    at: datetime
    case: str
    call_id: str | None
    outcome: Outcome
    text: str


@dataclass
class ActionLog:
    entries: list[ActionEntry] = field(default_factory=list)

    def add(self, at: datetime, case: str, call_id: str | None, outcome: Outcome,
            text: str) -> ActionEntry:
        entry = ActionEntry(at, case, call_id, outcome, text)
        self.entries.append(entry)
        return entry

    def summary(self) -> str:
        """One line for the terminal after the console closes."""
        acted = [e for e in self.entries if e.outcome is not Outcome.ALERT]
        if not self.entries:
            return "codeai-tui: no actions this session (nothing was written)"
        counts = Counter(e.outcome for e in acted)
        alerts = len(self.entries) - len(acted)
        parts = [f"{n} {outcome.value}" for outcome, n in sorted(counts.items())]
        resumed = [f"{e.call_id} in {e.case}" for e in acted if e.outcome is Outcome.RESUMED]
        line = "codeai-tui: this session: " + (", ".join(parts) if parts else "no actions")
        if alerts:
            line += f"; {alerts} alert{'s' if alerts != 1 else ''}"
        if resumed:
            line += "; resumed " + ", ".join(resumed)
        reconciled = [f"{e.call_id} in {e.case}" for e in acted
                      if e.outcome is Outcome.RECONCILED]
        if reconciled:
            line += "; reconciled " + ", ".join(reconciled)
        return line
