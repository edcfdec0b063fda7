"""WORK_STATE_V1: the pure projection of a ledger (LEDGER.md section 4).

No I/O, no clock, appends nothing. Events go in (in seq order), verdicts come out, each
with a one-line reason that names its evidence. The `Projector` is incremental so a live
console can feed it only what is new; `project()` is the one-shot form. Evidence is kept
as small per-call summaries, never as the events themselves, so a million-event ledger
fits in memory.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from codeai_tui.ledger.receipts import Receipt, ReceiptLog
from codeai_tui.ledger.schema import ATTEMPT_KINDS, KNOWN_KINDS, Event

WORK_STATE_FORMAT = "codeai.work_state.v1"
_COVERAGE_KINDS = frozenset({"call.requested", "call.manifest", "attempt.started"})


class NextOperation(StrEnum):
    NONE = "none"
    START_CALL = "start_call"
    FIX_INPUTS = "fix_inputs"
    RECONCILE_EFFECT = "reconcile_effect"
    REINTERPRET = "reinterpret"
    REDECIDE = "redecide"
    START_NEXT_ATTEMPT = "start_next_attempt"
    FINALIZE = "finalize"
    RECOMPILE = "recompile"
    REPEAT_ACCEPTANCE = "repeat_acceptance"
    CHECK_AND_ACCEPT = "check_and_accept"


class CallStage(StrEnum):
    SUPERSEDED = "superseded"
    COMPLETED = "completed"
    PREPARATION_FAILED = "preparation_failed"
    REQUESTED = "requested"
    MANIFEST_RECORDED = "manifest_recorded"
    EFFECT_UNKNOWN = "effect_unknown"
    OBSERVED = "observed"
    INTERPRETED = "interpreted"
    RETRY_DECIDED = "retry_decided"
    ATTEMPT_COMPLETED = "attempt_completed"


class CompilationStage(StrEnum):
    REQUESTED = "requested"
    COMPLETED = "completed"
    FAILED = "failed"


class ProviderEffect(StrEnum):
    NONE = "none"
    UNKNOWN = "unknown"
    HAPPENED = "happened"


# How bad a state is, for "worst state" summaries (higher is worse).
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
class Anomaly:
    seq: int
    problem: str
    call_id: str | None = None
    compilation_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "problem": self.problem}


# --------------------------------------------------------------------------- evidence


@dataclass(slots=True)
class AttemptEvidence:
    attempt_id: str
    first_seq: int
    started_seq: int | None = None
    attempt_no: int | None = None
    request_sha256: str | None = None
    observed_seq: int | None = None
    interpreted_seq: int | None = None
    retry_decided_seq: int | None = None
    completed_seq: int | None = None
    transport_status: Any = None
    outcome: str | None = None
    decision: str | None = None
    status: str | None = None

    @property
    def order_seq(self) -> int:
        """The seq that orders attempts: its attempt.started, else its first event."""
        return self.started_seq if self.started_seq is not None else self.first_seq

    @property
    def has_later_evidence(self) -> bool:
        return any(
            s is not None
            for s in (
                self.observed_seq,
                self.interpreted_seq,
                self.retry_decided_seq,
                self.completed_seq,
            )
        )


@dataclass(slots=True)
class CallEvidence:
    call_id: str
    task_id: str
    first_seq: int
    position: int = -1  # order of first appearance: index in WorkState.calls
    last_seq: int = 0
    event_count: int = 0
    requested_seq: int | None = None
    idempotency_key: str | None = None
    purpose: str | None = None
    model: str | None = None
    resumed_from: str | None = None
    manifest_seq: int | None = None
    manifest_key: str | None = None
    manifest_model: str | None = None
    request_sha256: str | None = None
    context_package_id: str | None = None
    rendered_context_sha256: str | None = None
    preparation_failed_seq: int | None = None
    preparation_error: str | None = None
    completed_seq: int | None = None
    status: str | None = None
    adopted_attempt_id: str | None = None
    resumed_seq: int | None = None
    resumed_as: str | None = None
    resumed_by: str | None = None
    # a list, not a dict: calls have one to three attempts, and at 10^5 calls a dict each
    # costs 120 bytes more per call than a short list scanned by id
    attempts: list[AttemptEvidence] = field(default_factory=list)

    @property
    def key(self) -> str | None:
        return self.manifest_key or self.idempotency_key

    def last_attempt(self) -> AttemptEvidence | None:
        if not self.attempts:
            return None
        return max(self.attempts, key=lambda a: a.order_seq)

    def started_attempts(self) -> list[AttemptEvidence]:
        return sorted(
            (a for a in self.attempts if a.started_seq is not None),
            key=lambda a: a.order_seq,
        )


@dataclass(slots=True)
class CompilationEvidence:
    compilation_id: str
    task_id: str
    first_seq: int
    last_seq: int = 0
    requested_seq: int | None = None
    offered: list[dict[str, Any]] = field(default_factory=list)
    required_ids: list[str] = field(default_factory=list)
    completed_seq: int | None = None
    package_id: str | None = None
    rendered_sha256: str | None = None
    selected: list[str] = field(default_factory=list)
    failed_seq: int | None = None
    error: dict[str, Any] | None = None
    missing_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class TaskEvidence:
    task_id: str
    first_seq: int
    last_seq: int = 0
    title: str | None = None
    objective: str | None = None
    claimed_by: str | None = None
    accepted: list[tuple[int, str, str | None]] = field(default_factory=list)  # seq, acc, call
    completed: list[tuple[int, str | None]] = field(default_factory=list)  # seq, acceptance


# --------------------------------------------------------------------------- verdicts


@dataclass(frozen=True, slots=True)
class CallState:
    call_id: str
    task_id: str
    idempotency_key: str | None
    stage: CallStage
    next_operation: NextOperation
    provider_effect: ProviderEffect
    duplicate_effect_risk: bool
    attempts: int
    superseded_by: str | None
    resumed_from: str | None
    status: str | None
    first_seq: int
    last_seq: int
    has_manifest: bool
    anomalous: bool
    # The reason is worded when asked for, from the evidence the verdict came from:
    # stored as text it was a third of the projection's memory at 10^5 calls.
    evidence: CallEvidence = field(compare=False, repr=False)
    evidence_events: int = field(compare=False, repr=False)

    @property
    def reason(self) -> str:
        """One line naming the evidence behind this verdict."""
        if self.evidence.event_count != self.evidence_events:
            return (f"verdict projected from the call's first {self.evidence_events} events; "
                    "it has more now (see the live view)")
        return call_reason(self.evidence, self.stage)

    @property
    def effect_unknown(self) -> bool:
        return self.stage is CallStage.EFFECT_UNKNOWN

    @property
    def resumable(self) -> bool:
        """The projection permits resume: rung 4 or 5, not superseded, no anomaly."""
        return (
            self.next_operation is NextOperation.START_CALL
            and self.stage in (CallStage.REQUESTED, CallStage.MANIFEST_RECORDED)
            and self.superseded_by is None
            and not self.anomalous
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "task_id": self.task_id,
            "idempotency_key": self.idempotency_key,
            "stage": self.stage.value,
            "next_operation": self.next_operation.value,
            "provider_effect": self.provider_effect.value,
            "duplicate_effect_risk": self.duplicate_effect_risk,
            "attempts": self.attempts,
            "superseded_by": self.superseded_by,
            "resumed_from": self.resumed_from,
            "status": self.status,
            "reason": self.reason,
        }


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


@dataclass(frozen=True, slots=True)
class TaskState:
    task_id: str
    next_operation: NextOperation
    subject_id: str | None
    reason: str
    title: str | None
    first_seq: int
    last_seq: int

    def as_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "next_operation": self.next_operation.value,
            "subject_id": self.subject_id,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class ReceiptCheck:
    count: int
    uncovered: tuple[str, ...]
    duplicates: tuple[tuple[str, ...], ...]
    covered_by: dict[str, str | None]  # receipt_id -> attempt_id that covers it
    problems: tuple[tuple[int, str], ...] = ()
    log_present: bool = False

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

    def call(self, call_id: str) -> CallState | None:
        return next((c for c in self.calls if c.call_id == call_id), None)

    def compilation(self, compilation_id: str) -> CompilationState | None:
        return next((c for c in self.compilations if c.compilation_id == compilation_id), None)

    def task(self, task_id: str) -> TaskState | None:
        return next((t for t in self.tasks if t.task_id == task_id), None)

    @property
    def effect_unknown_count(self) -> int:
        return sum(1 for c in self.calls if c.effect_unknown)

    def as_json(self, case: str) -> dict[str, Any]:
        return {
            "format": WORK_STATE_FORMAT,
            "case": case,
            "as_of_seq": self.as_of_seq,
            "event_count": self.event_count,
            "anomalies": [a.as_json() for a in self.anomalies],
            "tasks": [t.as_json() for t in self.tasks],
            "calls": [c.as_json() for c in self.calls],
            "compilations": [c.as_json() for c in self.compilations],
            "receipts": self.receipts.as_json(),
        }


# --------------------------------------------------------------------------- helpers


def _s(payload: dict[str, Any] | None, key: str) -> str | None:
    """A payload field as text, or None (payloads are untrusted: never assume types)."""
    if not payload:
        return None
    value = payload.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _intern(text: str) -> str:
    """One shared object for strings that repeat across many calls (task ids, models,
    statuses): at 10^6 events the projection's memory is mostly such strings."""
    return sys.intern(text) if type(text) is str and len(text) <= 96 else text


