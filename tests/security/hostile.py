"""The hostile-input corpus: case directories made by code.

Each `Hostile` builds one case directory into a given path and states, without an `or`,
what an operator must see: `inspect` exits 2 with one line naming the problem (ERROR), or
exits 0 and reports it (ANOMALY: an `anomaly at seq` line; NOTE: a receipt-log or
case.json line; OK: a legitimate file that must read like its clean twin). `pending` marks
the cases whose anomaly is being built on another branch (finding 6, branch issue8).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from ledgerfactory import SCHEMA, write_ledger

# Where a case.json in the corpus points: the test's capture listener (set before building),
# so a request sent by mistake would be seen, not lost on a closed port.
CAPTURE = {"base_url": "http://127.0.0.1:9/v1"}

LOOSE_SCHEMA = """
CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (seq, event_id, recorded_at, kind, task_id, call_id, attempt_id,
                     compilation_id, payload);
"""


class Expect(Enum):
    ERROR = "error"  # exit 2, one line on stderr; the console shows its error screen
    ANOMALY = "anomaly"  # exit 0, `anomaly at seq N: ...`; the console counts it
    NOTE = "note"  # exit 0, a receipt-log or case.json line; the console keeps it
    OK = "ok"  # exit 0, no anomaly: reads like the clean ledger it is


@dataclass(frozen=True)
class Hostile:
    name: str
    build: Callable[[Path], None]
    expect: Expect
    words: str  # must appear in the line the operator reads
    pending: str | None = None
    # every write action is run on it too: each refuses (exit 2, one line with `words`),
    # sends nothing and writes nothing (its case holds a call a write would act on)
    writes: bool = False


# ------------------------------------------------------------------ building blocks


def ev(seq: Any, kind: str, payload: Any = None, **ids: Any) -> dict[str, Any]:
    return {"seq": seq, "kind": kind, "task_id": ids.pop("task_id", "task-1"),
            "payload": {} if payload is None else payload, **ids}


BASE = [
    ev(1, "task.created", {"title": "review"}),
    ev(2, "call.requested", {"idempotency_key": "key-1", "purpose": "review",
                             "model": "synthetic-small"}, call_id="call-1"),
]


def clean(case: Path, extra: list[dict[str, Any]] | None = None, **kw: Any) -> None:
    write_ledger(case, BASE + (extra or []), **kw)


def raw_ledger(case: Path, schema: str, rows: list[tuple[Any, ...]],
               fmt: str | None = "codeai.ledger.v1", wal: bool = True) -> None:
    """A ledger written row by row with plain sqlite3: any schema, any cell types."""
    case.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(schema)
    if fmt is not None:
        conn.execute("INSERT INTO ledger_meta VALUES ('format', ?)", (fmt,))
    width = len(rows[0]) if rows else 0
    for row in rows:
        conn.execute(f"INSERT INTO events VALUES ({','.join('?' * width)})", row)
    conn.close()


def row(seq: Any, n: int, kind: str = "task.created", payload: Any = '{"title": "x"}',
        **cols: Any) -> tuple[Any, ...]:
    return (seq, cols.get("event_id", f"ev-{n}"), cols.get("recorded_at", "2026-09-13T12:00:00Z"),
            kind, cols.get("task_id", "task-1"), cols.get("call_id"), cols.get("attempt_id"),
            cols.get("compilation_id"), payload)


def sql(case: Path, *statements: str, params: tuple[Any, ...] = ()) -> None:
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    for st in statements:
        conn.execute(st, params)
    conn.close()


BAD_UTF8_JSON = "CAST(X'7B2261223A22FF227D' AS TEXT)"  # '{"a":"\xff"}' as TEXT


def rollback_ledger(case: Path, n: int = 400) -> None:
    """A ledger in rollback-journal mode (all pages in the main file) over many pages,
    written in one transaction (a commit per event would cost an fsync each)."""
    events = BASE + [ev(i, "task.claimed", {"worker": f"w{i}" * 20}) for i in range(3, n)]
    case.mkdir(parents=True)
    conn = sqlite3.connect(case / "ledger.sqlite3")
    conn.execute("PRAGMA synchronous=OFF")
    conn.executescript(SCHEMA)
    with conn:
        conn.execute("INSERT INTO ledger_meta VALUES ('format', 'codeai.ledger.v1')")
        conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", [
            (e["seq"], f"e{e['seq']}", "2026-09-13T12:00:00Z", e["kind"], e["task_id"],
             e.get("call_id"), None, None, json.dumps(e["payload"])) for e in events])
    conn.close()


def truncated(offset_fraction: float, seed: int) -> Callable[[Path], None]:
    def build(case: Path) -> None:
        rollback_ledger(case)
        path = case / "ledger.sqlite3"
        size = path.stat().st_size
        rng = random.Random(seed)
        offset = int(size * offset_fraction) + rng.randrange(1, 4000)
        with open(path, "r+b") as fh:
            fh.truncate(min(offset, size - 1))
    return build


def receipts(case: Path, data: bytes) -> None:
    clean(case)
    (case / "provider").mkdir(exist_ok=True)
    (case / "provider" / "receipts.jsonl").write_bytes(data)


GOOD_RECEIPT = {"receipt_id": "r-1", "received_at": "2026-09-13T12:00:09Z",
                "idempotency_key": "key-1", "body_sha256": "ab" * 32, "bytes": 10}


def receipt_line(**changes: Any) -> bytes:
    obj = {**GOOD_RECEIPT, **changes}
    for k in [k for k, v in changes.items() if v is ...]:
        del obj[k]
    return (json.dumps(obj) + "\n").encode()


def case_json(data: bytes | str) -> Callable[[Path], None]:
    def build(case: Path) -> None:
        clean(case)
        (case / "case.json").write_bytes(data.encode() if isinstance(data, str) else data)
    return build


def special(rel: str, kind: str) -> Callable[[Path], None]:
    """`rel` inside a clean case replaced by a FIFO, a symlink (to a valid twin outside the
    case), a dangling symlink, a directory or a listening Unix socket."""
    def build(case: Path) -> None:
        clean(case, receipts=[GOOD_RECEIPT])
        (case / "case.json").write_text(json.dumps({"provider": CAPTURE, "description": "fine"}))
        target = case / rel
        if target.is_dir() and not target.is_symlink():
            for child in target.iterdir():
                child.unlink()
            target.rmdir()
        else:
            target.unlink(missing_ok=True)
        if kind == "fifo":
            os.mkfifo(target)
        elif kind == "symlink":
            twin = case.parent / f"{case.name}-outside"
            clean(twin, receipts=[GOOD_RECEIPT])
            (twin / "case.json").write_text(json.dumps({"provider": CAPTURE}))
            if rel.startswith("ledger.sqlite3-"):
                (twin / rel).write_bytes(b"")
            target.symlink_to(twin / rel)
        elif kind == "dangling":
            target.symlink_to(case.parent / "does-not-exist")
        elif kind == "dir":
            target.mkdir()
        elif kind == "socket":
            _bind_unix_socket(target)
        else:
            raise ValueError(kind)
    return build


def _bind_unix_socket(target: Path) -> None:
    """A socket file at `target` (bound by a relative name: tmp paths exceed 108 bytes)."""
    cwd = os.getcwd()
    os.chdir(target.parent)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(target.name)
        s.close()  # the socket file stays
    finally:
        os.chdir(cwd)


def loose(rows: list[tuple[Any, ...]]) -> Callable[[Path], None]:
    return lambda case: raw_ledger(case, LOOSE_SCHEMA, rows)


def with_events(extra: list[dict[str, Any]]) -> Callable[[Path], None]:
    return lambda case: clean(case, extra)


def bad_utf8(column: str, as_blob: bool = False) -> Callable[[Path], None]:
    def build(case: Path) -> None:
        clean(case, [ev(3, "task.claimed", {"worker": "w"})])
        value = "X'7B2261223A22FF227D'" if as_blob else BAD_UTF8_JSON
        sql(case, f"UPDATE events SET {column} = {value} WHERE seq = 3")
    return build


def wal_only(case: Path) -> None:
    """A producer killed mid-run: every commit still in -wal, the main file without tables."""
    case.mkdir(parents=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO ledger_meta VALUES ('format', 'codeai.ledger.v1')")
    for e in BASE:
        conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)",
                     (e["seq"], f"e{e['seq']}", "2026-09-13T12:00:00Z", e["kind"], e["task_id"],
                      e.get("call_id"), None, None, json.dumps(e["payload"])))
    # leave without a checkpoint: copy the files aside while the connection is open
    data = {s: (case / f"ledger.sqlite3{s}").read_bytes() for s in ("", "-wal")}
    conn.close()
    for s, b in data.items():
        (case / f"ledger.sqlite3{s}").write_bytes(b)
    (case / "ledger.sqlite3-shm").unlink(missing_ok=True)


def wal_only_torn(case: Path) -> None:
    """The killed producer's -wal with its last frame cut short: that commit never was."""
    wal_only(case)
    wal = case / "ledger.sqlite3-wal"
    data = wal.read_bytes()
    wal.write_bytes(data[: len(data) - 700])


