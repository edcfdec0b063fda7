"""How bad a state is, for "worst state" summaries: presentation, not projection."""

from __future__ import annotations

from dataclasses import dataclass

from codeai_tui.workstate import CallStage, CallState, WorkState

# higher is worse
SEVERITY: dict[str, int] = {
    CallStage.EFFECT_UNKNOWN: 5,
    CallStage.PREPARATION_FAILED: 3,
    CallStage.OBSERVED: 2,
    CallStage.INTERPRETED: 2,
    CallStage.RETRY_DECIDED: 2,
    CallStage.ATTEMPT_COMPLETED: 2,
    CallStage.REQUESTED: 1,
    CallStage.MANIFEST_RECORDED: 1,
    CallStage.COMPLETED: 0,
    CallStage.SUPERSEDED: 0,
}


@dataclass(frozen=True, slots=True)
class Worst:
    """A case's worst state, for the Cases pane (higher severity is worse)."""

    label: str
    severity: int
    effect_unknown: int = 0  # how many calls; `e` uses it to find the next case with one


def worst_state(state: WorkState) -> Worst:
    label, severity = _worst_label(state)
    return Worst(label, severity, state.effect_unknown_count)


def _worst_label(state: WorkState) -> tuple[str, int]:
    if state.receipts.duplicates:
        return ("duplicate effect", 7)
    if state.receipts.uncovered:
        return ("uncovered effect", 6)
    if state.effect_unknown_count:  # the only stage of severity 5: no pass over the calls
        return ("effect unknown", 5)
    if state.anomalies:
        return ("anomalies", 4)
    worst: CallState | None = None
    for call in state.calls:
        if worst is None or SEVERITY.get(call.stage, 0) > SEVERITY.get(worst.stage, 0):
            worst = call
    if worst is not None and worst.stage is CallStage.EFFECT_UNKNOWN:
        return ("effect unknown", 5)
    if state.anomalies:
        return ("anomalies", 4)
    if worst is None:
        return ("no calls", 0)
    return (worst.stage.value, SEVERITY.get(worst.stage, 0))
