"""`codeai-tui export CASE OUT`: a consistent, self-contained copy of a case to share.

A producer killed with SIGKILL leaves every commit in `ledger.sqlite3-wal`; the main file
can be 4 KB without tables, so copying only the ledger file loses everything. Export
reads the ledger through SQLite's online backup API from a read-only connection (one
consistent snapshot, WAL content included, nothing written to the source) into a single
file, then copies the verified artifacts, the receipt log and the case's JSON documents.
Only regular files are copied, never through a link; what is skipped is said. An export
is made to be shared, so nothing in it names where the source lived (`export.json` says
what was copied, not from where).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from codeai_tui.ledger.artifacts import ArtifactStore
from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.ledger.errors import LedgerError, LedgerProblem, classify_sqlite_error
from codeai_tui.ledger.reader import connect_readonly, resolve_ledger_path
from codeai_tui.ledger.schema import EVENT_COLUMNS, LEDGER_FILENAME

# The records of what was done to a case after its producer stopped: an inspection, a
# resume or its refusal, an operator's reconcile, a naive restart, the tool workers (the
# demo writes them; each optional). Without them a verifier cannot tell an operator's
# events from a producer that went on after its kill, nor a recorded re-send from an
# unexplained duplicate.
EVIDENCE_FILES = ("inspection.json", "inspection_before_resume.json", "resume_attempt.json",
                  "resume_plan.json", "naive_restart.json", "operator_action.json",
                  "worker_runs.json")
# the case's own documents that travel with it (each optional); a tool case's public
# kernel key and signed receipts as emitted (docs/tools.md)
CASE_FILES = ("case.json", "termination.json", *EVIDENCE_FILES, str(RECEIPTS_RELPATH),
              "tools/kernel.pub", "tools/receipts.ndjson")
# a tool's own SQLite store: copied through the backup API, like the ledger
TOOL_STORES = ("tools/reports.sqlite3",)


@dataclass(frozen=True, slots=True)
class ExportResult:
    out: Path
    events: int
    max_seq: int
    rows_sha256: str
    artifacts: int
    files: tuple[str, ...]
    skipped: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        line = (f"exported {self.events} events (to seq {self.max_seq}, rows sha256 "
                f"{self.rows_sha256[:12]}), {self.artifacts} artifacts and "
                f"{', '.join(self.files) or 'no other files'} to {self.out}")
        if self.skipped:
            line += f"; skipped {len(self.skipped)}: {'; '.join(self.skipped[:5])}"
        return line


ROWS_DIGEST_DEFINITION = (
    "sha256 over one line per event in seq order: Python's repr() of the row "
    f"({EVENT_COLUMNS}) with TEXT read as bytes, each followed by a newline"
)


def rows_sha256(conn: sqlite3.Connection, until_seq: int | None = None) -> tuple[int, int, str]:
    """(count, max seq, digest of every row in seq order): the ledger's logical content,
    byte-exact (TEXT read as bytes, so a cell that is not UTF-8 cannot stop the check)."""
    conn.text_factory = bytes
    digest = hashlib.sha256()
    count = max_seq = 0
    where, params = ("WHERE seq <= ?", (until_seq,)) if until_seq is not None else ("", ())
    cur = conn.execute(f"SELECT {EVENT_COLUMNS} FROM events {where} ORDER BY seq", params)
    # in batches: on a ledger connection each batch has its own read budget (guard)
    while rows := cur.fetchmany(4096):
        for row in rows:
            digest.update(repr(row).encode("ascii", "backslashreplace") + b"\n")
            count += 1
            if isinstance(row[0], int):
                max_seq = max(max_seq, row[0])
    return count, max_seq, digest.hexdigest()


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _copy_regular(src: Path, dst: Path) -> None:
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fin:
        if not stat.S_ISREG(os.fstat(fin.fileno()).st_mode):
            raise OSError(f"{src.name} is not a regular file")
        dst.parent.mkdir(parents=True, exist_ok=True)
        with open(dst, "xb") as fout:
            shutil.copyfileobj(fin, fout)
            fout.flush()
            os.fsync(fout.fileno())


def _backup_store(src: Path, dst: Path) -> None:
    """One consistent copy of a SQLite store, read-only at the source."""
    source = sqlite3.connect(f"{src.resolve().as_uri()}?mode=ro", uri=True)
    dst.parent.mkdir(parents=True, exist_ok=True)
    copy = sqlite3.connect(dst, isolation_level=None)
    try:
        source.backup(copy)
        copy.execute("PRAGMA journal_mode=DELETE")
    finally:
        source.close()
        copy.close()


def export_case(case_dir: str | os.PathLike[str], out: str | os.PathLike[str]) -> ExportResult:
    """Copy one case into `out` (which must not exist, or be an empty directory).
    Raises LedgerError with one line for anything that prevents a faithful copy."""
    case, dest = Path(case_dir), Path(out)
    if not (case / LEDGER_FILENAME).exists():
        raise LedgerError(LedgerProblem.MISSING, f"{case}: no {LEDGER_FILENAME} (not a case directory)")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise LedgerError(LedgerProblem.NOT_A_LEDGER,
                          f"{dest}: exists and is not an empty directory; give a new one")
    if dest.resolve().is_relative_to(case.resolve()):
        raise LedgerError(LedgerProblem.NOT_A_LEDGER, f"{dest}: cannot export a case into itself")
    ledger = resolve_ledger_path(case)
    source = connect_readonly(ledger)  # format row checked, read-only URI, never creates
    dest.mkdir(parents=True, exist_ok=True)
    copy = sqlite3.connect(dest / LEDGER_FILENAME, isolation_level=None)
    try:
        # one consistent snapshot of the source (WAL content included) in one call
        source.backup(copy)
        copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal
        copied_content = rows_sha256(copy)
        # append-only: what a live writer added since the backup comes after its last seq
        source_content = rows_sha256(source, until_seq=copied_content[1])
    except sqlite3.Error as exc:
        raise classify_sqlite_error(ledger, exc) from None
    finally:
        source.close()
        copy.close()
    if copied_content != source_content:
        raise LedgerError(LedgerProblem.CORRUPT,
                          f"{case}: the copy's events differ from the source's; nothing is kept "
                          "as a faithful export (was the ledger rewritten, not appended?)")
    store, out_store = ArtifactStore(case), ArtifactStore(dest)
    skipped: list[str] = []
    copied = 0
    for name in store.names():
        found = store.read(name)
        if found.data is None:
            skipped.append(found.describe(name))
            continue
        out_store.put(found.data)
        copied += 1
    files: list[str] = []
    # plain files are copied byte for byte; a tool's SQLite store through the backup API
    copiers: list[tuple[str, Callable[[Path, Path], None], type[Exception]]] = [
        *((rel, _copy_regular, OSError) for rel in CASE_FILES),
        *((rel, _backup_store, sqlite3.Error) for rel in TOOL_STORES),
    ]
    for rel, copy_one, failure in copiers:
        src = case / rel
        if not os.path.lexists(src):
            continue
        if not _regular(src):
            skipped.append(f"{rel} is not a regular file")
            continue
        try:
            copy_one(src, dest / rel)
        except failure as exc:
            skipped.append(f"{rel}: {getattr(exc, 'strerror', None) or exc}")
            continue
        files.append(rel)
    count, max_seq, digest = copied_content
    result = ExportResult(dest, count, max_seq, digest, copied, tuple(files), tuple(skipped))
    (dest / "export.json").write_text(json.dumps({
        "events": count, "max_seq": max_seq,
        "rows_sha256": digest, "rows_digest": ROWS_DIGEST_DEFINITION, "artifacts": copied,
        "files": files, "skipped": skipped,
    }, indent=1) + "\n", encoding="utf-8")
    return result
