"""`codeai-tui bench`: the target table, measured on ledgers it writes itself.

Targets are checked here, by printed medians and ratios, never by timed unit tests
(these machines are noisy). The big ledger interleaves many concurrent writers the way
a busy runtime does (each writer works through its own tasks; commits interleave), so
every call's events straddle other calls' events. Every measure runs in a fresh child
process so its max RSS is its own, several times; medians are printed, with the ratio to
the `sqlite3` shell's scans measured in the same run: the bare four-column scan, and
the full scan with payloads (what a document of every call must read).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from codeai_tui.ledger.schema import LEDGER_FORMAT, SCHEMA_SQL
from codeai_tui.services.forked import usable_cores

SHA_A = "ab" * 32
BARE_SCAN = "SELECT seq, kind, call_id, attempt_id FROM events"
FULL_SCAN = "SELECT * FROM events"


def _stamp(i: int) -> str:
    """recorded_at of the i-th event: 1 ms apart, so receipts can be cut by time."""
    ms = i
    s, ms = divmod(ms, 1000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return f"2026-11-29T{h % 24:02d}:{m:02d}:{s:02d}.{ms:03d}Z"


def _writer_script(tasks: list[int], calls_per_task: int, rng: random.Random
                   ) -> Iterator[tuple[str, str, str | None, str | None, str | None, dict]]:
    """One writer's events, in its own order: (kind, task, call, attempt, comp, payload)."""
    for t in tasks:
        task = f"task-{t:04d}"
        yield ("task.created", task, None, None, None, {"title": f"task {t}"})
        yield ("task.objective", task, None, None, None, {"objective": "review the change"})
        yield ("task.claimed", task, None, None, None, {"worker": f"w{t % 50}", "pid": 4242})
        comp = f"comp-{t:04d}"
        yield ("context.compilation_requested", task, None, None, comp,
               {"offered": [{"id": "doc", "required": True, "size": 10, "size_estimated": False,
                             "lineage": []}], "required_ids": ["doc"]})
        yield ("context.compilation_completed", task, None, None, comp,
               {"package_id": f"pkg-{t}", "rendered_sha256": SHA_A, "selected": ["doc"]})
        last_ok = None
        for c in range(calls_per_task):
            call = f"call-{t:04d}-{c:03d}"
            key = f"key-{t:04d}-{c:03d}"
            yield ("call.requested", task, call, None, None,
                   {"idempotency_key": key, "purpose": "review", "model": "synthetic-small"})
            yield ("call.manifest", task, call, None, None,
                   {"idempotency_key": key, "intent": {"instruction": "review"},
                    "request_sha256": SHA_A, "request_artifact": SHA_A,
                    "context_package_id": f"pkg-{t}", "rendered_context_sha256": SHA_A,
                    "model": "synthetic-small"})
            retry = rng.random() < 0.05
            attempts = ["a1", "a2"] if retry else ["a1"]
            for n, a in enumerate(attempts, 1):
                att = f"{call}-{a}"
                yield ("attempt.started", task, call, att, None,
                       {"attempt_no": n, "request_sha256": SHA_A})
                if c == calls_per_task - 1 and t % 7 == 0:
                    break  # left in flight: effect_unknown
                yield ("attempt.observed", task, call, att, None,
                       {"transport": {"status": 200}, "response_sha256": SHA_A,
                        "response_artifact": SHA_A})
                yield ("attempt.interpreted", task, call, att, None,
                       {"interpreter": "v1", "outcome": "retryable_error" if n < len(attempts)
                        else "success"})
                if n < len(attempts):
                    yield ("attempt.retry_decided", task, call, att, None,
                           {"decision": "retry", "reason": "429"})
                yield ("attempt.completed", task, call, att, None,
                       {"status": "failed" if n < len(attempts) else "succeeded"})
            else:
                yield ("call.completed", task, call, None, None,
                       {"status": "succeeded", "adopted_attempt_id": f"{call}-{attempts[-1]}"})
                last_ok = call
        if last_ok is not None and t % 3:
            yield ("task.accepted", task, None, None, None,
                   {"acceptance_id": f"acc-{t}", "call_id": last_ok})
            yield ("task.completed", task, None, None, None, {"acceptance_id": f"acc-{t}"})


def interleaved_rows(n_events: int, writers: int = 50, tasks: int = 1000, seed: int = 8
                     ) -> Iterator[tuple[object, ...]]:
    """About n_events rows from `writers` concurrent writers over `tasks` tasks (~7.3
    events per call, so ~n/7 calls), in one interleaved commit order."""
    rng = random.Random(seed)
    calls_per_task = max(1, round(n_events / tasks / 7.3))
    scripts = [_writer_script(list(range(w, tasks, writers)), calls_per_task, rng)
               for w in range(min(writers, tasks))]
    seq = 0
    while scripts and seq < n_events:
        i = rng.randrange(len(scripts))
        try:
            kind, task, call, att, comp, payload = next(scripts[i])
        except StopIteration:
            scripts.pop(i)
            continue
        seq += 1
        yield (seq, f"ev-{seq:07d}", _stamp(seq), kind, task, call, att, comp,
               json.dumps(payload, separators=(",", ":")))


def write_ledger(case: Path, n_events: int, writers: int = 50, tasks: int = 1000) -> int:
    """The interleaved ledger plus a receipt per started attempt; returns its events."""
    case.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(SCHEMA_SQL)
    conn.execute("BEGIN")
    conn.execute("INSERT INTO ledger_meta VALUES ('format', ?)", (LEDGER_FORMAT,))
    count = 0
    (case / "provider").mkdir(exist_ok=True)
    # written as the rows go (10^7 events: a list of their receipts was ~250 MB)
    with open(case / "provider" / "receipts.jsonl", "w") as receipts:
        for row in interleaved_rows(n_events, writers, tasks):
            conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", row)
            count += 1
            if row[3] == "attempt.started":
                key = "key-" + str(row[5])[5:]
                receipts.write(json.dumps({"receipt_id": f"r-{row[0]}", "received_at": row[2],
                                           "idempotency_key": key, "body_sha256": SHA_A,
                                           "bytes": 100}) + "\n")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return count


# --------------------------------------------------------------------------- shapes
# Ledgers whose events pile onto one entity, each measured beside an ordinary ledger of
# the same number of events: the projection's cost must follow the events, not their
# shape. Written with plain sqlite3 in bulk (rows first, the schema's indexes after, no
# journal while loading), ending in WAL mode as every ledger does; no receipt log.

Event = tuple[str, str, str | None, str | None, str | None, dict[str, object]]
_ATTEMPT_TRIO = ("attempt.started", "attempt.observed", "attempt.retry_decided")


