"""The provider's log beside a verdict, and the links between calls and receipts.

Everything here reads the projection's own evidence (`workstate`: the receipt index of
the snapshot's cut-off, the pairing of docs/ledger.md section 5, the reasons' wording), so
the console says what `inspect --json` says; nothing is recomputed from raw receipts.
Textual-free: the app renders these words, tests read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codeai_tui.console.model import CaseSnapshot
from codeai_tui.ledger import Receipt
from codeai_tui.ledger.receipts import Receipts
from codeai_tui.workstate import CallState
from codeai_tui.workstate.calls_view import CallsView
from codeai_tui.workstate.evidence import (
    ReceiptIndex,
    attempt_effect,
    attempt_receipts,
    call_receipt_ids,
)
from codeai_tui.workstate.reasons import receipt_phrase


@dataclass(frozen=True, slots=True)
class AttemptLine:
    """One started attempt: what the provider's log says about it."""

    attempt_id: str
    provider_effect: str  # happened | none | unknown (this attempt alone)
    receipts: tuple[tuple[str, str], ...]  # (receipt_id, received_at) that match it
    text: str


@dataclass(frozen=True, slots=True)
class Link:
    """A call's attempt that a receipt matches (same key, body hash == request hash)."""

    call_id: str
    attempt_id: str


def receipt_index(snap: CaseSnapshot | None) -> ReceiptIndex | None:
    return snap.state.receipts.index if snap is not None else None


def warm(snap: CaseSnapshot) -> None:
    """Build the snapshot's receipt index now (a worker thread calls this): it is built
    on first use, and the first use would otherwise be a paint on the UI thread."""
    index = receipt_index(snap)
    if index is not None:
        index.by_pair  # noqa: B018 - the side effect is the point


def verdict_phrase(call: CallState, snap: CaseSnapshot | None) -> str | None:
    """The projection's phrase for the verdict's attempt: "received by the provider at
    09:25:16.759 (receipt rcpt-…)", "not in the provider's log (log complete up to …)",
    "no receipt log: unknowable"; None when no attempt started."""
    index = receipt_index(snap)
    return receipt_phrase(call.evidence, index) if index is not None else None


def short_phrase(call: CallState, snap: CaseSnapshot | None) -> str:
    """The same fact for a table cell (Calls pane) and a narrow verdict line: at most
    18 characters, words not colour."""
    index = receipt_index(snap)
    last = call.evidence.last_attempt()
    if index is None or last is None:
        return ""
    if index.log != "present":
        return "no log: unknowable" if index.log == "absent" else "log unreadable"
    got = attempt_receipts(call.evidence, last, index)
    if len(got) > 1:
        return f"received \u00d7{len(got)} (dup)"
    if got:
        rid = got[0][0]
        return "received " + (rid if len(rid) <= 9 else rid[:8] + "\u2026")
    return "not in the log"


# what Detail words one by one: the last attempts of a call, the first receipts of a
# list, the first operations (a call with 10^5 attempts made Detail a text of 10^5
# lines, laid out on the UI thread for tens of seconds: keys went unanswered)
DETAIL_SHOWN = 20


def attempt_lines(call: CallState, snap: CaseSnapshot | None,
                  last: int | None = None) -> list[AttemptLine]:
    """Every started attempt (the `last` ones only, if given) with the receipts matching
    it, oldest first; the text names at most DETAIL_SHOWN receipts."""
    index = receipt_index(snap)
    return attempt_lines_with(call, index, last) if index is not None else []


