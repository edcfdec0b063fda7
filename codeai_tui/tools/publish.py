"""The demo tool "publish report": one row per execution in its own SQLite store.

The store is the tool's, not ours: `tools/reports.sqlite3`, table `publications`. It has
no uniqueness on the operation on purpose, so its row count is an independent count of
effects: a second execution of one operation shows up as a second row.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from codeai_tui.ledger.writer import utc_now
from codeai_tui.tools.kernel import JsonObject, ToolContext, ToolInputError
from codeai_tui.tools.receipts import TOOLS_DIR

PUBLISH_REPORT = "publish_report"
REPORTS_FILE = "reports.sqlite3"
SCHEMA = """
CREATE TABLE IF NOT EXISTS publications (
  id            INTEGER PRIMARY KEY,
  operation_key TEXT NOT NULL,
  tool_call_id  TEXT NOT NULL,
  title         TEXT NOT NULL,
  body          TEXT NOT NULL,
  published_at  TEXT NOT NULL
)
"""

# The function definition offered to the model (OpenAI `tools` entry).
PUBLISH_REPORT_TOOL: JsonObject = {
    "type": "function",
    "function": {
        "name": PUBLISH_REPORT,
        "description": "Publish the finished report. Irreversible: readers see it at once.",
        "parameters": {
            "type": "object",
            "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
            "required": ["title", "body"],
        },
    },
}


def reports_path(case_dir: str | Path) -> Path:
    return Path(case_dir) / TOOLS_DIR / REPORTS_FILE


class PublishReport:
    """Inserts one publication per call, committed durably before it returns."""

    def __init__(self, case_dir: str | Path) -> None:
        self.path = reports_path(case_dir)

    def __call__(self, context: ToolContext, arguments: JsonObject) -> JsonObject:
        title, body = arguments.get("title"), arguments.get("body")
        if not isinstance(title, str) or not isinstance(body, str):
            raise ToolInputError("publish_report needs string title and body")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute(SCHEMA)
            conn.execute("BEGIN IMMEDIATE")
            cur = conn.execute(
                "INSERT INTO publications (operation_key, tool_call_id, title, body, published_at)"
                " VALUES (?,?,?,?,?)",
                (context.operation_key, context.tool_call_id, title, body, utc_now()),
            )
            conn.execute("COMMIT")
            return {"publication_id": int(cur.lastrowid or 0)}
        finally:
            conn.close()


def count_publications(case_dir: str | Path) -> int:
    """Rows in the tool's own store (0 when it was never created); read-only."""
    path = reports_path(case_dir)
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT count(*) FROM publications").fetchone()[0])
    finally:
        conn.close()


def _open_store(case_dir: str | Path) -> tuple[sqlite3.Connection | None, str]:
    """The demo tool's store opened read-only for a look from outside, or None and why
    not. The store is a file in an untrusted case: its schema must be the one table
    this tool makes (no trigger, no view: nothing that runs when read), and every read
    has a step budget."""
    path = reports_path(case_dir)
    shown = f"{TOOLS_DIR}/{REPORTS_FILE}"  # relative to the case
    if not path.is_file() or path.is_symlink():
        return None, f"{shown}: absent (the tool's store was never written)"
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return None, f"{shown}: cannot be read ({exc})"
    try:
        conn.execute("PRAGMA trusted_schema=OFF")
        kinds = conn.execute("SELECT type, name FROM sqlite_master").fetchall()
        if any(kind in ("trigger", "view") for kind, _ in kinds) or (
                ("table", "publications") not in kinds):
            conn.close()
            return None, f"{shown}: not this tool's store (unexpected schema); not read"
        conn.set_progress_handler(lambda: 1, 5_000_000)  # ends any runaway read
    except sqlite3.Error as exc:
        conn.close()
        return None, f"{shown}: cannot be read ({exc})"
    return conn, shown


def publications_line(case_dir: str | Path, operation_key: str) -> str:
    """What the demo tool's own store says of one operation, in one line for the
    operator: its path and the publications recorded under the operation key."""
    conn, shown = _open_store(case_dir)
    if conn is None:
        return shown
    try:
        rows = conn.execute(
            "SELECT id, tool_call_id, published_at FROM publications WHERE operation_key = ?"
            " ORDER BY id LIMIT 5", (operation_key,)).fetchall()
    except sqlite3.Error as exc:
        return f"{shown}: cannot be read ({exc})"
    finally:
        conn.close()
    if not rows:
        return f"{shown}: no publication recorded under this operation"
    listed = "; ".join(f"publication {r[0]} (tool-call id {r[1]}) at {r[2]}" for r in rows)
    return f"{shown}: {listed}"


def store_publications(case_dir: str | Path) -> tuple[int | None, str]:
    """How many publications the demo tool's own store holds, read as `publications_line`
    reads it (checked schema, step budget): (count, the store's path in the case), or
    (None, why it was not counted)."""
    conn, shown = _open_store(case_dir)
    if conn is None:
        return None, shown
    try:
        return int(conn.execute("SELECT count(*) FROM publications").fetchone()[0]), shown
    except sqlite3.Error as exc:
        return None, f"{shown}: cannot be read ({exc})"
    finally:
        conn.close()
