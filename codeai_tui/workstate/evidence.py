"""Per-entity evidence records and the rules that fold one event into them.

Both projectors use these folds: the event-by-event `Projector` (the oracle) feeds every
event in seq order; the SQL gatherer feeds one call's events (in seq order) at a time.
Because the folds are the same code, the two paths cannot drift apart. Payloads are
untrusted: every field is type-checked before it is kept.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Generic, TypeVar, overload

from codeai_tui.ledger.artifacts import is_sha256_hex
from codeai_tui.ledger.schema import TOOL_KINDS
from codeai_tui.workstate.tool_ops import (
    ToolEvidence,
    fold_tool_event,
    fold_tool_plan,
    fold_tool_request,
)

_HEX64 = re.compile(r"[0-9a-f]{64}").fullmatch

T = TypeVar("T")

Report = Callable[[str], None]  # records an anomaly for the event being folded

# Payload fields that name an artifact (or its hash): 64 lowercase hex or nothing, so an
# id taken from a ledger can never address a path outside the store. None is allowed
# where docs/ledger.md says "|null"; absent fields are not checked.
ARTIFACT_FIELDS: dict[str, tuple[str, ...]] = {
    "call.manifest": ("request_sha256", "request_artifact", "rendered_context_sha256"),
    "attempt.started": ("request_sha256",),
    "attempt.observed": ("response_sha256", "response_artifact"),
    "call.resumed": ("request_sha256",),
    "context.compilation_completed": ("rendered_sha256",),
}


@dataclass(frozen=True, slots=True)
class Anomaly:
    seq: int
    problem: str
    call_id: str | None = None
    compilation_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "problem": self.problem}


LEDGER_ANOMALY_SEQ = 0  # where an anomaly of the ledger file itself (not of an event) shows


def ledger_anomalies(problems: Iterable[str]) -> tuple[Anomaly, ...]:
    """Anomalies of the ledger file itself (e.g. a table ledger v1 does not define), listed
    before any event's: they hold at every seq."""
    return tuple(Anomaly(LEDGER_ANOMALY_SEQ, p) for p in problems)


class Rare(Generic[T]):
    """A field most records leave at its default (a retry decision, a finding, a resume,
    a failed preparation): kept in the record's `rare` dict, made on the first write of
    another value, so a common record pays one slot for all of them (~40 bytes per call
    and per attempt: 11 MB at 10^5 calls). Writing the default back removes it, so equal
    evidence is always equal records, whichever projector folded it."""

    __slots__ = ("default", "name")

    def __init__(self, default: T) -> None:
        self.default = default
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Rare[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object, owner: type | None = None) -> T | Rare[T]:
        if obj is None:
            return self
        rare: dict[str, Any] | None = obj.rare  # type: ignore[attr-defined]
        return self.default if rare is None else rare.get(self.name, self.default)

    def __set__(self, obj: object, value: T) -> None:
        rare: dict[str, Any] | None = obj.rare  # type: ignore[attr-defined]
        if value == self.default and type(value) is type(self.default):
            if rare is not None:
                rare.pop(self.name, None)
                if not rare:
                    obj.rare = None  # type: ignore[attr-defined]
            return
        if rare is None:
            rare = obj.rare = {}  # type: ignore[attr-defined]
        rare[self.name] = value


def _copy_rare(rare: dict[str, Any] | None) -> dict[str, Any] | None:
    return dict(rare) if rare is not None else None


class Seq:
    """A seq kept as its distance from the record's `first_seq`, in the dataclass field
    named `<name>_off`. CPython shares one object for each int up to 256, and a call's
    events mostly lie that close to its first: at 10^6 events this keeps ~500,000 int
    objects fewer (16 MB) than a field per seq. Reads and writes give whole seqs."""

    __slots__ = ("slot",)

    def __init__(self) -> None:
        self.slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = name.removesuffix("_seq") + "_off"

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Seq: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> int | None: ...

    def __get__(self, obj: object, owner: type | None = None) -> int | None | Seq:
        if obj is None:
            return self
        off: int | None = getattr(obj, self.slot)
        return None if off is None else obj.first_seq + off  # type: ignore[attr-defined]

    def __set__(self, obj: object, seq: int | None) -> None:
        setattr(obj, self.slot, None if seq is None else seq - obj.first_seq)  # type: ignore[attr-defined]