def garbage_beside(suffix: str) -> Callable[[Path], None]:
    """Random bytes as the -wal or -shm of a cleanly closed ledger."""
    def build(case: Path) -> None:
        clean(case)
        rng = random.Random(suffix)
        (case / f"ledger.sqlite3{suffix}").write_bytes(rng.randbytes(8192 if suffix == "-wal"
                                                                     else 32768))
        if suffix == "-shm":
            (case / "ledger.sqlite3-wal").write_bytes(b"")
    return build


def _extra_columns(case: Path) -> None:
    schema = SCHEMA.replace("payload TEXT NOT NULL);",
                            "payload TEXT NOT NULL, signature BLOB, note TEXT DEFAULT 'x');")
    raw_ledger(case, schema, [row(1, 1, payload='{"title": "review"}') + (b"\x00\xff", "n"),
                              row(2, 2, "call.requested", call_id="call-1",
                                  payload=json.dumps(BASE[1]["payload"])) + (None, None)])


def _not_sqlite(case: Path) -> None:
    case.mkdir(parents=True)
    (case / "ledger.sqlite3").write_bytes(b"this is not sqlite at all\n" * 200)


def _empty_file(case: Path) -> None:
    case.mkdir(parents=True)
    (case / "ledger.sqlite3").write_bytes(b"")


