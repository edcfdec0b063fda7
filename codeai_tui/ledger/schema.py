"""Ledger v1: the schema, the event record and the kinds the projection knows.

The schema text is the contract of docs/ledger.md section 2; readers accept any file that
carries the same tables, whoever wrote it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson

LEDGER_FORMAT = "codeai.ledger.v1"
LEDGER_FILENAME = "ledger.sqlite3"

SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS ledger_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
  seq            INTEGER PRIMARY KEY,
  event_id       TEXT NOT NULL UNIQUE,
  recorded_at    TEXT NOT NULL,
  kind           TEXT NOT NULL,
  task_id        TEXT NOT NULL,
  call_id        TEXT,
  attempt_id     TEXT,
  compilation_id TEXT,
  payload        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_call ON events(call_id, attempt_id, kind, seq);
CREATE INDEX IF NOT EXISTS events_compilation ON events(compilation_id, seq);
CREATE INDEX IF NOT EXISTS events_task ON events(task_id, seq);
"""

EVENT_COLUMNS = (
    "seq, event_id, recorded_at, kind, task_id, call_id, attempt_id, compilation_id, payload"
)

TASK_KINDS = frozenset(
    {"task.created", "task.objective", "task.claimed", "task.accepted", "task.completed"}
)
COMPILATION_KINDS = frozenset(
    {
        "context.compilation_requested",
        "context.compilation_completed",
        "context.compilation_failed",
    }
)
CALL_KINDS = frozenset(
    {
        "call.requested",
        "call.preparation_failed",
        "call.manifest",
        "call.completed",
        "call.resumed",
    }
)
ATTEMPT_KINDS = frozenset(
    {
        "attempt.started",
        "attempt.observed",
        "attempt.interpreted",
        "attempt.retry_decided",
        "attempt.completed",
        # the operator's finding for an effect-unknown attempt (docs/reconcile.md)
        "attempt.reconciled",
    }
)
# Tool operations (docs/tools.md): call events (their call_id and attempt_id columns
# name the planning response) with their own rungs (workstate/tool_ops.py).
TOOL_ADMITTED = "tool.admitted"
TOOL_COMPLETED = "tool.completed"
TOOL_RECONCILED = "tool.reconciled"  # the operator's finding for an admission with no outcome
TOOL_KINDS = frozenset({TOOL_ADMITTED, TOOL_COMPLETED, TOOL_RECONCILED})
KNOWN_KINDS = TASK_KINDS | COMPILATION_KINDS | CALL_KINDS | ATTEMPT_KINDS | TOOL_KINDS


@dataclass(frozen=True, slots=True)
class Event:
    """One ledger row. `payload` is the parsed object, or None when the text was not
    a JSON object (then `payload_error` says why and the projection flags an anomaly)."""

    seq: int
    event_id: str
    recorded_at: str
    kind: str
    task_id: str
    call_id: str | None = None
    attempt_id: str | None = None
    compilation_id: str | None = None
    payload: dict[str, Any] | None = field(default_factory=dict)
    payload_text: str = "{}"
    payload_error: str | None = None

    @property
    def subject(self) -> str:
        """The most specific id the event is about (for one-line displays)."""
        return self.attempt_id or self.call_id or self.compilation_id or self.task_id


class UndecodableText(str):
    """A TEXT (or BLOB) cell whose bytes are not UTF-8, decoded with U+FFFD in place of each
    bad byte: fit to show, never to trust. The reader makes these (see reader.fetch_all);
    `event_from_row` turns them into an anomaly at the row's seq."""

    __slots__ = ()


NOT_UTF8 = "not valid UTF-8 (bad bytes shown as U+FFFD)"
_JSON_NAMES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean",
               type(None): "null"}


