"""`codeai-tui receipts verify CASE`: every tool receipt checked against a trusted key and
against the ledger's record of the operation.

Per operation (identity = operation_key): *valid* when the ledger's `tool.completed`
carries a receipt whose text equals, byte for byte, the first line for that operation
in `tools/receipts.ndjson`, the signature verifies, and the receipt names the admission
the ledger holds; *missing* when the ledger completed it and no line is there;
*invalid* otherwise. Identical repeated lines (recovery may save a receipt again) are
counted and ignored; a different text for the same operation is invalid. An operation
admitted without an outcome has no receipt yet: it is listed (effect unknown) and does
not fail verification by itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codeai_tui.ledger.errors import LedgerError
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.schema import Event
from codeai_tui.services.projection import project_case
from codeai_tui.tools.kernel import TOOL_ADMITTED, TOOL_COMPLETED
from codeai_tui.tools.receipts import (
    PUBLIC_KEY_FILE,
    RECEIPTS_FILE,
    TOOLS_DIR,
    ReceiptCheck,
    check_receipt,
    key_id,
    load_public_key,
    read_receipt_lines,
)
from codeai_tui.workstate.tool_ops import EXECUTED, NOT_EXECUTED

if TYPE_CHECKING:  # imported where used: ~10 MB the console need not load
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class ReceiptsInputError(ValueError):
    """Not something receipts can be verified in (one line, exit 2)."""


class Verdict(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    MISSING = "missing"
    NO_OUTCOME = "no_outcome"  # admitted, never completed: effect unknown


@dataclass(frozen=True, slots=True)
class OperationVerdict:
    operation: str  # the operation key, or "line N" for a line naming none
    verdict: Verdict
    detail: str


@dataclass
class ReceiptsReport:
    key_id: str
    key_source: str
    verdicts: list[OperationVerdict] = field(default_factory=list)
    duplicates: int = 0

    @property
    def ok(self) -> bool:
        return all(v.verdict in (Verdict.VALID, Verdict.NO_OUTCOME) for v in self.verdicts)

    def count(self, verdict: Verdict) -> int:
        return sum(1 for v in self.verdicts if v.verdict is verdict)


_BOUND_FIELDS = ("tool_call_id", "tool", "arguments_sha256")


def _admission_mismatch(check: ReceiptCheck, admitted: Event | None) -> str | None:
    """The receipt must name the admission the ledger holds (same plan, same response)."""
    if admitted is None:
        return "the ledger has no tool.admitted for this operation"
    body: dict[str, Any] = check.body or {}
    payload = admitted.payload or {}
    for name in _BOUND_FIELDS:
        if body.get(name) != payload.get(name):
            return f"receipt {name} differs from the ledger's admission"
    if body.get("call_id") != admitted.call_id or body.get("attempt_id") != admitted.attempt_id:
        return "receipt names another planning response than the ledger's admission"
    if body.get("admitted_seq") != admitted.seq:
        return "receipt names another admission than the ledger's"
    return None


def verify_case_receipts(case_dir: str | Path, trusted_key: Path | None = None) -> ReceiptsReport:
    case = Path(case_dir)
    tools_dir = case / TOOLS_DIR
    if not case.is_dir():
        raise ReceiptsInputError(f"{case}: not a case directory")
    if tools_dir.is_symlink():
        raise ReceiptsInputError(f"{tools_dir}: is a link; receipts are read only inside the case")
    if not tools_dir.is_dir():
        raise ReceiptsInputError(f"{case}: no {TOOLS_DIR}/ directory (no tool operations here)")
    key_path = trusted_key if trusted_key is not None else tools_dir / PUBLIC_KEY_FILE
    public: Ed25519PublicKey = load_public_key(key_path)  # KeyProblem -> bad input
    report = ReceiptsReport(
        key_id(public),
        f"--trusted-key {key_path}" if trusted_key is not None else f"the case's {TOOLS_DIR}/{PUBLIC_KEY_FILE}",
    )

    admitted: dict[str, Event] = {}
    completed: dict[str, Event] = {}
    # the admission that stands is the projection's: the first, or the one after a
    # "did not run" finding (docs/tools.md, T2n); a receipt names that one
    standing = _standing_admissions(case)
    with LedgerReader(case) as reader:
        for event in reader.iter_events():
            if event.kind not in (TOOL_ADMITTED, TOOL_COMPLETED):
                continue
            op = (event.payload or {}).get("operation_key")
            if not isinstance(op, str):
                continue
            if event.kind == TOOL_COMPLETED:
                completed.setdefault(op, event)
            elif op not in admitted or standing.get(op, (None, ""))[0] == event.seq:
                admitted[op] = event

    receipts_path = tools_dir / RECEIPTS_FILE
    lines = read_receipt_lines(receipts_path) if receipts_path.exists() else []
    first: dict[str, tuple[int, ReceiptCheck]] = {}
    conflicts: dict[str, str] = {}
    for number, text in lines:
        check = check_receipt(text, public)
        op = check.operation_key
        if op is None:
            report.verdicts.append(OperationVerdict(
                f"line {number}", Verdict.INVALID, check.problem or "names no operation"))
            continue
        if op in first:
            if first[op][1].text == text:
                report.duplicates += 1
            else:
                conflicts.setdefault(
                    op, f"line {number} differs from the original receipt on line {first[op][0]}")
            continue
        first[op] = (number, check)

    for op in sorted(set(first) | set(completed) | set(admitted)):
        done = completed.get(op)
        saved = first.get(op)
        if op in conflicts:
            report.verdicts.append(OperationVerdict(op, Verdict.INVALID, conflicts[op]))
            continue
        if done is None:
            if saved is not None:
                report.verdicts.append(OperationVerdict(
                    op, Verdict.INVALID,
                    f"line {saved[0]}: the ledger records no tool.completed for it"))
            else:
                found = standing.get(op, (None, ""))[1]
                report.verdicts.append(OperationVerdict(
                    op, Verdict.NO_OUTCOME,
                    f"admitted (seq {admitted[op].seq}) without an outcome: "
                    + (f"{found} (tool.reconciled)" if found else "effect unknown")))
            continue
        if saved is None:
            report.verdicts.append(OperationVerdict(
                op, Verdict.MISSING,
                f"completed in the ledger (seq {done.seq}) but no receipt in {TOOLS_DIR}/{RECEIPTS_FILE}"))
            continue
        number, check = saved
        ledger_text = (done.payload or {}).get("receipt")
        if check.text != ledger_text:
            problem: str | None = f"line {number} differs from the receipt in the ledger (seq {done.seq})"
        else:
            problem = check.problem or _admission_mismatch(check, admitted.get(op))
            if problem is None and (check.body or {}).get("outcome") != (done.payload or {}).get("outcome"):
                problem = "receipt outcome differs from the ledger's tool.completed"
        if problem is not None:
            report.verdicts.append(OperationVerdict(op, Verdict.INVALID, f"line {number}: {problem}"))
        else:
            body = check.body or {}
            report.verdicts.append(OperationVerdict(
                op, Verdict.VALID, f"{body.get('tool')} {body.get('outcome')} (line {number})"))
    return report


def _standing_admissions(case: Path) -> dict[str, tuple[int, str]]:
    """operation key -> (the seq of the admission the projection holds, the operator's
    finding for it in words, or "")."""
    try:
        state = project_case(case)
    except LedgerError:
        return {}
    words = {EXECUTED: "found to have run", NOT_EXECUTED: "found not to have run"}
    out: dict[str, tuple[int, str]] = {}
    for call in state.calls:
        tools = call.tools
        for op in tools.operations if tools is not None else ():
            if op.operation_key is not None and op.admitted_seq is not None:
                out.setdefault(op.operation_key,
                               (op.admitted_seq, words.get(op.finding or "", "")))
    return out


def render_report(report: ReceiptsReport) -> list[str]:
    lines = [f"{v.verdict.value.upper():<10} {v.operation}  {v.detail}" for v in report.verdicts]
    if report.duplicates:
        lines.append(f"note: {report.duplicates} repeated receipt line(s) deduplicated "
                     f"(identical to the original)")
    lines.append(
        f"{len(report.verdicts)} operation(s): {report.count(Verdict.VALID)} valid, "
        f"{report.count(Verdict.INVALID)} invalid, {report.count(Verdict.MISSING)} missing, "
        f"{report.count(Verdict.NO_OUTCOME)} without outcome; key {report.key_id} "
        f"from {report.key_source}"
    )
    if not report.key_source.startswith("--trusted-key"):
        lines.append("note: the case's own key shows the receipts are unchanged since signing, "
                     "not who signed them; pass --trusted-key for that")
    return lines
