"""A case made to be drawn as lanes (written with plain sqlite3, fixed ids and times):
two tasks; a call that completed with its receipt; a call retried once (two attempts,
a receipt each); a call left in flight whose request the provider received twice
(effect unknown, duplicate receipts), and one event after it; a receipt no attempt
covers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ledgerfactory import write_ledger


def sha(n: int) -> str:
    return f"{n:064x}"


def _at(seq: int) -> str:
    return f"2026-09-13T12:00:{seq:02d}.000Z"


def call_events(task: str, call: str, key: str, seq: int, attempts: list[str],
                *, finish: bool = True) -> list[dict[str, Any]]:
    """A call's events from `seq` on: requested, manifest, then per attempt (its outcome
    word: success / retry / inflight) its events; call.completed when `finish`."""
    out: list[dict[str, Any]] = [
        {"kind": "call.requested", "task_id": task, "call_id": call,
         "payload": {"idempotency_key": key, "purpose": "review", "model": "synthetic-small"}},
        {"kind": "call.manifest", "task_id": task, "call_id": call,
         "payload": {"idempotency_key": key, "intent": {"instruction": "review"},
                     "request_sha256": sha(int(key[-1], 16) + 1),
                     "request_artifact": sha(int(key[-1], 16) + 1),
                     "context_package_id": None, "rendered_context_sha256": None,
                     "model": "synthetic-small"}},
    ]
    last_attempt = ""
    for n, outcome in enumerate(attempts, start=1):
        aid = last_attempt = f"{call}-a{n}"
        ids = {"task_id": task, "call_id": call, "attempt_id": aid}
        # each attempt's own request hash: one receipt matches one attempt (the same bytes
        # sent twice would be a duplicate effect by the contract)
        out.append({"kind": "attempt.started", **ids,
                    "payload": {"attempt_no": n,
                                "request_sha256": sha(int(key[-1], 16) * 16 + n)}})
        if outcome == "inflight":
            continue
        status = 200 if outcome == "success" else 503
        out += [
            {"kind": "attempt.observed", **ids,
             "payload": {"transport": {"status": status}, "response_sha256": sha(900 + n),
                         "response_artifact": sha(900 + n)}},
            {"kind": "attempt.interpreted", **ids,
             "payload": {"interpreter": "v1", "outcome": "success" if outcome == "success"
                         else "retryable_error"}},
        ]
        if outcome == "retry":
            out.append({"kind": "attempt.retry_decided", **ids,
                        "payload": {"decision": "retry", "reason": "503"}})
        out.append({"kind": "attempt.completed", **ids,
                    "payload": {"status": "succeeded" if outcome == "success" else "failed"}})
    if finish:
        out.append({"kind": "call.completed", "task_id": task, "call_id": call,
                    "payload": {"status": "succeeded", "adopted_attempt_id": last_attempt}})
    for i, ev in enumerate(out):
        ev["seq"] = seq + i
    return out


def lanes_events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"kind": "task.created", "task_id": "task-1", "payload": {"title": "review a paragraph"},
         "seq": 1}]
    events += call_events("task-1", "call-a", "key-1", 2, ["success"])
    events.append({"kind": "task.created", "task_id": "task-2",
                   "payload": {"title": "summarise"}, "seq": len(events) + 1})
    events += call_events("task-2", "call-b", "key-2", len(events) + 1, ["retry", "success"])
    events += call_events("task-1", "call-c", "key-3", len(events) + 1, ["inflight"],
                          finish=False)
    # the producer went on after sending call-c's request: its span runs past its start
    events.append({"kind": "task.claimed", "task_id": "task-2",
                   "payload": {"worker": "w2", "pid": 4343}, "seq": len(events) + 1})
    for ev in events:
        ev["event_id"] = f"ev-{ev['seq']:04d}"
        ev["recorded_at"] = _at(ev["seq"])
    return events


def lanes_receipts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A receipt for each started attempt, just after it; a second for the in-flight one
    (a duplicate); one no attempt covers."""
    keys = {ev["call_id"]: ev["payload"]["idempotency_key"] for ev in events
            if ev["kind"] == "call.requested"}
    out = []
    for ev in events:
        if ev["kind"] == "attempt.started":
            out.append({"receipt_id": f"r-{ev['attempt_id']}", "received_at": _at(ev["seq"]),
                        "idempotency_key": keys[ev["call_id"]],
                        "body_sha256": ev["payload"]["request_sha256"], "bytes": 512})
    last = out[-1]
    out.append(dict(last, receipt_id=last["receipt_id"] + "-again"))
    out.append({"receipt_id": "r-stray", "received_at": _at(9), "idempotency_key": "key-9",
                "body_sha256": sha(77), "bytes": 64})
    return out


def lanes_case(root: Path, dirname: str = "case") -> Path:
    events = lanes_events()
    return write_ledger(root / dirname, events, receipts=lanes_receipts(events)).parent