@dataclass(slots=True)
class AttemptEvidence:
    attempt_id: str
    first_seq: int
    started_off: int | None = None  # these `_off` fields: see Seq
    attempt_no: int | None = None
    request_sha256: str | None = None
    observed_off: int | None = None
    interpreted_off: int | None = None
    completed_off: int | None = None
    transport_status: Any = None
    outcome: str | None = None
    status: str | None = None
    # the observation says no byte left the machine (transport.sent false: the connection
    # was never made), so the provider cannot have served it (docs/reconcile.md section 4)
    not_sent: bool = False
    rare: dict[str, Any] | None = None  # the Rare fields below that were set

    started_seq = Seq()
    observed_seq = Seq()
    interpreted_seq = Seq()
    completed_seq = Seq()
    retry_decided_seq = Rare[int | None](None)
    decision = Rare[str | None](None)
    # docs/reconcile.md: attempt.reconciled (finding, receipt ids) and whether the
    # retry decision explicitly accepted a duplicate of a received effect
    reconciled_seq = Rare[int | None](None)
    finding = Rare[str | None](None)
    reconciled_receipts = Rare[tuple[str, ...]](())
    accept_duplicate = Rare[bool](False)

    def __reduce__(self) -> tuple[type[AttemptEvidence], tuple[object, ...]]:
        """Pickled as its fields in order (a helper process hands attempts back:
        services/forked.py). The default for slots pickles a dict per attempt, and a
        load holds every one of them until it ends: 40 MB at 70,000 attempts."""
        return (AttemptEvidence, tuple(getattr(self, name) for name in _ATTEMPT_FIELDS))

    @property
    def order_seq(self) -> int:
        """The seq that orders attempts: its attempt.started, else its first event."""
        off = self.started_off
        return self.first_seq if off is None else self.first_seq + off

    @property
    def has_later_evidence(self) -> bool:
        # here, in the fold and in the ladder, `_off` fields are read where only presence
        # matters: no Seq call on the hot path
        return (
            self.observed_off is not None
            or self.interpreted_off is not None
            or self.completed_off is not None
            or self.retry_decided_seq is not None
        )


_ATTEMPT_FIELDS = tuple(f.name for f in fields(AttemptEvidence))


class Attempts(list[AttemptEvidence]):
    """A call's two or more attempts in order of first evidence, indexed by id once
    they are many (a scan for each event's attempt made a call of 10^5 attempts cost
    10^10 steps). A copy for copy on write (`shared_copy`) shares the attempt objects
    and copies one only when it is about to change (`to_change`): copying all of them
    each time a live console folded an event into such a call took ~1 s a poll.
    Compares (and pickles) as its list."""

    __slots__ = ("_at", "_copied", "_shared")

    INDEXED_FROM = 16  # a scan of fewer is as quick, and a dict costs ~1 KB

    def __init__(self, attempts: Iterable[AttemptEvidence] = ()) -> None:
        super().__init__(attempts)
        self._at: dict[str, int] | None = None  # id -> position of the first with it
        self._shared = 0  # positions below hold attempts the list copied from holds too
        self._copied: set[int] | None = None  # ... except these, copied since
        if len(self) >= self.INDEXED_FROM:
            self._index()

    def _index(self) -> None:
        at: dict[str, int] = {}
        for i, a in enumerate(self):
            at.setdefault(a.attempt_id, i)
        self._at = at

    def __reduce__(self) -> tuple[type[Attempts], tuple[list[AttemptEvidence]]]:
        return (Attempts, (list(self),))

    def shared_copy(self) -> Attempts:
        """A list of the same attempt objects, to fold into while this one stays as it
        is (`to_change` copies an attempt before it changes)."""
        out = Attempts()
        out.extend(self)
        out._at = dict(self._at) if self._at is not None else None
        out._shared = len(self)
        return out

    def add(self, attempt: AttemptEvidence) -> None:
        self.append(attempt)
        at = self._at
        if at is not None:
            at.setdefault(attempt.attempt_id, len(self) - 1)
        elif len(self) >= self.INDEXED_FROM:
            self._index()

    def position(self, attempt_id: str) -> int | None:
        """The position of the first attempt with this id (a scan in order finds it)."""
        at = self._at
        if at is not None:
            return at.get(attempt_id)
        return next((i for i, a in enumerate(self) if a.attempt_id == attempt_id), None)

    def find(self, attempt_id: str) -> AttemptEvidence | None:
        i = self.position(attempt_id)
        return None if i is None else self[i]

    def to_change(self, i: int) -> AttemptEvidence:
        """The attempt at position i, copied first if the list this was copied from
        holds it too."""
        attempt = self[i]
        if i < self._shared:
            copied = self._copied
            if copied is None:
                copied = self._copied = set()
            if i not in copied:
                copied.add(i)
                attempt = self[i] = replace(attempt, rare=_copy_rare(attempt.rare))
        return attempt