def _empty_dir(case: Path) -> None:
    case.mkdir(parents=True)


def _meta_extra_rows(case: Path) -> None:
    clean(case)
    sql(case, "INSERT INTO ledger_meta VALUES ('format2', 'codeai.ledger.v2')")
    sql(case, "INSERT INTO ledger_meta VALUES ('producer', ?)", params=("\x1b]0;x\x07",))


def _drop(table: str) -> Callable[[Path], None]:
    def build(case: Path) -> None:
        clean(case)
        sql(case, f"DROP TABLE {table}")
    return build


def _no_payload_column(case: Path) -> None:
    raw_ledger(case, """
        CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE events (seq INTEGER PRIMARY KEY, event_id TEXT, recorded_at TEXT,
                             kind TEXT, task_id TEXT, call_id TEXT, attempt_id TEXT,
                             compilation_id TEXT);""", [row(1, 1)[:8]])


def _big_payload(case: Path) -> None:
    clean(case, [ev(3, "task.claimed", {"worker": "w", "blob": "A" * (10 * 1024 * 1024)})])


def _deep_payload(case: Path) -> None:
    clean(case, [ev(3, "task.claimed", "[" * 100_000 + "]" * 100_000)])


def _nul_payload(case: Path) -> None:
    clean(case, [ev(3, "task.claimed", '{"worker": "a\x00b"}', call_id="c\x00d")])


def _duplicate_event_id(case: Path) -> None:
    raw_ledger(case, LOOSE_SCHEMA.replace("(seq,", "(seq INTEGER PRIMARY KEY,"), [
        row(1, 1), row(2, 2, "call.requested", '{"idempotency_key": "key-1"}', call_id="call-1",
                       event_id="same-id"),
        row(3, 3, "task.claimed", '{"worker": "w"}', event_id="same-id")])


# ---- a schema that runs code (the victim: call-1, requested, which resume would send)

ENDLESS = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)"
EVENT_NAMES = ("seq, event_id, recorded_at, kind, task_id, call_id, attempt_id, "
               "compilation_id, payload")


def with_schema(*statements: str) -> Callable[[Path], None]:
    """A clean ledger, then `statements` run on it by plain sqlite3."""
    def build(case: Path) -> None:
        clean(case)
        sql(case, *statements)
    return build


def _meta_view(case: Path) -> None:
    """ledger_meta as a view whose recursive CTE never ends (the format row is never
    found: the reader's first query reads for ever)."""
    clean(case)
    sql(case, "DROP TABLE ledger_meta",
        f"CREATE VIEW ledger_meta(key, value) AS {ENDLESS} SELECT 'k' || n, 'v' FROM r "
        "WHERE n < 0")


def _events_view(rows: str) -> Callable[[Path], None]:
    """events as a view over the recursive CTE: `rows` is its SELECT list over `r`."""
    def build(case: Path) -> None:
        clean(case)
        sql(case, "DROP TABLE events",
            f"CREATE VIEW events({EVENT_NAMES}) AS {ENDLESS.replace('FROM r)', rows)}")
    return build