def _word(payload: dict[str, Any] | None, key: str) -> str | None:
    value = _s(payload, key)
    return _intern(value) if value is not None else None


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v if isinstance(v, str) else str(v) for v in value]


# --------------------------------------------------------------------------- projector


class Projector:
    """Incremental WORK_STATE_V1. Feed events in seq order; ask for states any time."""

    def __init__(self) -> None:
        self.calls: dict[str, CallEvidence] = {}
        self.compilations: dict[str, CompilationEvidence] = {}
        self.tasks: dict[str, TaskEvidence] = {}
        self.anomalies: list[Anomaly] = []
        self.unknown_kinds: dict[str, int] = {}
        self.event_count = 0
        self.last_seq = 0
        self._call_cache: dict[str, CallState] = {}
        self._comp_cache: dict[str, CompilationState] = {}
        self._dirty_tasks: set[str] = set()
        self._task_cache: dict[str, TaskState] = {}
        # call_id -> seqs of anomalies naming it (resume refuses such calls)
        self.call_anomalies: dict[str, list[int]] = {}
        # receipt coverage depends only on the log and on keys/request hashes; the last
        # check is reused while neither changed (0.25 s per snapshot at 140k calls)
        self._coverage_version = 0
        self._coverage: tuple[ReceiptLog | None, int, ReceiptCheck] | None = None
        # task_id -> its calls and compilations, in first-seq order
        self._task_calls: dict[str, list[str]] = {}
        self._task_comps: dict[str, list[str]] = {}

    # ---- feeding

    def feed(self, events: Iterable[Event]) -> None:
        for ev in events:
            self.add(ev)

    def _anomaly(self, ev: Event, problem: str, *, call: bool = True) -> None:
        self.anomalies.append(
            Anomaly(ev.seq, problem, ev.call_id if call else None, ev.compilation_id)
        )
        if call and ev.call_id:
            self.call_anomalies.setdefault(ev.call_id, []).append(ev.seq)
            self._call_cache.pop(ev.call_id, None)

    def add(self, ev: Event) -> None:
        expected = self.last_seq + 1
        if ev.seq != expected:
            if ev.seq <= self.last_seq:
                self._anomaly(ev, f"seq {ev.seq} is not after seq {self.last_seq}", call=False)
            else:
                missing = (
                    f"seq {expected}" if ev.seq == expected + 1 else f"seqs {expected}-{ev.seq - 1}"
                )
                self._anomaly(ev, f"seq gap: {missing} missing before seq {ev.seq}", call=False)
        self.last_seq = max(self.last_seq, ev.seq)
        self.event_count += 1
        task = self.tasks.get(ev.task_id)
        if task is None:
            task = self.tasks[ev.task_id] = TaskEvidence(ev.task_id, ev.seq)
        task.last_seq = ev.seq
        self._dirty_tasks.add(ev.task_id)
        if ev.payload is None:
            # Shown and flagged; the event still counts as evidence of its kind (an
            # attempt.started with a broken payload still means an attempt started).
            self._anomaly(ev, f"{ev.kind or 'event'}: {ev.payload_error}")
        kind = ev.kind
        if kind not in KNOWN_KINDS:
            self.unknown_kinds[kind] = self.unknown_kinds.get(kind, 0) + 1
            return
        payload = ev.payload or {}
        if kind.startswith("task."):
            self._add_task(task, ev, payload)
        elif kind.startswith("context."):
            self._add_compilation(ev, payload)
        else:
            self._add_call(ev, payload)

    def _add_task(self, task: TaskEvidence, ev: Event, p: dict[str, Any]) -> None:
        kind = ev.kind
        if kind == "task.created":
            task.title = _s(p, "title")
        elif kind == "task.objective":
            task.objective = _s(p, "objective")
        elif kind == "task.claimed":
            task.claimed_by = _s(p, "worker")
        elif kind == "task.accepted":
            acc = _s(p, "acceptance_id")
            if acc is None:
                self._anomaly(ev, "task.accepted without acceptance_id", call=False)
                acc = f"seq-{ev.seq}"
            task.accepted.append((ev.seq, acc, _s(p, "call_id")))
        elif kind == "task.completed":
            task.completed.append((ev.seq, _s(p, "acceptance_id")))

    def _add_compilation(self, ev: Event, p: dict[str, Any]) -> None:
        cid = ev.compilation_id
        if not cid:
            self._anomaly(ev, f"{ev.kind} without compilation_id", call=False)
            return
        comp = self.compilations.get(cid)
        if comp is None:
            comp = self.compilations[cid] = CompilationEvidence(cid, ev.task_id, ev.seq)
            self._task_comps.setdefault(ev.task_id, []).append(cid)
            if ev.kind != "context.compilation_requested":
                self._anomaly(ev, f"{ev.kind} for compilation {cid} never requested", call=False)
        comp.last_seq = ev.seq
        self._comp_cache.pop(cid, None)
        self._dirty_tasks.add(comp.task_id)
        if ev.kind == "context.compilation_requested":
            comp.requested_seq = ev.seq
            offered = p.get("offered")
            comp.offered = [o for o in offered if isinstance(o, dict)] if isinstance(offered, list) else []
            comp.required_ids = _str_list(p.get("required_ids"))
        elif ev.kind == "context.compilation_completed":
            comp.completed_seq = ev.seq
            comp.package_id = _s(p, "package_id")
            comp.rendered_sha256 = _s(p, "rendered_sha256")
            comp.selected = _str_list(p.get("selected"))
        else:
            comp.failed_seq = ev.seq
            err = p.get("error")
            comp.error = err if isinstance(err, dict) else ({"message": str(err)} if err else None)
            comp.missing_ids = _str_list(p.get("missing_ids"))

    def _add_call(self, ev: Event, p: dict[str, Any]) -> None:
        cid = ev.call_id
        if not cid:
            self._anomaly(ev, f"{ev.kind} without call_id", call=False)
            return
        call = self.calls.get(cid)
        if call is None:
            call = self.calls[cid] = CallEvidence(cid, _intern(ev.task_id), ev.seq, len(self.calls))
            self._task_calls.setdefault(call.task_id, []).append(cid)
            if ev.kind != "call.requested":
                self._anomaly(ev, f"{ev.kind} for call {cid} before any call.requested")
        call.last_seq = ev.seq
        call.event_count += 1
        self._call_cache.pop(cid, None)
        self._dirty_tasks.add(call.task_id)
        kind = ev.kind
        if kind in _COVERAGE_KINDS:
            self._coverage_version += 1
        if kind in ATTEMPT_KINDS:
            self._add_attempt(call, ev, p)
        elif kind == "call.requested":
            if call.requested_seq is not None:
                self._anomaly(ev, f"second call.requested for call {cid}")
            call.requested_seq = call.requested_seq or ev.seq
            call.idempotency_key = call.idempotency_key or _s(p, "idempotency_key")
            call.purpose = _word(p, "purpose")
            call.model = _word(p, "model")
            call.resumed_from = _s(p, "resumed_from")
        elif kind == "call.manifest":
            if call.manifest_seq is not None:
                self._anomaly(ev, f"second call.manifest for call {cid}")
            call.manifest_seq = ev.seq
            key = _s(p, "idempotency_key")
            call.manifest_key = call.idempotency_key if key == call.idempotency_key else key
            call.manifest_model = _word(p, "model")
            call.request_sha256 = _s(p, "request_sha256")
            # shared by every call of a compilation: one object each, not one per call
            call.context_package_id = _word(p, "context_package_id")
            call.rendered_context_sha256 = _word(p, "rendered_context_sha256")
            if call.attempts:
                self._anomaly(ev, f"call.manifest for call {cid} after an attempt started")
        elif kind == "call.preparation_failed":
            call.preparation_failed_seq = ev.seq
            err = p.get("error")
            if isinstance(err, dict):
                call.preparation_error = f"{_s(err, 'type') or 'error'}: {_s(err, 'message') or ''}"
            else:
                call.preparation_error = str(err) if err is not None else None
        elif kind == "call.completed":
            if call.completed_seq is not None:
                self._anomaly(ev, f"second call.completed for call {cid}")
            call.completed_seq = ev.seq
            call.status = _word(p, "status")
            adopted = _s(p, "adopted_attempt_id")
            call.adopted_attempt_id = next(
                (a.attempt_id for a in call.attempts if a.attempt_id == adopted), adopted
            )
        elif kind == "call.resumed":
            if call.resumed_seq is not None:
                self._anomaly(ev, f"call {cid} resumed a second time")
            else:
                call.resumed_seq = ev.seq
                call.resumed_as = _s(p, "resumed_as")
                by = p.get("by")
                if isinstance(by, dict):
                    call.resumed_by = f"{_s(by, 'user')}@{_s(by, 'host')} pid {_s(by, 'pid')}"

    def _add_attempt(self, call: CallEvidence, ev: Event, p: dict[str, Any]) -> None:
        aid = ev.attempt_id
        if not aid:
            self._anomaly(ev, f"{ev.kind} without attempt_id")
            aid = f"(no attempt_id, seq {ev.seq})"
        att = next((a for a in call.attempts if a.attempt_id == aid), None)
        if att is None:
            att = AttemptEvidence(aid, ev.seq)
            call.attempts.append(att)
            if ev.kind != "attempt.started":
                self._anomaly(ev, f"{ev.kind} for attempt {aid} that never started")
        kind = ev.kind
        if kind == "attempt.started":
            if att.started_seq is not None:
                self._anomaly(ev, f"attempt {aid} started twice")
                return
            att.started_seq = ev.seq
            no = p.get("attempt_no")
            att.attempt_no = no if isinstance(no, int) and not isinstance(no, bool) else None
            sha = _s(p, "request_sha256")
            att.request_sha256 = call.request_sha256 if sha == call.request_sha256 else sha
            if call.manifest_seq is None:
                self._anomaly(ev, f"attempt.started for call {call.call_id} with no call.manifest")
        elif kind == "attempt.observed":
            att.observed_seq = att.observed_seq or ev.seq
            transport = p.get("transport")
            att.transport_status = transport.get("status") if isinstance(transport, dict) else None
        elif kind == "attempt.interpreted":
            att.interpreted_seq = att.interpreted_seq or ev.seq
            att.outcome = _word(p, "outcome")
        elif kind == "attempt.retry_decided":
            att.retry_decided_seq = att.retry_decided_seq or ev.seq
            att.decision = _word(p, "decision")
            if att.decision not in ("retry", "stop"):
                self._anomaly(ev, f"attempt.retry_decided with decision {att.decision!r}")
        elif kind == "attempt.completed":
            att.completed_seq = att.completed_seq or ev.seq
            att.status = _word(p, "status")

    # ---- verdicts

    def call_state(self, call_id: str) -> CallState:
        cached = self._call_cache.get(call_id)
        if cached is None:
            cached = self._call_cache[call_id] = classify_call(
                self.calls[call_id], anomalous=call_id in self.call_anomalies
            )
        return cached

    def compilation_state(self, compilation_id: str) -> CompilationState:
        cached = self._comp_cache.get(compilation_id)
        if cached is None:
            cached = self._comp_cache[compilation_id] = classify_compilation(
                self.compilations[compilation_id]
            )
        return cached

    def task_state(self, task_id: str) -> TaskState:
        if task_id in self._dirty_tasks or task_id not in self._task_cache:
            self._refresh_tasks()
        return self._task_cache[task_id]

    def _refresh_tasks(self) -> None:
        dirty = self._dirty_tasks | (self.tasks.keys() - self._task_cache.keys())
        for task_id in dirty:
            unresolved: list[tuple[int, str, NextOperation, str]] = []
            succeeded: tuple[int, str] | None = None
            for comp_id in self._task_comps.get(task_id, ()):
                cs = self.compilation_state(comp_id)
                if cs.next_operation is not NextOperation.NONE:
                    unresolved.append((cs.first_seq, comp_id, cs.next_operation, cs.reason))
            for call_id in self._task_calls.get(task_id, ()):
                st = self.call_state(call_id)
                if st.next_operation is not NextOperation.NONE:
                    unresolved.append((st.first_seq, call_id, st.next_operation, st.reason))
                elif st.stage is CallStage.COMPLETED and st.status == "succeeded":
                    done_seq = self.calls[call_id].completed_seq or st.last_seq
                    if succeeded is None or done_seq > succeeded[0]:
                        succeeded = (done_seq, call_id)
            self._task_cache[task_id] = classify_task(
                self.tasks[task_id], sorted(unresolved), succeeded
            )
        self._dirty_tasks.clear()

    def receipt_check(self, receipt_log: ReceiptLog | None) -> ReceiptCheck:
        cached = self._coverage
        if cached is not None and cached[0] is receipt_log and cached[1] == self._coverage_version:
            return cached[2]
        check = check_receipts(
            receipt_log.receipts if receipt_log else (),
            self.calls.values(),
            problems=receipt_log.problems if receipt_log else (),
            log_present=bool(receipt_log and receipt_log.exists),
        )
        self._coverage = (receipt_log, self._coverage_version, check)
        return check

    def snapshot(self, receipt_log: ReceiptLog | None = None) -> WorkState:
        self._refresh_tasks()
        calls = tuple(self.call_state(c) for c in self.calls)
        return WorkState(
            as_of_seq=self.last_seq,
            event_count=self.event_count,
            anomalies=tuple(self.anomalies),
            unknown_kinds=dict(self.unknown_kinds),
            tasks=tuple(self._task_cache[t] for t in self.tasks),
            calls=calls,
            compilations=tuple(self.compilation_state(c) for c in self.compilations),
            receipts=self.receipt_check(receipt_log),
        )


