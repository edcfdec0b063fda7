"""Pane names, titles, timings and the way out of each ledger problem."""

from __future__ import annotations

from codeai_tui.ledger import LedgerProblem

POLL_S = 0.1
REOPEN_S = 1.0
FILTER_SCAN_LIMIT = 100_000
PANES = ("cases", "tasks", "calls", "compilations", "timeline", "receipts")
PANE_TITLES = {
    "cases": "1 Cases",
    "tasks": "2 Tasks",
    "calls": "3 Calls",
    "compilations": "4 Compilations",
    "timeline": "5 Timeline",
    "receipts": "6 Receipts",
}

WAY_OUT = {
    LedgerProblem.MISSING: "Check the path: give a case directory (holding ledger.sqlite3), "
    "the ledger file itself, or a bundle directory of cases.",
    LedgerProblem.NOT_A_LEDGER: "Point codeai-tui at a CodeAI case directory or a bundle of them.",
    LedgerProblem.NOT_SQLITE: "This file is not a CodeAI ledger; check you copied the right file.",
    LedgerProblem.WRONG_FORMAT: "This console reads codeai.ledger.v1 only; use a matching "
    "codeai-tui version for this ledger.",
    LedgerProblem.CORRUPT: "Work on a copy: restore the ledger from a backup or the producer's "
    "host, then open it again.",
    LedgerProblem.READONLY_DIR: "Copy the case directory to a writable place and open the copy.",
    LedgerProblem.BUSY: "Another process holds a lock; wait a moment and open it again.",
    LedgerProblem.UNSAFE_SCHEMA: "Nothing was read or written. Get the ledger from its "
    "producer again; look at the schema with `sqlite3 -readonly FILE .schema`, never by "
    "querying its tables.",
    LedgerProblem.OVER_BUDGET: "A read was stopped to keep the console answering. Check the "
    "file with `sqlite3 -readonly FILE 'PRAGMA quick_check'`; for a very big ledger, set "
    "CODEAI_TUI_READ_BUDGET to more seconds.",
}