@dataclass(slots=True)
class CallEvidence:
    call_id: str
    task_id: str
    first_seq: int
    position: int = -1  # order of first appearance: index in WorkState.calls
    last_off: int = 0  # these `_off` fields: see Seq
    event_count: int = 0
    requested_off: int | None = None
    idempotency_key: str | None = None
    purpose: str | None = None
    model: str | None = None
    manifest_off: int | None = None
    manifest_key: str | None = None
    manifest_model: str | None = None
    request_sha256: str | None = None
    context_package_id: str | None = None
    rendered_context_sha256: str | None = None
    completed_off: int | None = None
    status: str | None = None
    adopted_attempt_id: str | None = None
    # see `attempts`: None, the one attempt, or two or more (Attempts)
    held: AttemptEvidence | Attempts | None = None
    # docs/tools.md: turn, tool plans and operations (None for every v1 call)
    tools: ToolEvidence | None = None
    rare: dict[str, Any] | None = None  # the Rare fields below that were set

    last_seq = Seq()
    requested_seq = Seq()
    manifest_seq = Seq()
    completed_seq = Seq()
    resumed_from = Rare[str | None](None)
    preparation_failed_seq = Rare[int | None](None)
    preparation_error = Rare[str | None](None)
    resumed_seq = Rare[int | None](None)
    resumed_as = Rare[str | None](None)
    resumed_by = Rare[str | None](None)

    @property
    def key(self) -> str | None:
        return self.manifest_key or self.idempotency_key

    @property
    def attempts(self) -> tuple[AttemptEvidence, ...] | Attempts:
        """The attempts in order of first evidence, found by id through `attempt` (a
        scan of the one to three most calls have: a dict each cost 120 bytes more per
        call; an index from Attempts.INDEXED_FROM on). Attempts without
        attempt.started (orphans, an anomaly) are kept too but never decide. Most calls
        have one attempt, held as itself: a list for it cost 88 bytes per call (12 MB at
        10^5 calls); do not mutate what this returns, `add_attempt` instead."""
        held = self.held
        if held is None:
            return ()
        if type(held) is Attempts:
            return held
        return (held,)  # type: ignore[return-value]

    def add_attempt(self, attempt: AttemptEvidence) -> None:
        held = self.held
        if held is None:
            self.held = attempt
        elif type(held) is Attempts:
            held.add(attempt)
        else:
            self.held = Attempts((held, attempt))  # type: ignore[arg-type]

    def attempt(self, attempt_id: str) -> AttemptEvidence | None:
        """The attempt with this id (the first, should two share it), or None."""
        held = self.held
        if held is None:
            return None
        if type(held) is Attempts:
            return held.find(attempt_id)
        return held if held.attempt_id == attempt_id else None  # type: ignore[union-attr]

    def attempt_to_change(self, attempt_id: str) -> AttemptEvidence | None:
        """`attempt`, for a fold about to change it (see `clone`)."""
        held = self.held
        if type(held) is Attempts:
            i = held.position(attempt_id)
            return None if i is None else held.to_change(i)
        return self.attempt(attempt_id)

    def last_attempt(self) -> AttemptEvidence | None:
        """The attempt whose attempt.started has the highest seq (docs/ledger.md section 4):
        evidence for an attempt that never started never stands in for it."""
        held = self.held
        if type(held) is AttemptEvidence:
            return held if held.started_off is not None else None
        last: AttemptEvidence | None = None
        last_seq = 0
        for a in self.attempts:
            off = a.started_off
            if off is None:
                continue
            started = a.first_seq + off
            if last is None or started > last_seq:
                last, last_seq = a, started
        return last

    def started_attempts(self) -> list[AttemptEvidence]:
        """The started attempts in order. Most calls have one attempt: that case skips
        the sort (`inspect --json` asks twice per call, 137,000 calls at 10^6 events)."""
        held = self.held
        if type(held) is AttemptEvidence:
            return [held] if held.started_off is not None else []
        attempts = self.attempts
        return sorted((a for a in attempts if a.started_off is not None),
                      key=_started_order)

    def clone(self) -> CallEvidence:
        """A copy that later folds may change while verdicts keep the original: two or
        more attempts are shared until one changes (`attempt_to_change`), one is copied."""
        held = self.held
        if type(held) is Attempts:
            copies: AttemptEvidence | Attempts | None = held.shared_copy()
        elif held is not None:
            copies = replace(held, rare=_copy_rare(held.rare))  # type: ignore[type-var]
        else:
            copies = None
        return replace(self, held=copies,
                       tools=self.tools.clone() if self.tools is not None else None,
                       rare=_copy_rare(self.rare))