# --------------------------------------------------------------------------- the ladder


def _effect_as_completed(call: CallEvidence) -> ProviderEffect:
    """Rung 2's provider effect: happened if any attempt was observed, else unknown if
    one started, else none."""
    if any(a.observed_seq is not None for a in call.attempts):
        return ProviderEffect.HAPPENED
    if call.attempts:
        return ProviderEffect.UNKNOWN
    return ProviderEffect.NONE


def classify_call(call: CallEvidence, *, anomalous: bool = False) -> CallState:
    """The WORK_STATE_V1 ladder: the first rung that matches wins."""
    effect = ProviderEffect.NONE
    risk = False
    superseded_by: str | None = None
    last = call.last_attempt()
    if call.resumed_seq is not None:
        stage, op = CallStage.SUPERSEDED, NextOperation.NONE
        effect = _effect_as_completed(call)
        superseded_by = call.resumed_as
    elif call.completed_seq is not None:
        stage, op = CallStage.COMPLETED, NextOperation.NONE
        effect = _effect_as_completed(call)
    elif call.preparation_failed_seq is not None:
        stage, op = CallStage.PREPARATION_FAILED, NextOperation.FIX_INPUTS
    elif call.manifest_seq is None and last is None:
        stage, op = CallStage.REQUESTED, NextOperation.START_CALL
    elif last is None:
        stage, op = CallStage.MANIFEST_RECORDED, NextOperation.START_CALL
    elif not last.has_later_evidence:
        stage, op = CallStage.EFFECT_UNKNOWN, NextOperation.RECONCILE_EFFECT
        effect, risk = ProviderEffect.UNKNOWN, True
    else:
        effect = ProviderEffect.HAPPENED
        if last.interpreted_seq is None:
            stage, op = CallStage.OBSERVED, NextOperation.REINTERPRET
        elif last.retry_decided_seq is None and last.completed_seq is None:
            stage, op = CallStage.INTERPRETED, NextOperation.REDECIDE
        elif last.completed_seq is None:
            stage = CallStage.RETRY_DECIDED
            retry = last.decision == "retry"
            op = NextOperation.START_NEXT_ATTEMPT if retry else NextOperation.FINALIZE
        else:
            stage, op = CallStage.ATTEMPT_COMPLETED, NextOperation.FINALIZE
    return CallState(
        call_id=call.call_id,
        task_id=call.task_id,
        idempotency_key=call.key,
        stage=stage,
        next_operation=op,
        provider_effect=effect,
        duplicate_effect_risk=risk,
        attempts=sum(1 for a in call.attempts if a.started_seq is not None),
        superseded_by=superseded_by,
        resumed_from=call.resumed_from,
        status=call.status,
        first_seq=call.first_seq,
        last_seq=call.last_seq,
        has_manifest=call.manifest_seq is not None,
        anomalous=anomalous,
        evidence=call,
        evidence_events=call.event_count,
    )


