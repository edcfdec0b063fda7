"""The console's view of a call's tool operations (docs/tools.md), Textual-free.

The projection gives each operation's state (workstate/tool_ops.py); what it cannot give
without I/O is read here, off the UI thread: the saved response's tool arguments (its
artifact) and the receipt verdicts (the case's `tools/kernel.pub` and
`tools/receipts.ndjson`). Words, never colour alone: an admitted operation without an
outcome reads "⚠ tool effect unknown: duplicate risk".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeai_tui.console.evidence import DETAIL_SHOWN
from codeai_tui.ledger import LedgerError
from codeai_tui.services.tool_receipts import read_tool_receipts
from codeai_tui.tools.turn import TurnError, saved_response
from codeai_tui.workstate import CallState, NextOperation
from codeai_tui.workstate.tool_ops import ToolOpStage, ToolOpState, ToolsState
from codeai_tui.workstate.tool_receipts import ReceiptVerdict, ToolReceipts, receipt_verdict

WARN = "\u26a0"
TOOL_EFFECT_UNKNOWN_TEXT = f"{WARN} tool effect unknown: duplicate risk"
START_TOOL_TEXT = "\u25b7 start_tool: replay (no provider)"
STATE_WORDS = {
    ToolOpStage.NOT_ADMITTED: "not admitted",
    ToolOpStage.EFFECT_UNKNOWN: TOOL_EFFECT_UNKNOWN_TEXT,
    ToolOpStage.COMPLETED: "completed",
    ToolOpStage.RECONCILED_EXECUTED: "\u2714 found to have run (reconciled; its outcome was "
                                     "not recorded: never run again)",
    ToolOpStage.RECONCILED_NOT_EXECUTED: "found not to have run (reconciled)",
}
VERDICT_WORDS = {
    ReceiptVerdict.VALID: "\u2714 receipt valid",
    ReceiptVerdict.INVALID: f"{WARN} receipt INVALID",
    ReceiptVerdict.MISSING: f"{WARN} receipt missing",
    ReceiptVerdict.UNCHECKED: "receipt unchecked",
}


@dataclass(frozen=True, slots=True)
class ToolDetails:
    """What the projection cannot hold: arguments by tool-call id, and the receipts."""

    call_id: str
    last_seq: int
    arguments: dict[str, str] = field(default_factory=dict)
    receipts: ToolReceipts | None = None
    problem: str | None = None  # why the arguments could not be read


def load_tool_details(case_dir: Path, call: CallState) -> ToolDetails:
    """Read the saved response's arguments and the case's receipts (never raises)."""
    receipts = read_tool_receipts(case_dir)
    try:
        saved = saved_response(case_dir, call.call_id)
    except (TurnError, LedgerError, OSError, ValueError) as exc:
        return ToolDetails(call.call_id, call.last_seq, {}, receipts, str(exc))
    args = {p.tool_call_id: p.arguments for p in saved.plan}
    return ToolDetails(call.call_id, call.last_seq, args, receipts)


def summary(tools: ToolsState | None) -> tuple[str, str] | None:
    """(words, tone) for the call's row and the verdict line, or None when nothing is
    pending: effect unknown first, then start_tool."""
    if tools is None:
        return None
    unknown = tools.effect_unknown_count
    if unknown:
        more = f" \u00d7{unknown}" if unknown > 1 else ""
        return TOOL_EFFECT_UNKNOWN_TEXT + more, "error"
    if any(o.next_operation is NextOperation.START_TOOL for o in tools.operations):
        return START_TOOL_TEXT, "warn"
    return None


def op_words(op: ToolOpState, details: ToolDetails | None) -> str:
    words = STATE_WORDS[op.stage]
    if op.stage is ToolOpStage.COMPLETED:
        receipts = details.receipts if details is not None else None
        verdict, why = receipt_verdict(op, receipts) if details is not None else (
            ReceiptVerdict.UNCHECKED, "reading the receipts\u2026")
        words += f" ({op.outcome or 'no outcome'}) \u00b7 {VERDICT_WORDS[verdict]}: {why}"
    elif op.next_operation is not NextOperation.NONE:
        words += f" \u00b7 next {op.next_operation.value}"
    if op.reconciled_seq is not None:
        words += f" \u00b7 tool.reconciled at seq {op.reconciled_seq}"
    if op.effect_unknown:
        words += " \u00b7 x: record whether it ran, from the tool's own records"
    return words


def tool_lines(tools: ToolsState, details: ToolDetails | None) -> list[tuple[str, str]]:
    """Labelled lines for Detail: the plan, then each operation's state in words (at
    most DETAIL_SHOWN of either: see `ToolsState.listed`)."""
    lines: list[tuple[str, str]] = []
    if tools.plan is None:
        lines.append(("tool plan", "none known (no complete response was saved)"))
    else:
        adopted = "saved response" if tools.adopted else "response not finished yet"
        names = ", ".join(f"{t.name} ({t.tool_call_id})"
                          for t in tools.plan[:DETAIL_SHOWN]) or "no tool"
        if len(tools.plan) > DETAIL_SHOWN:
            names += f" and {len(tools.plan) - DETAIL_SHOWN:,} more"
        lines.append(("tool plan", f"{len(tools.plan)} call(s) in the {adopted}: {names}"))
    listed = tools.listed(DETAIL_SHOWN)
    if len(listed) < len(tools.operations):
        lines.append(("tool operations", f"{len(tools.operations):,}: {len(listed)} below, "
                      "those with something to do first (inspect lists every one)"))
    for op in listed:
        label = f"{WARN} tool {op.tool_call_id}" if op.effect_unknown else f"tool {op.tool_call_id}"
        lines.append((label, f"{op.tool}: {op_words(op, details)}"))
    return lines


def _parsed(text: str | None) -> Any:
    """Arguments or a receipt as JSON when they are JSON, else the text as given."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def tool_body(tools: ToolsState, details: ToolDetails | None) -> dict[str, Any]:
    """The `tools` object Detail shows: the plan with its arguments, and each operation
    with its receipt verdict and the signed receipt itself."""
    doc = tools.as_json(details.receipts if details is not None else None, DETAIL_SHOWN)
    if details is not None and doc["plan"] is not None:
        for entry in doc["plan"]:
            if entry["tool_call_id"] in details.arguments:
                entry["arguments"] = _parsed(details.arguments[entry["tool_call_id"]])
    for op, entry in zip(tools.listed(DETAIL_SHOWN), doc["operations"], strict=True):
        if op.receipt is not None:
            entry["signed_receipt"] = _parsed(op.receipt)
    return doc
