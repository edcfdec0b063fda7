"""Read the provider's receipt log (written by the provider, never by CodeAI).

A crash can cut the last line short: that is tolerated and reported as a note, not an
error. Any other malformed line is reported with its line number. The log comes with an
untrusted case directory: a receipt with missing or mistyped fields still says the
provider received *something*, so it is kept (and stays uncovered, under a placeholder
id or hash that matches nothing) and reported; a log that is a symlink, a FIFO or a
device is refused without blocking (line 0 problem).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.ledger.errors import LedgerError
from codeai_tui.ledger.safefile import read_regular

RECEIPTS_LIMIT = 256 * 1024 * 1024  # bytes read from one log; beyond that: one problem


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


def _loads(raw: bytes) -> object:
    """One line: orjson (3x faster over 10^5 lines), the standard library for what orjson
    rejects (NaN, lone surrogates) or reads otherwise (an integer beyond 64 bits becomes
    a float), so a line means what it meant."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw.decode("utf-8"))
    if type(obj) is dict and type(obj.get("bytes")) is float:
        return json.loads(raw.decode("utf-8"))
    return obj


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
            obj = _loads(raw)
        except (UnicodeDecodeError, ValueError):
            if is_last and not ends_clean:
                truncated = True
                continue
            problems.append((idx, "not a JSON line"))
            continue
        if not isinstance(obj, dict):
            problems.append((idx, "receipt is not a JSON object"))
            continue
        receipt, missing = _receipt(obj, idx)
        if missing:
            problems.append((idx, "receipt lacks or mistypes " + ", ".join(missing)))
        receipts.append(receipt)
    return ReceiptLog(True, tuple(receipts), tuple(problems), truncated, path)


def _receipt(obj: dict[str, object], line_no: int) -> tuple[Receipt, list[str]]:
    """One receipt from one JSON object, and the names of the fields it lacks or mistypes.
    Placeholders name the line, so two broken receipts never look like one duplicate."""
    missing: list[str] = []

    def text(name: str, placeholder: str) -> str:
        value = obj.get(name)
        if isinstance(value, str):
            return value
        missing.append(name)
        return placeholder

    rid = text("receipt_id", f"(line {line_no})")
    received_at = text("received_at", "")
    key = text("idempotency_key", "")
    sha = text("body_sha256", f"(no body_sha256, line {line_no})")
    size = obj.get("bytes")
    if not (isinstance(size, int) and not isinstance(size, bool) and size >= 0):
        missing.append("bytes")
        size = -1
    return Receipt(rid, received_at, key, sha, size, line_no), missing


def read_receipts(case_dir: str | os.PathLike[str]) -> ReceiptLog:
    """The case's receipt log; never raises, never blocks. A log that cannot be read is
    `exists=True` with one line-0 problem, so it is never mistaken for "no receipts"."""
    path = Path(case_dir) / RECEIPTS_RELPATH
    try:
        data = read_regular(Path(case_dir), RECEIPTS_RELPATH, limit=RECEIPTS_LIMIT)
    except LedgerError as exc:
        return ReceiptLog(True, problems=((0, f"unreadable: {exc}"),), path=path)
    if data is None:
        return ReceiptLog(False, path=path)
    return parse_receipt_lines(data, path)