def _payload_of(kind: str, n: int) -> dict[str, object]:
    """The payload a valid ledger gives a call or attempt event (n: the attempt's number)."""
    return {
        "call.requested": {"idempotency_key": "key-1", "purpose": "review",
                           "model": "synthetic-small"},
        "call.manifest": {"idempotency_key": "key-1", "intent": {"instruction": "review"},
                          "request_sha256": SHA_A, "request_artifact": SHA_A,
                          "model": "synthetic-small"},
        "attempt.started": {"attempt_no": n, "request_sha256": SHA_A},
        "attempt.observed": {"transport": {"status": 429}, "response_sha256": SHA_A,
                             "response_artifact": SHA_A},
        "attempt.retry_decided": {"decision": "retry", "reason": "429"},
    }[kind]


def one_call_events(attempts: int) -> Iterator[Event]:
    """One call retried `attempts` times (started, observed 429, retry decided: three
    events an attempt), its last attempt still in flight: effect unknown."""
    task, call = "task-0001", "call-0001"
    yield ("task.created", task, None, None, None, {"title": "one call, many attempts"})
    for kind in ("call.requested", "call.manifest"):
        yield (kind, task, call, None, None, _payload_of(kind, 0))
    for n in range(1, attempts + 1):
        for kind in _ATTEMPT_TRIO[:1] if n == attempts else _ATTEMPT_TRIO:
            yield (kind, task, call, f"{call}-a{n}", None, _payload_of(kind, n))


def one_task_events(calls: int) -> Iterator[Event]:
    """One task with `calls` ordinary calls (seven events each; every 50th in flight)."""
    task = "task-0001"
    yield ("task.created", task, None, None, None, {"title": "one task, many calls"})
    for i in range(calls):
        call, key = f"call-{i:07d}", f"key-{i:07d}"
        att = f"{call}-a1"
        yield ("call.requested", task, call, None, None,
               {"idempotency_key": key, "purpose": "review", "model": "synthetic-small"})
        yield ("call.manifest", task, call, None, None,
               {"idempotency_key": key, "intent": {"instruction": "review"},
                "request_sha256": SHA_A, "request_artifact": SHA_A, "model": "synthetic-small"})
        yield ("attempt.started", task, call, att, None, {"attempt_no": 1, "request_sha256": SHA_A})
        if i % 50 == 49:
            continue
        yield ("attempt.observed", task, call, att, None,
               {"transport": {"status": 200}, "response_sha256": SHA_A,
                "response_artifact": SHA_A})
        yield ("attempt.interpreted", task, call, att, None,
               {"interpreter": "v1", "outcome": "success"})
        yield ("attempt.completed", task, call, att, None, {"status": "succeeded"})
        yield ("call.completed", task, call, None, None,
               {"status": "succeeded", "adopted_attempt_id": att})


def many_tasks_events(tasks: int) -> Iterator[Event]:
    """`tasks` tasks of one task.created each."""
    for i in range(tasks):
        yield ("task.created", f"task-{i:07d}", None, None, None, {"title": f"task {i}"})


def tool_operations_events(operations: int) -> Iterator[Event]:
    """One call whose saved response planned `operations` tool calls, each admitted and
    completed (every tenth admitted only: tool effect unknown)."""
    task, call, att = "task-0001", "call-0001", "call-0001-a1"
    turn = {"namespace": "ns", "thread": "th", "turn": "turn-1"}
    yield ("task.created", task, None, None, None, {"title": "one call, many tools"})
    yield ("call.requested", task, call, None, None, {**_payload_of("call.requested", 0),
                                                       "turn": turn})
    yield ("call.manifest", task, call, None, None, _payload_of("call.manifest", 0))
    yield ("attempt.started", task, call, att, None, _payload_of("attempt.started", 1))
    plan = [{"tool_call_id": f"tc-{i}", "name": "publish_report", "arguments_sha256": SHA_A}
            for i in range(operations)]
    yield ("attempt.observed", task, call, att, None,
           {"transport": {"status": 200}, "response_sha256": SHA_A,
            "response_artifact": SHA_A, "tool_plan": plan})
    yield ("attempt.interpreted", task, call, att, None, {"interpreter": "v1", "outcome": "success"})
    yield ("attempt.completed", task, call, att, None, {"status": "succeeded"})
    yield ("call.completed", task, call, None, None,
           {"status": "succeeded", "adopted_attempt_id": att})
    for i in range(operations):
        key = f"ns/th/turn-1/tc-{i}"
        yield ("tool.admitted", task, call, att, None,
               {"operation_key": key, "tool_call_id": f"tc-{i}", "tool": "publish_report",
                "arguments_sha256": SHA_A})
        if i % 10 != 9:
            yield ("tool.completed", task, call, att, None,
                   {"operation_key": key, "outcome": "succeeded"})


def compilations_events(compilations: int) -> Iterator[Event]:
    """One task with `compilations` context compilations (every tenth never finished)."""
    task = "task-0001"
    yield ("task.created", task, None, None, None, {"title": "one task, many compilations"})
    for i in range(compilations):
        comp = f"comp-{i:07d}"
        yield ("context.compilation_requested", task, None, None, comp,
               {"offered": [{"id": "doc", "required": True, "size": 10,
                             "size_estimated": False, "lineage": []}],
                "required_ids": ["doc"]})
        if i % 10 != 9:
            yield ("context.compilation_completed", task, None, None, comp,
                   {"package_id": f"pkg-{i}", "rendered_sha256": SHA_A, "selected": ["doc"]})


def numbered(events: Iterator[Event]) -> Iterator[tuple[object, ...]]:
    """Events as ledger rows: seq from 1, an event id and a time each."""
    for seq, (kind, task, call, att, comp, payload) in enumerate(events, 1):
        yield (seq, f"ev-{seq:07d}", _stamp(seq), kind, task, call, att, comp,
               json.dumps(payload, separators=(",", ":")))


def bulk_ledger(case: Path, rows: Iterator[tuple[object, ...]]) -> int:
    """A ledger of `rows` in bulk; returns its events."""
    case.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        statements = [f"{s.strip()};" for s in SCHEMA_SQL.split(";") if s.strip()]
        indexes = [s for s in statements if s.startswith("CREATE INDEX")]
        conn.executescript("\n".join(s for s in statements if s not in indexes))
        conn.execute("BEGIN")
        conn.execute("INSERT INTO ledger_meta VALUES ('format', ?)", (LEDGER_FORMAT,))
        conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", rows)
        conn.execute("COMMIT")
        conn.executescript("\n".join(indexes))
        conn.execute("PRAGMA journal_mode=WAL")
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        conn.close()


