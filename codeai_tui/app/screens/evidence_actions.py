"""The main screen's evidence links: the receipts beside the verdict, and the
call <-> receipt cross-links (`p`, `c`). Reconcile (`x`) is a gated action, run by the
one action flow (action_flow.py).

`EvidenceFlow` is composed by `MainScreen` (not mixed into it): it reads the screen's
session (shown snapshot, selected call) through `LinksHost`.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from textual.widget import Widget

from codeai_tui.app.widgets.calls_pane import CallsPane
from codeai_tui.app.widgets.receipts_pane import ReceiptsPane, receipt_key
from codeai_tui.app.widgets.verdict_line import VerdictLine
from codeai_tui.console.actions import SELECT_A_CALL
from codeai_tui.console.evidence import (
    calls_of_receipt,
    receipt_with_id,
    receipts_of_call,
    short_phrase,
    verdict_phrase,
)
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.textsafe import visible

W = TypeVar("W", bound=Widget)


class LinksHost(Protocol):
    """The main screen, as the cross-links see it."""

    shown: CaseSnapshot | None
    selected_call_id: str | None

    def query_one(self, selector: type[W]) -> W: ...

    def set_active_pane(self, name: str) -> None: ...

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None: ...


def _line(text: str, limit: int = 400) -> str:
    return visible(text, one_line=True, limit=limit)


class EvidenceFlow:
    """The evidence links: a plain object the main screen composes."""

    def __init__(self, host: LinksHost) -> None:
        self.host = host
        self._receipt_cycle: tuple[str | None, int] = (None, -1)

    # ---------------------------------------------------------------- painting

    def paint_links(self, call_id: str | None) -> None:
        """The receipts matching the selected call, marked in Receipts; the verdict's
        evidence on the verdict line (from the shown snapshot: as of, when travelling)."""
        host = self.host
        snap = host.shown
        call = snap.call(call_id) if snap is not None else None
        receipts = host.query_one(ReceiptsPane)
        linked = frozenset(receipts_of_call(call, snap)) if call is not None else frozenset()
        receipts.linked = (call.call_id if call is not None else None, linked)
        phrase = verdict_phrase(call, snap) if call is not None else None
        host.query_one(VerdictLine).log_phrase = (
            (phrase, short_phrase(call, snap)) if phrase and call is not None else None)

    # ---------------------------------------------------------------- cross-links

    def action_goto_receipt(self) -> None:
        """The selected call's matching receipts in Receipts (again: the next one)."""
        host = self.host
        snap = host.shown
        call = snap.call(host.selected_call_id) if snap is not None else None
        if call is None:
            host.notify(SELECT_A_CALL, severity="warning", markup=False)
            return
        ids = receipts_of_call(call, snap)
        if not ids:
            why = verdict_phrase(call, snap) or "no attempt started: nothing was sent"
            host.notify(_line(f"{call.call_id}: no receipt matches ({why})"), markup=False)
            return
        last_call, last_i = self._receipt_cycle
        i = (last_i + 1) % len(ids) if last_call == call.call_id else 0
        self._receipt_cycle = (call.call_id, i)
        pane = host.query_one(ReceiptsPane)
        receipt = receipt_with_id(snap, ids[i])
        if receipt is None or not pane.select_key(receipt_key(receipt)):
            host.notify(_line(f"receipt {ids[i]} is hidden by the Receipts filter (esc on "
                              "Receipts clears it)"), severity="warning", markup=False)
            return
        host.set_active_pane("receipts")
        pane.focus()
        host.notify(_line(f"{call.call_id}: receipt {i + 1} of {len(ids)} matching it: "
                          f"{ids[i]}"), markup=False)

    def action_goto_call(self) -> None:
        """The call and attempt the selected receipt matches (or: uncovered)."""
        host = self.host
        pane = host.query_one(ReceiptsPane)
        receipt = pane.receipt_at_cursor()
        if receipt is None:
            host.notify("select a receipt first (6 focuses Receipts)", severity="warning",
                        markup=False)
            return
        links = calls_of_receipt(receipt, host.shown)
        if not links:
            host.notify(_line(f"receipt {receipt.receipt_id} matches no attempt: uncovered "
                              "effect (no attempt.started with its key and body hash)"),
                        severity="warning", markup=False)
            return
        link = links[0]
        calls = host.query_one(CallsPane)
        if not calls.select_key(link.call_id):
            host.notify(_line(f"call {link.call_id} is hidden by the Calls filter (esc on "
                              "Calls clears it)"), severity="warning", markup=False)
            return
        host.set_active_pane("calls")
        calls.focus()
        more = f" (and {len(links) - 1} more)" if len(links) > 1 else ""
        host.notify(_line(f"receipt {receipt.receipt_id} matches call {link.call_id}, "
                          f"attempt {link.attempt_id}{more}"), markup=False)
