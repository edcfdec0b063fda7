"""The tool kernel: admits each planned tool call as an operation, runs it, and completes
it with a signed receipt, every step a durable ledger record (docs/tools.md).

Order per operation: `tool.admitted` committed (the operation now exists: from here a
crash means "effect unknown") -> the tool runs -> `tool.completed` with the signed
receipt committed -> the same receipt line appended to `tools/receipts.ndjson`. The
ledger is the kernel's record; the receipt file is the application's copy, which
recovery may append again (verification deduplicates by operation identity).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from codeai_tui.ledger.jsontypes import JsonObject
from codeai_tui.ledger.schema import TOOL_ADMITTED, TOOL_COMPLETED, TOOL_RECONCILED, Event
from codeai_tui.ledger.writer import LedgerWriter, NewEvent, WriteTransaction, utc_now
from codeai_tui.runtime.responses import PlannedToolCall, arguments_sha256
from codeai_tui.tools.receipts import (
    PUBLIC_KEY_FILE,
    RECEIPT_FORMAT,
    RECEIPTS_FILE,
    TOOLS_DIR,
    KeyProblem,
    append_line,
    canonical_bytes,
    checked_tools_dir,
    key_id,
    load_or_create_signing_key,
    load_public_key,
    public_pem,
    sign_receipt,
    write_durable,
)
from codeai_tui.workstate import project_call
from codeai_tui.workstate.tool_ops import readmittable

if TYPE_CHECKING:  # imported where used: ~10 MB the console need not load
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

CommitHook = Callable[[Event], None]
ReceiptHook = Callable[[str], None]


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    # never signed: an operation the operator found to have run, its outcome not recorded
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may know about the operation it runs as (for its own records)."""

    operation_key: str
    tool_call_id: str


class Tool(Protocol):
    def __call__(self, context: ToolContext, arguments: JsonObject) -> JsonObject: ...


class ToolInputError(ValueError):
    """The arguments do not fit the tool: a failed outcome, not a crash."""


class OperationExists(Exception):
    """The operation was admitted before; `receipt` is set when it also completed.
    Admitting it again would be a second effect under the same identity."""

    def __init__(self, operation_key: str, receipt: str | None) -> None:
        state = "completed" if receipt is not None else "admitted without an outcome"
        super().__init__(f"operation {operation_key} is already {state}")
        self.operation_key = operation_key
        self.receipt = receipt


def operation_key(namespace: str, thread: str, turn: str, tool_call_id: str) -> str:
    """namespace/thread/turn/tool_call_id; no part may be empty or contain '/'."""
    parts = (namespace, thread, turn, tool_call_id)
    for part in parts:
        if not part or "/" in part:
            raise ValueError(f"operation key part {part!r} is empty or contains '/'")
    return "/".join(parts)


@dataclass(frozen=True, slots=True)
class Admission:
    operation_key: str
    tool_call_id: str
    tool: str
    arguments_sha256: str
    task_id: str
    call_id: str
    attempt_id: str
    seq: int


@dataclass(frozen=True, slots=True)
class Completed:
    """A resolved operation: its outcome, result and signed receipt; or (outcome UNKNOWN,
    no result, no receipt) one the operator found to have run (`tool.reconciled`)."""

    operation_key: str
    outcome: Outcome
    result: JsonObject
    receipt: str

    @classmethod
    def ran_unrecorded(cls, operation_key: str) -> Completed:
        return cls(operation_key, Outcome.UNKNOWN, {}, "")


def _operation_events(txn: WriteTransaction, call_id: str, key: str) -> list[Event]:
    events = txn.events(
        "call_id = ? AND kind IN (?, ?, ?)",
        (call_id, TOOL_ADMITTED, TOOL_COMPLETED, TOOL_RECONCILED),
    )
    return [e for e in events if (e.payload or {}).get("operation_key") == key]


def _readmittable(call_id: str, key: str, events: list[Event]) -> bool:
    """The projection's own rule (T2n), on the operation's events as folded: the
    operator found the last admission did not run, so it may be admitted again."""
    state = project_call(events, call_id)
    ev = state.evidence.tools if state is not None else None
    op = next((o for o in ev.ops if o.operation_key == key), None) if ev is not None else None
    return op is not None and readmittable(op)


