"""`python -m codeai_tui.lab.reliability.writer CASE ...`: a writer in its own process.

`--serve`: append on command (stdin `append N` -> stdout `ok SEQ`; `quit` closes
cleanly), so the read-only matrix can keep a writer live but idle while it checks bytes,
then show the same writer can still write. `--rate R --seconds S --stats FILE`: the
soak's writer, one event per `BEGIN IMMEDIATE` transaction at R events/s, recording each
commit's latency and the -wal size, written as JSON to FILE when it ends (or on SIGTERM).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from codeai_tui.ledger import LedgerWriter
from codeai_tui.ledger.schema import LEDGER_FILENAME


def _open(case: Path) -> LedgerWriter:
    if (case / LEDGER_FILENAME).exists():
        return LedgerWriter.open(case)
    writer = LedgerWriter.create(case)
    writer.append("task.created", "task-w", {"title": "a writer's task"})
    return writer


def _note(writer: LedgerWriter, n: int) -> int:
    return writer.append("task.objective", "task-w", {"objective": f"note {n}"}).seq


def serve(case: Path) -> int:
    writer = _open(case)
    n = 0
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["append"]:
            seq = 0
            for _ in range(int(words[1]) if len(words) > 1 else 1):
                n += 1
                seq = _note(writer, n)
            print(f"ok {seq}", flush=True)
        elif words[:1] == ["quit"]:
            break
    writer.close()
    print("closed", flush=True)
    return 0


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def soak(case: Path, rate: float, seconds: float, stats: Path) -> int:
    """Append at `rate` events/s; latency = one append's transaction, start to COMMIT."""
    writer = _open(case)
    wal = case / f"{LEDGER_FILENAME}-wal"
    latencies: list[float] = []
    wal_max = 0
    stopping = False

    def stop(_sig: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    start = time.monotonic()
    n = 0
    print("ready", flush=True)
    while not stopping and time.monotonic() - start < seconds:
        due = start + n / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)  # pacing, not synchronisation
        t0 = time.perf_counter()
        _note(writer, n)
        latencies.append(time.perf_counter() - t0)
        n += 1
        with contextlib.suppress(OSError):
            wal_max = max(wal_max, os.stat(wal).st_size)
    writer.close()
    elapsed = time.monotonic() - start
    doc = {"events": n, "seconds": round(elapsed, 2), "rate": round(n / elapsed, 1),
           "p50_ms": round(percentile(latencies, 0.50) * 1000, 2),
           "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
           "max_ms": round(max(latencies, default=0.0) * 1000, 2),
           "wal_max_bytes": wal_max}
    stats.write_text(json.dumps(doc), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="codeai_tui.lab.reliability.writer")
    p.add_argument("case", type=Path)
    p.add_argument("--serve", action="store_true")
    p.add_argument("--rate", type=float, default=200.0)
    p.add_argument("--seconds", type=float, default=600.0)
    p.add_argument("--stats", type=Path, default=None)
    ns = p.parse_args(argv)
    if ns.serve:
        return serve(ns.case)
    if ns.stats is None:
        p.error("--stats is required without --serve")
    return soak(ns.case, ns.rate, ns.seconds, ns.stats)


if __name__ == "__main__":
    raise SystemExit(main())