# never ends, and no row is ever out: the reader's first page waits for ever
_ENDLESS_ROWS = ("FROM r) SELECT n, 'e' || n, '2026-09-13T12:00:00Z', 'task.claimed', "
                 "'task-1', NULL, NULL, NULL, '{}' FROM r WHERE n < 0")
# 1,000 rows of 4 MB each: 4 GB of payloads from a file of a few KB
_HUGE_ROWS = ("FROM r WHERE n < 1000) SELECT n, 'e' || n, '2026-09-13T12:00:00Z', "
              "'task.claimed', 'task-1', NULL, NULL, NULL, "
              "'{\"w\": \"' || printf('%.*c', 4000000, 'x') || '\"}' FROM r")


def _virtual_events(case: Path) -> None:
    case.mkdir(parents=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO ledger_meta VALUES ('format', 'codeai.ledger.v1')")
    conn.execute(f"CREATE VIRTUAL TABLE events USING fts5({EVENT_NAMES})")
    for e in BASE:
        conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)",
                     (e["seq"], f"e{e['seq']}", "2026-09-13T12:00:00Z", e["kind"], e["task_id"],
                      e.get("call_id"), None, None, json.dumps(e["payload"])))
    conn.close()


def _generated_kind(case: Path) -> None:
    """`kind` computed on read from the stored one: an attempt.started reads back as a
    harmless task.claimed, so the call would look untouched."""
    schema = SCHEMA.replace(
        "kind TEXT NOT NULL,",
        "stored_kind TEXT NOT NULL, kind TEXT GENERATED ALWAYS AS (CASE stored_kind "
        "WHEN 'attempt.started' THEN 'task.claimed' ELSE stored_kind END) VIRTUAL,")
    case.mkdir(parents=True)
    conn = sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)
    conn.executescript(schema)
    conn.execute("INSERT INTO ledger_meta VALUES ('format', 'codeai.ledger.v1')")
    for e in BASE + [ev(3, "attempt.started", {"attempt_no": 1, "request_sha256": "ab" * 32},
                        call_id="call-1", attempt_id="att-1")]:
        conn.execute("INSERT INTO events (seq, event_id, recorded_at, stored_kind, task_id, "
                     "call_id, attempt_id, compilation_id, payload) VALUES (?,?,?,?,?,?,?,?,?)",
                     (e["seq"], f"e{e['seq']}", "2026-09-13T12:00:00Z", e["kind"], e["task_id"],
                      e.get("call_id"), e.get("attempt_id"), None, json.dumps(e["payload"])))
    conn.close()


def _schema_variant(old: str, new: str) -> Callable[[Path], None]:
    """The ledger of `clean`, built from SCHEMA with `old` replaced by `new`."""
    def build(case: Path) -> None:
        assert old in SCHEMA
        raw_ledger(case, SCHEMA.replace(old, new), [
            row(1, 1, payload=json.dumps(BASE[0]["payload"])),
            row(2, 2, "call.requested", call_id="call-1",
                payload=json.dumps(BASE[1]["payload"]))])
    return build


SCHEMA_CORPUS: list[Hostile] = [
    Hostile("trigger_swallows_resume", with_schema(
        "CREATE TRIGGER hide BEFORE INSERT ON events WHEN NEW.kind IN "
        "('call.resumed', 'attempt.started') BEGIN SELECT RAISE(IGNORE); END"),
        Expect.ERROR, "trigger 'hide' on 'events'", writes=True),
    Hostile("trigger_rewrites_history", with_schema(
        "CREATE TRIGGER rewrite AFTER INSERT ON events BEGIN "
        "DELETE FROM events WHERE seq < NEW.seq AND kind = 'attempt.started'; "
        "UPDATE events SET payload = '{}' WHERE seq < NEW.seq; END"),
        Expect.ERROR, "trigger 'rewrite' on 'events'", writes=True),
    Hostile("events_view_endless", _events_view(_ENDLESS_ROWS), Expect.ERROR,
            "view 'events'", writes=True),
    Hostile("meta_view_endless", _meta_view, Expect.ERROR, "view 'ledger_meta'", writes=True),
    Hostile("events_view_4gb_of_payloads", _events_view(_HUGE_ROWS), Expect.ERROR,
            "view 'events'", writes=True),
    Hostile("events_virtual_table", _virtual_events, Expect.ERROR,
            "virtual table 'events'", writes=True),
    Hostile("generated_kind_column", _generated_kind, Expect.ERROR,
            "generated column 'kind' in events", writes=True),
    Hostile("call_id_collate_nocase",
            _schema_variant("call_id TEXT,", "call_id TEXT COLLATE NOCASE,"), Expect.ERROR,
            "events declares a COLLATE clause", writes=True),
    Hostile("on_conflict_ignore",
            _schema_variant("payload TEXT NOT NULL);",
                            "payload TEXT NOT NULL, UNIQUE (call_id, kind) ON CONFLICT IGNORE);"),
            Expect.ERROR, "events declares an ON CONFLICT clause", writes=True),
    Hostile("partial_covering_index",
            _schema_variant("CREATE INDEX events_call ON events(call_id, attempt_id, kind, seq);",
                            "CREATE INDEX events_call ON events(call_id, attempt_id, kind, seq) "
                            "WHERE kind != 'attempt.started';"),
            Expect.ERROR, "partial index 'events_call' on events", writes=True),
    # an ordinary table beside the ledger's: never read, flagged
    Hostile("extra_table", with_schema(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
        "INSERT INTO notes (body) VALUES ('kept by an analyst')"),
        Expect.ANOMALY, "the ledger holds table 'notes'"),
]