class ToolKernel:
    """Admits and completes operations through the one ledger writer; signs receipts."""

    def __init__(
        self,
        case_dir: str | Path,
        writer: LedgerWriter,
        signing_key: Ed25519PrivateKey,
        tools: Mapping[str, Tool],
        *,
        namespace: str,
        on_commit: CommitHook | None = None,
        on_receipt: ReceiptHook | None = None,
        clock: Callable[[], str] = utc_now,
    ) -> None:
        self.case_dir = Path(case_dir)
        self.writer = writer
        self._key = signing_key
        self.tools = dict(tools)
        self.namespace = namespace
        self.on_commit = on_commit
        self.on_receipt = on_receipt  # after a receipt line is durable (the seed's onReceipt)
        self._clock = clock
        self.receipts_path = self.case_dir / TOOLS_DIR / RECEIPTS_FILE

    @classmethod
    def open(
        cls,
        case_dir: str | Path,
        writer: LedgerWriter,
        key_path: Path,
        tools: Mapping[str, Tool],
        *,
        namespace: str,
        on_commit: CommitHook | None = None,
        on_receipt: ReceiptHook | None = None,
    ) -> ToolKernel:
        """Load (or create) the signing key and publish its public half as the case's
        `tools/kernel.pub`; refuses a case whose kernel.pub belongs to another key."""
        key = load_or_create_signing_key(Path(key_path))
        pub_path = checked_tools_dir(Path(case_dir)) / PUBLIC_KEY_FILE
        if pub_path.exists() or pub_path.is_symlink():
            recorded = load_public_key(pub_path)
            if key_id(recorded) != key_id(key.public_key()):
                raise KeyProblem(f"{pub_path}: belongs to another kernel key than {key_path}")
        else:
            write_durable(pub_path, public_pem(key.public_key()))
        return cls(case_dir, writer, key, tools, namespace=namespace, on_commit=on_commit,
                   on_receipt=on_receipt)

    def _committed(self, event: Event) -> None:
        if self.on_commit is not None:
            self.on_commit(event)

    def admit(
        self, task_id: str, call_id: str, attempt_id: str, thread: str, turn: str,
        planned: PlannedToolCall,
    ) -> Admission:
        """Commit `tool.admitted` (re-checked inside the write transaction: one winner)."""
        key = operation_key(self.namespace, thread, turn, planned.tool_call_id)
        payload = {
            "operation_key": key, "tool_call_id": planned.tool_call_id, "tool": planned.name,
            "arguments_sha256": planned.arguments_sha256,
        }
        with self.writer.transaction() as txn:
            existing = _operation_events(txn, call_id, key)
            if existing and not _readmittable(call_id, key, existing):
                completed = [e for e in existing if e.kind == TOOL_COMPLETED]
                receipt = (completed[0].payload or {}).get("receipt") if completed else None
                raise OperationExists(key, receipt if isinstance(receipt, str) else None)
            event = txn.append(NewEvent(TOOL_ADMITTED, task_id, payload, call_id, attempt_id))
        self._committed(event)
        return Admission(key, planned.tool_call_id, planned.name, planned.arguments_sha256,
                         task_id, call_id, attempt_id, event.seq)

    def execute(self, admission: Admission, arguments: str) -> Completed:
        """Run the admitted tool on exactly the planned arguments, then complete it.

        Bad arguments or a tool's ValueError are a failed outcome with a receipt. Any
        other exception propagates and leaves the operation admitted without an outcome:
        whether its effect happened is then unknown, which is exactly what is recorded."""
        if arguments_sha256(arguments) != admission.arguments_sha256:
            raise ValueError(f"{admission.operation_key}: arguments differ from the admitted plan")
        tool = self.tools.get(admission.tool)
        result: JsonObject
        try:
            if tool is None:
                raise ToolInputError(f"no tool named {admission.tool!r}")
            parsed = json.loads(arguments) if arguments else {}
            if not isinstance(parsed, dict):
                raise ToolInputError("arguments are not a JSON object")
            result = tool(ToolContext(admission.operation_key, admission.tool_call_id), parsed)
            outcome = Outcome.SUCCEEDED
        except (ToolInputError, ValueError) as exc:
            result = {"error": {"type": type(exc).__name__, "message": str(exc)[:500]}}
            outcome = Outcome.FAILED
        return self.complete(admission, outcome, result)

    def complete(self, admission: Admission, outcome: Outcome, result: JsonObject) -> Completed:
        """Sign the receipt, commit `tool.completed` carrying it, then save the line."""
        body: JsonObject = {
            "format": RECEIPT_FORMAT,
            "operation_key": admission.operation_key,
            "tool_call_id": admission.tool_call_id,
            "tool": admission.tool,
            "arguments_sha256": admission.arguments_sha256,
            "call_id": admission.call_id,
            "attempt_id": admission.attempt_id,
            "admitted_seq": admission.seq,
            "outcome": outcome.value,
            "result": result,
            "result_sha256": hashlib.sha256(canonical_bytes(result)).hexdigest(),
            "completed_at": self._clock(),
        }
        receipt = sign_receipt(self._key, body)
        payload = {"operation_key": admission.operation_key, "outcome": outcome.value,
                   "receipt": receipt}
        with self.writer.transaction() as txn:
            if any(e.kind == TOOL_COMPLETED for e in
                   _operation_events(txn, admission.call_id, admission.operation_key)):
                raise OperationExists(admission.operation_key, None)
            event = txn.append(NewEvent(TOOL_COMPLETED, admission.task_id, payload,
                                        admission.call_id, admission.attempt_id))
        self._committed(event)
        self.save_receipt(receipt)
        return Completed(admission.operation_key, outcome, result, receipt)

    def save_receipt(self, receipt: str) -> None:
        """Append the original receipt string (also used by recovery to re-save one)."""
        append_line(self.receipts_path, receipt)
        if self.on_receipt is not None:
            self.on_receipt(receipt)
