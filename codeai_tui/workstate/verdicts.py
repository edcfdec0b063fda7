"""Verdicts: immutable snapshots handed to the console, `inspect` and resume.

A CallState keeps the evidence it was derived from so that its one-line reason is worded
only when asked (stored as text it was a third of the projection's memory at 10^5
calls). The projectors never mutate evidence a verdict holds: they fold later events
into a copy (copy on write), so a verdict already handed out never changes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from codeai_tui.ledger.receipts import Receipt, Receipts
from codeai_tui.workstate.evidence import (
    Anomaly,
    CallEvidence,
    ReceiptIndex,
    call_receipt_evidence,
)
from codeai_tui.workstate.reasons import call_reason, receipt_phrase
from codeai_tui.workstate.tool_ops import ToolsState, classify_tools
from codeai_tui.workstate.tool_receipts import ToolReceipts
from codeai_tui.workstate.vocab import (
    WORK_STATE_FORMAT,
    WORK_STATE_SCHEMA,
    CallStage,
    CompilationStage,
    NextOperation,
    ProviderEffect,
)


@dataclass(frozen=True, slots=True)
class CallVerdict:
    """What the ladder decided for a call. Few combinations exist, so each is one shared
    object (`CallState` holds it): 32 bytes fewer per call than five fields each."""

    stage: CallStage
    next_operation: NextOperation
    provider_effect: ProviderEffect
    duplicate_effect_risk: bool
    anomalous: bool
    # the three words as plain text, read once per shared verdict (a document of 10^5
    # calls asked each enum for its value three times a call)
    words: tuple[str, str, str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "words", (self.stage.value, self.next_operation.value,
                                           self.provider_effect.value))


_VERDICTS: dict[tuple[CallStage, NextOperation, ProviderEffect, bool, bool], CallVerdict] = {}


class CallState:
    """One call's verdict. Only what the ladder decided is stored (one shared
    `CallVerdict`); the facts it was decided from (ids, seqs, counts) are read from the
    evidence it holds, which is never mutated once classified: 14 slots fewer per call
    than every fact as a field (11 MB at 10^5 calls). Immutable."""

    __slots__ = ("evidence", "verdict")
    verdict: CallVerdict
    evidence: CallEvidence

    def __init__(self, stage: CallStage, next_operation: NextOperation,
                 provider_effect: ProviderEffect, duplicate_effect_risk: bool,
                 anomalous: bool, evidence: CallEvidence) -> None:
        key = (stage, next_operation, provider_effect, duplicate_effect_risk, anomalous)
        verdict = _VERDICTS.get(key)
        if verdict is None:
            verdict = _VERDICTS[key] = CallVerdict(*key)
        object.__setattr__(self, "verdict", verdict)
        object.__setattr__(self, "evidence", evidence)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CallState is immutable (cannot set {name})")

    def __reduce__(self) -> tuple[type[CallState], tuple[object, ...]]:
        """Pickled by its constructor's arguments (a helper process hands verdicts back:
        services/forked.py); the default would set slots the class refuses to set."""
        v = self.verdict
        return (CallState, (v.stage, v.next_operation, v.provider_effect,
                            v.duplicate_effect_risk, v.anomalous, self.evidence))

    def with_anomalous(self, anomalous: bool) -> CallState:
        """The same verdict, flagged (or not) as anomalous."""
        v = self.verdict
        return CallState(v.stage, v.next_operation, v.provider_effect,
                         v.duplicate_effect_risk, anomalous, self.evidence)

    @property
    def stage(self) -> CallStage:
        return self.verdict.stage

    @property
    def next_operation(self) -> NextOperation:
        return self.verdict.next_operation

    @property
    def provider_effect(self) -> ProviderEffect:
        return self.verdict.provider_effect

    @property
    def duplicate_effect_risk(self) -> bool:
        return self.verdict.duplicate_effect_risk

    @property
    def anomalous(self) -> bool:
        return self.verdict.anomalous

    @property
    def call_id(self) -> str:
        return self.evidence.call_id

    @property
    def task_id(self) -> str:
        return self.evidence.task_id

    @property
    def idempotency_key(self) -> str | None:
        return self.evidence.key

    @property
    def attempts(self) -> int:
        """How many attempts started (evidence of an attempt that never started is not one)."""
        return sum(1 for a in self.evidence.attempts if a.started_seq is not None)

    @property
    def superseded_by(self) -> str | None:
        ev = self.evidence
        return ev.resumed_as if ev.resumed_seq is not None else None

    @property
    def resumed_from(self) -> str | None:
        return self.evidence.resumed_from

    @property
    def status(self) -> str | None:
        return self.evidence.status

    @property
    def first_seq(self) -> int:
        return self.evidence.first_seq

    @property
    def last_seq(self) -> int:
        return self.evidence.last_seq

    @property
    def has_manifest(self) -> bool:
        return self.evidence.manifest_seq is not None

    @property
    def completed_seq(self) -> int | None:
        return self.evidence.completed_seq

    @property
    def has_tools(self) -> bool:
        """The call holds tool evidence (then `tools` judges it)."""
        return self.evidence.tools is not None

    def _compared(self) -> tuple[object, ...]:
        """What two verdicts must share to be equal: the verdict and the facts it names
        (not the evidence object: the fast path and the oracle fold separate ones)."""
        return (self.call_id, self.task_id, self.idempotency_key, self.stage,
                self.next_operation, self.provider_effect, self.duplicate_effect_risk,
                self.attempts, self.superseded_by, self.resumed_from, self.status,
                self.first_seq, self.last_seq, self.has_manifest, self.anomalous)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CallState):
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())

    def __repr__(self) -> str:
        return (f"CallState(call_id={self.call_id!r}, stage={self.stage.value}, "
                f"next_operation={self.next_operation.value}, "
                f"provider_effect={self.provider_effect.value}, anomalous={self.anomalous})")

    @property
    def reason(self) -> str:
        """One line naming the evidence behind this verdict."""
        return call_reason(self.evidence, self.stage)

    @property
    def effect_unknown(self) -> bool:
        return self.stage is CallStage.EFFECT_UNKNOWN

    @property
    def tools(self) -> ToolsState | None:
        """The tool rungs (docs/tools.md), judged from the evidence when asked: None for
        a call with no tool evidence (every v1 call)."""
        return classify_tools(self.evidence) if self.has_tools else None

    @property
    def needs_a_look(self) -> bool:
        """What `e` stops at: the effect is unknown, or a tool operation was admitted
        without an outcome (the tool's effect is unknown: docs/tools.md)."""
        if self.effect_unknown:
            return True
        tools = self.tools
        return tools is not None and tools.effect_unknown_count > 0

    @property
    def resumable(self) -> bool:
        """The projection permits resume: rung 4 or 5, not superseded, no anomaly."""
        return (
            self.next_operation is NextOperation.START_CALL
            and self.stage in (CallStage.REQUESTED, CallStage.MANIFEST_RECORDED)
            and self.superseded_by is None
            and not self.anomalous
        )

    @property
    def settled(self) -> bool:
        """Nothing is left to do: next operation none and no tool operations (a call
        holding some may still have one pending)."""
        return self.next_operation is NextOperation.NONE and not self.has_tools

    def reason_with(self, receipts: ReceiptIndex | None) -> str:
        """The reason with what the provider's log says about the verdict's attempt."""
        base = self.reason
        phrase = receipt_phrase(self.evidence, receipts) if receipts is not None else None
        return f"{base}; {phrase}" if phrase else base

    def as_json(self, receipts: ReceiptIndex | None = None,
                tool_receipts: ToolReceipts | None = None, *,
                limit: int | None = None) -> dict[str, Any]:
        """Section 7's fields; with `receipts` (the log as of the same cut-off) also the
        matching receipts per attempt under `evidence`, and the reason names them. A call
        with tool evidence adds `tools` (plan, operations, receipt verdicts against
        `tool_receipts`); a v1 call's document is exactly as before. `limit`: the
        evidence lists at most that many attempts and receipts (see
        `call_receipt_evidence`), and `tools` is left out (the caller shows it).
        (Read once per call of a whole document: the evidence and the verdict's words
        are read here directly, and the started attempts and their receipts once for
        both the reason and the evidence.)"""
        ev = self.evidence
        verdict = self.verdict
        stage, next_operation, effect = verdict.words
        started = ev.started_attempts()
        reason = call_reason(ev, verdict.stage)
        evidence: dict[str, Any] | None = None
        if receipts is not None:
            found: dict[str, tuple[tuple[str, str], ...]] = {}
            evidence = call_receipt_evidence(ev, receipts, limit, started, found)
            phrase = receipt_phrase(ev, receipts, found)
            if phrase:
                reason = f"{reason}; {phrase}"
        rare = ev.rare  # (None: no resume fields set, both read as None)
        doc = {
            "call_id": ev.call_id,
            "task_id": ev.task_id,
            "idempotency_key": ev.key,
            "stage": stage,
            "next_operation": next_operation,
            "provider_effect": effect,
            "duplicate_effect_risk": verdict.duplicate_effect_risk,
            "attempts": len(started),
            "superseded_by": None if rare is None else self.superseded_by,
            "resumed_from": None if rare is None else ev.resumed_from,
            "status": ev.status,
            "reason": reason,
        }
        if evidence is not None:
            doc["evidence"] = evidence
        tools = classify_tools(ev) if limit is None and ev.tools is not None else None
        if tools is not None:
            doc["tools"] = tools.as_json(tool_receipts)
        return doc


@dataclass(frozen=True, slots=True)
class CompilationState:
    compilation_id: str
    task_id: str
    stage: CompilationStage
    next_operation: NextOperation
    offered: tuple[dict[str, Any], ...]
    required_ids: tuple[str, ...]
    missing_required: tuple[str, ...]
    error: dict[str, Any] | None
    package_id: str | None
    rendered_sha256: str | None
    reason: str
    first_seq: int
    last_seq: int

    def as_json(self) -> dict[str, Any]:
        return {
            "compilation_id": self.compilation_id,
            "task_id": self.task_id,
            "stage": self.stage.value,
            "next_operation": self.next_operation.value,
            "offered": list(self.offered),
            "required_ids": list(self.required_ids),
            "missing_required": list(self.missing_required),
            "error": self.error,
        }


class Reasoned:
    """What has a one-line `reason` (an unresolved call, compilation or tool operation)."""

    reason: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class TaskState:
    """A task's verdict. `because`: its reason, or the unresolved entity (a verdict,
    never changed once made) whose reason follows the subject's id: worded when read,
    as a call's own reason is, not kept as text for every task (~220 bytes a task
    that waits on a call in flight)."""

    task_id: str
    next_operation: NextOperation
    subject_id: str | None
    because: str | Reasoned
    title: str | None
    first_seq: int
    last_seq: int
    # the planning call whose tool operations are all done and whose turn goes on with a
    # follow-up call not yet recorded (next start_call, no subject): the console offers
    # replay on that call to record it; not part of the document
    follow_up_of: str | None = None

    @property
    def reason(self) -> str:
        why = self.because
        return why if type(why) is str else f"{self.subject_id}: {why.reason}"  # type: ignore[union-attr]

    def _facts(self) -> tuple[object, ...]:
        return (self.task_id, self.next_operation, self.subject_id, self.reason, self.title,
                self.first_seq, self.last_seq, self.follow_up_of)

    def __eq__(self, other: object) -> bool:
        # (a verdict read from columns, `task_columns.ColumnTaskState`, equals the one
        # judged as objects from the same evidence)
        if not isinstance(other, TaskState):
            return NotImplemented
        return self._facts() == other._facts()

    def __hash__(self) -> int:
        return hash(self._facts())

    def __repr__(self) -> str:
        return "TaskState(" + ", ".join(
            f"{name}={value!r}" for name, value in zip(
                ("task_id", "next_operation", "subject_id", "reason", "title", "first_seq",
                 "last_seq", "follow_up_of"), self._facts(), strict=True)) + ")"

    def __reduce__(self) -> tuple[type[TaskState], tuple[object, ...]]:
        # (another process gets the text, not the entity and its evidence)
        return (TaskState, self._facts())

    def as_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "next_operation": self.next_operation.value,
            "subject_id": self.subject_id,
            "reason": self.reason,
        }


