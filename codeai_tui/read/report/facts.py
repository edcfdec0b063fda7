"""What an incident report says about one case, gathered read-only (no Textual, no markup).

Everything comes from the case itself: the projection (verdicts, reasons, the receipt
cross-check), the ledger (its clock, the operator's events), the provider's receipt log,
the tool's own store, and the demo's effects.json where the case sits in a bundle. Every
string is still untrusted text: the renderers escape it (html.py, markdown.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from codeai_tui.console.evidence import attempt_lines_with
from codeai_tui.console.severity import (
    OPERATION_RANK,
    RANK_ANOMALY,
    RANK_DRIFT,
    RANK_DUPLICATE,
    RANK_UNCOVERED,
    case_verdict,
)
from codeai_tui.ledger.case import load_case_config, named_case, read_termination
from codeai_tui.ledger.errors import LedgerError, LedgerProblem
from codeai_tui.ledger.reader import OPERATOR_EVENTS_LIMIT, OPERATOR_FIELDS, LedgerReader
from codeai_tui.ledger.safefile import read_regular
from codeai_tui.ledger.schema import Event
from codeai_tui.read.inspection import project_case
from codeai_tui.services.lanes import (
    Lane,
    LaneIndex,
    SeqClock,
    call_lane,
    clock_text,
    duration_text,
    read_clock,
    uncovered_lane,
)
from codeai_tui.tools.publish import publications_line, store_publications
from codeai_tui.tools.receipts import NAIVE_DIR
from codeai_tui.workstate import CallState, NextOperation, WorkState
from codeai_tui.workstate.reasons import receipt_phrase

# a case bigger than this is reported by what is pending: the rest is counted, not listed
LIST_ALL_CALLS = 200
MAX_VERDICTS = 500
MAX_LANES = 200
MAX_DRIFT_CHECKS = 50
MAX_ANOMALIES = 20
MAX_UNKNOWNS = 200
EFFECTS_FILE = "effects.json"
EFFECTS_LIMIT = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Verdict:
    """One line of "the verdicts, worst first"."""

    rank: int
    kind: str  # receipts | call | tool operation | compilation | task | anomaly
    subject: str
    stage: str
    next_operation: str
    effect: str
    reason: str
    evidence: tuple[str, ...] = ()  # the receipts per attempt, the drift check, the store
    alarming: bool = False


@dataclass(frozen=True, slots=True)
class OperatorAction:
    seq: int
    at: str
    who: str
    kind: str
    subject: str
    what: str


@dataclass(frozen=True, slots=True)
class EffectRow:
    """One count of a tool case's effects, and where it was counted."""

    source: str
    publications: str
    provider_calls: str
    operations: str  # admitted / completed / effect unknown, from the ledger
    complete: str


@dataclass(frozen=True, slots=True)
class LaneRow:
    """A row of the picture: a task's header (lane None) or a lane."""

    text: str
    lane: Lane | None = None


@dataclass(frozen=True, slots=True)
class ReportFacts:
    case: str  # as given
    description: str
    as_of_seq: int
    event_count: int
    max_seq: int  # the ledger's last seq (beyond as_of when reported as of an earlier seq)
    first_at: str | None
    last_at: str | None  # of the last event reported (as of)
    headline: str
    alarming: bool
    counts: tuple[tuple[str, int], ...]
    tasks: tuple[tuple[str, str, str], ...]  # task id, title, next operation
    verdicts: tuple[Verdict, ...]
    verdicts_left_out: int
    lanes: tuple[LaneRow, ...]
    lanes_left_out: int
    clock: SeqClock
    actions: tuple[OperatorAction, ...]
    actions_cut: bool
    effects: tuple[EffectRow, ...]
    unknowns: tuple[str, ...]
    receipt_log: str
    receipts: int
    termination: str | None
    notes: tuple[str, ...] = field(default=())


# --------------------------------------------------------------------------- gathering


