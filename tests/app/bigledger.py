"""A large synthetic ledger (1,000,000 events, 140,000 calls) for measuring the console.

    python tests/app/bigledger.py CASE_DIR [EVENTS]

Written with plain sqlite3 in one transaction (fast); every 50th call is left in
effect_unknown so the danger paths are exercised at scale.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ledgerfactory import SCHEMA  # noqa: E402

CALL_KINDS = ("call.requested", "call.manifest", "attempt.started", "attempt.observed",
              "attempt.interpreted", "attempt.completed", "call.completed")


def rows(total: int):  # noqa: ANN201 - generator of tuples
    seq = 0
    call_no = 0
    task_no = 0
    # payloads spelled as json.dumps spells them (the same bytes, without a call a row)
    completed = json.dumps({"status": "succeeded"})
    sha = "ab" * 32
    while seq < total:
        task_no += 1
        task = f"task-{task_no}"
        seq += 1
        yield (seq, f"e{seq}", _t(seq), "task.created", task, None, None, None,
               json.dumps({"title": f"task {task_no}"}))
        for _ in range(4):
            call_no += 1
            call = f"call-{call_no}"
            att = f"{call}-a1"
            kinds = CALL_KINDS[:3] if call_no % 50 == 0 else CALL_KINDS
            keyed = f'{{"idempotency_key": "key-{call_no}", "request_sha256": "{sha}"}}'
            adopted = json.dumps({"status": "succeeded", "adopted_attempt_id": att})
            for kind in kinds:
                if seq >= total:
                    return
                seq += 1
                payload = (completed if kind == "attempt.completed" else
                           adopted if kind == "call.completed" else keyed)
                yield (seq, f"e{seq}", _t(seq), kind, task, call,
                       att if kind.startswith("attempt.") else None, None, payload)


def _t(seq: int) -> str:
    s = seq // 10
    return f"2026-09-{13 + s // 86400:02d}T{(s // 3600) % 24:02d}:{(s // 60) % 60:02d}:{s % 60:02d}Z"


def main() -> None:
    case = Path(sys.argv[1])
    total = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    case.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    # Bulk-loaded: rows first, indexes after, no journal while loading (with the payloads
    # spelled once a call: 400,000 events in 6 s, not 11); the file ends as every ledger
    # is, in WAL mode with the schema's indexes.
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    tables, indexes = _split(SCHEMA)
    conn.executescript(tables)
    conn.execute("INSERT INTO ledger_meta VALUES ('format', 'codeai.ledger.v1')")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", rows(total))
    conn.execute("COMMIT")
    conn.executescript(indexes)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()


def _split(schema: str) -> tuple[str, str]:
    """(the CREATE TABLE statements, the CREATE INDEX ones)."""
    statements = [s.strip() + ";" for s in schema.split(";") if s.strip()]
    indexes = [s for s in statements if s.startswith("CREATE INDEX")]
    return ("\n".join(s for s in statements if s not in indexes), "\n".join(indexes))


if __name__ == "__main__":
    main()