class Covers(Mapping[str, "str | None"]):
    """The attempt that covers each receipt of a log (its id, or None), by the receipt's
    place in the log: a column beside the log's. A dict by receipt id cost ~36
    bytes per receipt and kept each id as a str of its own (10 MB at 143,904 receipts,
    for as long as a console is open). As a mapping: receipt id -> the cover of the last
    receipt with that id, indexed when first read that way (the console reads by
    receipt, `of`)."""

    __slots__ = ("_by_id", "attempts", "receipts")

    def __init__(self, receipts: Receipts, attempts: Sequence[str | None]) -> None:
        self.receipts = receipts
        self.attempts = attempts  # by position in `receipts`
        self._by_id: dict[str, int] | None = None

    def of(self, receipt: Receipt) -> str | None:
        """The attempt covering this receipt of the log (None: uncovered, or not in it)."""
        at = self.receipts.position_of(receipt)
        return None if at is None else self.attempts[at]

    def _index(self) -> dict[str, int]:
        if self._by_id is None:
            self._by_id = {rid: i for i, rid in enumerate(self.receipts.ids)}
        return self._by_id

    def __getitem__(self, receipt_id: str) -> str | None:
        return self.attempts[self._index()[receipt_id]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._index())

    def __len__(self) -> int:
        return len(self._index())

    def __repr__(self) -> str:
        return f"Covers({len(self.attempts)} receipts)"


