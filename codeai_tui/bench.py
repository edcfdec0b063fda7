"""`codeai-tui bench`: speed and memory figures on a synthetic ledger.

Targets are checked here, by printed figures and ratios, not by timed unit tests (these
machines are noisy). The ledger is written with plain executemany in one transaction
(fast to build); the reader and projection are the real ones.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.ledger.schema import LEDGER_FORMAT, SCHEMA_SQL
from codeai_tui.workstate import Projector

# One completed call is 7 events; every 10th call is left in flight (effect_unknown).
_CALL_KINDS = (
    ("call.requested", None),
    ("call.manifest", None),
    ("attempt.started", "a1"),
    ("attempt.observed", "a1"),
    ("attempt.interpreted", "a1"),
    ("attempt.completed", "a1"),
    ("call.completed", None),
)
TARGET_EVENTS_PER_S = 100_000  # the projection should handle 1M events in about 10 s


def synthetic_rows(n_events: int) -> Iterator[tuple[object, ...]]:
    seq = 0
    call_no = 0
    sha = "ab" * 32
    while seq < n_events:
        call_no += 1
        task = f"task-{call_no // 5}"
        call = f"call-{call_no}"
        key = f"key-{call_no}"
        kinds = _CALL_KINDS[:3] if call_no % 10 == 0 else _CALL_KINDS
        for kind, att in kinds:
            seq += 1
            if seq > n_events:
                return
            payload: dict[str, object]
            if kind == "call.requested":
                payload = {"idempotency_key": key, "purpose": "review", "model": "synthetic-small"}
            elif kind == "call.manifest":
                payload = {"idempotency_key": key, "intent": {"instruction": "review"},
                           "request_sha256": sha, "request_artifact": sha,
                           "context_package_id": None, "rendered_context_sha256": None,
                           "model": "synthetic-small"}
            elif kind == "attempt.started":
                payload = {"attempt_no": 1, "request_sha256": sha}
            elif kind == "attempt.observed":
                payload = {"transport": {"status": 200}, "response_sha256": sha,
                           "response_artifact": sha}
            elif kind == "attempt.interpreted":
                payload = {"interpreter": "v1", "outcome": "success"}
            elif kind == "attempt.completed":
                payload = {"status": "succeeded"}
            else:
                payload = {"status": "succeeded", "adopted_attempt_id": f"{call}-{att or 'a1'}"}
            yield (
                seq, f"ev-{seq}", "2026-11-29T12:00:00.000Z", kind, task, call,
                f"{call}-{att}" if att else None, None, json.dumps(payload, separators=(",", ":")),
            )


def write_synthetic_ledger(path: Path, n_events: int) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(SCHEMA_SQL)
    conn.execute("BEGIN")
    conn.execute("INSERT INTO ledger_meta VALUES ('format', ?)", (LEDGER_FORMAT,))
    conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", synthetic_rows(n_events))
    conn.execute("COMMIT")
    conn.close()


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_bench(n_events: int, keep: str | None = None) -> int:
    if n_events < 1:
        print("codeai-tui: --events must be >= 1")
        return 2
    tmp = None
    if keep:
        case = Path(keep)
        case.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="codeai-bench-")
        case = Path(tmp.name)
    path = case / "ledger.sqlite3"
    try:
        if not path.exists():
            t0 = time.perf_counter()
            write_synthetic_ledger(path, n_events)
            print(f"wrote {n_events:,} events in {time.perf_counter() - t0:.2f} s "
                  f"({path.stat().st_size / 1e6:.1f} MB)")
        with LedgerReader(case) as reader:
            t0 = time.perf_counter()
            count, max_seq = reader.stats()
            t_stats = time.perf_counter() - t0
            t0 = time.perf_counter()
            page = reader.read_after(max_seq // 2, 100)
            t_page = time.perf_counter() - t0
            rss_before = _rss_mb()
            t0 = time.perf_counter()
            projector = Projector()
            projector.feed(reader.iter_events())
            state = projector.snapshot()
            t_proj = time.perf_counter() - t0
        rate = count / t_proj if t_proj else float("inf")
        rss_mb = _rss_mb()
        print(f"events {count:,}  calls {len(state.calls):,}  "
              f"effect_unknown {state.effect_unknown_count:,}")
        print(f"count(*)+max(seq): {t_stats * 1000:.1f} ms")
        print(f"one page of {len(page)} by key from the middle: {t_page * 1000:.2f} ms")
        print(f"read + project all: {t_proj:.2f} s = {rate:,.0f} events/s "
              f"(target {TARGET_EVENTS_PER_S:,}/s: ratio {rate / TARGET_EVENTS_PER_S:.2f})")
        print(f"process max RSS {rss_mb:.0f} MB ({rss_mb - rss_before:.0f} MB during projection; "
              f"{(rss_mb - rss_before) * 1e6 / max(count, 1):.0f} bytes/event)")
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run_bench(int(os.environ.get("EVENTS", "100000"))))