def _started_order(attempt: AttemptEvidence) -> int:
    return attempt.started_seq  # type: ignore[return-value]  # only started ones are sorted


ByPair = Mapping[tuple[str, str], tuple[tuple[str, str], ...]]


class ReceiptIndex:
    """The receipt log as of the projection's cut-off, by (key, body hash): what lets
    each attempt name the receipts that match it. `log`: present | absent | unreadable;
    `complete_up_to`: the latest received_at it holds (the provider logs before working).

    Built on first use: every receipt check carries one, but only `inspect --json` and
    the reasons read it, and time travel checks receipts at every step."""

    __slots__ = ("_build", "_built", "_last_call", "log")

    def __init__(self, log: str, build: Callable[[], tuple[ByPair, str | None]]) -> None:
        self.log = log
        self._build: Callable[[], tuple[ByPair, str | None]] | None = build
        self._built: tuple[ByPair, str | None] = ({}, None)
        # the last `call_receipt_ids` answer, kept with the index it was read from
        self._last_call: tuple[CallEvidence, tuple[str, ...]] | None = None

    def _get(self) -> tuple[ByPair, str | None]:
        if self._build is not None:
            self._built, self._build = self._build(), None
        return self._built

    @property
    def built(self) -> bool:
        """True once built: a later log's index can then start from what this one found."""
        return self._build is None

    @property
    def by_pair(self) -> ByPair:
        return self._get()[0]

    @property
    def complete_up_to(self) -> str | None:
        return self._get()[1]

    def ids(self, pair: tuple[str, str]) -> tuple[str, ...]:
        """The ids of the receipts `by_pair` holds for `pair`, without their times (the
        console marks every receipt of a call: wording 10^5 times took a second)."""
        by_pair = self.by_pair
        ids: Callable[[tuple[str, str]], tuple[str, ...]] | None = getattr(by_pair, "ids", None)
        if ids is not None:
            return ids(pair)
        return tuple(rid for rid, _at in by_pair.get(pair, ()))


def attempt_receipts(call: CallEvidence, att: AttemptEvidence, index: ReceiptIndex
                     ) -> tuple[tuple[str, str], ...]:
    """The receipts matching one started attempt: same idempotency key and
    body_sha256 == the attempt's request_sha256 (docs/ledger.md section 5's pairing)."""
    key = call.key
    if key is None or not att.request_sha256 or att.started_off is None:
        return ()
    return index.by_pair.get((key, att.request_sha256), ())