@dataclass(frozen=True, slots=True)
class ReceiptCheck:
    count: int
    uncovered: tuple[str, ...]
    duplicates: Sequence[tuple[str, ...]]  # each group of receipt ids, in log order
    covered_by: Covers  # which attempt covers each receipt
    problems: tuple[tuple[int, str], ...] = ()
    log_present: bool = False
    index: ReceiptIndex | None = field(default=None, compare=False, repr=False)

    def as_json(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "uncovered": list(self.uncovered),
            "duplicates": [list(d) for d in self.duplicates],
        }


@dataclass(frozen=True, slots=True)
class WorkState:
    as_of_seq: int
    event_count: int
    anomalies: tuple[Anomaly, ...]
    unknown_kinds: dict[str, int]
    tasks: tuple[TaskState, ...]
    calls: tuple[CallState, ...]
    compilations: tuple[CompilationState, ...]
    receipts: ReceiptCheck
    # how the evidence was gathered: "sql" (grouped reads through the covering index)
    # or "events" (event by event), with why when the fast path was not taken
    gathered: str = field(default="events", compare=False)
    # the effect-unknown calls' ids when the projector keeps them (else counted on demand)
    effect_unknown_ids: AbstractSet[str] | None = field(default=None, compare=False, repr=False)
    # kept by the incremental projector (else found by a pass over the calls): the
    # positions in `calls` of the resumable calls, and the count of tool operations
    # whose effect is unknown
    resumable_positions: tuple[int, ...] | None = field(default=None, compare=False,
                                                        repr=False)
    tool_effect_unknown_tally: int | None = field(default=None, compare=False, repr=False)
    # the positions of the calls with something to do (see `pending_calls`), when kept
    # (rising; an array of the snapshot's own while following: 4 bytes a position)
    pending_positions: Sequence[int] | None = field(default=None, compare=False, repr=False)
    # the positions of the calls `e` stops at when kept (rising): effect unknown, or
    # holding a tool operation whose effect is unknown (see `positions_to_look`)
    look_positions: Sequence[int] | None = field(default=None, compare=False, repr=False)
    # the case's tool receipts and trusted key, read by the services (docs/tools.md)
    tool_receipts: ToolReceipts | None = field(default=None, compare=False, repr=False)

    def call(self, call_id: str) -> CallState | None:
        return next((c for c in self.calls if c.call_id == call_id), None)

    def compilation(self, compilation_id: str) -> CompilationState | None:
        return next((c for c in self.compilations if c.compilation_id == compilation_id), None)

    def task(self, task_id: str) -> TaskState | None:
        return next((t for t in self.tasks if t.task_id == task_id), None)

    @property
    def effect_unknown_count(self) -> int:
        if self.effect_unknown_ids is not None:
            return len(self.effect_unknown_ids)
        return sum(1 for c in self.calls if c.effect_unknown)

    def effect_unknown_set(self) -> AbstractSet[str]:
        """The effect-unknown calls' ids: kept, or found by a pass over the calls."""
        if self.effect_unknown_ids is not None:
            return self.effect_unknown_ids
        return frozenset(c.call_id for c in self.calls if c.effect_unknown)

    def resumable_calls(self) -> Iterator[CallState]:
        """The calls the projection lets resume (`CallState.resumable`), in order."""
        if self.resumable_positions is not None:
            return (self.calls[p] for p in self.resumable_positions)
        return (c for c in self.calls if c.resumable)

    def pending_calls(self) -> Iterator[CallState]:
        """In order, every call whose next operation is not none or that holds tool
        operations (theirs may be pending); the others have nothing left to do."""
        if self.pending_positions is not None:
            return (self.calls[p] for p in self.pending_positions)
        return (c for c in self.calls if not c.settled)

    def positions_to_look(self) -> Sequence[int]:
        """Rising, the positions of the calls an operator must look at: effect unknown,
        or holding a tool operation admitted without an outcome. Kept by the
        incremental projector; else a pass over the calls."""
        if self.look_positions is not None:
            return self.look_positions
        return [i for i, c in enumerate(self.calls) if c.needs_a_look]

    @property
    def tool_effect_unknown_count(self) -> int:
        """Tool operations admitted without an outcome (docs/tools.md)."""
        if self.tool_effect_unknown_tally is not None:
            return self.tool_effect_unknown_tally
        return sum(t.effect_unknown_count for c in self.calls
                   if c.has_tools and (t := c.tools) is not None)

    def as_json(self, case: str) -> dict[str, Any]:
        doc = document_head(case, self.as_of_seq, self.event_count) | {
            "anomalies": [a.as_json() for a in self.anomalies],
            "tasks": [t.as_json() for t in self.tasks],
            "calls": [c.as_json(self.receipts.index, self.tool_receipts) for c in self.calls],
            "compilations": [c.as_json() for c in self.compilations],
            "receipts": self.receipts.as_json(),
        }
        counts = ToolCounts()
        for c in self.calls:
            counts.add(c)
        return counts.into(doc)

    def iter_call_json(self) -> Iterator[dict[str, Any]]:
        for c in self.calls:
            yield c.as_json(self.receipts.index, self.tool_receipts)


