"""A completed tool operation's receipt verdict: valid / invalid / missing (docs/tools.md).

Pure computation on bytes handed in by the services (the trusted key's raw 32 bytes and
the lines of `tools/receipts.ndjson`): checking an Ed25519 signature is arithmetic, not
I/O. The same rule as `codeai-tui receipts verify`, per operation:

- **valid**: the ledger's `tool.completed` receipt is canonical, its signature verifies
  against the trusted key, it names this operation's admission and outcome, and the
  first line for the operation in `receipts.ndjson` is the same text byte for byte;
- **missing**: the ledger completed it and `receipts.ndjson` has no line for it;
- **invalid**: anything else (a changed byte, another key, a second different text);
- **unchecked**: no trusted key could be read (nothing can be said either way).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class CompletedOperation(Protocol):
    """What a receipt is checked against: a completed operation's admission and outcome."""

    operation_key: str | None
    tool_call_id: str | None
    tool: str | None
    arguments_sha256: str | None
    admitted_seq: int | None
    completed_seq: int | None
    call_id: str
    admitted_attempt_id: str | None
    outcome: str | None
    receipt: str | None


class ReceiptVerdict(StrEnum):
    VALID = "valid"
    INVALID = "invalid"
    MISSING = "missing"
    UNCHECKED = "unchecked"


def _canonical(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode("utf-8")


def _operation_of(text: str) -> str | None:
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    body = doc.get("body") if isinstance(doc, dict) else None
    key = body.get("operation_key") if isinstance(body, dict) else None
    return key if isinstance(key, str) else None


@dataclass(frozen=True, slots=True)
class ToolReceipts:
    """What the services read for a case's tool receipts: the trusted key (raw bytes, or
    why there is none) and, per operation key, the first line and whether another line
    for it differs."""

    key_source: str
    public_key: bytes | None
    key_problem: str | None = None
    first: dict[str, tuple[int, str]] = field(default_factory=dict)
    conflicts: dict[str, int] = field(default_factory=dict)  # op -> line that differs

    @classmethod
    def build(cls, key_source: str, public_key: bytes | None, key_problem: str | None,
              lines: Iterable[tuple[int, str]]) -> ToolReceipts:
        first: dict[str, tuple[int, str]] = {}
        conflicts: dict[str, int] = {}
        for number, text in lines:
            op = _operation_of(text)
            if op is None:
                continue
            if op not in first:
                first[op] = (number, text)
            elif first[op][1] != text:
                conflicts.setdefault(op, number)
        return cls(key_source, public_key, key_problem, first, conflicts)


def _signature_problem(text: str, public_key: bytes) -> tuple[str | None, dict[str, Any]]:
    try:
        doc = json.loads(text)
    except ValueError:
        return "not JSON", {}
    if not isinstance(doc, dict) or set(doc) != {"alg", "body", "kid", "sig"}:
        return "not a receipt envelope (alg, body, kid, sig)", {}
    body = doc["body"]
    if doc["alg"] != "Ed25519" or not isinstance(body, dict) or not isinstance(doc["sig"], str):
        return "not an Ed25519 receipt", {}
    try:
        if _canonical(doc).decode("utf-8") != text:
            return "not in canonical form (a changed byte?)", body
    except (TypeError, ValueError):
        return "not in canonical form", body
    # imported here: the library costs ~10 MB of memory, and most cases hold no tool
    # receipt (the console and `inspect` need not load it for them)
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    sig = doc["sig"]
    try:
        raw = base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4))
        Ed25519PublicKey.from_public_bytes(public_key).verify(raw, _canonical(body))
    except (binascii.Error, ValueError, InvalidSignature):
        return "the signature does not verify against the trusted key", body
    return None, body


_BOUND = (("operation_key", "operation_key"), ("tool_call_id", "tool_call_id"),
          ("tool", "tool"), ("arguments_sha256", "arguments_sha256"),
          ("admitted_seq", "admitted_seq"), ("call_id", "call_id"),
          ("attempt_id", "admitted_attempt_id"), ("outcome", "outcome"))


def receipt_verdict(op: CompletedOperation, receipts: ToolReceipts | None
                    ) -> tuple[ReceiptVerdict, str]:
    """The verdict on a completed operation's receipt, with one line saying why."""
    if receipts is None:
        return ReceiptVerdict.UNCHECKED, "no tools/ receipts were read for this case"
    if not op.receipt:
        return ReceiptVerdict.INVALID, f"tool.completed (seq {op.completed_seq}) carries no receipt"
    if receipts.public_key is None:
        return ReceiptVerdict.UNCHECKED, f"no trusted key: {receipts.key_problem}"
    problem, body = _signature_problem(op.receipt, receipts.public_key)
    if problem is not None:
        return ReceiptVerdict.INVALID, f"the ledger's receipt: {problem}"
    for name, attr in _BOUND:
        if body.get(name) != getattr(op, attr):
            return ReceiptVerdict.INVALID, f"the receipt's {name} differs from the ledger's"
    key = op.operation_key or ""
    line = receipts.first.get(key)
    if line is None:
        return ReceiptVerdict.MISSING, "completed in the ledger, no line in tools/receipts.ndjson"
    if line[1] != op.receipt:
        return ReceiptVerdict.INVALID, f"receipts.ndjson line {line[0]} differs from the ledger's"
    if key in receipts.conflicts:
        return (ReceiptVerdict.INVALID,
                f"receipts.ndjson line {receipts.conflicts[key]} is another text for it")
    return ReceiptVerdict.VALID, (f"signed by key from {receipts.key_source}; "
                                  f"receipts.ndjson line {line[0]}")