def _manifest(artifact: str) -> dict[str, Any]:
    return ev(3, "call.manifest", {"idempotency_key": "key-1", "intent": {},
                                   "request_sha256": "ab" * 32, "request_artifact": artifact,
                                   "context_package_id": None,
                                   "rendered_context_sha256": None, "model": "m"},
              call_id="call-1")


# ---- an index that lies: the covering index events_call is a b-tree built over other rows


def _insert_rows(conn: sqlite3.Connection, table: str, events: list[dict[str, Any]]) -> None:
    conn.executemany(f"INSERT INTO {table} VALUES (?,?,?,?,?,?,?,?,?)", [
        (e["seq"], f"e{e['seq']}", "2026-09-13T12:00:00Z", e["kind"], e["task_id"],
         e.get("call_id"), e.get("attempt_id"), None, json.dumps(e["payload"]))
        for e in events])


def swapped_call_index(table: list[dict[str, Any]], index: list[dict[str, Any]]
                       ) -> Callable[[Path], None]:
    """The ledger's table holds `table`; its index events_call is the b-tree of a decoy
    table's index over `index` (rootpages swapped through writable_schema, the decoy
    then dropped). The schema is exactly the v1 schema; PRAGMA integrity_check names
    events_call. case.json points at the capture listener."""
    def build(case: Path) -> None:
        store = case / "artifacts" / "sha256" / REQUEST_SHA[:2]
        store.mkdir(parents=True)
        (store / REQUEST_SHA).write_bytes(REQUEST)
        (case / "case.json").write_text(json.dumps({"provider": CAPTURE}))
        path = case / "ledger.sqlite3"
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(SCHEMA)
        conn.execute("BEGIN")
        conn.execute("INSERT INTO ledger_meta VALUES ('format', 'codeai.ledger.v1')")
        _insert_rows(conn, "events", table)
        conn.execute(SCHEMA.split(";")[1].replace("TABLE events", "TABLE decoy"))
        conn.execute("CREATE INDEX decoy_call ON decoy(call_id, attempt_id, kind, seq)")
        _insert_rows(conn, "decoy", index)
        conn.execute("COMMIT")
        root = {name: page for name, page in conn.execute(
            "SELECT name, rootpage FROM sqlite_master WHERE name IN ('events_call', "
            "'decoy_call')")}
        conn.execute("PRAGMA writable_schema=ON")
        for name, other in (("events_call", "decoy_call"), ("decoy_call", "events_call")):
            conn.execute("UPDATE sqlite_master SET rootpage = ? WHERE name = ?",
                         (root[other], name))
        conn.execute("PRAGMA writable_schema=OFF")
        conn.close()
        conn = sqlite3.connect(path, isolation_level=None)  # the edited schema, read anew
        conn.execute("DROP TABLE decoy")  # frees events_call's own b-tree, not the decoy's
        conn.close()
    return build


# The request a resume of call-1 would rebuild and send (canonical JSON of an empty
# intent under the default model, no context): its manifest holds no drift.
REQUEST = json.dumps({"messages": [{"content": "{}", "role": "user"}],
                      "model": "synthetic-small", "temperature": 0},
                     sort_keys=True, separators=(",", ":")).encode()