def call_reason(call: CallEvidence, stage: CallStage) -> str:
    """The evidence behind the ladder's verdict for `stage`, in one line."""
    if stage is CallStage.SUPERSEDED:
        by = f" (by {call.resumed_by})" if call.resumed_by else ""
        return f"call.resumed at seq {call.resumed_seq}: superseded by {call.resumed_as}{by}"
    if stage is CallStage.COMPLETED:
        adopting = f", adopting attempt {call.adopted_attempt_id}" if call.adopted_attempt_id else ""
        return f"call.completed at seq {call.completed_seq} with status {call.status}{adopting}"
    if stage is CallStage.PREPARATION_FAILED:
        return (f"call.preparation_failed at seq {call.preparation_failed_seq}"
                f" ({call.preparation_error or 'no error recorded'}): nothing was sent")
    if stage is CallStage.REQUESTED:
        return (f"call.requested at seq {call.requested_seq or call.first_seq}, no manifest: "
                "nothing was sent, but no drift check is possible")
    if stage is CallStage.MANIFEST_RECORDED:
        return f"call.manifest at seq {call.manifest_seq}, no attempt started: nothing was sent"
    last = call.last_attempt()
    assert last is not None  # every later stage has an attempt
    aid = last.attempt_id
    if stage is CallStage.EFFECT_UNKNOWN:
        reason = (f"attempt {aid} started at seq {last.order_seq}; nothing recorded after it: "
                  "the provider may have served it (repeating risks a duplicate effect)")
    elif stage is CallStage.OBSERVED:
        reason = (f"attempt {aid} observed at seq {last.observed_seq} "
                  f"(transport status {last.transport_status}), not interpreted: "
                  "reinterpret the stored response, the provider is not needed")
    elif stage is CallStage.INTERPRETED:
        reason = (f"attempt {aid} interpreted as {last.outcome} at seq {last.interpreted_seq}, "
                  "no retry decision recorded")
    elif stage is CallStage.RETRY_DECIDED:
        reason = (f"attempt {aid}: decision {last.decision!r} at seq {last.retry_decided_seq}, "
                  "no attempt.completed")
    else:
        reason = (f"attempt {aid} completed ({last.status}) at seq {last.completed_seq}, "
                  "no call.completed")
    if call.manifest_seq is None:
        reason += "; anomaly: attempt evidence without a call.manifest"
    return reason


