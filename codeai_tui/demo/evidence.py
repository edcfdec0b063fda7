"""What the harness records around each phase: counts and hashes, before and after.

A snapshot is taken from the harness process while it holds no SQLite connection to the
case (one short read-only connection, closed at once, then the file hashes), so it never
drops another connection's POSIX locks. `events_sha256` is a digest of
the rows' meaning, independent of how SQLite laid out the file; the verifier computes it
with its own code from the same definition (EVENTS_DIGEST_DEFINITION).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

LEDGER = "ledger.sqlite3"
RECEIPTS = Path("provider") / "receipts.jsonl"
HASHED_FILES = (LEDGER, LEDGER + "-wal", str(RECEIPTS), "case.json")
EVENTS_DIGEST_DEFINITION = (
    "sha256 over one line per event in seq order: the JSON array [seq, event_id, "
    "recorded_at, kind, task_id, call_id, attempt_id, compilation_id, payload text] "
    "with separators (',', ':') and ensure_ascii=false, each followed by a newline"
)
EVENT_ROW_SQL = (
    "SELECT seq, event_id, recorded_at, kind, task_id, call_id, attempt_id, compilation_id,"
    " payload FROM events ORDER BY seq"
)


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def ledger_summary(case: Path) -> dict[str, Any]:
    """(event_count, max_seq, events_sha256) over one short read-only connection."""
    uri = f"file:{quote(str((case / LEDGER).absolute()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=5.0)
    try:
        digest = hashlib.sha256()
        count = max_seq = 0
        for row in conn.execute(EVENT_ROW_SQL):
            line = json.dumps(list(row), separators=(",", ":"), ensure_ascii=False) + "\n"
            digest.update(line.encode("utf-8"))
            count += 1
            max_seq = max(max_seq, int(row[0]))
    finally:
        conn.close()
    return {"event_count": count, "max_seq": max_seq, "events_sha256": digest.hexdigest()}


def receipt_count(case: Path) -> int:
    try:
        data = (case / RECEIPTS).read_bytes()
    except FileNotFoundError:
        return 0
    return sum(1 for line in data.splitlines() if line.strip())


def snapshot(case: Path) -> dict[str, Any]:
    """The ledger is read first and its connection closed before any file is hashed: a
    reader of a cleanly closed ledger (the tool cases' workers close theirs) makes an
    empty -wal file appear, which must not look like a change made by the phase."""
    summary = ledger_summary(case)
    files = {name: file_sha256(case / name) for name in HASHED_FILES}
    receipts = receipt_count(case)
    return {**summary, "receipt_count": receipts, "files_sha256": files}


def write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=1, sort_keys=True) + "\n", encoding="utf-8")
