"""One-line reasons: the evidence behind a verdict, worded for an operator."""

from __future__ import annotations

import re
from collections.abc import Mapping

from codeai_tui.workstate.evidence import (
    CallEvidence,
    ReceiptIndex,
    attempt_effect,
    attempt_receipts,
)
from codeai_tui.workstate.vocab import CallStage


def call_reason(call: CallEvidence, stage: CallStage) -> str:
    """The evidence behind the ladder's verdict for `stage`, in one line."""
    if stage is CallStage.SUPERSEDED:
        by = f" (by {call.resumed_by})" if call.resumed_by else ""
        return f"call.resumed at seq {call.resumed_seq}: superseded by {call.resumed_as}{by}"
    if stage is CallStage.COMPLETED:
        adopting = f", adopting attempt {call.adopted_attempt_id}" if call.adopted_attempt_id else ""
        reason = f"call.completed at seq {call.completed_seq} with status {call.status}{adopting}"
        started = call.started_attempts()
        if started and all(attempt_effect(a) == "none" for a in started):
            reason += ("; nothing was sent to the provider (every attempt was observed as not "
                       "sent or reconciled as not received)")
        return reason
    if stage is CallStage.PREPARATION_FAILED:
        return (f"call.preparation_failed at seq {call.preparation_failed_seq}"
                f" ({call.preparation_error or 'no error recorded'}): nothing was sent")
    if stage is CallStage.REQUESTED:
        return (f"call.requested at seq {call.requested_seq or call.first_seq}, no manifest: "
                "nothing was sent, but no drift check is possible")
    if stage is CallStage.MANIFEST_RECORDED:
        return f"call.manifest at seq {call.manifest_seq}, no attempt started: nothing was sent"
    last = call.last_attempt()
    assert last is not None  # every later stage has a started attempt
    aid = last.attempt_id
    if stage is CallStage.RECONCILED_NOT_RECEIVED:
        reason = (f"attempt {aid} reconciled at seq {last.reconciled_seq}: not received by "
                  "the provider; start the next attempt (no duplicate possible)")
    elif stage is CallStage.RECONCILED_RECEIVED:
        named = ", ".join(last.reconciled_receipts) or "no receipt named"
        reason = (f"attempt {aid} reconciled at seq {last.reconciled_seq}: received by the "
                  f"provider ({named}), its response is lost; finalize as failed, or record "
                  "a retry that accepts the duplicate")
        if last.decision == "retry":
            reason += (f" (the retry decision at seq {last.retry_decided_seq} did not accept "
                       "the duplicate)")
    elif stage is CallStage.EFFECT_UNKNOWN:
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
        if last.finding == "received" and last.observed_seq is None:
            reason += (", after it was reconciled as received"
                       + (" (a duplicate was accepted)" if last.accept_duplicate else ""))
    else:
        reason = (f"attempt {aid} completed ({last.status}) at seq {last.completed_seq}, "
                  "no call.completed")
    if last.not_sent and last.observed_seq is not None:
        reason += "; its observation says nothing was sent (the connection was never made)"
    if call.manifest_seq is None:
        reason += "; anomaly: attempt evidence without a call.manifest"
    return reason


_CLOCK = re.compile(r"T(\d\d:\d\d:\d\d(?:\.\d{1,3})?)")


def _clock(received_at: str) -> str:
    """09:25:16.759 from an RFC 3339 time; the text itself when it does not parse."""
    m = _CLOCK.search(received_at)
    return m.group(1) if m else received_at


def receipt_phrase(call: CallEvidence, index: ReceiptIndex,
                   found: Mapping[str, tuple[tuple[str, str], ...]] | None = None
                   ) -> str | None:
    """What the provider's own log says about the call's last started attempt, worded
    for the one-line reason; None when no attempt started (nothing could be sent).
    `found`: receipts already found per request hash of this call's attempts."""
    last = call.last_attempt()
    if last is None:
        return None
    if index.log == "absent":
        return "no receipt log: unknowable"
    if index.log == "unreadable":
        return "receipt log unreadable: unknowable"
    got = found.get(last.request_sha256) if found and last.request_sha256 else None  # type: ignore[arg-type]
    if got is None:
        got = attempt_receipts(call, last, index)
    if got:
        rid, at = got[0]
        more = f" and {len(got) - 1} more (duplicate effect)" if len(got) > 1 else ""
        return f"received by the provider at {_clock(at)} (receipt {rid}){more}"
    upto = index.complete_up_to
    return ("not in the provider's log (log complete up to "
            f"{_clock(upto) if upto else 'its start: empty'})")
