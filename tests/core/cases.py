"""Real case directories made through the project's runner (for resume tests)."""

from __future__ import annotations

import json
from pathlib import Path

from codeai_tui.console.model import CaseFollower, CaseSnapshot
from codeai_tui.ledger import CaseConfig, LedgerWriter, ProviderConfig
from codeai_tui.ledger.writer import utc_now
from codeai_tui.runtime.request_bytes import intent_for
from codeai_tui.runtime.runner import CallRunner

PARAGRAPH = "The committee, having met, decided that the decision was decided."


# ten minutes before the app tests' frozen clock (apphelpers.FROZEN_NOW) and long before
# the real one: a call recorded then stopped long enough ago that resume does not warn its
# process may still be running
STOPPED_AT = "2026-09-13T11:55:00.000Z"


def make_case(case: Path, base_url: str, *, upto: str = "manifest", model: str = "synthetic-small",
              case_model: str | None = None, recorded_at: str | None = None,
              request: dict[str, object] | None = None) -> Path:
    """A task with a compiled context and one call stopped after `upto`
    ("requested" or "manifest"). case.json points at `base_url` in bundle mode.
    `recorded_at`: every event's time (else now: a call that moved seconds ago, which
    resume warns may belong to a process still running). `request`: top-level request
    fields the manifest asks for (e.g. {"stream": True})."""
    case.mkdir(parents=True, exist_ok=True)
    (case / "case.json").write_text(json.dumps({
        "provider": {"base_url": f"{base_url.rsplit('/v1', 1)[0]}/c/{case.name}/v1",
                     "model": case_model or model, "api_key_env": "CODEAI_API_KEY"},
        "description": "test case",
    }))
    config = CaseConfig(ProviderConfig(base_url=base_url, model=model))
    clock = (lambda: recorded_at) if recorded_at is not None else utc_now
    with LedgerWriter.create(case, clock) as writer:
        runner = CallRunner(case, writer, config)
        writer.append("task.created", "task-1", {"title": "review a paragraph"})
        writer.append("task.objective", "task-1", {"objective": "flag unclear sentences"})
        package = runner.compile_context(
            "task-1", "comp-1",
            [{"id": "A", "required": True, "size": 12, "size_estimated": True, "lineage": ["artifact:para"]},
             {"id": "B", "required": True, "size": 0, "size_estimated": False, "lineage": []}],
            ["A", "B"], {"A": PARAGRAPH, "B": ""},
        )
        runner.request("task-1", "call-1", "key-1", "review")
        if upto == "manifest":
            runner.manifest("task-1", "call-1", "key-1",
                            intent_for("review", "flag unclear sentences",
                                       {"request": request} if request else None), package)
    return case


def file_hashes(case: Path) -> dict[str, str]:
    """sha256 of the ledger and of its -wal's content. An absent -wal hashes as empty: a
    reader of a cleanly closed WAL ledger makes SQLite create an empty one (and the -shm
    index), which changes no byte of the ledger."""
    import hashlib

    out = {}
    for suffix in ("", "-wal"):
        p = case / f"ledger.sqlite3{suffix}"
        out[p.name] = hashlib.sha256(p.read_bytes() if p.exists() else b"").hexdigest()
    return out


def ledger_rows(case: Path) -> list[tuple[object, ...]]:
    """Every row of the case's events table, read from the table itself (not through an
    index a hostile schema may have changed), with plain sqlite3."""
    import sqlite3

    conn = sqlite3.connect(case / "ledger.sqlite3")
    try:
        return conn.execute("SELECT * FROM events NOT INDEXED ORDER BY seq").fetchall()
    finally:
        conn.close()


def followed_snapshot(case: Path) -> CaseSnapshot:
    """The snapshot the console's follower shows of `case` once it has read it all."""
    follower = CaseFollower(case)
    try:
        follower.catch_up()
        return follower.snapshot()
    finally:
        follower.close()