@dataclass(slots=True)
class ToolCounts:
    """The document's `counts` (only when a call has tool evidence, so a v1 document is
    unchanged): effect-unknown calls and tool operations, and operations by state."""

    calls_effect_unknown: int = 0
    tool_calls: int = 0
    operations: int = 0
    tool_effect_unknown: int = 0
    start_tool: int = 0

    def add(self, call: CallState) -> None:
        self.calls_effect_unknown += call.verdict.stage is CallStage.EFFECT_UNKNOWN
        if call.evidence.tools is None:  # (every v1 call: nothing to judge)
            return
        tools = call.tools
        if tools is None:
            return
        self.tool_calls += 1
        self.operations += len(tools.operations)
        self.tool_effect_unknown += tools.effect_unknown_count
        self.start_tool += sum(1 for o in tools.operations
                               if o.next_operation is NextOperation.START_TOOL)

    def merge(self, other: ToolCounts) -> None:
        """Add counts kept over other calls."""
        self.calls_effect_unknown += other.calls_effect_unknown
        self.tool_calls += other.tool_calls
        self.operations += other.operations
        self.tool_effect_unknown += other.tool_effect_unknown
        self.start_tool += other.start_tool

    def into(self, doc: dict[str, Any]) -> dict[str, Any]:
        if self.tool_calls:
            doc["counts"] = {
                "effect_unknown": self.calls_effect_unknown + self.tool_effect_unknown,
                "effect_unknown_calls": self.calls_effect_unknown,
                "effect_unknown_tool_operations": self.tool_effect_unknown,
                "tool_operations": self.operations,
                "start_tool": self.start_tool,
            }
        return doc


def document_head(case: str, as_of_seq: int, event_count: int) -> dict[str, Any]:
    """The fields a case's document opens with: the schema it follows, the format, what
    was projected."""
    return {"$schema": WORK_STATE_SCHEMA, "format": WORK_STATE_FORMAT, "case": case,
            "as_of_seq": as_of_seq, "event_count": event_count}
