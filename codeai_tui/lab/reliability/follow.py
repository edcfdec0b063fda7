"""`python -m codeai_tui.lab.reliability.follow CASE --stats FILE`: the console's live follower in its own process, driven the way the console drives it (app/live.py):
one CaseFollower, catch up in pages, then every poll interval `poll()`, until a line
arrives on stdin (the writer has stopped): then one last poll must reach its last seq.

Every query the follower's reader runs is one autocommit read transaction (NOTES: never
hold one between polls); each is timed, so the soak can report our longest read
transaction, and the connection is checked to be outside any transaction between polls.
"""

from __future__ import annotations

import argparse
import json
import select
import sys
import time
from pathlib import Path
from typing import Any

from codeai_tui.console.model import CaseFollower
from codeai_tui.ledger.reader import LedgerReader

POLL_S = 0.1  # the console's poll interval (codeai_tui/app/constants.py POLL_S)


def follow(case: Path, stats: Path) -> int:
    durations: list[float] = []
    original = LedgerReader._q

    def timed(self: LedgerReader, sql: str, params: tuple[object, ...] = ()) -> Any:
        t0 = time.perf_counter()
        try:
            return original(self, sql, params)
        finally:
            durations.append(time.perf_counter() - t0)

    LedgerReader._q = timed  # type: ignore[method-assign]
    follower = CaseFollower(case)
    follower.catch_up()
    polls: list[float] = []
    held_between_polls = 0
    print("ready", flush=True)
    try:
        while not select.select([sys.stdin], [], [], POLL_S)[0]:  # the console's wake.wait
            t0 = time.perf_counter()
            follower.poll()
            polls.append(time.perf_counter() - t0)
            if follower.reader._conn.in_transaction:
                held_between_polls += 1
        # told to stop once the writer has: one last poll must see everything it wrote
        follower.poll()
        last_seq = follower.max_seq
    finally:
        follower.close()
    doc = {"queries": len(durations), "polls": len(polls),
           "longest_read_ms": round(max(durations, default=0.0) * 1000, 2),
           "longest_poll_ms": round(max(polls, default=0.0) * 1000, 2),
           "held_between_polls": held_between_polls, "last_seq": last_seq}
    stats.write_text(json.dumps(doc), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="codeai_tui.lab.reliability.follow")
    p.add_argument("case", type=Path)
    p.add_argument("--stats", type=Path, required=True)
    ns = p.parse_args(argv)
    return follow(ns.case, ns.stats)


if __name__ == "__main__":
    raise SystemExit(main())