def call_receipt_ids(call: CallEvidence, index: ReceiptIndex) -> tuple[str, ...]:
    """The ids of the receipts matching any started attempt of `call`, each once, in
    order of the attempts (log order within one). The index keeps the last answer: the
    console asks on every paint of the selected call (10^5 attempts: ~0.5 s a time)."""
    last = index._last_call
    if last is not None and last[0] is call:  # (evidence judged never changes)
        return last[1]
    seen: dict[str, None] = {}
    asked: set[str] = set()  # attempts with one request hash match one list
    key = call.key
    for att in call.started_attempts() if key is not None else ():
        sha = att.request_sha256
        if not sha or sha in asked:
            continue
        asked.add(sha)
        for rid in index.ids((key, sha)):  # type: ignore[arg-type]  # (key is not None)
            seen.setdefault(rid)
    found = tuple(seen)
    index._last_call = (call, found)
    return found


def attempt_effect(att: AttemptEvidence) -> str:
    """One started attempt's provider effect: happened when observed as sent (or found
    received), none when observed as never sent (or found not received), else unknown."""
    if att.observed_off is not None:
        return "none" if att.not_sent else "happened"
    if att.finding == "received":
        return "happened"
    if att.finding == "not_received":
        return "none"
    return "unknown"


def call_receipt_evidence(call: CallEvidence, index: ReceiptIndex,
                          limit: int | None = None,
                          started: list[AttemptEvidence] | None = None,
                          found: dict[str, tuple[tuple[str, str], ...]] | None = None,
                          ) -> dict[str, Any]:
    """The `evidence` object of a call in `inspect --json`: the receipt log's status and,
    per started attempt, the receipts that match it (and all of them for the call).
    `limit`: only the last `limit` attempts, at most `limit` receipts a list, and how
    many were left out (`*_not_shown`; `received` then holds those attempts' receipts):
    the console's detail of one call, which stays small whatever the call holds;
    `inspect --json` lists them all. `started`: the call's `started_attempts()`, when
    the caller has them; `found`: filled with the receipts found per request hash (the
    caller's reason names the last attempt's)."""
    attempts = []
    received: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()  # what `received` holds (a scan of it was quadratic)
    asked: set[str | None] = set()  # request hashes whose receipts are in `received`
    if started is None:
        started = call.started_attempts()
    if found is None:
        found = {}
    key = call.key
    by_pair = index.by_pair if key is not None else None
    listed_from = 0 if limit is None else max(0, len(started) - limit)
    for att in started[listed_from:]:
        sha = att.request_sha256
        if by_pair is None or not sha:  # (as attempt_receipts: no key or no hash)
            pairs: tuple[tuple[str, str], ...] = ()
        else:
            got = found.get(sha)
            if got is None:
                got = found[sha] = by_pair.get((key, sha), ())  # type: ignore[index]
            pairs = got
        if sha not in asked:  # (the same hash: the same receipts)
            asked.add(sha)
            # each receipt once, in order of the attempts (equal ones one attempt
            # matches twice both stay: only earlier attempts' count)
            if pairs:
                received += [pair for pair in pairs if pair not in seen]
                seen.update(pairs)
        entry = {"attempt_id": att.attempt_id, "provider_effect": attempt_effect(att),
                 "received": _receipt_list(pairs[:limit])}
        if limit is not None and len(pairs) > limit:
            entry["received_not_shown"] = len(pairs) - limit
        attempts.append(entry)
    if limit is None and len(attempts) == 1:  # (most calls: the call's list is its attempt's)
        listed = attempts[0]["received"]
    else:
        listed = _receipt_list(received[:limit])
    doc: dict[str, Any] = {"receipt_log": index.log, "log_complete_up_to": index.complete_up_to,
                           "received": listed, "attempts": attempts}
    if limit is not None and len(received) > limit:
        doc["received_not_shown"] = len(received) - limit
    if listed_from:
        doc["attempts_not_shown"] = listed_from
    return doc


