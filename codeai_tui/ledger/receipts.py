"""Read the provider's receipt log (written by the provider, never by CodeAI).

A crash can cut the last line short: that is tolerated and reported as a note, not an
error. Any other malformed line is reported with its line number.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from codeai_tui.ledger.case import RECEIPTS_RELPATH


@dataclass(frozen=True, slots=True)
class Receipt:
    receipt_id: str
    received_at: str
    idempotency_key: str
    body_sha256: str
    bytes: int
    line_no: int


@dataclass(frozen=True, slots=True)
class ReceiptLog:
    exists: bool
    receipts: tuple[Receipt, ...] = ()
    problems: tuple[tuple[int, str], ...] = ()
    truncated_tail: bool = False
    path: Path | None = field(default=None, compare=False)


def parse_receipt_lines(data: bytes, path: Path | None = None) -> ReceiptLog:
    receipts: list[Receipt] = []
    problems: list[tuple[int, str]] = []
    truncated = False
    lines = data.split(b"\n")
    ends_clean = data.endswith(b"\n") or not data
    for idx, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last = idx == len(lines) or (idx == len(lines) - 1 and lines[-1] == b"")
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            if is_last and not ends_clean:
                truncated = True
                continue
            problems.append((idx, "not a JSON line"))
            continue
        if not isinstance(obj, dict):
            problems.append((idx, "receipt is not a JSON object"))
            continue
        rid, key, sha = obj.get("receipt_id"), obj.get("idempotency_key"), obj.get("body_sha256")
        if not isinstance(rid, str) or not isinstance(sha, str):
            problems.append((idx, "receipt lacks receipt_id or body_sha256"))
            continue
        size = obj.get("bytes")
        receipts.append(
            Receipt(
                receipt_id=rid,
                received_at=str(obj.get("received_at", "")),
                idempotency_key=key if isinstance(key, str) else "",
                body_sha256=sha,
                bytes=size if isinstance(size, int) and not isinstance(size, bool) else -1,
                line_no=idx,
            )
        )
    return ReceiptLog(True, tuple(receipts), tuple(problems), truncated, path)


def read_receipts(case_dir: str | os.PathLike[str]) -> ReceiptLog:
    path = Path(case_dir) / RECEIPTS_RELPATH
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ReceiptLog(False, path=path)
    except OSError as exc:
        return ReceiptLog(True, problems=((0, f"unreadable: {exc.strerror}"),), path=path)
    return parse_receipt_lines(data, path)
