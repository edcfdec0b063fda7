"""`python endless_open.py ARGS...`: codeai-tui's `main(ARGS)`, with every synchronous
ledger open stuck in a statement that never ends (test-only).

Once the schema check refuses views, no ledger can make a read run for ever by itself;
to see what a stop or a budget does while SQLite is busy, the format check (the first
query of a table on every opened connection) first runs a recursive CTE with no end on
that same connection."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import codeai_tui.ledger.reader as reader

ENDLESS = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
           "SELECT count(*) FROM r")
_format_check = reader.check_format


def endless_then_check(conn: sqlite3.Connection, path: Path) -> None:
    conn.execute(ENDLESS).fetchall()
    _format_check(conn, path)


if __name__ == "__main__":
    reader.check_format = endless_then_check
    from codeai_tui.cli.main import main

    sys.exit(main(sys.argv[1:]))
