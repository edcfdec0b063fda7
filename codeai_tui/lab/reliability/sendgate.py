"""The send gate, checked from the record: no attempt was started (so no request sent)
while the call's previous attempt had an unknown effect, nor after a received effect
without a recorded acceptance of the duplicate (docs/reconcile.md sections 2 and 5).

Judged per call, for each started attempt after the first, from the previous started
attempt's events recorded before it: an observed attempt needs a `retry` decision; one
without an observation needs a finding, `not_received`, or `received` with a retry
decision that says `accept_duplicate: true`. Anything else is a problem line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from codeai_tui.ledger.schema import Event


def _retry(events: Sequence[Event], *, accepted: bool) -> bool:
    return any(e.kind == "attempt.retry_decided" and (e.payload or {}).get("decision") == "retry"
               and (not accepted or (e.payload or {}).get("accept_duplicate") is True)
               for e in events)


def unsafe_sends(events: Sequence[Event]) -> list[str]:
    """One line per attempt started where the gate should have held."""
    by_call: defaultdict[str, list[Event]] = defaultdict(list)
    for e in events:
        if e.call_id is not None:
            by_call[e.call_id].append(e)
    problems: list[str] = []
    for call_id, evs in by_call.items():
        started = [e for e in evs if e.kind == "attempt.started"]
        for prev, nxt in zip(started, started[1:], strict=False):
            earlier = [e for e in evs if e.seq < nxt.seq and e.attempt_id == prev.attempt_id]
            kinds = {e.kind for e in earlier}
            finding = next(((e.payload or {}).get("finding") for e in earlier
                            if e.kind == "attempt.reconciled"), None)
            if "attempt.observed" in kinds:
                ok, why = _retry(earlier, accepted=False), "observed without a retry decision"
            elif finding == "not_received":
                ok, why = True, ""
            elif finding == "received":
                ok, why = _retry(earlier, accepted=True), "received without accept_duplicate"
            else:
                ok, why = False, "effect unknown"
            if not ok:
                problems.append(f"call {call_id}: attempt {nxt.attempt_id} started at seq "
                                f"{nxt.seq} after {prev.attempt_id}: {why}")
    return problems
