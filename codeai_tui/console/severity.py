"""How bad a state is: worst-state summaries (presentation, not projection).

`worst_state` is the call-stage summary kept from before; `case_verdict` is what the
Cases pane shows: a case's worst next operation of any kind, so a task that needs
repeat_acceptance or a compilation that needs recompile is not "completed" and not "no
calls". The counts feed the bundle header.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from codeai_tui.workstate import CallStage, CallState, NextOperation, WorkState

# higher is worse
SEVERITY: dict[str, int] = {
    CallStage.EFFECT_UNKNOWN: 5,
    CallStage.RECONCILED_RECEIVED: 4,  # a decision about a duplicate is pending
    CallStage.PREPARATION_FAILED: 3,
    CallStage.RECONCILED_NOT_RECEIVED: 2,
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


# Higher is worse. Receipt problems and effect_unknown outrank everything: a request may
# have reached the provider. Then what needs a human decision, then what is safe to redo.
OPERATION_RANK: dict[NextOperation, int] = {
    NextOperation.RECONCILE_EFFECT: 70,
    # the effect happened and its response is lost: a person decides (finalize, or
    # accept a duplicate); never "all done"
    NextOperation.DECIDE_DUPLICATE: 65,
    NextOperation.FIX_INPUTS: 50,
    NextOperation.REPEAT_ACCEPTANCE: 45,
    NextOperation.REINTERPRET: 40,
    NextOperation.REDECIDE: 40,
    NextOperation.START_NEXT_ATTEMPT: 40,
    NextOperation.FINALIZE: 40,
    NextOperation.START_CALL: 30,
    NextOperation.START_TOOL: 30,  # safe: replay from the saved response (docs/tools.md)
    NextOperation.RECOMPILE: 30,
    NextOperation.CHECK_AND_ACCEPT: 20,
    NextOperation.NONE: 0,
}
# a start_call that resume refuses for drift needs the operator to fix the configuration
# first (like fix_inputs); the label is the Calls pane's own words
RANK_DRIFT = OPERATION_RANK[NextOperation.FIX_INPUTS]
DRIFT_LABEL = "\u2716 drift: resume refuses"
RANK_DUPLICATE = 90
RANK_UNCOVERED = 80
RANK_ANOMALY = 60
RANK_UNREADABLE = 100


@dataclass(frozen=True, slots=True)
class CaseVerdict:
    """One line about one case: its worst next operation and the counts behind it."""

    label: str  # the kind: "anomalies", "effect unknown", "start_call (call call-1)", ...
    rank: int
    detail: str = ""  # "×2", or why the case is unreadable
    effect_unknown: int = 0
    duplicates: int = 0
    uncovered: int = 0
    anomalies: int = 0
    event_count: int = 0
    tool_effect_unknown: int = 0  # tool operations admitted without an outcome (docs/tools.md)

    @property
    def alarming(self) -> bool:
        """A provider or tool effect may have happened unaccounted for (an error)."""
        return (self.rank >= RANK_ANOMALY or self.effect_unknown > 0
                or self.tool_effect_unknown > 0)

    @property
    def line(self) -> str:
        """What the Cases pane shows."""
        return f"{self.label} {self.detail}" if self.detail else self.label


def case_verdict(state: WorkState, event_count: int,
                 drifted: Collection[str] = ()) -> CaseVerdict:
    """Worst of: receipt problems, effect_unknown, anomalies, then every call's, task's
    and compilation's next operation (the subject named). `drifted`: calls whose drift
    check ran and refuses: their start_call reads as the drift, never as start_call."""
    unknown = state.effect_unknown_count
    dups = len(state.receipts.duplicates)
    uncovered = len(state.receipts.uncovered)
    anomalies = len(state.anomalies)
    tool_unknown = state.tool_effect_unknown_count
    counts = dict(effect_unknown=unknown, duplicates=dups, uncovered=uncovered,
                  anomalies=anomalies, event_count=event_count,
                  tool_effect_unknown=tool_unknown)
    if dups:
        return CaseVerdict("duplicate effect", RANK_DUPLICATE, f"\u00d7{dups}", **counts)
    if uncovered:
        return CaseVerdict("uncovered effect", RANK_UNCOVERED, f"\u00d7{uncovered}", **counts)
    if unknown:
        return CaseVerdict("effect unknown", OPERATION_RANK[NextOperation.RECONCILE_EFFECT],
                           f"\u00d7{unknown}", **counts)
    if tool_unknown:
        return CaseVerdict("tool effect unknown",
                           OPERATION_RANK[NextOperation.RECONCILE_EFFECT],
                           f"\u00d7{tool_unknown}", **counts)
    if anomalies:
        return CaseVerdict("anomalies", RANK_ANOMALY, f"\u00d7{anomalies}", **counts)
    best: tuple[int, str] = (0, "")
    for kind, subject, op in _operations(state):
        if kind == "call" and op is NextOperation.START_CALL and subject in drifted:
            if best[0] < RANK_DRIFT:
                best = (RANK_DRIFT, f"{DRIFT_LABEL} (call {subject})")
            continue
        rank = OPERATION_RANK.get(op, 0)
        if rank > best[0]:
            best = (rank, f"{op.value} ({kind} {subject})")
    if best[0]:
        return CaseVerdict(best[1], best[0], **counts)
    if not state.calls and not state.tasks and not state.compilations:
        return CaseVerdict("empty", 0, **counts)
    return CaseVerdict("all done", 0, **counts)


def _operations(state: WorkState) -> Iterable[tuple[str, str, NextOperation]]:
    """Every next operation in order (calls with their tool operations, compilations,
    tasks). A call with nothing to do would rank 0, which never wins: only the pending
    ones are read, so a case of 10^5 finished calls costs no pass over them."""
    for call in state.pending_calls():
        yield "call", call.call_id, call.next_operation
        tools = call.tools  # None for a call without tool evidence
        for op in tools.operations if tools is not None else ():
            yield "tool", op.subject, op.next_operation
    for comp in state.compilations:
        yield "compilation", comp.compilation_id, comp.next_operation
    for task in state.tasks:
        yield "task", task.task_id, task.next_operation


def unreadable_verdict(problem: str) -> CaseVerdict:
    """`problem`: the reader's one line (shown in Detail; the pane says "unreadable")."""
    return CaseVerdict("unreadable", RANK_UNREADABLE, problem)