def gather(case: str | os.PathLike[str], as_of: int | None = None) -> ReportFacts:
    """The facts of one case's report (raises LedgerError: a path that is not one case,
    an unreadable ledger). Read-only."""
    case_dir = one_case(case)
    state = project_case(case_dir, as_of)
    with LedgerReader(case_dir) as reader:
        _count, max_seq = reader.stats()
        clock = read_clock(reader, max_seq)
        operator = reader.operator_events(state.as_of_seq)
    label = str(case)
    check = state.receipts
    index = check.index
    verdict = case_verdict(state, state.event_count)
    now = state.as_of_seq
    lanes, lanes_out = _lanes(state, now, clock)
    verdicts, verdicts_out = _verdicts(case_dir, state, as_of is not None)
    first = clock.time_of(1)
    last = clock.time_of(now)
    return ReportFacts(
        case=label,
        description=_description(case_dir),
        as_of_seq=now, event_count=state.event_count, max_seq=max_seq,
        first_at=clock_text(first, fraction=True) if first is not None else None,
        last_at=clock_text(last, fraction=True) if last is not None else None,
        headline=verdict.line, alarming=verdict.alarming,
        counts=(("effect unknown (calls)", state.effect_unknown_count),
                ("effect unknown (tool operations)", state.tool_effect_unknown_count),
                ("duplicate effects", len(check.duplicates)),
                ("uncovered receipts", len(check.uncovered)),
                ("anomalies", len(state.anomalies)),
                ("calls", len(state.calls)), ("tasks", len(state.tasks))),
        tasks=tuple((t.task_id, t.title or "", t.next_operation.value) for t in state.tasks),
        verdicts=verdicts, verdicts_left_out=verdicts_out,
        lanes=lanes, lanes_left_out=lanes_out, clock=clock,
        actions=tuple(_actions(operator)), actions_cut=len(operator) >= OPERATOR_EVENTS_LIMIT,
        effects=tuple(_effects(case_dir, state)),
        unknowns=_listed(_unknowns(case_dir, state, clock), MAX_UNKNOWNS),
        receipt_log=index.log if index is not None else ("present" if check.log_present
                                                           else "absent"),
        receipts=check.count,
        termination=_termination(case_dir),
        notes=((f"reported as of seq {now}: the ledger goes on to seq {max_seq}",)
               if now < max_seq else ()),
    )


def one_case(case: str | os.PathLike[str]) -> Path:
    """The case directory `case` names (a directory holding a ledger, or the ledger
    itself); a bundle or anything else is bad input (LedgerError, one line)."""
    p = Path(case)
    try:
        exists = p.exists() or p.is_symlink()
        named = named_case(p) if exists else None
    except OSError as exc:
        raise LedgerError(LedgerProblem.MISSING, f"{case}: {exc.strerror or exc}") from None
    if not exists:
        raise LedgerError(LedgerProblem.MISSING, f"{case}: no such file or directory")
    if named is None:
        raise LedgerError(LedgerProblem.NOT_A_LEDGER,
                          f"{case}: not a case directory (a report is of one case: name the "
                          "directory that holds its ledger.sqlite3)")
    return named


def _listed(lines: Iterator[str], most: int) -> tuple[str, ...]:
    """The first `most` lines, and how many more there were."""
    kept = list(islice(lines, most))
    more = sum(1 for _ in lines)
    return (*kept, f"\u2026 and {more:,} more (codeai-tui inspect lists every one)") \
        if more else tuple(kept)


def _description(case_dir: Path) -> str:
    try:
        return load_case_config(case_dir).description
    except LedgerError as exc:
        return f"(case.json unusable: {exc})"


def _termination(case_dir: Path) -> str | None:
    """How the producer was stopped, where the case records it (the demo harness)."""
    doc = read_termination(case_dir)
    if not doc:
        return None
    parts = [f"{k} {v}" for k, v in doc.items() if isinstance(v, str | int | float | bool)]
    return ", ".join(parts)[:400] or None


# ---- the picture


def _lanes(state: WorkState, now: int, clock: SeqClock) -> tuple[tuple[LaneRow, ...], int]:
    """The lanes, grouped by task: every call of a small case; of a big one, the calls
    with something left to do (MAX_LANES at most), the rest counted."""
    calls = state.calls
    keep = None
    if len(calls) > LIST_ALL_CALLS:
        def keep(c: CallState) -> bool:
            return not c.settled
    index = LaneIndex(keep)
    uncovered = uncovered_lane(state.receipts, now, clock)
    index.update(calls, uncovered is not None)
    titles = {t.task_id: t.title or "" for t in state.tasks}
    rows: list[LaneRow] = []
    drawn = 0
    for kind, what in index:
        if kind == "uncovered" and uncovered is not None:
            rows.append(LaneRow("receipts no attempt covers", uncovered))
        elif kind == "task":
            title = titles.get(str(what), "")
            rows.append(LaneRow(f"task {what}" + (f" \u00b7 {title}" if title else "")))
        elif kind == "call" and drawn < MAX_LANES:
            drawn += 1
            rows.append(LaneRow(calls[what].call_id,  # type: ignore[index]
                                call_lane(calls[what], now, state.receipts.index,  # type: ignore[index]
                                          clock)))
    while rows and rows[-1].lane is None:  # a task header whose calls were left out
        rows.pop()
    return tuple(rows), len(calls) - drawn


# ---- the verdicts


def _verdicts(case_dir: Path, state: WorkState, as_of: bool) -> tuple[tuple[Verdict, ...], int]:
    found = list(_receipt_verdicts(state)) + list(_anomaly_verdicts(state))
    calls = state.calls if len(state.calls) <= LIST_ALL_CALLS else tuple(state.pending_calls())
    drift_checked = 0
    for call in calls:
        drift = None
        if call.resumable and not as_of and drift_checked < MAX_DRIFT_CHECKS:
            drift_checked += 1
            drift = _drift(case_dir, call)
        found.append(_call_verdict(state, call, drift))
        tools = call.tools if call.evidence.tools is not None else None
        for op in tools.operations if tools is not None else ():
            receipt = op.as_json(state.tool_receipts).get("receipt", {})
            evidence = []
            if receipt:
                evidence.append(f"signed receipt: {receipt.get('verdict')}"
                                + (f" ({receipt.get('detail')})" if receipt.get("detail") else ""))
            if op.operation_key and (op.effect_unknown or op.admitted_seq is not None):
                evidence.append(publications_line(case_dir, op.operation_key))
            rank = OPERATION_RANK[NextOperation.RECONCILE_EFFECT] if op.effect_unknown \
                else OPERATION_RANK.get(op.next_operation, 0)
            found.append(Verdict(rank, "tool operation", op.subject, op.stage.value,
                                 op.next_operation.value,
                                 "unknown" if op.effect_unknown else "-",
                                 op.reason, tuple(evidence), op.effect_unknown))
    for comp in state.compilations:
        found.append(Verdict(OPERATION_RANK.get(comp.next_operation, 0), "compilation",
                             comp.compilation_id, comp.stage.value, comp.next_operation.value,
                             "none", comp.reason,
                             (f"missing required: {', '.join(comp.missing_required)}",)
                             if comp.missing_required else ()))
    for task in state.tasks:
        found.append(Verdict(OPERATION_RANK.get(task.next_operation, 0), "task", task.task_id,
                             "-", task.next_operation.value, "-", task.reason))
    order = {"receipts": 0, "anomaly": 1, "call": 2, "tool operation": 3, "compilation": 4,
             "task": 5}
    found.sort(key=lambda v: (-v.rank, order.get(v.kind, 9)))
    left_out = len(state.calls) - len(calls) + max(0, len(found) - MAX_VERDICTS)
    return tuple(found[:MAX_VERDICTS]), left_out


def _receipt_verdicts(state: WorkState) -> Iterator[Verdict]:
    check = state.receipts
    for group in check.duplicates:
        yield Verdict(RANK_DUPLICATE, "receipts", " = ".join(group), "duplicate effect",
                      "-", "happened twice",
                      "the provider received the same request (idempotency key and body "
                      "hash) more than once: the effect was duplicated", alarming=True)
    covers = check.covered_by
    rs = covers.receipts
    if check.uncovered:
        for i, attempt in enumerate(covers.attempts):
            if attempt is None:
                yield Verdict(RANK_UNCOVERED, "receipts", rs.ids[i], "uncovered effect", "-",
                              "happened",
                              f"received at {rs.received_at(i)} with key "
                              f"{rs.keys[i]}: no attempt.started has that key and body hash",
                              alarming=True)


def _anomaly_verdicts(state: WorkState) -> Iterator[Verdict]:
    for a in state.anomalies[:MAX_ANOMALIES]:
        yield Verdict(RANK_ANOMALY, "anomaly", f"seq {a.seq}", "anomaly", "-", "-",
                      a.problem, alarming=True)
    if len(state.anomalies) > MAX_ANOMALIES:
        yield Verdict(RANK_ANOMALY, "anomaly", "more", "anomaly", "-", "-",
                      f"{len(state.anomalies) - MAX_ANOMALIES} more anomalies not listed "
                      "(codeai-tui inspect lists them)", alarming=True)


def _call_verdict(state: WorkState, call: CallState, drift: tuple[int, str] | None
                  ) -> Verdict:
    index = state.receipts.index
    evidence = []
    if index is not None:
        lines = attempt_lines_with(call, index)
        evidence += [f"attempt {line.attempt_id} (effect {line.provider_effect}): {line.text}"
                     for line in lines]
    rank = OPERATION_RANK.get(call.next_operation, 0)
    if call.effect_unknown:
        rank = OPERATION_RANK[NextOperation.RECONCILE_EFFECT]
    if drift is not None:
        drift_rank, text = drift
        evidence.append(text)
        rank = max(rank, drift_rank) if drift_rank else rank
    if call.superseded_by:
        evidence.append(f"superseded by {call.superseded_by}")
    if call.resumed_from:
        evidence.append(f"resumed from {call.resumed_from}")
    reason = call.reason_with(index)
    return Verdict(rank, "call", call.call_id, call.stage.value, call.next_operation.value,
                   call.provider_effect.value, reason, tuple(evidence),
                   call.effect_unknown or call.duplicate_effect_risk)


def _drift(case_dir: Path, call: CallState) -> tuple[int, str]:
    """The drift check a resume would make (read-only): (rank it gives, one line)."""
    from codeai_tui.actions.gate import ActionRefused
    from codeai_tui.actions.resume import plan_resume
    from codeai_tui.runtime.destination import DestinationError

    try:
        plan = plan_resume(case_dir, call.call_id)
    except ActionRefused as exc:
        return 0, f"drift check: cannot plan ({exc.reason})"
    except (LedgerError, DestinationError, OSError, ValueError) as exc:
        return 0, f"drift check: cannot plan ({exc})"
    if not plan.drift_check_possible:
        return 0, "drift check: not possible (no manifest: nothing recorded to compare)"
    if plan.drift:
        return RANK_DRIFT, "drift: resume refuses: " + "; ".join(plan.drift)
    return 0, "drift check: the request rebuilt now matches the recorded one"


# ---- the operator's actions


def _who(value: object) -> str | None:
    if not isinstance(value, dict):
        return None
    user, host, pid = value.get("user"), value.get("host"), value.get("pid")
    text = f"{user or '?'}@{host or '?'}"
    return text + (f" (pid {pid})" if pid is not None else "")


def _what(ev: Event, p: dict[str, Any]) -> str:
    kind = ev.kind
    aid = ev.attempt_id or "-"
    words = {
        "attempt.reconciled": f"recorded the finding {p.get('finding')} for attempt {aid}",
        "tool.reconciled": f"recorded the finding {p.get('finding')} for tool operation "
                           f"{p.get('operation_key')}",
        "attempt.interpreted": f"interpreted attempt {aid} again: {p.get('outcome')}",
        "attempt.retry_decided": f"decided {p.get('decision')} after attempt {aid}"
                                 + (" (accepting a duplicate)" if p.get("accept_duplicate")
                                    is True else ""),
        "attempt.completed": f"recorded attempt {aid} as {p.get('status')}",
        "attempt.started": f"started attempt {aid} (next attempt)",
        "call.completed": f"finalized the call: {p.get('status')}",
        "call.resumed": f"resumed the call as {p.get('resumed_as')}",
        "call.requested": "recorded this call" + (
            f", resuming {p.get('resumed_from')}" if p.get("resumed_from") else ""),
    }
    text = words.get(kind, kind)
    evidence = p.get("evidence")
    if isinstance(evidence, list) and evidence:
        text += f" (evidence: {', '.join(str(e) for e in evidence[:5])})"
    for name in ("reason", "note"):
        if isinstance(p.get(name), str) and p.get(name):
            text += f"; {name}: {p.get(name)}"
    return text


def _actions(events: list[Event]) -> Iterator[OperatorAction]:
    for ev in events:
        p = ev.payload or {}
        who = next((w for name in OPERATOR_FIELDS if (w := _who(p.get(name))) is not None),
                   None)
        if who is None:  # the field's name appears in the text, not as a writer's record
            continue
        subject = ev.call_id or ev.task_id
        yield OperatorAction(ev.seq, ev.recorded_at, who, ev.kind, subject, _what(ev, p))


# ---- effects of a tool case