# (label, events of the shape at size n): the bench's shape rows
SHAPES: dict[str, tuple[str, Callable[[int], Iterator[Event]]]] = {
    "attempts": ("one call with {n:,} attempts", one_call_events),
    "calls": ("one task with {n:,} calls", one_task_events),
    "tools": ("one call with {n:,} tool operations", tool_operations_events),
    "compilations": ("one task with {n:,} compilations", compilations_events),
    "tasks": ("{n:,} tasks", many_tasks_events),
}


def write_bundle(root: Path, cases: int) -> None:
    """`cases` small cases (a demo-sized ledger each) for the bundle-list measure."""
    for i in range(cases):
        write_ledger(root / f"case-{i:04d}", 60, writers=2, tasks=2)


# --------------------------------------------------------------------------- measuring


class Ran(NamedTuple):
    """One child's run: wall seconds, max RSS in MB, what it printed, and the CPU
    seconds (user and system) of it and of the helpers it reaped."""

    wall: float
    rss_mb: float
    out: str
    cpu: float


def _run(argv: list[str], capture: bool = False) -> Ran:
    """Like _child but with the child's own rusage (Popen.wait reaps it otherwise)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    out = b""
    if capture and proc.stdout is not None:
        out = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read() if proc.stderr else b""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(argv[:5])} failed: {err.decode(errors='replace')[-300:]}")
    return Ran(wall, usage.ru_maxrss / 1024, out.decode(), usage.ru_utime + usage.ru_stime)


# put before every child script: its CPU seconds (also with its reaped helpers') and its
# current RSS in MB (Linux)
_PRELUDE = """
import resource
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
def tree_cpu():  # (with the helpers it reaped so far)
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
               resource.getrusage(resource.RUSAGE_CHILDREN)))
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", _PRELUDE + code]


_MODEL_OPEN = """
import sys, time
t0 = time.perf_counter()
from codeai_tui.console.model import CaseFollower
f = CaseFollower(__import__('pathlib').Path(sys.argv[1]))
sk = f.skeleton()  # what the console paints first: the effect-unknown count, every call
t_answer = time.perf_counter() - t0
rss = next(int(l.split()[1]) / 1024 for l in open("/proc/self/status") if l.startswith("VmRSS:"))
f.catch_up()
snap = f.snapshot()
t_full = time.perf_counter() - t0
assert sk is not None and sk.effect_unknown_ids == snap.unknown_ids
print(f"{t_answer:.4f} {t_full:.4f} {rss:.1f} {len(sk.effect_unknown_ids)} {sk.pending_count}")
"""


# the whole console (Textual, headless at 160x48): launch until the header's
# effect-unknown count is on screen with every call's row (the answer), then until the
# projection has replaced every "reading…" (the full snapshot painted), then quit; max
# RSS from rusage; the CPU it and its helpers spent to the full snapshot. argv: case, its
# number of calls
_APP_OPEN = """
import asyncio, sys, time
from pathlib import Path
t0 = time.perf_counter()
from codeai_tui.app import create_app

async def main():
    app = create_app(Path(sys.argv[1]))  # first, as `codeai-tui CASE` does (its head start)
    from codeai_tui.app.widgets.status_bar import StatusBar
    calls = int(sys.argv[2])
    answer = None
    async with app.run_test(size=(160, 48)) as pilot:
        bar = app.main.query_one(StatusBar)
        while time.perf_counter() - t0 < 600:
            await pilot.pause(0.05)
            if answer is None and bar.facts.counts is not None and (
                    app.main.pane("calls").row_count == calls):
                answer = time.perf_counter() - t0
            if app.main.live is not None and "reading" not in str(bar.render()):
                break
        else:
            raise SystemExit("the console did not finish its projection in 600 s")
        took, spent = time.perf_counter() - t0, tree_cpu()
        await pilot.pause(1.0)  # a second of following with the snapshot held
    print(f"{took:.4f} {answer if answer is not None else took:.4f} {spent:.2f}")

asyncio.run(main())
"""


# the whole console following a writer (headless 160x48, its projection finished): every
# 0.1 s the age of the newest event the header counts (commit to screen, at most 0.1 s
# late), the process's CPU share and its RSS growth. argv: case, writer, rate, seconds
_APP_LIVE = """
import asyncio, sqlite3, subprocess, sys, time
from datetime import datetime, timezone
from pathlib import Path
from codeai_tui.app import create_app
from codeai_tui.app.widgets.status_bar import StatusBar
case, writer, rate, seconds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
async def main():
    app = create_app(case)
    db = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True)
    start = db.execute("SELECT max(seq) FROM events").fetchone()[0]
    async with app.run_test(size=(160, 48)) as pilot:
        bar = app.main.query_one(StatusBar)
        while app.main.live is None or "reading" in str(bar.render()):
            await pilot.pause(0.1)
        await pilot.pause(1.0)
        rss0, c0, t0 = rss(), cpu(), time.monotonic()
        w = subprocess.Popen([sys.executable, "-c", writer, str(case / "ledger.sqlite3"), rate,
                              str(seconds)], stdout=subprocess.PIPE)
        ages, peak = [], 0.0
        while time.monotonic() < t0 + seconds:
            await pilot.pause(0.1)
            peak = max(peak, rss() - rss0)  # (pages handed back lower the end, not this)
            n = bar.facts.event_count
            if n <= start:
                continue
            at = db.execute("SELECT recorded_at FROM events WHERE seq=?", (n,)).fetchone()[0]
            t = datetime.fromisoformat(at.replace("Z", "+00:00"))
            ages.append((datetime.now(timezone.utc) - t).total_seconds())
        share = (cpu() - c0) / (time.monotonic() - t0)
        written = int(w.communicate()[0] or 0)
        await pilot.pause(1.0)
        shown = bar.facts.event_count
        growth = rss() - rss0
        peak = max(peak, growth)
    calls = db.execute("SELECT count(DISTINCT call_id) FROM events WHERE seq > ?",
                       (start,)).fetchone()[0]
    ages.sort()
    p95 = ages[int(0.95 * (len(ages) - 1))] if ages else float("nan")
    print(f"{p95:.4f} {share:.3f} {growth:.1f} {written} {shown - start} {calls} {peak:.1f}")
asyncio.run(main())
"""


# inspect --json in-process, to read its own peak and its helpers' apart (wait4 on the
# command gives only the largest of them)
_INSPECT_APART = """
import os, sys
from codeai_tui.read.inspection import write_json
from codeai_tui.services.forked import helper_plan
with open(os.devnull, "w") as out:
    write_json(sys.argv[1], None, out, helper_plan())
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
helper = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"{own:.1f} {helper:.1f}")
"""