REQUEST_SHA = hashlib.sha256(REQUEST).hexdigest()
IN_FLIGHT = [*BASE,
             ev(3, "call.manifest", {"idempotency_key": "key-1", "intent": {},
                                     "request_sha256": REQUEST_SHA,
                                     "request_artifact": REQUEST_SHA,
                                     "context_package_id": None,
                                     "rendered_context_sha256": None,
                                     "model": "synthetic-small"}, call_id="call-1"),
             ev(4, "attempt.started", {"attempt_no": 1, "request_sha256": REQUEST_SHA},
                call_id="call-1", attempt_id="call-1-a1")]
# what the index says of seqs 5-8, which the table holds as task events
FINISHED = [ev(5, "attempt.observed", {"transport": {"status": 200}}, call_id="call-1",
               attempt_id="call-1-a1"),
            ev(6, "attempt.interpreted", {"interpreter": "v1", "outcome": "success"},
               call_id="call-1", attempt_id="call-1-a1"),
            ev(7, "attempt.completed", {"status": "succeeded"}, call_id="call-1",
               attempt_id="call-1-a1"),
            ev(8, "call.completed", {"status": "succeeded", "adopted_attempt_id": "call-1-a1"},
               call_id="call-1")]
LYING_INDEXES = {
    # an attempt in flight (effect unknown) that the index hides: resumable, by the index
    "index_hides_attempt_started": swapped_call_index(IN_FLIGHT, IN_FLIGHT[:-1]),
    # the same attempt in flight, completed by the index
    "index_shows_completed": swapped_call_index(
        IN_FLIGHT + [ev(s, "task.claimed", {"worker": "w"}) for s in range(5, 9)],
        IN_FLIGHT + FINISHED),
    # a call never started (resumable, by the table) that the index shows in flight
    "index_shows_attempt_started": swapped_call_index(
        [*IN_FLIGHT[:-1], ev(4, "task.claimed", {"worker": "w"})], IN_FLIGHT),
}
INDEX_WORDS = "the index disagrees with the table: run PRAGMA integrity_check"


