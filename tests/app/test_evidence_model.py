"""The console's evidence words and the reconcile pre-fill rule (Textual-free)."""

from __future__ import annotations

import json
from pathlib import Path

from ledgerfactory import write_ledger

from codeai_tui.actions.reconcile_plan import suggest
from codeai_tui.console.evidence import (
    attempt_lines,
    calls_of_receipt,
    receipt_with_id,
    receipts_of_call,
    short_phrase,
    verdict_phrase,
)
from codeai_tui.console.model import CaseSnapshot
from codeai_tui.console.severity import case_verdict
from tests.core.cases import followed_snapshot

EXT = Path(__file__).resolve().parents[1] / "conformance_ext"
BASE = Path(__file__).resolve().parents[1] / "conformance"


def snapshot_of(tmp_path: Path, directory: Path, name: str) -> CaseSnapshot:
    data = json.loads((directory / f"{name}.json").read_text(encoding="utf-8"))
    case = tmp_path / name
    write_ledger(case, data["events"], receipts=data.get("receipts"))
    return followed_snapshot(case)


def test_the_console_says_what_inspect_says(tmp_path: Path) -> None:
    """The verdict's phrase is the reason's own ending in inspect --json."""
    for directory, name in ((EXT, "evidence_received"), (EXT, "evidence_not_received"),
                            (EXT, "evidence_no_log"), (BASE, "naive_restart_copy")):
        snap = snapshot_of(tmp_path, directory, name)
        for call in snap.state.calls:
            phrase = verdict_phrase(call, snap)
            doc = call.as_json(snap.state.receipts.index)
            if phrase is None:
                assert call.evidence.last_attempt() is None
            else:
                assert doc["reason"].endswith("; " + phrase), name
            assert list(receipts_of_call(call, snap)) == [
                r["receipt_id"] for r in doc["evidence"]["received"]]


def test_words_for_each_kind_of_log(tmp_path: Path) -> None:
    """Short forms fit the Calls column (18) and a narrow verdict line."""
    got = snapshot_of(tmp_path, EXT, "evidence_received")
    c1 = got.call("c1")
    assert c1 is not None
    assert short_phrase(c1, got) == "received rcpt-1"
    assert verdict_phrase(c1, got) == "received by the provider at 12:00:05.759 (receipt rcpt-1)"
    c2 = got.call("c2")
    assert c2 is not None and short_phrase(c2, got) == "" and verdict_phrase(c2, got) is None
    missing = snapshot_of(tmp_path, EXT, "evidence_not_received")
    c1 = missing.call("c1")
    assert c1 is not None and short_phrase(c1, missing) == "not in the log"
    assert [line.text for line in attempt_lines(c1, missing)] == [
        "not in the provider's log (log complete up to 12:00:04.100)"]
    none = snapshot_of(tmp_path, EXT, "evidence_no_log")
    c1 = none.call("c1")
    assert c1 is not None and short_phrase(c1, none) == "no log: unknowable"
    dup = snapshot_of(tmp_path, BASE, "naive_restart_copy")
    call = dup.call("call-16")
    assert call is not None and short_phrase(call, dup) == "received \u00d72 (dup)"
    assert receipts_of_call(call, dup) == ("r-1", "r-2")


def test_a_receipt_links_to_its_call_and_attempt(tmp_path: Path) -> None:
    snap = snapshot_of(tmp_path, EXT, "evidence_not_received")
    by_id = {r.receipt_id: r for r in snap.receipts.receipts}
    assert calls_of_receipt(by_id["rcpt-9"], snap) == []  # another key: uncovered
    assert calls_of_receipt(by_id["rcpt-8"], snap) == []  # same key, other bytes
    got = snapshot_of(tmp_path, EXT, "evidence_received")
    (receipt,) = got.receipts.receipts
    assert [(lk.call_id, lk.attempt_id) for lk in calls_of_receipt(receipt, got)] == [
        ("c1", "a1")]


def test_a_receipt_is_found_by_its_id_first_line_first(tmp_path: Path) -> None:
    """`p` lands on the first line of the log with the id (a log can repeat an id), read
    from the log's id column; an id the log does not hold finds nothing."""
    data = json.loads((BASE / "naive_restart_copy.json").read_text(encoding="utf-8"))
    again = {**data["receipts"][0], "received_at": "2026-09-13T12:00:10Z"}
    case = tmp_path / "repeated"
    write_ledger(case, data["events"], receipts=[*data["receipts"], again])
    snap = followed_snapshot(case)
    found = [(r.line_no, r.receipt_id, r.received_at) for r in (
        receipt_with_id(snap, rid) for rid in ("r-1", "r-2")) if r is not None]
    assert found == [(1, "r-1", "2026-09-13T12:00:09Z"), (2, "r-2", "2026-09-13T12:00:09Z")]
    assert [r.line_no for r in snap.receipts.receipts if r.receipt_id == "r-1"] == [1, 3]
    assert receipt_with_id(snap, "r-3") is None


def test_suggest_prefills_only_what_the_evidence_supports() -> None:
    start = "2026-09-13T12:00:04Z"
    assert suggest((("r-1", "2026-09-13T12:00:05Z"),), "present", "2026-09-13T12:00:05Z",
                   start)[0] == "received"
    assert suggest((), "present", "2026-09-13T12:00:04.100Z", start)[0] == "not_received"
    # the log ends before the attempt started: a receipt may still come
    assert suggest((), "present", "2026-09-13T12:00:03Z", start)[0] is None
    assert suggest((), "present", None, start)[0] is None  # empty log
    assert suggest((), "absent", None, start)[0] is None
    assert suggest((), "unreadable", None, start)[0] is None
    # a receipt outranks anything else: even an unreadable-looking status
    assert suggest((("r-1", "x"),), "present", None, None)[0] == "received"


def test_a_received_reconcile_is_never_all_done(tmp_path: Path) -> None:
    snap = snapshot_of(tmp_path, EXT, "reconciled_received")
    verdict = case_verdict(snap.state, snap.event_count)
    assert verdict.label.startswith("decide_duplicate"), verdict.label