def _receipt_list(pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"receipt_id": rid, "received_at": at} for rid, at in pairs]


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
    # (seq, acceptance, call) and (seq, acceptance): an empty tuple until the first is
    # folded, not a list per task (two empty lists: ~110 bytes a task while following)
    accepted: list[tuple[int, str, str | None]] | tuple[()] = ()
    completed: list[tuple[int, str | None]] | tuple[()] = ()
    # the seqs title, objective and claimed_by were written at (0: never), and whether
    # one was written twice: the evidence as of a seq is then a filter (`task_as_of`)
    title_seq: int = 0
    objective_seq: int = 0
    claimed_seq: int = 0
    rewritten: bool = False


# --------------------------------------------------------------------------- helpers


def _s(payload: dict[str, Any] | None, key: str) -> str | None:
    """A payload field as text, or None (payloads are untrusted: never assume types)."""
    if not payload:
        return None
    value = payload.get(key)
    if value is None or type(value) is str:
        return value
    return value if isinstance(value, str) else str(value)


def _intern(text: str) -> str:
    """One shared object for strings that repeat across many calls (task ids, models,
    statuses): at 10^6 events the projection's memory is mostly such strings."""
    return sys.intern(text) if type(text) is str and len(text) <= 96 else text


def _word(payload: dict[str, Any] | None, key: str) -> str | None:
    """A short repeated payload field (status, model, outcome), shared (`_intern`)."""
    if not payload:
        return None
    value = payload.get(key)
    if value is None:
        return None
    if type(value) is not str:
        value = str(value)
    return sys.intern(value) if len(value) <= 96 else value