def classify_compilation(comp: CompilationEvidence) -> CompilationState:
    missing: tuple[str, ...] = ()
    if comp.completed_seq is not None:
        stage, op = CompilationStage.COMPLETED, NextOperation.NONE
        reason = f"context.compilation_completed at seq {comp.completed_seq}: package {comp.package_id}"
    elif comp.failed_seq is not None:
        stage, op = CompilationStage.FAILED, NextOperation.FIX_INPUTS
        offered_ids = {str(o.get("id")) for o in comp.offered}
        missing = tuple(sorted((set(comp.required_ids) - offered_ids) | set(comp.missing_ids)))
        err = comp.error or {}
        reason = (
            f"context.compilation_failed at seq {comp.failed_seq} "
            f"({err.get('type', 'error')}: {err.get('message', '')}); "
            f"missing required: {', '.join(missing) or 'none derived'}"
        )
    else:
        stage, op = CompilationStage.REQUESTED, NextOperation.RECOMPILE
        reason = (
            f"context.compilation_requested at seq {comp.requested_seq or comp.first_seq}, "
            f"never finished: recompile ({len(comp.offered)} offered inputs recorded; "
            "no external effect)"
        )
    return CompilationState(
        compilation_id=comp.compilation_id,
        task_id=comp.task_id,
        stage=stage,
        next_operation=op,
        offered=tuple(comp.offered),
        required_ids=tuple(comp.required_ids),
        missing_required=missing,
        error=comp.error,
        package_id=comp.package_id,
        rendered_sha256=comp.rendered_sha256,
        reason=reason,
        first_seq=comp.first_seq,
        last_seq=comp.last_seq,
    )