# what any Python projection must do at least: read and parse every payload whose fields
# a verdict or the document needs (the fast path's own kinds), and nothing else
_PAYLOAD_FLOOR = """
import sys, orjson
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.services.gather import OTHER_KINDS, PAYLOAD_CALL_KINDS
with EvidenceSQL(sys.argv[1]) as sql:
    for row in sql.payload_rows(1 << 62, PAYLOAD_CALL_KINDS, OTHER_KINDS):
        orjson.loads(row[5])
"""


# the CPU of each part of a console's start, each alone, one after the other in one
# process (one core): where the time of the rows bound by CPU goes. The fold is timed from
# the gatherer's first call (its reads before that are the parts above it). argv: case
_START_PARTS = """
import json, sys
from pathlib import Path
from codeai_tui.ledger.evidence_sql import EvidenceSQL
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.ledger.schema import KNOWN_KINDS
from codeai_tui.services.gather import (
    OTHER_KINDS, PAYLOAD_CALL_KINDS, SCAN_KINDS, Gathered, Sharing, projector_from)
from codeai_tui.services.stage_reads import CALL_EVENT_KINDS, CODES
from codeai_tui.services.time_travel import CallHistory
from codeai_tui.workstate.receipts import by_key_of
case = Path(sys.argv[1])
sql = EvidenceSQL(case)
limit = sql.max_seq()
parts = []
def part(name, work):
    before = cpu()
    got = work()
    parts.append((name, cpu() - before))
    return got
def drained(rows):
    return sum(1 for _ in rows)
mid = sql.middle_call_id(limit)
part("the skeleton: the calls' kinds grouped (both halves)",
     lambda: [sql.call_stage_rows(limit, CODES, ids) for ids in ((None, mid), (mid, None))])
part("the skeleton: observations, with the table's print",
     lambda: sql.observed_with_table_print(limit, "sent", CALL_EVENT_KINDS))
part("suspect scan: the id and kind cells' types (three indexes)",
     lambda: sql.odd_cells(limit))
part("suspect scan: the table's print", lambda: sql.table_print(limit, CALL_EVENT_KINDS))
part("suspect scan: ids and times that are not printable", lambda: sql.first_odd_text(limit))
part("suspect scan: the rows SQLite flags", lambda: drained(sql.suspect_rows(
    limit, sorted(KNOWN_KINDS), SCAN_KINDS, OTHER_KINDS)))
log = part("the receipt log read and parsed", lambda: read_receipts(case))
part("the gatherer: each task's extent", lambda: sql.task_extents(limit))
part("the gatherer: the calls' events grouped and packed", lambda: drained(
    sql.call_skeletons(limit, CALL_EVENT_KINDS, PAYLOAD_CALL_KINDS)[1]))
got = Gathered(sql, limit, log)
got.share = Sharing(by_key_of(log))
p = part("every call folded, judged and put in columns (payload rows read and parsed)",
         lambda: projector_from(got, CallHistory(case / "ledger.sqlite3")))
part("the first snapshot (the receipt check)", lambda: p.snapshot(log))
print(json.dumps(parts))
"""


_TIME_TRAVEL = """
import sys, time
from pathlib import Path
from codeai_tui.console.model import CaseFollower, TimeMachine
case = Path(sys.argv[1]); seqs = [int(s) for s in sys.argv[2:]]
live = CaseFollower(case)  # the console's live projection, as when the operator presses t
live.catch_up()
live.snapshot()  # painted before time travel reads the live projection (tasks judged)
m = TimeMachine(case, lambda: live)  # handed the live follower, as the console is
times = []
for s in seqs:
    t0 = time.perf_counter(); snap = m.to(s); times.append(time.perf_counter() - t0)
    assert snap is not None and snap.state.as_of_seq <= s
print(" ".join(f"{t:.4f}" for t in times))
"""

_WRITER = """
import hashlib, json, sqlite3, sys, time
from datetime import datetime, timezone
path, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
# as a provider does: a receipt per started attempt, logged before it works (the console
# reads on from where it ended; reading the whole log again made it fall seconds behind)
receipts = open(path.rsplit("/", 1)[0] + "/provider/receipts.jsonl", "a")
conn = sqlite3.connect(path, isolation_level=None, timeout=5)
conn.execute("PRAGMA synchronous=NORMAL")
seq = start = conn.execute("SELECT max(seq) FROM events").fetchone()[0]
CALLS_PER_TASK = 10

def script():
    # new tasks of ten calls each, the last of each left in flight (effect unknown): ids
    # new on every run (the bench runs several writers on one ledger, --keep reuses it)
    t = 0
    while True:
        task = f"live-{start}-t{t}"
        yield ("task.created", task, None, None, {"title": f"live task {t}"})
        for c in range(CALLS_PER_TASK):
            call = f"{task}-c{c}"; att = f"{call}-a1"
            sha = hashlib.sha256(call.encode()).hexdigest()
            yield ("call.requested", task, call, None,
                   {"idempotency_key": call, "purpose": "review", "model": "synthetic-small"})
            yield ("call.manifest", task, call, None,
                   {"idempotency_key": call, "request_sha256": sha, "model": "synthetic-small"})
            yield ("attempt.started", task, call, att, {"attempt_no": 1, "request_sha256": sha})
            if c == CALLS_PER_TASK - 1:
                continue
            yield ("attempt.observed", task, call, att,
                   {"transport": {"status": 200}, "response_sha256": sha})
            yield ("attempt.interpreted", task, call, att,
                   {"interpreter": "v1", "outcome": "success"})
            yield ("attempt.completed", task, call, att, {"status": "succeeded"})
            yield ("call.completed", task, call, None,
                   {"status": "succeeded", "adopted_attempt_id": att})
        t += 1

t0 = time.perf_counter(); n = 0
for kind, task, call, att, payload in script():
    if time.perf_counter() - t0 >= seconds:
        break
    seq += 1
    now = datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")
    if kind == "attempt.started":
        receipts.write(json.dumps({"receipt_id": f"r-live-{seq}", "received_at": now,
                                   "idempotency_key": call,
                                   "body_sha256": payload["request_sha256"],
                                   "bytes": 100}) + "\\n")
        receipts.flush()
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)",
                 (seq, f"live-{seq}", now, kind, task, call, att, None, json.dumps(payload)))
    conn.execute("COMMIT")
    n += 1
    lag = t0 + n / rate - time.perf_counter()
    if lag > 0:
        time.sleep(lag)
print(n)
"""

