"""Detail (laid out on the UI thread) words at most 20 attempts, receipts and tool
operations of one call, and says how many more there are: a call of 10^5 attempts made it
a text of 10^5 lines and keys went unanswered. Textual-free; the cases are written with
plain sqlite3 (the bench's shape writers)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from codeai_tui.console.evidence import call_detail_lines
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.console.tools import tool_body, tool_lines
from codeai_tui.lab.bench import (
    SHA_A,
    Event,
    bulk_ledger,
    numbered,
    one_call_events,
    tool_operations_events,
)
from tests.core.cases import followed_snapshot

SHOWN = 20


def _shaped(tmp_path: Path, name: str, events: Iterator[Event], receipts: int = 0
            ) -> CaseSnapshot:
    """A case written with plain sqlite3 (the bench's shape writer), `receipts` receipts
    of key-1 and the shapes' one request hash, projected by the console's follower."""
    case = tmp_path / name
    bulk_ledger(case, numbered(events))
    if receipts:
        (case / "provider").mkdir()
        (case / "provider" / "receipts.jsonl").write_text("".join(
            json.dumps({"receipt_id": f"r-{i}", "received_at": f"2026-11-29T00:00:{i:02d}Z",
                        "idempotency_key": "key-1", "body_sha256": SHA_A, "bytes": 1}) + "\n"
            for i in range(receipts)))
    return followed_snapshot(case)


def test_detail_words_the_last_attempts_of_a_call_of_many(tmp_path: Path) -> None:
    """Each attempt matches the same 30 receipts: the last 20 attempts are worded, each
    with 20 receipts; inspect's document still lists every one."""
    snap = _shaped(tmp_path, "attempts", one_call_events(50), receipts=30)
    call = snap.call("call-0001")
    assert call is not None and call.attempts == 50
    lines = call_detail_lines(call, snap)
    assert lines[0] == ("attempts", "50 started: the last 20 below (inspect --json lists "
                                    "every one)")
    worded = [(label, text) for label, text in lines if label.startswith("attempt ")]
    assert [label for label, _ in worded] == [f"attempt call-0001-a{n}" for n in range(31, 51)]
    assert all(text.endswith("(receipt r-19) and 10 more (duplicate effect)")
               for _, text in worded)
    index = snap.state.receipts.index
    shown = call.as_json(index, limit=SHOWN)["evidence"]
    assert [a["attempt_id"] for a in shown["attempts"]] == [
        label.removeprefix("attempt ") for label, _ in worded]
    assert shown["attempts_not_shown"] == 30 and shown["received_not_shown"] == 10
    assert [len(a["received"]) for a in shown["attempts"]] == [20] * 20
    assert {a["received_not_shown"] for a in shown["attempts"]} == {10}
    whole = call.as_json(index)["evidence"]  # inspect --json's document: every one
    assert len(whole["attempts"]) == 50 and len(whole["received"]) == 30
    assert "attempts_not_shown" not in whole and "received_not_shown" not in whole
    assert shown["received"] == whole["received"][:20]


def test_detail_words_the_tool_operations_with_something_to_do_first(tmp_path: Path) -> None:
    snap = _shaped(tmp_path, "tools", tool_operations_events(50))
    call = snap.call("call-0001")
    assert call is not None
    tools = call.tools
    assert tools is not None and len(tools.operations) == 50
    lines = tool_lines(tools, None)
    assert lines[0][1].endswith("publish_report (tc-19) and 30 more")
    assert lines[1] == ("tool operations", "50: 20 below, those with something to do "
                                           "first (inspect lists every one)")
    ops = [label for label, _ in lines[2:]]
    # every tenth was admitted with no outcome: those five first, then the rest in order
    unknown = [f"\u26a0 tool tc-{i}" for i in (9, 19, 29, 39, 49)]
    assert len(ops) == 20 and set(unknown) <= set(ops)
    assert [op for op in ops if op not in unknown] == [f"tool tc-{i}" for i in range(16)
                                                       if i != 9]
    body = tool_body(tools, None)
    assert len(body["operations"]) == 20 and body["operations_not_shown"] == 30
    assert len(body["plan"]) == 20 and body["plan_not_shown"] == 30
    assert len(tools.as_json()["operations"]) == 50  # inspect's document: every one