CORPUS: list[Hostile] = [
    # ---- not a ledger at all
    Hostile("not_sqlite", _not_sqlite, Expect.ERROR, "not an SQLite database"),
    Hostile("empty_file", _empty_file, Expect.ERROR, "without the ledger v1 tables"),
    Hostile("empty_dir", _empty_dir, Expect.ERROR, "no ledger.sqlite3"),
    Hostile("truncated_in_header", truncated(0.0, 1), Expect.ERROR,
            "ledger file is corrupt (database disk image is malformed)"),
    Hostile("truncated_at_quarter", truncated(0.25, 2), Expect.ERROR,
            "ledger file is corrupt (database disk image is malformed)"),
    Hostile("truncated_at_half", truncated(0.5, 3), Expect.ERROR,
            "ledger file is corrupt (database disk image is malformed)"),
    Hostile("truncated_at_three_quarters", truncated(0.75, 4), Expect.ERROR,
            "ledger file is corrupt (database disk image is malformed)"),
    # SQLite reads the missing tail of its last page as zeros: nothing it needs is lost
    Hostile("truncated_last_byte", truncated(1.0, 5), Expect.OK,
            "events 399"),
    # ---- SQLite, but not ledger v1
    Hostile("wrong_format", lambda c: clean(c, fmt="something.else.v9"), Expect.ERROR,
            "ledger format is 'something.else.v9'"),
    Hostile("no_format_row", lambda c: raw_ledger(c, SCHEMA, [], fmt=None), Expect.ERROR,
            "no 'format' row"),
    Hostile("missing_events_table", _drop("events"), Expect.ERROR, "without the ledger v1 tables"),
    Hostile("missing_meta_table", _drop("ledger_meta"), Expect.ERROR,
            "without the ledger v1 tables"),
    Hostile("missing_payload_column", _no_payload_column, Expect.ERROR,
            "events has no column payload"),
    Hostile("extra_columns", _extra_columns, Expect.OK, "events 2"),
    Hostile("other_meta_rows", _meta_extra_rows, Expect.OK, "events 2"),
    Hostile("wal_only_killed_producer", wal_only, Expect.OK, "events 2"),
    Hostile("wal_only_torn_last_frame", wal_only_torn, Expect.OK, "events 1"),
    # SQLite checks the WAL header and the index's checksums: garbage is ignored, not read
    Hostile("wal_garbage", garbage_beside("-wal"), Expect.OK, "events 2"),
    Hostile("shm_garbage", garbage_beside("-shm"), Expect.OK, "events 2"),
    # ---- rows of another format: wrong cell types
    Hostile("blob_task_id", loose([row(1, 1), row(2, 2, task_id=b"task-1")]), Expect.ANOMALY,
            "task_id is a BLOB, not text"),
    Hostile("integer_kind", loose([row(1, 1), row(2, 2, kind=7)]), Expect.ANOMALY,
            "kind is an integer, not text"),
    Hostile("null_kind", loose([row(1, 1), row(2, 2, kind=None)]), Expect.ANOMALY,
            "kind is NULL"),
    # ---- payloads
    Hostile("payload_not_json", with_events([ev(3, "task.claimed", "{not json")]),
            Expect.ANOMALY, "payload is not valid JSON"),
    Hostile("payload_array", with_events([ev(3, "task.claimed", "[1, 2]")]), Expect.ANOMALY,
            "payload is a JSON array, not an object"),
    Hostile("payload_null", with_events([ev(3, "task.claimed", "null")]), Expect.ANOMALY,
            "payload is a JSON null, not an object"),
    Hostile("payload_10mb", _big_payload, Expect.OK, "events 3"),
    Hostile("ids_of_4mb", with_events([ev(3, "k" * (4 << 20), "{not json", task_id="t" * (4 << 20),
                                           call_id="c" * (4 << 20))]),
            Expect.ANOMALY, "payload is not valid JSON"),
    Hostile("payload_deep_nesting", _deep_payload, Expect.ANOMALY, "payload is not valid JSON"),
    Hostile("payload_nul", _nul_payload, Expect.ANOMALY, "payload is not valid JSON"),
    Hostile("payload_invalid_utf8_text", bad_utf8("payload"), Expect.ANOMALY,
            "payload is not valid UTF-8"),
    Hostile("payload_invalid_utf8_blob", bad_utf8("payload", as_blob=True), Expect.ANOMALY,
            "payload is not valid UTF-8"),
    Hostile("call_id_invalid_utf8", bad_utf8("call_id"), Expect.ANOMALY,
            "call_id is not valid UTF-8"),
    Hostile("meta_invalid_utf8",
            lambda c: (clean(c), sql(c, f"UPDATE ledger_meta SET value = {BAD_UTF8_JSON}")),
            Expect.ERROR, "ledger format is '{\"a\":\"\ufffd\"}'"),
    # ---- seq
    Hostile("seq_gap", with_events([ev(5, "task.claimed", {"worker": "w"})]), Expect.ANOMALY,
            "seq gap: seqs 3-4 missing before seq 5"),
    Hostile("seq_duplicate", loose([row(1, 1), row(2, 2), row(2, 3)]), Expect.ANOMALY,
            "seq 2 is not after seq 2"),
    Hostile("seq_real", loose([row(1, 1), row(2.5, 2)]), Expect.ANOMALY,
            "seq 2.5 is not an integer"),
    Hostile("seq_text", loose([row(1, 1), row("2x", 2), row(3, 3)]), Expect.ANOMALY,
            "seq '2x' is not an integer"),
    Hostile("seq_null", loose([row(1, 1), row(None, 2)]), Expect.ANOMALY,
            "seq None is not an integer"),
    Hostile("seq_zero_and_negative", with_events([ev(0, "task.claimed"), ev(-5, "task.claimed")]),
            Expect.ANOMALY, "seq -5 is not after seq 0"),
    Hostile("seq_huge", with_events([ev(2**63 - 1, "task.claimed")]), Expect.ANOMALY,
            "seq gap"),
    # ---- events that break an invariant
    Hostile("orphan_attempt_started",
            with_events([ev(3, "attempt.started", {"attempt_no": 1, "request_sha256": "ab"},
                            call_id="call-1", attempt_id="att-1")]),
            Expect.ANOMALY, "with no call.manifest"),
    Hostile("orphan_attempt_observed",
            with_events([ev(3, "attempt.observed", {"transport": {"status": 200}},
                            call_id="call-1", attempt_id="att-9")]),
            Expect.ANOMALY, "that never started"),
    Hostile("call_event_before_requested",
            with_events([ev(3, "call.completed", {"status": "succeeded"}, call_id="call-2")]),
            Expect.ANOMALY, "before any call.requested"),
    # ---- anomalies the projection flags, never paths opened
    Hostile("duplicate_event_id", _duplicate_event_id, Expect.ANOMALY, "same-id"),
    Hostile("artifact_ref_dotdot", with_events([_manifest("../../../../etc/passwd")]),
            Expect.ANOMALY, "request_artifact"),
    Hostile("artifact_ref_not_hex", with_events([_manifest("AB" * 32)]), Expect.ANOMALY,
            "request_artifact"),
    # ---- the provider's receipt log
    Hostile("receipts_torn_tail", lambda c: receipts(c, receipt_line() + receipt_line()[:25]),
            Expect.NOTE, "receipt log: its last line is cut short"),
    Hostile("receipts_garbage_lines",
            lambda c: receipts(c, b"\x00\xff garbage\n" + receipt_line() + b"}{\n"),
            Expect.NOTE, "receipt log line 1: not a JSON line"),
    Hostile("receipts_not_objects", lambda c: receipts(c, b"[1]\n\"r\"\n"), Expect.NOTE,
            "receipt log line 1: receipt is not a JSON object"),
    Hostile("receipts_missing_fields",
            lambda c: receipts(c, receipt_line(body_sha256=..., idempotency_key=...)),
            Expect.NOTE, "lacks or mistypes idempotency_key, body_sha256"),
    Hostile("receipts_wrong_types",
            lambda c: receipts(c, receipt_line(receipt_id=5, bytes="many", received_at=[])),
            Expect.NOTE, "lacks or mistypes receipt_id, received_at, bytes"),
    Hostile("receipts_fifo", special("provider/receipts.jsonl", "fifo"), Expect.NOTE,
            "is a FIFO"),
    Hostile("receipts_symlink", special("provider/receipts.jsonl", "symlink"), Expect.NOTE,
            "is a symlink"),
    Hostile("receipts_provider_dir_symlink", special("provider", "symlink"), Expect.NOTE,
            "is a symlink"),
    Hostile("receipts_is_a_directory", special("provider/receipts.jsonl", "dir"), Expect.NOTE,
            "is a directory"),
    # ---- case.json
    Hostile("case_json_not_json", case_json('{"provider": '), Expect.NOTE,
            "case.json is not JSON"),
    Hostile("case_json_not_utf8", case_json(b'{"description": "\xff"}'), Expect.NOTE,
            "case.json is not UTF-8"),
    Hostile("case_json_array", case_json("[]"), Expect.NOTE, "not a JSON object"),
    Hostile("case_json_wrong_types",
            lambda c: case_json(json.dumps({"provider": {**CAPTURE, "model": 5}}))(c),
            Expect.NOTE, "provider.model is int, not a string"),
    # the identity its provider must answer: only text (it is compared, never obeyed)
    Hostile("case_json_identity_not_text",
            lambda c: case_json(json.dumps({"provider": {**CAPTURE, "identity": 5}}))(c),
            Expect.NOTE, "provider.identity is int, not a string"),
    Hostile("case_json_provider_not_object", case_json('{"provider": "x"}'), Expect.NOTE,
            "'provider' is not an object"),
    Hostile("case_json_huge", case_json('{"description": "' + "x" * (2 << 20) + '"}'),
            Expect.NOTE, "more than the 1048576 bytes read here"),
    Hostile("case_json_fifo", special("case.json", "fifo"), Expect.NOTE, "is a FIFO"),
    Hostile("case_json_symlink", special("case.json", "symlink"), Expect.NOTE, "is a symlink"),
    # ---- the ledger's own files as special files
    Hostile("ledger_fifo", special("ledger.sqlite3", "fifo"), Expect.ERROR, "is a FIFO"),
    Hostile("ledger_symlink", special("ledger.sqlite3", "symlink"), Expect.ERROR,
            "is a symlink"),
    Hostile("ledger_dangling_symlink", special("ledger.sqlite3", "dangling"), Expect.ERROR,
            "is a symlink"),
    Hostile("ledger_directory", special("ledger.sqlite3", "dir"), Expect.ERROR, "is a directory"),
    Hostile("ledger_socket", special("ledger.sqlite3", "socket"), Expect.ERROR, "is a socket"),
    Hostile("wal_fifo", special("ledger.sqlite3-wal", "fifo"), Expect.ERROR, "is a FIFO"),
    Hostile("wal_symlink", special("ledger.sqlite3-wal", "symlink"), Expect.ERROR,
            "is a symlink"),
    Hostile("shm_fifo", special("ledger.sqlite3-shm", "fifo"), Expect.ERROR, "is a FIFO"),
    Hostile("journal_fifo", special("ledger.sqlite3-journal", "fifo"), Expect.ERROR,
            "is a FIFO"),
    # ---- the schema: an index that disagrees with its table
    *(Hostile(name, build, Expect.ANOMALY, INDEX_WORDS) for name, build in LYING_INDEXES.items()),
    *SCHEMA_CORPUS,
]