def parse_payload(text: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a payload column; never raises. Returns (object, None) or (None, problem)."""
    if isinstance(text, UndecodableText):
        return None, f"payload is {NOT_UTF8}"
    if not isinstance(text, str):
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                return None, f"payload is {NOT_UTF8}"
        else:
            return None, f"payload is {type(text).__name__}, not JSON text"
    try:
        value = orjson.loads(text)  # C parser: the projection's hot path on big ledgers
    except orjson.JSONDecodeError:
        try:  # orjson is stricter than JSON needs (e.g. integers beyond 64 bits)
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            return None, f"payload is not valid JSON ({type(exc).__name__})"
    if type(value) is dict:
        return value, None
    if not isinstance(value, dict):
        return None, f"payload is a JSON {_JSON_NAMES.get(type(value), 'value')}, not an object"
    return value, None


def _text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _undecodable(value: Any) -> bool:
    if isinstance(value, UndecodableText):
        return True
    if isinstance(value, bytes):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError:
            return True
    return False


def _show_seq(seq: Any) -> str:
    text = repr(seq)
    return text if len(text) <= 40 else text[:39] + "\u2026"


_TEXT_OR_NONE = (str, type(None))
_REQUIRED_COLUMNS = frozenset({"event_id", "recorded_at", "kind", "task_id"})
_SQL_TYPE = {bytes: "a BLOB", int: "an integer", float: "a real"}
_ID_COLUMNS = ("event_id", "recorded_at", "kind", "task_id", "call_id", "attempt_id",
               "compilation_id")


def event_from_row(row: tuple[Any, ...]) -> Event:
    """Build an Event from a row in EVENT_COLUMNS order, tolerating wrong column types."""
    seq, event_id, recorded_at, kind, task_id, call_id, attempt_id, compilation_id, payload = row
    parsed, problem = parse_payload(payload)
    if (
        type(seq) is int
        and type(event_id) is str
        and type(recorded_at) is str
        and type(kind) is str
        and type(task_id) is str
        and type(call_id) in _TEXT_OR_NONE
        and type(attempt_id) in _TEXT_OR_NONE
        and type(compilation_id) in _TEXT_OR_NONE
    ):  # the well-formed case, without per-column conversions
        return Event(seq, event_id, recorded_at, kind, task_id, call_id, attempt_id,
                     compilation_id, parsed, payload, problem)
    # A seq that is not an integer (a table without INTEGER PRIMARY KEY) has no place in
    # the order: -1, and the event is flagged; int(2.5) would quietly pretend it was 2.
    problems: list[str] = []
    if type(seq) is int:
        seq_int = seq
    else:
        seq_int = -1
        problems.append(f"seq {_show_seq(seq)} is not an integer")
    ids = (event_id, recorded_at, kind, task_id, call_id, attempt_id, compilation_id)
    bad = [name for name, value in zip(_ID_COLUMNS, ids, strict=True) if _undecodable(value)]
    if bad:
        problems.append(f"{', '.join(bad)} {'is' if len(bad) == 1 else 'are'} {NOT_UTF8}")
    for name, value in zip(_ID_COLUMNS, ids, strict=True):
        if value is None and name in _REQUIRED_COLUMNS:
            problems.append(f"{name} is NULL")
        elif value is not None and not isinstance(value, str) and name not in bad:
            # a BLOB or a number where the schema says TEXT: shown, but not trusted
            problems.append(f"{name} is {_SQL_TYPE.get(type(value), 'a value')}, not text")
    if problems:  # the event is evidence of its kind, but none of its fields can be trusted
        problem = "; ".join(problems + ([problem] if problem else []))
        parsed = None
    return Event(
        seq=seq_int,
        event_id=_text_or_none(event_id) or "",
        recorded_at=_text_or_none(recorded_at) or "",
        kind=_text_or_none(kind) or "",
        task_id=_text_or_none(task_id) or "",
        call_id=_text_or_none(call_id),
        attempt_id=_text_or_none(attempt_id),
        compilation_id=_text_or_none(compilation_id),
        payload=parsed,
        payload_text=_text_or_none(payload) or "",
        payload_error=problem,
    )


def canonical_json(value: Any) -> bytes:
    """Canonical request bytes: UTF-8, sorted keys, no insignificant whitespace."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )
