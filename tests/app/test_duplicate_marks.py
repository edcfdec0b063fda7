"""A hostile receipt log repeats one receipt id on two lines, only one of which is in a
duplicate group: the Receipts pane, the detail and the lanes mark that line alone (by
its place in the log), not every line carrying the id. Textual-free; the ledger is
written with plain sqlite3 and the log with plain file writes."""

from __future__ import annotations

import json
from pathlib import Path

from ledgerfactory import write_ledger

from codeai_tui.app.widgets.cells import DUPLICATE_MARK
from codeai_tui.app.widgets.detail_view import receipt_lines
from codeai_tui.app.widgets.receipts_pane import receipt_builder
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.read.report.facts import gather as report_facts
from codeai_tui.services.lanes import DUPLICATE, RECEIPT, call_lane
from tests.core.cases import followed_snapshot
from tests.support import CONFORMANCE

SHA_17 = "17" * 32


def _hostile_case(tmp_path: Path) -> CaseSnapshot:
    """naive_restart_copy (call-16's request logged twice: r-1, r-2) and call-17, whose
    one receipt is logged under the id r-1 again, alone with its key and hash."""
    data = json.loads((CONFORMANCE / "naive_restart_copy.json").read_text(encoding="utf-8"))
    events = data["events"] + [
        {"kind": "call.requested", "task_id": "task-1", "call_id": "call-17", "seq": 9,
         "payload": {"idempotency_key": "key-17", "purpose": "review",
                     "model": "synthetic-small"}},
        {"kind": "attempt.started", "task_id": "task-1", "call_id": "call-17",
         "attempt_id": "att-17", "seq": 10,
         "payload": {"attempt_no": 1, "request_sha256": SHA_17}},
    ]
    receipts = data["receipts"] + [
        {"receipt_id": "r-1", "received_at": "2026-09-13T12:00:11Z",
         "idempotency_key": "key-17", "body_sha256": SHA_17, "bytes": 64}]
    case = write_ledger(tmp_path / "case", events, receipts=receipts).parent
    return followed_snapshot(case)


def test_the_receipts_pane_marks_the_line_in_the_group_not_its_id(tmp_path: Path) -> None:
    snap = _hostile_case(tmp_path)
    check = snap.state.receipts
    assert tuple(check.duplicates) == (("r-1", "r-2"),)  # (what inspect --json says)
    build = receipt_builder(snap)
    lines = snap.receipts.receipts
    assert [r.receipt_id for r in lines] == ["r-1", "r-2", "r-1"]
    marks = [build(r).cells[2] for r in lines]
    assert marks == [DUPLICATE_MARK, DUPLICATE_MARK, "\u2714 covered"]


def test_the_detail_warns_of_a_duplicate_on_the_line_in_the_group_alone(
        tmp_path: Path) -> None:
    snap = _hostile_case(tmp_path)
    first, second, third = snap.receipts.receipts
    warned = [any(label.endswith("duplicate") for label, _ in receipt_lines(r, snap))
              for r in (first, second, third)]
    assert warned == [True, True, False]


def test_a_lane_marks_a_duplicate_by_the_line_it_matches(tmp_path: Path) -> None:
    """call-16's attempt matches the group's two lines (duplicates); call-17's matches
    the lone line carrying the id r-1 (a receipt, not a duplicate)."""
    snap = _hostile_case(tmp_path)
    index = snap.state.receipts.index
    marks = {}
    for call_id in ("call-16", "call-17"):
        call = snap.state.call(call_id)
        assert call is not None
        marks[call_id] = [(m.kind, m.label) for m in call_lane(call, 10, index).marks]
    assert marks == {"call-16": [(DUPLICATE, "r-1"), (DUPLICATE, "r-2")],
                     "call-17": [(RECEIPT, "r-1")]}


def test_the_reports_lanes_mark_as_the_consoles_do(tmp_path: Path) -> None:
    """The incident report draws the same lanes: the lone line carrying the id r-1 is
    call-17's receipt, not a duplicate (the report marked every line with a grouped id)."""
    snap = _hostile_case(tmp_path)
    facts = report_facts(snap.case_dir)
    marks = {row.text: [(m.kind, m.label) for m in row.lane.marks]
             for row in facts.lanes if row.lane is not None}
    assert marks["call-16"] == [(DUPLICATE, "r-1"), (DUPLICATE, "r-2")]
    assert marks["call-17"] == [(RECEIPT, "r-1")]
