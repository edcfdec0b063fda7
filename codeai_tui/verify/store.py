"""Reading a case for the verifier with its own code: plain sqlite3, read-only URI.

Nothing here imports the project's ledger reader or projection: the verifier checks the
project, so it must not share the project's mistakes. Receipts are read BEFORE the ledger
so that, beside a live writer, every receipt read has its attempt.started committed
already (the writer commits attempt.started before sending).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

LEDGER = "ledger.sqlite3"
LEDGER_FORMAT = "codeai.ledger.v1"
RECEIPTS = Path("provider") / "receipts.jsonl"
MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class Row:
    seq: int
    event_id: str
    kind: str
    task_id: str
    call_id: str | None
    attempt_id: str | None
    compilation_id: str | None
    payload: dict[str, Any]
    payload_ok: bool


@dataclass(slots=True)
class CaseData:
    path: Path
    rows: list[Row] = field(default_factory=list)
    format: str | None = None
    digest: str = ""
    receipts: list[dict[str, Any]] = field(default_factory=list)
    receipt_problems: list[str] = field(default_factory=list)
    # the indexes on events whose entries are not the table's rows (index_disagreements)
    lying_indexes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name

    def json_doc(self, filename: str) -> Any:
        """A recorded JSON file of the case, or None when absent (ValueError if broken)."""
        p = self.path / filename
        if not p.exists():
            return None
        return json.loads(read_file(p).decode("utf-8"))


def find_case_dirs(root: Path) -> list[Path]:
    """The case directories at or below root (depth <= 4; the walk is pruned there)."""
    if (root / LEDGER).is_file():
        return [root]
    found: list[Path] = []
    base = len(root.parts)
    for here, dirs, files in os.walk(root, onerror=lambda _exc: None):
        depth = len(Path(here).parts) - base
        dirs.sort()
        if depth >= MAX_DEPTH:
            dirs[:] = []
        if depth >= 1 and LEDGER in files:
            found.append(Path(here))
    return sorted(found)


def read_file(path: Path) -> bytes:
    """A case file's bytes, never through a symlink and never blocking on a FIFO (a case
    directory is untrusted input); OSError for anything that is not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def check_sqlite_files(ledger: Path) -> None:
    """SQLite would block opening a FIFO: the ledger and its -wal/-shm must be regular."""
    for path in (ledger, Path(f"{ledger}-wal"), Path(f"{ledger}-shm")):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise OSError(f"{path.name} is not a regular file")


def read_receipts(case: Path) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        data = read_file(case / RECEIPTS)
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"receipt log unreadable: {exc.strerror or exc}"]
    receipts: list[dict[str, Any]] = []
    problems: list[str] = []
    for no, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            problems.append(f"line {no} is not JSON")
            continue
        if not isinstance(obj, dict):
            problems.append(f"line {no} is not an object")
            continue
        receipts.append(obj)
    return receipts, problems


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def refuse_schema_code(conn: sqlite3.Connection) -> None:
    """Raise ValueError when the schema holds SQL that runs when the tables are read or
    written (a trigger, a view, a virtual table): a view named `events` can read for ever,
    a trigger can have swallowed the events a claim rests on. Reads `sqlite_master` only."""
    for kind, name, sql in conn.execute(
            "SELECT CAST(type AS BLOB), CAST(name AS BLOB), CAST(sql AS BLOB) FROM sqlite_master"):
        shown = repr(name.decode("utf-8", "replace")[:60]) if isinstance(name, bytes) else "?"
        if kind in (b"trigger", b"view"):
            raise ValueError(f"the ledger's schema holds {kind.decode()} {shown}: not read")
        if isinstance(sql, bytes) and sql.lstrip().lower().startswith(b"create virtual table"):
            raise ValueError(f"the ledger's schema holds virtual table {shown}: not read")


def read_case(case: Path) -> CaseData:
    """Read receipts, then every event. Raises sqlite3.Error / OSError on a bad ledger."""
    data = CaseData(case)
    data.receipts, data.receipt_problems = read_receipts(case)
    check_sqlite_files(case / LEDGER)
    uri = f"file:{quote(str((case / LEDGER).absolute()))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=5.0)
    try:
        conn.execute("PRAGMA query_only=1")
        conn.execute("PRAGMA trusted_schema=OFF")
        refuse_schema_code(conn)
        row = conn.execute("SELECT value FROM ledger_meta WHERE key='format'").fetchone()
        data.format = _text(row[0]) if row else None
        rows = conn.execute(
            "SELECT seq, event_id, recorded_at, kind, task_id, call_id, attempt_id,"
            " compilation_id, payload FROM events ORDER BY seq"
        ).fetchall()
        data.lying_indexes = index_disagreements(conn)
    finally:
        conn.close()
    digest = hashlib.sha256()
    for r in rows:
        line = json.dumps(list(r), separators=(",", ":"), ensure_ascii=False) + "\n"
        digest.update(line.encode("utf-8"))
        try:
            payload = json.loads(r[8]) if isinstance(r[8], str | bytes) else None
        except ValueError:
            payload = None
        ok = isinstance(payload, dict)
        data.rows.append(Row(
            seq=int(r[0]), event_id=_text(r[1]) or "", kind=_text(r[3]) or "",
            task_id=_text(r[4]) or "", call_id=_text(r[5]), attempt_id=_text(r[6]),
            compilation_id=_text(r[7]), payload=payload if ok else {}, payload_ok=ok,
        ))
    data.digest = digest.hexdigest()
    return data


_PER_KIND = "SELECT kind, count(*), sum(seq % 1000003) FROM events {how} GROUP BY kind ORDER BY kind"
_TOTAL = "SELECT count(*), coalesce(sum(seq % 1000003), 0) FROM events {how}"


def index_disagreements(conn: sqlite3.Connection) -> list[str]:
    """The indexes on events that give other events than the table: per kind, how many
    and the sum of their seqs, read through each index that holds the kind and from the
    table alone; for the other indexes (which would send each entry to the table for
    its kind), how many and the sum of their seqs. A query answered from an index never
    looks at the table, so an index that lies (a swapped rootpage, corruption) lies to
    every reader that trusts it."""
    table = conn.execute(_PER_KIND.format(how="NOT INDEXED")).fetchall()
    total = (sum(int(r[1]) for r in table), sum(int(r[2] or 0) for r in table))
    lying = []
    for _seq, name, *_rest in conn.execute("PRAGMA index_list(events)").fetchall():
        quoted = '"' + str(name).replace('"', '""') + '"'
        columns = {r[2] for r in conn.execute(f"PRAGMA index_info({quoted})").fetchall()}
        how = f"INDEXED BY {quoted}"
        try:
            if "kind" in columns:
                agrees = conn.execute(_PER_KIND.format(how=how)).fetchall() == table
            else:
                agrees = tuple(conn.execute(_TOTAL.format(how=how)).fetchone()) == total
        except sqlite3.OperationalError:  # (a partial index answers no such query)
            continue
        if not agrees:
            lying.append(str(name))
    return sorted(lying)


def artifact_files(case: Path) -> list[Path]:
    root = case / "artifacts" / "sha256"
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("*/*") if p.is_file() and not p.name.startswith("."))


def sha256_file(path: Path) -> str:
    try:
        return hashlib.sha256(read_file(path)).hexdigest()
    except OSError:
        return "(not a regular file)"