def classify_task(
    task: TaskEvidence,
    unresolved: Sequence[tuple[int, str, NextOperation, str]],
    last_succeeded: tuple[int, str] | None,
) -> TaskState:
    def state(op: NextOperation, subject: str | None, reason: str) -> TaskState:
        return TaskState(task.task_id, op, subject, reason, task.title, task.first_seq, task.last_seq)

    if task.completed:
        seq, acc = task.completed[-1]
        return state(NextOperation.NONE, None, f"task.completed at seq {seq} (acceptance {acc})")
    completed_accs = {acc for _, acc in task.completed}
    for seq, acc, _call in task.accepted:
        if acc not in completed_accs:
            return state(
                NextOperation.REPEAT_ACCEPTANCE,
                acc,
                f"task.accepted {acc} at seq {seq} has no matching task.completed",
            )
    if unresolved:
        _, subject, op, reason = unresolved[0]
        return state(op, subject, f"{subject}: {reason}")
    if last_succeeded is not None:
        seq, call_id = last_succeeded
        return state(
            NextOperation.CHECK_AND_ACCEPT,
            call_id,
            f"call {call_id} succeeded (seq {seq}) and nothing is unresolved: check and accept",
        )
    return state(NextOperation.START_CALL, None, "no call has succeeded and none is pending")