def attempt_lines_with(call: CallState, index: ReceiptIndex,
                       last: int | None = None) -> list[AttemptLine]:
    """`attempt_lines` against a receipt index (the projection's, same cut-off)."""
    lines = []
    started = call.evidence.started_attempts()
    for att in started[-last:] if last is not None else started:
        got = attempt_receipts(call.evidence, att, index)
        if got:
            text = "received by the provider at " + ", ".join(
                f"{_clock(at)} (receipt {rid})" for rid, at in got[:DETAIL_SHOWN])
            if len(got) > DETAIL_SHOWN:
                text += f" and {len(got) - DETAIL_SHOWN:,} more"
            if len(got) > 1:
                text += " (duplicate effect)"
        elif index.log == "absent":
            text = "no receipt log: unknowable"
        elif index.log == "unreadable":
            text = "receipt log unreadable: unknowable"
        else:
            upto = index.complete_up_to
            text = ("not in the provider's log (log complete up to "
                    f"{_clock(upto) if upto else 'its start: empty'})")
        lines.append(AttemptLine(att.attempt_id, attempt_effect(att), got, text))
    return lines


def receipts_of_call(call: CallState, snap: CaseSnapshot | None) -> tuple[str, ...]:
    """The receipt ids matching any started attempt of the call, in log order."""
    index = receipt_index(snap)
    return call_receipt_ids(call.evidence, index) if index is not None else ()


def receipt_with_id(snap: CaseSnapshot, receipt_id: str) -> Receipt | None:
    """The first receipt in the snapshot's log with this id. A log kept in columns is
    searched in its id column's joined texts: making each receipt to compare its id took
    1.1 s at 143,904 receipts, on the UI thread (`p` froze the screen)."""
    log = snap.receipts.receipts
    if isinstance(log, Receipts):
        found = (log[at] for at in log.ids.positions_of(receipt_id) if at < len(log))
    else:
        found = iter(log)
    return next((r for r in found if r.receipt_id == receipt_id), None)


def calls_of_receipt(receipt: Receipt, snap: CaseSnapshot | None) -> list[Link]:
    """The started attempts a receipt matches (usually one; a resumed call's successor
    shares its key and may share the request bytes)."""
    if snap is None:
        return []
    out = []
    calls, key = snap.state.calls, receipt.idempotency_key
    # (the key first: a call settled in columns derives its evidence when read)
    keyed = map(calls.__getitem__, calls.positions_keyed(key)) \
        if isinstance(calls, CallsView) else (c for c in calls if c.idempotency_key == key)
    for call in keyed:
        for att in call.evidence.started_attempts():
            if att.request_sha256 == receipt.body_sha256:
                out.append(Link(call.call_id, att.attempt_id))
    return out


_CLOCK = re.compile(r"T(\d\d:\d\d:\d\d(?:\.\d{1,3})?)")


def _clock(received_at: str) -> str:
    """09:25:16.759 from an RFC 3339 time, as the reasons word it (else the text)."""
    m = _CLOCK.search(received_at)
    return m.group(1) if m else received_at


def call_detail_lines(call: CallState, snap: CaseSnapshot | None) -> list[tuple[str, str]]:
    """Detail's words for a call: each attempt beside what the provider's log says."""
    index = receipt_index(snap)
    if index is None or call.evidence.last_attempt() is None:
        return []
    out = []
    started = len(call.evidence.started_attempts())
    if started > 1:  # one attempt: the reason already names what the log says
        if started > DETAIL_SHOWN:
            out.append(("attempts", f"{started:,} started: the last {DETAIL_SHOWN} below "
                                    "(inspect --json lists every one)"))
        out += [(f"attempt {line.attempt_id}", line.text)
                for line in attempt_lines(call, snap, DETAIL_SHOWN)]
    if call.effect_unknown:
        out.append(("reconcile", "x records the finding (pre-filled from this evidence)"
                    if not call.anomalous else "refused: an anomaly names this call"))
    if receipts_of_call(call, snap):
        out.append(("receipts", "p goes to the matching receipt(s) in Receipts"))
    return out


def receipt_detail_lines(receipt: Receipt, snap: CaseSnapshot | None
                         ) -> list[tuple[str, str]]:
    """Detail's words for a receipt: the call and attempt it matches, or uncovered."""
    links = calls_of_receipt(receipt, snap)
    if not links:
        return [("\u26a0 matches", "no attempt: uncovered effect (no attempt.started with "
                 "its key and body hash)")]
    return [("matches", f"call {link.call_id}, attempt {link.attempt_id}") for link in links
            ] + [("call", "c goes to it in Calls")]