@dataclass(frozen=True, slots=True)
class FleetCounts:
    """Across a bundle's cases: how many cases have each kind of trouble."""

    cases: int
    known: int
    effect_unknown: int
    duplicates: int
    uncovered: int
    anomalies: int
    unreadable: int

    def line(self) -> str:
        """'2 of 10 cases have effect-unknown calls · ...' (pending cases named)."""
        parts = [f"{self.effect_unknown} of {self.cases} cases have effect-unknown calls",
                 f"{self.duplicates} with duplicate effects",
                 f"{self.uncovered} with uncovered receipts",
                 f"{self.anomalies} with anomalies"]
        if self.unreadable:
            parts.append(f"{self.unreadable} unreadable")
        if self.known < self.cases:
            parts.append(f"{self.cases - self.known} still projecting")
        return " \u00b7 ".join(parts)

    def short_line(self) -> str:
        """The same counts in words that fit 80 columns."""
        line = (f"{self.effect_unknown}/{self.cases} cases effect-unknown \u00b7 "
                f"{self.duplicates} dup \u00b7 {self.uncovered} uncovered \u00b7 "
                f"{self.anomalies} anomalies")
        if self.known < self.cases:
            line += f" \u00b7 {self.cases - self.known} pending"
        return line

    @property
    def alarming(self) -> bool:
        return bool(self.effect_unknown or self.duplicates or self.uncovered)


def fleet_counts(verdicts: Iterable[CaseVerdict | None]) -> FleetCounts:
    items = list(verdicts)
    known = [v for v in items if v is not None]
    return FleetCounts(
        cases=len(items), known=len(known),
        effect_unknown=sum(1 for v in known if v.effect_unknown or v.tool_effect_unknown),
        duplicates=sum(1 for v in known if v.duplicates),
        uncovered=sum(1 for v in known if v.uncovered),
        anomalies=sum(1 for v in known if v.anomalies),
        unreadable=sum(1 for v in known if v.rank >= RANK_UNREADABLE),
    )
