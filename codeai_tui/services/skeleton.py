"""The skeleton: every call's stage from the covering index alone, before any payload.

The ladder's rungs 1-10 ask which kinds exist per call and per started attempt, and
only a few facts from payloads: an observation that says nothing was sent
(`transport.sent: false`), the operator's finding (`attempt.reconciled`) and the retry
decision. So one grouped read of `events_call(call_id, attempt_id, kind, seq)` (about
the cost of the bare scan) decides stage, next operation and provider effect of almost
every call, and therefore the effect-unknown set, exactly. A call whose verdict needs a
payload is re-read from its own events (through the index) and judged by the real
ladder; past `RESOLVE_MAX` such calls the rest stay `pending` ("reading…"), never
guessed. Whatever a payload alone says (keys, links, hashes, anomalies, receipts) is
not here: the full projection brings it.

tests/core/test_skeleton.py checks, on random ledgers, that every final verdict here
equals the oracle's and that the effect-unknown set is the oracle's.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import product
from typing import NamedTuple, overload

from codeai_tui.ledger.blocks import appended
from codeai_tui.ledger.evidence_sql import (
    ATTEMPT_OBSERVED,
    ATTEMPT_RECONCILED,
    NULL_ATTEMPT,
    ODD_KIND,
    EvidenceSQL,
    FastPathUnfit,
)
from codeai_tui.ledger.text_column import TextColumn
from codeai_tui.services.gather import fold_call_rows
from codeai_tui.services.stage_reads import (
    CALL_DONE,
    COMP,
    INT,
    MANIFEST,
    OBS,
    PREP,
    RD,
    REC,
    RESUMED,
    StageReads,
)
from codeai_tui.workstate import CallStage, NextOperation, ProviderEffect, classify_call
from codeai_tui.workstate.evidence import AttemptEvidence, CallEvidence

_LATER = OBS | INT | RD | COMP
RESOLVE_MAX = 2000  # calls re-read one by one; beyond that they wait for the projection


class SkeletonCall(NamedTuple):
    """One call as far as its kinds decide it. `stage` None: pending (a payload decides,
    and it was not read yet). `effect_unknown` is always final. (A tuple: 137,000 of
    them are made in a fraction of what frozen dataclasses cost.)"""

    call_id: str
    first_seq: int
    last_seq: int
    attempts: int
    stage: CallStage | None
    next_operation: NextOperation | None
    provider_effect: ProviderEffect | None
    effect_unknown: bool

    @property
    def pending(self) -> bool:
        return self.stage is None


Verdict = tuple[CallStage, NextOperation, ProviderEffect]
# every verdict a code (0: pending), fixed at import: nothing shared is mutated
_VERDICTS: tuple[Verdict | None, ...] = (None, *product(CallStage, NextOperation,
                                                        ProviderEffect))
_CODE_OF: dict[Verdict, int] = {v: i for i, v in enumerate(_VERDICTS) if v is not None}


class SkeletonCalls(Sequence[SkeletonCall]):
    """The calls in columns (ids as joined texts, seqs, attempts, a verdict code each), a
    SkeletonCall made only when one is read: the console holds the skeleton until its
    projection is done, beside the projection being built. 137,000 tuples of eight
    fields cost ~22 MB more than arrays; the ids as str objects ~70 bytes a call more
    than joined (~95 MB at 1.37 million calls, at the console's peak). A call's last seq
    is kept after its first, and its attempts, in 4 bytes where they fit (8 where one
    does not, a hostile ledger's: `appended`): 11 MB fewer at 1.37M calls."""

    __slots__ = ("_attempts", "_codes", "_firsts", "_ids", "_lasts")

    def __init__(self) -> None:
        self._ids = TextColumn()
        self._firsts = array("q")
        self._lasts: array[int] | list[int] = array("i")  # (after the first)
        self._attempts: array[int] | list[int] = array("i")
        self._codes = array("H")

    def append(self, call_id: str, first: int, last: int, attempts: int,
               verdict: Verdict | None) -> None:
        self._ids.append(call_id)
        self._firsts.append(first)
        self._lasts = appended(self._lasts, last - first)
        self._attempts = appended(self._attempts, attempts)
        self._codes.append(0 if verdict is None else _CODE_OF[verdict])

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> Sequence[str]:
        """The call ids, in first-seq order (the projection's order)."""
        return self._ids

    @overload
    def __getitem__(self, index: int) -> SkeletonCall: ...

    @overload
    def __getitem__(self, index: slice) -> list[SkeletonCall]: ...

    def __getitem__(self, index: int | slice) -> SkeletonCall | list[SkeletonCall]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        verdict = _VERDICTS[self._codes[index]]
        first = self._firsts[index]
        if verdict is None:
            return SkeletonCall(self._ids[index], first, first + self._lasts[index],
                                self._attempts[index], None, None, None, False)
        stage, op, effect = verdict
        return SkeletonCall(self._ids[index], first, first + self._lasts[index],
                            self._attempts[index], stage, op, effect,
                            stage is CallStage.EFFECT_UNKNOWN)


@dataclass(frozen=True, slots=True)
class Skeleton:
    """Every call of a ledger's events with seq <= `limit`, in first-seq order (the order
    of the projection's calls)."""

    limit: int
    calls: SkeletonCalls
    effect_unknown_ids: frozenset[str]

    @property
    def pending_count(self) -> int:
        return sum(1 for c in self.calls if c.pending)


def needs_payload(flags: int, last: int | None, sent_words: bool) -> bool:
    """Whether a payload fact the kinds do not carry could change this call's verdict:
    an observation that may say nothing was sent, the operator's finding on an attempt,
    or the retry decision. Gathering's question, not a rung: the rungs are
    `classify_call`'s. `flags`: the call's kind bits and the ORed observed/reconciled
    bits of its started attempts; `last`: the kind bits of the last started attempt
    (None: none started)."""
    if flags & (RESUMED | CALL_DONE):
        if flags & ATTEMPT_OBSERVED:
            return sent_words
        return bool(flags & ATTEMPT_RECONCILED)
    if flags & PREP or last is None:
        return False
    if last & REC and not last & OBS:
        return True  # the finding's word decides (an invalid one is ignored)
    if not last & _LATER:
        return False
    if sent_words:
        return True
    return bool(last & INT and last & RD and not last & COMP)  # retry or stop


def shape_evidence(flags: int, last: int | None, started: int) -> CallEvidence:
    """A call with exactly these kinds and no payload facts: what the ladder is asked
    about for every call of this shape."""
    call = CallEvidence(call_id="shape", task_id="shape", first_seq=1)
    if flags & RESUMED:
        call.resumed_seq = 90
    if flags & CALL_DONE:
        call.completed_seq = 91
    if flags & PREP:
        call.preparation_failed_seq = 92
    if flags & MANIFEST:
        call.manifest_seq = 2
    if started and flags & ATTEMPT_OBSERVED and (last is None or not last & OBS):
        # an earlier started attempt carries the call's observation
        earlier = AttemptEvidence("earlier", first_seq=3)
        earlier.started_seq, earlier.observed_seq = 3, 4
        call.add_attempt(earlier)
    if last is not None:
        attempt = AttemptEvidence("last", first_seq=10)
        attempt.started_seq = 10
        attempt.observed_seq = 11 if last & OBS else None
        attempt.interpreted_seq = 12 if last & INT else None
        attempt.retry_decided_seq = 13 if last & RD else None
        attempt.completed_seq = 14 if last & COMP else None
        call.add_attempt(attempt)
    return call


def judge(flags: int, last: int | None, started: int, sent_words: bool) -> Verdict | None:
    """The ladder's verdict for a call of this shape, or None where a payload decides.
    The rung functions are workstate's own (`classify_call` on `shape_evidence`), so the
    skeleton cannot drift from the projection; callers memoise it per shape."""
    if needs_payload(flags, last, sent_words):
        return None
    state = classify_call(shape_evidence(flags, last, started))
    return state.stage, state.next_operation, state.provider_effect


def _unknown_undecided(flags: int, last: int | None) -> bool:
    """True if whether the call is effect_unknown depends on a payload: a finding on its
    last attempt."""
    if flags & (RESUMED | CALL_DONE | PREP) or last is None:
        return False
    return bool(last & REC and not last & OBS)


def build_skeleton(sql: EvidenceSQL, as_of: int | None = None,
                   resolve_max: int = RESOLVE_MAX, reads: StageReads | None = None,
                   ) -> Skeleton:
    """The skeleton of the ledger as of `as_of` (all when None), or as of `reads.limit`
    from reads begun earlier (services/stage_reads.py). Raises FastPathUnfit (or a
    LedgerError) where the fast path would: the caller then waits for the projection.
    The reads themselves (services/stage_reads.py) run beside each other: the grouped
    read in two child processes on a big ledger, else each in a thread."""
    problem = sql.fast_path_problem()
    if problem is not None:
        raise FastPathUnfit(problem)
    if reads is None:
        reads = StageReads(sql, sql.max_seq() if as_of is None else as_of)
    limit = reads.limit
    rows, sent = reads.result()
    calls = SkeletonCalls()
    unknown: set[str] = set()
    budget = resolve_max
    judged: dict[tuple[int, int | None, bool, bool], Verdict | None] = {}
    for pos, (cid, first, last_seq, flags, packed, started) in enumerate(rows.rows()):
        if flags & ODD_KIND or type(cid) is not str:
            raise FastPathUnfit("id or kind cells of types the ledger schema does not give them")
        last = None if packed is None else packed & 31
        if flags & NULL_ATTEMPT:
            verdict = None
        else:  # pure in a few small ints: most calls share a handful of shapes
            shape = (flags, last, started > 0, cid in sent)
            verdict = judged[shape] if shape in judged else judged.setdefault(
                shape, judge(flags, last, started, shape[3]))
        attempts = started
        if verdict is None and (budget > 0 or flags & NULL_ATTEMPT
                                or _unknown_undecided(flags, last)):
            budget -= 1
            evidence = fold_call_rows(cid, sql.call_rows(cid, limit), pos)
            if evidence is not None:
                st = classify_call(evidence)
                verdict = st.stage, st.next_operation, st.provider_effect
                attempts = st.attempts
        if verdict is None:
            calls.append(cid, first, last_seq, attempts, None)
            continue
        stage, op, effect = verdict
        is_unknown = stage is CallStage.EFFECT_UNKNOWN
        if is_unknown:
            unknown.add(cid)
        calls.append(cid, first, last_seq, attempts, verdict)
    return Skeleton(limit, calls, frozenset(unknown))