_FOLLOW = """
import statistics, subprocess, sys, time
from datetime import datetime, timezone
from pathlib import Path
from codeai_tui.console.model import CaseFollower
case, writer_code, rate, seconds = Path(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
traced = len(sys.argv) > 5  # count what the projection keeps (tracemalloc), not latency
if traced:  # from the start: what the first projection held and later let go counts too
    import gc, sqlite3, tracemalloc
    tracemalloc.start()
f = CaseFollower(case); f.catch_up(); f.snapshot()
if traced:
    db = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True)
    start = db.execute("SELECT ifnull(max(seq), 0) FROM events").fetchone()[0]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
rss0 = rss()
w = subprocess.Popen([sys.executable, "-c", writer_code, str(case / "ledger.sqlite3"), rate,
                      str(seconds)], stdout=subprocess.PIPE)
lat = []
end = time.monotonic() + seconds + 1
while time.monotonic() < end:
    snap = f.poll()
    if snap is not None and snap.last_recorded_at:
        t = datetime.fromisoformat(snap.last_recorded_at.replace("Z", "+00:00"))
        lat.append((datetime.now(timezone.utc) - t).total_seconds())
    time.sleep(0.05)
written = int(w.communicate()[0] or 0)
rss1 = rss()
lat.sort()
p95 = lat[int(0.95 * (len(lat) - 1))] if lat else float("nan")
if traced:  # the Python memory held now, less what was held when the writer began
    f.snapshot()
    gc.collect()
    kept = tracemalloc.get_traced_memory()[0] - held
    tracemalloc.stop()
    calls = db.execute("SELECT count(*) FROM (SELECT call_id FROM events WHERE call_id IS "
                       "NOT NULL AND call_id != '' GROUP BY call_id HAVING min(seq) > ?)",
                       (start,)).fetchone()[0]
    print(f"{kept} {calls} {written}")
else:
    print(f"{p95:.4f} {rss1 - rss0:.1f} {written} {f.projector.event_count}")
"""

_FOLLOW_READS = """
import asyncio, statistics, subprocess, sys, time
from datetime import datetime, timezone
from pathlib import Path
from codeai_tui.console.model import CaseFollower
from codeai_tui.ledger.areader import AsyncLedgerReader
case, writer_code, rate, seconds, mode = (Path(sys.argv[1]), sys.argv[2], sys.argv[3],
                                          float(sys.argv[4]), sys.argv[5])
POLL_S = 0.1  # the console's follow poll (app/constants.py)
f = CaseFollower(case); f.catch_up(); f.snapshot()
lat = []
def note(snap):
    if snap is not None and snap.last_recorded_at:
        t = datetime.fromisoformat(snap.last_recorded_at.replace("Z", "+00:00"))
        lat.append((datetime.now(timezone.utc) - t).total_seconds())
def fold(events):  # the follower thread's share when the reads happen on the event loop
    with f.lock:
        f.projector.feed(events)
    f.last_recorded_at = events[-1].recorded_at
    return f.snapshot()
async def main():
    reader = await AsyncLedgerReader(case).open()
    w = subprocess.Popen([sys.executable, "-c", writer_code, str(case / "ledger.sqlite3"),
                          rate, str(seconds)], stdout=subprocess.PIPE)
    c0, end = cpu(), time.monotonic() + seconds + 1
    while time.monotonic() < end:
        await asyncio.sleep(POLL_S)
        if not await reader.changed():
            continue
        if mode == "thread":  # as the console does: the poll wakes the thread, it reads
            note(await asyncio.to_thread(f.poll))
            continue
        events, last = [], f.projector.last_seq
        while page := await reader.read_after(last, 2000):
            events += page
            last = page[-1].seq
        if events:
            note(await asyncio.to_thread(fold, events))
    used = cpu() - c0
    written = int(w.communicate()[0] or 0)
    await reader.close()
    lat.sort()
    p95 = lat[int(0.95 * (len(lat) - 1))] if lat else float("nan")
    print(f"{statistics.median(lat):.4f} {p95:.4f} {used / seconds:.3f} {written}")
asyncio.run(main())
"""

_BUNDLE = """
import sys, time
t0 = time.perf_counter()
from codeai_tui.console.model import discover_cases
from codeai_tui.console.fleet import summarize_all  # what the Cases pane runs
cases = discover_cases(sys.argv[1])
for _case, _summary in summarize_all(cases):
    pass
print(f"{time.perf_counter() - t0:.4f} {len(cases)}")
"""


# the console's model, opened on a case until its full snapshot (no Textual)
_MODEL_FULL = """
import sys, time
t0 = time.perf_counter()
from pathlib import Path
from codeai_tui.console.model import CaseFollower
f = CaseFollower(Path(sys.argv[1]))
f.catch_up()
f.snapshot()
print(f"{time.perf_counter() - t0:.4f}")
"""


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _fmt_ratio(t: float, scan: float | None) -> str:
    return f"{t / scan:.1f}x" if scan else "n/a"


Row = tuple[str, str, str, str]  # (measure, median, ratio to a scan, target)


@dataclass(frozen=True)
class Scans:
    """The `sqlite3` shell's scans of one ledger, measured in this run (None: no shell)."""

    bare: float | None
    full: float | None

    def bare_ratio(self, t: float) -> str:
        return f"{t / self.bare:.1f}x bare scan" if self.bare else ""

    def full_ratio(self, t: float) -> str:
        return f"{t / self.full:.1f}x full scan" if self.full else ""


def with_cpu(wall: float, cpu: float, cores: int) -> str:
    """A wall time with the CPU spent meanwhile, and the least wall time that CPU needs
    on `cores` cores: the bound a start that is CPU-bound cannot beat."""
    return (f"{wall:.2f} s (CPU {cpu:.1f} s: >= {cpu / cores:.2f} s on {cores} "
            f"core{'s' if cores != 1 else ''})")


def judged(row: Row, met: bool | None) -> tuple[str, str, str, str, str]:
    """A row with its verdict against its target (None: no target, or not measurable)."""
    return (*row, "" if met is None else "met" if met else "MISSED")


def measure_scans(case: Path, runs: int) -> Scans:
    shell = shutil.which("sqlite3")
    if not shell:
        print("note: no sqlite3 shell on PATH: the ratio column is skipped")
        return Scans(None, None)
    db = str(case / "ledger.sqlite3")
    return Scans(*(_median([_run([shell, "-readonly", db, sql]).wall for _ in range(runs)])
                   for sql in (BARE_SCAN, FULL_SCAN)))


