"""Write ledgers for tests with plain sqlite3 (not the project's writer), so the reader
is checked against files it did not make."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
  seq INTEGER PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, recorded_at TEXT NOT NULL,
  kind TEXT NOT NULL, task_id TEXT NOT NULL, call_id TEXT, attempt_id TEXT,
  compilation_id TEXT, payload TEXT NOT NULL);
CREATE INDEX events_call ON events(call_id, attempt_id, kind, seq);
CREATE INDEX events_compilation ON events(compilation_id, seq);
CREATE INDEX events_task ON events(task_id, seq);
"""


def write_ledger(
    case_dir: Path,
    events: list[dict[str, Any]],
    *,
    receipts: list[dict[str, Any]] | None = None,
    fmt: str = "codeai.ledger.v1",
    wal: bool = True,
) -> Path:
    case_dir.mkdir(parents=True, exist_ok=True)
    path = case_dir / "ledger.sqlite3"
    conn = sqlite3.connect(path, isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO ledger_meta VALUES ('format', ?)", (fmt,))
    append_rows(conn, events)
    conn.close()
    if receipts is not None:
        (case_dir / "provider").mkdir(exist_ok=True)
        with open(case_dir / "provider" / "receipts.jsonl", "w", encoding="utf-8") as fh:
            for r in receipts:
                fh.write(json.dumps(r) + "\n")
    return path


def append_rows(conn: sqlite3.Connection, events: list[dict[str, Any]]) -> None:
    for ev in events:
        payload = ev["payload"]
        text = payload if isinstance(payload, str) else json.dumps(payload)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)",
            (
                ev["seq"],
                ev.get("event_id") or uuid.uuid4().hex,
                ev.get("recorded_at") or f"2026-09-13T12:00:{ev['seq'] % 60:02d}Z",
                ev["kind"],
                ev["task_id"],
                ev.get("call_id"),
                ev.get("attempt_id"),
                ev.get("compilation_id"),
                text,
            ),
        )
        conn.execute("COMMIT")


def append_to_case(case_dir: Path, events: list[dict[str, Any]]) -> None:
    """Another process appends `events` to the case's ledger, one transaction each."""
    conn = sqlite3.connect(Path(case_dir) / "ledger.sqlite3", isolation_level=None)
    try:
        append_rows(conn, events)
    finally:
        conn.close()


def read_max_seq(case_dir: Path) -> int:
    """The case's last seq, read with plain sqlite3."""
    conn = sqlite3.connect(Path(case_dir) / "ledger.sqlite3")
    try:
        return int(conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])
    finally:
        conn.close()