def _str_list(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [v if isinstance(v, str) else str(v) for v in value]


# Artifact names found to be 64 lowercase hex lately: a call names its request hash in
# its manifest and again when an attempt starts, and a compilation's rendered context
# in every call's manifest (a set look-up costs a tenth of the pattern's match). Only
# names that passed are kept, so a name found here is one the pattern accepts.
_HEX_SEEN: set[str] = set()
_HEX_SEEN_MAX = 4096


def check_artifact_refs(kind: str, payload: dict[str, Any], report: Report) -> bool:
    """Report every artifact reference of `kind` that is not 64 lowercase hex (a name
    like `../../x` would leave the store). True if all were fine."""
    ok = True
    seen = _HEX_SEEN
    for name in ARTIFACT_FIELDS.get(kind, ()):
        value = payload.get(name)
        if value is None or (type(value) is str and value in seen):
            continue
        if type(value) is str and len(value) == 64 and _HEX64(value):
            if len(seen) >= _HEX_SEEN_MAX:
                seen.clear()
            seen.add(value)
            continue
        if not is_sha256_hex(value):
            report(f"{kind} field {name} is not a sha256 artifact name: {str(value)[:70]!r}")
            ok = False
    return ok


# --------------------------------------------------------------------------- folds


def fold_task_event(task: TaskEvidence, kind: str, seq: int, p: dict[str, Any],
                    report: Report) -> None:
    if kind == "task.created":
        task.rewritten |= task.title_seq != 0
        task.title, task.title_seq = _s(p, "title"), seq
    elif kind == "task.objective":
        task.rewritten |= task.objective_seq != 0
        task.objective, task.objective_seq = _s(p, "objective"), seq
    elif kind == "task.claimed":
        task.rewritten |= task.claimed_seq != 0
        task.claimed_by, task.claimed_seq = _s(p, "worker"), seq
    elif kind == "task.accepted":
        acc = _s(p, "acceptance_id")
        if acc is None:
            report("task.accepted without acceptance_id")
            acc = f"seq-{seq}"
        if not task.accepted:
            task.accepted = []
        task.accepted.append((seq, acc, _s(p, "call_id")))
    elif kind == "task.completed":
        if not task.completed:
            task.completed = []
        task.completed.append((seq, _s(p, "acceptance_id")))


def task_as_of(task: TaskEvidence, n: int, first_seq: int, last_seq: int
               ) -> TaskEvidence | None:
    """The task's own evidence as of seq `n`, from its evidence now, where that is a
    filter: each fact written once, at a seq it keeps. `first_seq`, `last_seq`: the
    task's first and last event at or before `n` (any kind). None where a fact was
    written twice (fold its events up to `n` instead)."""
    if task.rewritten:
        return None

    def at(value: str | None, seq: int) -> tuple[str | None, int]:
        return (value, seq) if seq <= n else (None, 0)

    title, title_seq = at(task.title, task.title_seq)
    objective, objective_seq = at(task.objective, task.objective_seq)
    claimed_by, claimed_seq = at(task.claimed_by, task.claimed_seq)
    return TaskEvidence(task.task_id, first_seq, last_seq, title, objective, claimed_by,
                        [a for a in task.accepted if a[0] <= n] or (),
                        [c for c in task.completed if c[0] <= n] or (),
                        title_seq, objective_seq, claimed_seq)


def fold_compilation_event(comp: CompilationEvidence, is_new: bool, kind: str, seq: int,
                           p: dict[str, Any], report: Report) -> None:
    if is_new and kind != "context.compilation_requested":
        report(f"{kind} for compilation {comp.compilation_id} never requested")
    comp.last_seq = seq
    if kind == "context.compilation_requested":
        comp.requested_seq = seq
        offered = p.get("offered")
        comp.offered = [o for o in offered if isinstance(o, dict)] if isinstance(offered, list) else []
        comp.required_ids = _str_list(p.get("required_ids"))
    elif kind == "context.compilation_completed":
        comp.completed_seq = seq
        comp.package_id = _s(p, "package_id")
        comp.rendered_sha256 = _s(p, "rendered_sha256")
        comp.selected = _str_list(p.get("selected"))
        check_artifact_refs(kind, p, report)
    else:
        comp.failed_seq = seq
        err = p.get("error")
        comp.error = err if isinstance(err, dict) else ({"message": str(err)} if err else None)
        comp.missing_ids = _str_list(p.get("missing_ids"))


def fold_call_event(call: CallEvidence, is_new: bool, kind: str, seq: int,
                    attempt_id: str | None, p: dict[str, Any], report: Report) -> None:
    """Fold one call.* / attempt.* / tool.* event (seq order within the call) into its evidence."""
    cid = call.call_id
    if is_new and kind != "call.requested":
        report(f"{kind} for call {cid} before any call.requested")
    call.last_off = seq - call.first_seq
    call.event_count += 1
    if kind.startswith("attempt."):
        _fold_attempt(call, kind, seq, attempt_id, p, report)
    elif kind in TOOL_KINDS:
        fold_tool_event(call, kind, seq, attempt_id, p, report)
    elif kind == "call.requested":
        if call.requested_off is not None:
            report(f"second call.requested for call {cid}")
        else:
            call.requested_off = seq - call.first_seq
        key = _s(p, "idempotency_key")
        # (a key equal to the call id, as most writers make it, is the id's object)
        call.idempotency_key = call.idempotency_key or (cid if key == cid else key)
        call.purpose = _word(p, "purpose")
        call.model = _word(p, "model")
        call.resumed_from = _s(p, "resumed_from")
        if p.get("turn") is not None:  # (no turn: nothing for the tool rungs)
            fold_tool_request(call, p)
    elif kind == "call.manifest":
        if call.manifest_off is not None:
            report(f"second call.manifest for call {cid}")
        call.manifest_off = seq - call.first_seq
        key = _s(p, "idempotency_key")
        call.manifest_key = call.idempotency_key if key == call.idempotency_key else key
        call.manifest_model = _word(p, "model")
        call.request_sha256 = _s(p, "request_sha256")
        # shared by every call of a compilation: one object each, not one per call
        call.context_package_id = _word(p, "context_package_id")
        call.rendered_context_sha256 = _word(p, "rendered_context_sha256")
        if call.attempts:
            report(f"call.manifest for call {cid} after an attempt started")
        check_artifact_refs(kind, p, report)
    elif kind == "call.preparation_failed":
        call.preparation_failed_seq = seq
        err = p.get("error")
        if isinstance(err, dict):
            call.preparation_error = f"{_s(err, 'type') or 'error'}: {_s(err, 'message') or ''}"
        else:
            call.preparation_error = str(err) if err is not None else None
    elif kind == "call.completed":
        if call.completed_off is not None:
            report(f"second call.completed for call {cid}")
        call.completed_off = seq - call.first_seq
        call.status = _word(p, "status")
        adopted = _s(p, "adopted_attempt_id")
        found = call.attempt(adopted) if adopted is not None else None
        call.adopted_attempt_id = found.attempt_id if found is not None else adopted
    elif kind == "call.resumed":
        check_artifact_refs(kind, p, report)
        if call.resumed_seq is not None:
            report(f"call {cid} resumed a second time")
        else:
            call.resumed_seq = seq
            call.resumed_as = _s(p, "resumed_as")
            by = p.get("by")
            if isinstance(by, dict):
                call.resumed_by = f"{_s(by, 'user')}@{_s(by, 'host')} pid {_s(by, 'pid')}"


def attempt_key(attempt_id: str | None, seq: int) -> str:
    """The id an attempt event is folded under (one without an id: its own, by seq)."""
    return attempt_id if attempt_id else f"(no attempt_id, seq {seq})"


def _fold_attempt(call: CallEvidence, kind: str, seq: int, aid: str | None,
                  p: dict[str, Any], report: Report) -> None:
    if not aid:
        report(f"{kind} without attempt_id")
        aid = attempt_key(aid, seq)
    held = call.held  # (the one attempt most calls have, found without a call)
    if type(held) is AttemptEvidence:
        att = held if held.attempt_id == aid else None
    else:
        att = call.attempt_to_change(aid)
    if att is None:
        att = AttemptEvidence(aid, seq)
        call.add_attempt(att)
        if kind != "attempt.started":
            report(f"{kind} for attempt {aid} that never started")
    if kind == "attempt.started":
        if att.started_off is not None:
            report(f"attempt {aid} started twice")
            return
        att.started_off = seq - att.first_seq
        no = p.get("attempt_no")
        att.attempt_no = no if isinstance(no, int) and not isinstance(no, bool) else None
        sha = _s(p, "request_sha256")
        att.request_sha256 = call.request_sha256 if sha == call.request_sha256 else sha
        if call.manifest_off is None:
            report(f"attempt.started for call {call.call_id} with no call.manifest")
        check_artifact_refs(kind, p, report)
    elif kind == "attempt.observed":
        if att.observed_off is None:
            att.observed_off = seq - att.first_seq
        transport = p.get("transport")
        att.transport_status = transport.get("status") if isinstance(transport, dict) else None
        att.not_sent = isinstance(transport, dict) and transport.get("sent") is False
        check_artifact_refs(kind, p, report)
        if "tool_plan" in p and att.observed_seq == seq:
            fold_tool_plan(call, aid, p, report)
    elif kind == "attempt.interpreted":
        if att.interpreted_off is None:
            att.interpreted_off = seq - att.first_seq
        att.outcome = _word(p, "outcome")
    elif kind == "attempt.retry_decided":
        att.retry_decided_seq = att.retry_decided_seq or seq
        att.decision = _word(p, "decision")
        att.accept_duplicate = p.get("accept_duplicate") is True
        if att.decision not in ("retry", "stop"):
            report(f"attempt.retry_decided with decision {att.decision!r}")
    elif kind == "attempt.reconciled":
        if att.reconciled_seq is not None:
            report(f"attempt {aid} reconciled a second time (the first finding stands)")
            return
        finding = _word(p, "finding")
        if finding not in ("received", "not_received"):
            report(f"attempt.reconciled with finding {finding!r} (ignored)")
            return
        att.reconciled_seq = seq
        att.finding = finding
        att.reconciled_receipts = tuple(_str_list(p.get("evidence")))
    elif kind == "attempt.completed":
        if att.completed_off is None:
            att.completed_off = seq - att.first_seq
        att.status = _word(p, "status")