def check_receipts(
    receipts: Sequence[Receipt],
    calls: Iterable[CallEvidence],
    *,
    problems: Sequence[tuple[int, str]] = (),
    log_present: bool = False,
) -> ReceiptCheck:
    """Section 5: every receipt covered by an attempt.started with the same key and
    request hash; two or more receipts with one key and body hash are a duplicate."""
    started: dict[tuple[str, str], str] = {}
    for call in calls:
        key = call.key
        if key is None:
            continue
        for att in call.attempts:
            if att.started_seq is not None and att.request_sha256:
                started.setdefault((key, att.request_sha256), att.attempt_id)
    covered_by: dict[str, str | None] = {}
    groups: dict[tuple[str, str], list[str]] = {}
    for r in receipts:
        covered_by[r.receipt_id] = started.get((r.idempotency_key, r.body_sha256))
        groups.setdefault((r.idempotency_key, r.body_sha256), []).append(r.receipt_id)
    return ReceiptCheck(
        count=len(receipts),
        uncovered=tuple(rid for rid, att in covered_by.items() if att is None),
        duplicates=tuple(tuple(ids) for ids in groups.values() if len(ids) > 1),
        covered_by=covered_by,
        problems=tuple(problems),
        log_present=log_present,
    )


def project(
    events: Iterable[Event],
    receipt_log: ReceiptLog | None = None,
    as_of: int | None = None,
) -> WorkState:
    """Project events (seq order) as of `as_of` (all when None)."""
    projector = Projector()
    for ev in events:
        if as_of is not None and ev.seq > as_of:
            break
        projector.add(ev)
    return projector.snapshot(receipt_log)