def _effects(case_dir: Path, state: WorkState) -> Iterator[EffectRow]:
    """The effect table: this case counted from its own records, then the demo
    harness's count of it (effects.json at the bundle root) where there is one."""
    harness = _effects_json_rows(case_dir)
    ops = [op for c in state.calls if c.evidence.tools is not None and c.tools is not None
           for op in c.tools.operations]
    tool_case = bool(ops) or (case_dir / "tools").is_dir() or bool(harness)
    if not tool_case:
        return
    admitted = sum(1 for op in ops if op.admitted_seq is not None)
    completed = sum(1 for op in ops if op.completed_seq is not None)
    unknown = sum(1 for op in ops if op.effect_unknown)
    # a task's next operation is none only once task.completed is recorded
    completed_task = any(t.next_operation is NextOperation.NONE for t in state.tasks)
    yield EffectRow("this case: the tool's store, the provider's log, the ledger",
                    _store_count(case_dir), _log_count(state),
                    f"{admitted} admitted, {completed} completed, {unknown} effect unknown",
                    "task completed" if completed_task else "not completed")
    naive = case_dir / NAIVE_DIR
    if naive.is_dir() and not naive.is_symlink():
        from codeai_tui.ledger.receipts import read_receipts

        try:
            calls = str(len(read_receipts(naive).receipts))
        except LedgerError as exc:
            calls = f"unreadable ({exc})"
        yield EffectRow(f"{NAIVE_DIR}/: the counterfactual copy (no ledger)",
                        _store_count(naive), calls, "-", "-")
    for row in harness:
        yield EffectRow(f"effects.json ({row.get('mode')}, counted by the demo harness)",
                        str(row.get("publications")), str(row.get("provider_calls")), "-",
                        "complete" if row.get("complete") is True else "not complete")


def _store_count(case_dir: Path) -> str:
    count, where = store_publications(case_dir)
    return f"{count} ({where})" if count is not None else where


def _log_count(state: WorkState) -> str:
    check = state.receipts
    return str(check.count) if check.log_present else "no provider log"


def _effects_json_rows(case_dir: Path) -> list[dict[str, Any]]:
    """The rows of effects.json one directory up that name this case (or its
    counterfactual): a demo bundle's own count. Untrusted: a small regular file."""
    bundle = case_dir.resolve().parent
    try:
        raw = read_regular(bundle, Path(EFFECTS_FILE), limit=EFFECTS_LIMIT)
    except (LedgerError, OSError):
        return []
    if raw is None:
        return []
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return []
    name = case_dir.resolve().name
    names = {name, f"{name}/{NAIVE_DIR}"}
    return [r for r in doc if isinstance(r, dict) and r.get("case") in names] \
        if isinstance(doc, list) else []


# ---- what is still unknown


def _unknowns(case_dir: Path, state: WorkState, clock: SeqClock) -> Iterator[str]:
    check = state.receipts
    index = check.index
    last_time = clock.time_of(state.as_of_seq)
    for call in state.calls if state.effect_unknown_count else ():
        if not call.effect_unknown:
            continue
        att = call.evidence.last_attempt()
        start = att.started_seq if att is not None else call.first_seq
        started = clock.time_of(start) if start is not None else None
        text = (f"call {call.call_id}: attempt {att.attempt_id if att else '?'} started at "
                f"seq {start}")
        if started is not None:
            text += f" ({clock_text(started, fraction=True)})"
        text += " and no answer or finding was recorded: the provider may have served it"
        if started is not None and last_time is not None and last_time > started:
            text += (f"; {duration_text(last_time - started)} of events followed it up to "
                     f"seq {state.as_of_seq} with no answer")
        elif start == state.as_of_seq:
            text += "; it is the last event reported: the producer stopped with it in flight"
        phrase = receipt_phrase(call.evidence, index) if index is not None else None
        if phrase:
            text += f"; the provider's log: {phrase}"
        yield text
    for call in state.calls if state.tool_effect_unknown_count else ():
        tools = call.tools if call.evidence.tools is not None else None
        for op in tools.operations if tools is not None else ():
            if op.effect_unknown:
                line = publications_line(case_dir, op.operation_key) if op.operation_key \
                    else "no operation key to look up"
                yield (f"tool operation {op.subject}: admitted at seq {op.admitted_seq} with "
                       f"no outcome: the tool may have run; only its own records can say "
                       f"({line})")
    if index is not None and index.log == "absent":
        yield ("no provider receipt log: whether a request reached the provider cannot be "
               "checked for any call")
    elif index is not None and index.log == "unreadable":
        yield "the provider receipt log cannot be read: no request can be checked against it"
    for rid in check.uncovered[:MAX_ANOMALIES]:
        yield (f"receipt {rid}: the provider received a request that no attempt of this "
               "ledger accounts for (what sent it is unknown)")
    if state.anomalies:
        yield (f"{len(state.anomalies)} anomalies: the ledger breaks its contract there; "
               "no action is permitted on a call an anomaly names")