def scan_rows(scans: Scans, label: str = "") -> list[tuple[str, str, str, str, str]]:
    rows = []
    for sql, t in ((BARE_SCAN, scans.bare), (FULL_SCAN, scans.full)):
        if t is not None:
            rows.append(judged((f"{label}sqlite3 shell: {sql}", f"{t:.2f} s", "1.0x",
                                "(reference)"), None))
    return rows


Judged = tuple[str, str, str, str, str]


def run_bench(n_events: int = 1_000_000, keep: str | None = None, runs: int = 3,
              bundle_cases: int = 1000, live_seconds: float = 30.0,
              shapes: int = 100_000, shape_tasks: int = 0, *, markdown: bool = False,
              huge_events: int = 0) -> int:
    """Write the ledgers, measure, print the table. `markdown`: the table as Markdown
    (docs/benchmarks.md's is made so); `huge_events`: also the huge ledger's rows (the
    targets' size is 10,000,000; 0 skips them)."""
    if n_events < 100:
        print("codeai-tui: --events must be >= 100", file=sys.stderr)
        return 2
    runs = max(1, runs)
    tmp = tempfile.TemporaryDirectory(prefix="codeai-bench-")
    root = Path(keep) if keep else Path(tmp.name)
    case = root / "big"
    try:
        _write_once(case, n_events)
        rows = _measure(case, runs)
        if live_seconds > 0:
            # the writers append to a copy: a kept ledger stays the size its rows name
            live = root / "live"
            shutil.rmtree(live, ignore_errors=True)
            shutil.copytree(case, live)
            try:
                rows += _measure_app_live(live, live_seconds)
                rows += _measure_live(live, live_seconds)
                rows += [judged(r, None) for r in _measure_follow_reads(live, live_seconds)]
            finally:
                shutil.rmtree(live, ignore_errors=True)
        if huge_events:
            huge = root / f"huge-{huge_events}"
            _write_once(huge, huge_events)
            rows += measure_huge(huge, runs)
        bundle = root / "bundle"
        if bundle_cases and not bundle.exists():
            write_bundle(bundle, bundle_cases)
        if bundle_cases:
            walls = []
            for _ in range(runs):
                out = _run(_py(_BUNDLE) + [str(bundle)], capture=True).out
                walls.append(float(out.split()[0]))
            rows.append(judged((f"{bundle_cases:,}-case bundle: list every case with its "
                                "worst state (model layer)", f"{_median(walls):.2f} s", "",
                                "<= 3 s"), _median(walls) <= 3))
        # (the shapes follow the ledger's size: a quick run stays quick)
        shapes = min(shapes, max(1000, n_events // 10))
        sizes = {name: shapes for name in ("attempts", "calls", "tools", "compilations")}
        sizes["tasks"] = shape_tasks
        rows += [judged(r, None) for r in measure_shapes(root, sizes, runs)]
        print_table(rows, markdown)
    finally:
        tmp.cleanup()
    return 0


def _write_once(case: Path, n_events: int) -> None:
    if not (case / "ledger.sqlite3").exists():
        t0 = time.perf_counter()
        count = write_ledger(case, n_events)
        print(f"wrote {count:,} interleaved events (50 writers, 1,000 tasks) in "
              f"{time.perf_counter() - t0:.1f} s")


def _ledger_size(case: Path) -> tuple[int, int, int]:
    """(events, max seq, calls) of a ledger."""
    conn = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True)
    try:
        count, max_seq = conn.execute("SELECT count(*), max(seq) FROM events").fetchone()
        calls = conn.execute("SELECT count(DISTINCT call_id) FROM events").fetchone()[0]
    finally:
        conn.close()
    return int(count), int(max_seq), int(calls)


def _travel_seqs(max_seq: int) -> list[int]:
    rng = random.Random(1)
    return [max_seq // 2, max_seq // 4, 3 * max_seq // 4, max_seq, 1] + [
        rng.randrange(1, max_seq) for _ in range(5)]


def _measure(case: Path, runs: int) -> list[Judged]:
    exe = [sys.executable, "-m", "codeai_tui"]
    count, max_seq, calls = _ledger_size(case)
    print(f"ledger: {count:,} events, {calls:,} calls; {runs} run(s) per measure, medians")
    size = f"{count / 1e6:.1f}M events" if count >= 1e6 else f"{count:,} events"
    scans = measure_scans(case, runs)
    rows = scan_rows(scans)
    app = [_run(_py(_APP_OPEN) + [str(case), str(calls)], capture=True) for _ in range(runs)]
    t_app = _median([float(a.out.split()[0]) for a in app])
    t_app_answer = _median([float(a.out.split()[1]) for a in app])
    cpu_app = _median([float(a.out.split()[2]) for a in app])
    rows.append(judged((f"{size}: the answer on screen (the console, headless 160x48: the "
                        "header's effect-unknown count, every call's row)",
                        f"{t_app_answer:.2f} s", scans.bare_ratio(t_app_answer), "<= 2 s"),
                       t_app_answer <= 2))
    rows.append(judged((f"{size}: every pane final (the console: no count reads "
                        "\"reading…\", the full snapshot painted; CPU of the console and "
                        "its helpers to then)", with_cpu(t_app, cpu_app, usable_cores()),
                        scans.bare_ratio(t_app), "<= 5 s"), t_app <= 5))
    rows.append(judged(("the console: max RSS with the full snapshot held",
                        f"{max(a.rss_mb for a in app):.0f} MB", "", ""), None))
    res = [_run(exe + ["inspect", str(case), "--json"]) for _ in range(runs)]
    wall = _median([r.wall for r in res])
    met = wall <= 6 * scans.full if scans.full else None
    rows.append(judged((f"{size}: inspect --json (whole process; CPU with its helpers)",
                        with_cpu(wall, _median([r.cpu for r in res]), usable_cores()),
                        scans.full_ratio(wall), "<= 6x full scan"), met))
    rows.append(judged(("inspect --json max RSS", f"{max(r.rss_mb for r in res):.0f} MB", "",
                        ""), None))
    floor = _median([_run(_py(_PAYLOAD_FLOOR) + [str(case)]).wall for _ in range(runs)])
    rows.append(judged(("floor: a Python process that only reads and parses (orjson) the "
                        "payloads a verdict needs", f"{floor:.2f} s", scans.full_ratio(floor),
                        ""), None))
    mid = max_seq // 2
    res = [_run(exe + ["inspect", str(case), "--json", "--as-of", str(mid)]) for _ in range(runs)]
    wall = _median([r.wall for r in res])
    rows.append(judged((f"inspect --json --as-of {mid:,} (whole process)", f"{wall:.2f} s",
                        scans.full_ratio(wall), ""), None))
    opened = [_run(_py(_MODEL_OPEN) + [str(case)], capture=True) for _ in range(runs)]
    fields = [o.out.split() for o in opened]
    t_answer = _median([float(f[0]) for f in fields])
    rows.append(judged(("console model (no Textual): open to the answer (skeleton; "
                        f"{fields[0][3]} effect unknown, {fields[0][4]} pending)",
                        f"{t_answer:.2f} s", scans.bare_ratio(t_answer), ""), None))
    t_open = _median([float(f[1]) for f in fields])
    rows.append(judged(("console model (no Textual): open to the full snapshot",
                        f"{t_open:.2f} s", scans.bare_ratio(t_open), ""), None))
    rows.extend(start_parts(case, size, runs))
    travel = _time_travel(case, max_seq, runs)
    rows.append(judged((f"{size}: time travel to a seq (10 seqs incl. middle, ends; max "
                        f"{max(travel) * 1000:.0f} ms)", f"{_median(travel) * 1000:.0f} ms",
                        scans.bare_ratio(_median(travel)), "<= 500 ms"),
                       _median(travel) <= 0.5))
    return rows


def start_parts(case: Path, size: str, runs: int) -> list[Judged]:
    """The CPU of each part of a console's start (`_START_PARTS`), and of them all: the
    rows bound by CPU spend it, over the cores there are."""
    measured = [json.loads(_run(_py(_START_PARTS) + [str(case)], capture=True).out)
                for _ in range(runs)]
    names = [name for name, _cpu in measured[0]]
    medians = [_median([m[i][1] for m in measured]) for i in range(len(names))]
    rows = [judged((f"{size}: the start's CPU, part by part (each alone, one core): {name}",
                    f"{cpu:.2f} s", "", ""), None) for name, cpu in zip(names, medians,
                                                                      strict=True)]
    rows.append(judged((f"{size}: the start's CPU, the parts above together",
                        f"{sum(medians):.2f} s", "", ""), None))
    return rows


def _time_travel(case: Path, max_seq: int, runs: int) -> list[float]:
    seqs = _travel_seqs(max_seq)
    travel: list[float] = []
    for _ in range(runs):
        out = _run(_py(_TIME_TRAVEL) + [str(case)] + [str(s) for s in seqs], capture=True).out
        travel += [float(x) for x in out.split()]
    return travel


def measure_huge(case: Path, runs: int) -> list[Judged]:
    """The huge ledger's targets (10^7 events): the answer on screen against the bare
    scan, the console's and `inspect --json`'s max RSS, time travel."""
    count, max_seq, calls = _ledger_size(case)
    size = f"{count / 1e6:.1f}M events" if count >= 1e6 else f"{count:,} events"
    print(f"huge ledger: {count:,} events, {calls:,} calls")
    scans = measure_scans(case, runs)
    rows = scan_rows(scans, f"{size}: ")
    app = [_run(_py(_APP_OPEN) + [str(case), str(calls)], capture=True) for _ in range(runs)]
    answer = _median([float(a.out.split()[1]) for a in app])
    rows.append(judged((f"{size}: the answer on screen", f"{answer:.2f} s",
                        scans.bare_ratio(answer), "<= 10x bare scan"),
                       answer <= 10 * scans.bare if scans.bare else None))
    peak = max(a.rss_mb for a in app)
    rows.append(judged((f"{size}: the console's max RSS (full snapshot held)",
                        f"{peak:.0f} MB", "", "<= 500 MB"), peak <= 500))
    res = [_run([sys.executable, "-m", "codeai_tui", "inspect", str(case), "--json"])
           for _ in range(runs)]
    wall, peak = _median([r.wall for r in res]), max(r.rss_mb for r in res)
    rows.append(judged((f"{size}: inspect --json max RSS ({wall:.1f} s, "
                        f"{scans.full_ratio(wall) or 'no scan'})", f"{peak:.0f} MB", "",
                        "<= 250 MB"), peak <= 250))
    travel = _time_travel(case, max_seq, runs)
    rows.append(judged((f"{size}: time travel to a seq (max {max(travel) * 1000:.0f} ms)",
                        f"{_median(travel) * 1000:.0f} ms", "", "<= 500 ms"),
                       _median(travel) <= 0.5))
    return rows


def measure_shapes(root: Path, sizes: dict[str, int], runs: int
                   ) -> list[tuple[str, str, str, str]]:
    """Each shape of SHAPES at its size (0: skipped) beside an ordinary ledger of the
    same number of events (the interleaved writers', no receipt log), both measured
    here: `inspect --json` and the console's model to its full snapshot, each as a whole
    process. The ratio is per event (the ordinary ledger's count is within a few events
    of the shape's)."""
    rows: list[tuple[str, str, str, str]] = []
    measured: dict[int, tuple[float, float]] = {}  # ordinary: events -> (inspect, model)
    for name, n in sizes.items():
        if n <= 0:
            continue
        label, events_of = SHAPES[name]
        case = root / f"shape-{name}-{n}"
        t0 = time.perf_counter()
        count = _ledger_once(case, lambda case=case, events_of=events_of, n=n:
                             bulk_ledger(case, numbered(events_of(n))))
        ordinary = root / f"ordinary-{count}"
        ordinary_count = _ledger_once(ordinary, lambda ordinary=ordinary, count=count:
                                      bulk_ledger(ordinary, interleaved_rows(count)))
        print(f"shape {label.format(n=n)}: {count:,} events (ordinary {ordinary_count:,}), "
              f"written in {time.perf_counter() - t0:.1f} s")
        if ordinary_count not in measured:
            measured[ordinary_count] = _inspect_and_model(ordinary, runs)
            rows += [(f"ordinary ledger of {ordinary_count:,} events (interleaved writers, no "
                      f"receipt log): {what}", f"{t:.2f} s", "1.0x", "(baseline: shapes below)")
                     for what, t in zip(("inspect --json", "console model, full snapshot"),
                                        measured[ordinary_count], strict=True)]
        per_event = ordinary_count / count
        for what, t, base in zip(("inspect --json", "console model, full snapshot"),
                                 _inspect_and_model(case, runs), measured[ordinary_count],
                                 strict=True):
            rows.append((f"shape: {label.format(n=n)} ({count:,} events): {what}",
                         f"{t:.2f} s", f"{t * per_event / base:.2f}x ordinary",
                         "about 1x ordinary"))
    return rows


def _ledger_once(case: Path, write: Callable[[], int]) -> int:
    """The events of the ledger in `case`, written by `write` unless it is there (--keep)."""
    db = case / "ledger.sqlite3"
    if db.exists():
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
        finally:
            conn.close()
    return write()


def _inspect_and_model(case: Path, runs: int) -> tuple[float, float]:
    """Median seconds of `inspect --json` (whole process) and of the console's model to
    its full snapshot (whole process, measured inside it)."""
    exe = [sys.executable, "-m", "codeai_tui", "inspect", str(case), "--json"]
    inspect = _median([_run(exe).wall for _ in range(runs)])
    model = _median([float(_run(_py(_MODEL_FULL) + [str(case)], capture=True).out)
                     for _ in range(runs)])
    return inspect, model


def _measure_live(case: Path, seconds: float, rate: int = 1000) -> list[Judged]:
    """A writer appends `rate` events/s (each its own transaction) while a follower polls
    every 50 ms: commit-to-snapshot latency (model layer, no screen), and in a second,
    traced run the Python memory the projection keeps per call begun."""
    out = _run(_py(_FOLLOW) + [str(case), _WRITER, str(rate), str(seconds)], capture=True).out
    p95, _growth, written, seen = out.split()
    kept = kept_row(*(int(x) for x in _run(_py(_FOLLOW) + [
        str(case), _WRITER, str(rate), str(seconds), "traced"], capture=True).out.split()),
        rate=rate)
    return [
        judged((f"live (model layer): {rate:,} events/s for {seconds:.0f} s, commit to "
                f"snapshot p95 ({int(written):,} written, all {int(seen):,} folded)",
                f"{float(p95) * 1000:.0f} ms", "", ""), None),
        judged(kept, None),
    ]


def kept_row(kept: int, calls: int, written: int, rate: int) -> Row:
    """What the projection keeps per call begun while following (a second run, traced),
    against what 20 MB allows each call ten minutes at this rate would begin."""
    label = (f"live: Python memory the projection keeps per call begun (model layer, "
             f"tracemalloc; {calls:,} calls)")
    if calls <= 0 or written <= 0:
        return (label, f"{kept / 1e6:.1f} MB", "", "<= 20 MB (10 min)")
    allowed = 20e6 / (600 * rate * calls / written)
    return (label, f"{kept / calls:,.0f} bytes ({kept / 1e6:.1f} MB)", "",
            f"<= {allowed:,.0f} bytes (20 MB in 10 min at this rate)")


TARGET_FOLLOW_S = 600  # the live memory target's own measure: ten minutes of following


def growth_row(growth_mb: float, calls: int, seconds: float, rate: int,
               peak_mb: float | None = None) -> Judged:
    """The whole console's RSS growth while following, per new call, judged against the
    target's 20 MB only by a run of the target's ten minutes (`--live-seconds 600`). A
    shorter run shows what its rate would reach by then, unjudged: the growth comes
    early (arenas and caches filling), so a 120 s run scaled up read 43 MB where ten
    real minutes of the same code grew 18.8-19.6 MB. Judged by the most it grew on the
    way (`peak_mb`, sampled every 0.1 s) where that is more than at the end: whatever
    hands pages back (a trim, the heap's top freed) can lower the end of a run without
    lowering what it held, as minute trims once did (ends 13.5-16.4 MB, tops 17.3-18.7)."""
    label = (f"live, the whole console: RSS growth following {rate:,} events/s of new "
             f"tasks and calls for {seconds:.0f} s ({calls:,} new calls, one in ten left "
             "in flight)")
    worst = growth_mb if peak_mb is None else max(growth_mb, peak_mb)
    per_call = growth_mb * 1048576 / calls if calls > 0 else float("nan")
    ten_minutes = worst * TARGET_FOLLOW_S / seconds if seconds > 0 else float("nan")
    whole = seconds >= TARGET_FOLLOW_S
    value = (f"{growth_mb:.1f} MB ({per_call:,.0f} bytes a call"
             + ("" if worst == growth_mb else f"; {worst:.1f} MB at most on the way")
             + ("" if whole else f"; {ten_minutes:.0f} MB in 10 min at this rate") + ")")
    target = "<= 20 MB in 10 min" + ("" if whole else " (judged by --live-seconds 600)")
    return judged((label, value, "", target),
                  ten_minutes <= 20 if calls > 0 and whole else None)


def _measure_app_live(case: Path, seconds: float, rate: int = 1000) -> list[Judged]:
    """The whole console following the same writer: commit to screen, CPU, memory."""
    out = _run(_py(_APP_LIVE) + [str(case), _WRITER, str(rate), str(seconds)],
               capture=True).out
    p95, share, growth, written, shown, calls, peak = out.split()
    return [
        growth_row(float(growth), int(calls), seconds, rate, float(peak)),
        judged((f"live, the whole console (headless 160x48): {rate:,} events/s, commit to "
                f"screen p95 (the newest event the header counts, sampled every 0.1 s; "
                f"{int(written):,} written, {int(shown):,} shown); CPU",
                f"{float(p95) * 1000:.0f} ms; {float(share) * 100:.0f}% of a core", "",
                "<= 250 ms"), float(p95) <= 0.25),
    ]


def _measure_follow_reads(case: Path, seconds: float, rate: int = 1000
                          ) -> list[tuple[str, str, str, str]]:
    """Where the follower reads new events. Both ways poll `data_version`
    through aiosqlite every 0.1 s as the console does; "thread" reads and folds in the
    follower thread with the sync reader (what the console does), "aiosqlite" reads the
    new events on the event loop and hands them to a thread to fold. Commit-to-snapshot
    median/p95 and the follower process's CPU per second, at `rate` events/s."""
    rows = []
    for mode, label in (("thread", "sync reader in the follower thread (kept)"),
                        ("aiosqlite", "aiosqlite reads, folded in a thread")):
        out = _run(_py(_FOLLOW_READS) + [str(case), _WRITER, str(rate), str(seconds), mode],
                   capture=True).out
        p50, p95, cpu, _written = out.split()
        rows.append((f"live reads, {label}: {rate:,} events/s, commit to snapshot "
                     "median / p95; CPU", f"{float(p50) * 1000:.0f} / "
                     f"{float(p95) * 1000:.0f} ms; {float(cpu) * 100:.0f}% of a core", "",
                     "<= 250 ms"))
    return rows


HEADER = ("measure", "median", "vs sqlite3 shell scan", "target", "met")


def print_table(rows: list[Judged], markdown: bool = False) -> None:
    """The table: Markdown (`--markdown`, what docs/benchmarks.md holds) or plain text
    in aligned columns."""
    print()
    if markdown:
        print("| " + " | ".join(HEADER) + " |")
        print("|---|---|---|---|---|")
        for r in rows:
            print("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
        return
    widths = [min(90, max(len(r[i]) for r in [HEADER, *rows])) for i in range(5)]
    for r in [HEADER, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
