"""Seeded corruptions that only meaning can catch, and bad input that must not crash.

Each test corrupts a private copy of the session's bundle with plain sqlite3 or file
edits (never through the project's writer), runs `codeai-tui verify` as a separate
process and expects exit 1 with the specific FAIL line.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from tests.support import cli


def verify(path: Path | str) -> tuple[int, list[str], str]:
    done = cli("verify", str(path))
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout.splitlines(), done.stderr


def fails(lines: list[str], *fragments: str) -> list[str]:
    hits = [line for line in lines if line.startswith("FAIL") and all(f in line for f in fragments)]
    assert hits, "no FAIL line with " + repr(fragments) + ":\n" + "\n".join(
        line for line in lines if line.startswith("FAIL"))
    return hits


def rw(case: Path) -> sqlite3.Connection:
    return sqlite3.connect(case / "ledger.sqlite3", isolation_level=None)


def edit_json(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_deleted_attempt_started_leaves_its_receipt_uncovered(bundle_copy: Path) -> None:
    conn = rw(bundle_copy / "04_killed_in_flight")
    conn.execute("DELETE FROM events WHERE kind = 'attempt.started'")
    conn.close()
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 04_killed_in_flight: uncovered effect: 1 receipt(s)", "key key-1")
    fails(lines, "04_killed_in_flight: termination.json disagrees with the ledger: seq 8 holds nothing")
    fails(lines, "04_killed_in_flight: call call-1 stage: inspection says 'effect_unknown', "
                 "re-derived 'manifest_recorded'")


def test_stage_flipped_in_a_recorded_inspection(bundle_copy: Path) -> None:
    def flip(doc: dict[str, Any]) -> None:
        doc["projection"]["calls"][0]["stage"] = "completed"

    edit_json(bundle_copy / "02_killed_after_manifest" / "inspection.json", flip)
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 02_killed_after_manifest: call call-1 stage: inspection says 'completed', "
                 "re-derived 'manifest_recorded'")


def test_event_appended_after_the_inspection(bundle_copy: Path) -> None:
    conn = rw(bundle_copy / "07_killed_after_compilation_requested")
    conn.execute(
        "INSERT INTO events VALUES (5, ?, '2026-01-01T00:00:00Z', "
        "'context.compilation_completed', 'task-1', NULL, NULL, 'comp-1', "
        "'{\"package_id\":\"pkg-x\",\"rendered_sha256\":null,\"selected\":[]}')",
        (uuid.uuid4().hex,),
    )
    conn.close()
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 07_killed_after_compilation_requested: changed since the inspection",
          "event_count 5 vs 4")
    fails(lines, "07_killed_after_compilation_requested: termination.json disagrees",
          "events were committed after the kill (last seq 5)")


def test_receipt_with_a_key_no_attempt_named(bundle_copy: Path) -> None:
    log = bundle_copy / "06_killed_after_observed" / "provider" / "receipts.jsonl"
    forged = {"receipt_id": "rcpt-forged", "received_at": "2026-01-01T00:00:00Z",
              "idempotency_key": "key-nobody", "body_sha256": "0" * 64, "bytes": 10}
    with open(log, "a") as fh:
        fh.write(json.dumps(forged) + "\n")
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 06_killed_after_observed: uncovered effect", "rcpt-forged (key key-nobody")
    fails(lines, "06_killed_after_observed: the provider's own log holds 2 receipt(s) (preregistered: 1)")


def test_artifact_byte_changed(bundle_copy: Path) -> None:
    artifact = sorted((bundle_copy / "09_resumed" / "artifacts" / "sha256").glob("*/*"))[0]
    data = bytearray(artifact.read_bytes())
    data[0] ^= 0x01
    artifact.write_bytes(bytes(data))
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 09_resumed: artifact bytes do not match their names", artifact.name[:16])


def test_inspection_that_appended_is_caught(bundle_copy: Path) -> None:
    def grew(doc: dict[str, Any]) -> None:
        doc["before"]["event_count"] -= 1

    edit_json(bundle_copy / "01_killed_after_requested" / "inspection.json", grew)
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 01_killed_after_requested: inspection.json: before and after differ")


def test_unexpected_duplicate_receipt(bundle_copy: Path) -> None:
    log = bundle_copy / "04_killed_in_flight" / "provider" / "receipts.jsonl"
    line = log.read_text().splitlines()[0]
    receipt = json.loads(line)
    receipt["receipt_id"] = "rcpt-again"
    with open(log, "a") as fh:
        fh.write(json.dumps(receipt) + "\n")
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 04_killed_in_flight: unexpected duplicate effect: shows 2 identical receipts")


def test_drift_case_whose_configuration_no_longer_drifts(bundle_copy: Path) -> None:
    def same_model(doc: dict[str, Any]) -> None:
        doc["provider"]["model"] = "synthetic-small"

    edit_json(bundle_copy / "03_drift_refused" / "case.json", same_model)
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 03_drift_refused: refused for drift: case.json configures 'synthetic-small'")


def test_untrusted_text_is_shown_inert(bundle_copy: Path) -> None:
    log = bundle_copy / "06_killed_after_observed" / "provider" / "receipts.jsonl"
    hostile = {"receipt_id": "rcpt-\x1b]52;c;SGVsbG8=\x07", "idempotency_key": "k\u202eyek\n2",
               "body_sha256": "1" * 64, "bytes": 1}
    with open(log, "a") as fh:
        fh.write(json.dumps(hostile) + "\n")
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    text = "\n".join(lines)
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    fails(lines, "uncovered effect", "rcpt-\u27e8ESC\u27e9]52", "k\u27e8U+202E\u27e9yek\u27e8LF\u27e92")


def test_missing_path_is_one_line_exit_2(tmp_path: Path) -> None:
    code, lines, err = verify(tmp_path / "nope")
    assert code == 2 and lines == []
    assert len(err.strip().splitlines()) == 1 and "no such file" in err


def test_directory_without_ledgers_is_not_a_bundle(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    code, lines, err = verify(tmp_path)
    assert code == 2 and lines == []
    assert len(err.strip().splitlines()) == 1 and "not a bundle" in err


def test_garbage_ledger_and_broken_inspection_fail_without_traceback(bundle_copy: Path) -> None:
    for name in ("ledger.sqlite3", "ledger.sqlite3-wal", "ledger.sqlite3-shm"):
        (bundle_copy / "01_killed_after_requested" / name).unlink(missing_ok=True)
    (bundle_copy / "01_killed_after_requested" / "ledger.sqlite3").write_bytes(b"not sqlite" * 100)
    (bundle_copy / "02_killed_after_manifest" / "inspection.json").write_text("{broken")
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 01_killed_after_requested: cannot read the case")
    fails(lines, "FAIL 02_killed_after_manifest: could not be checked")
    assert lines[-1].endswith("failed")


def test_a_single_case_directory_is_checked_on_its_own(demo_bundle: Path) -> None:
    code, lines, _ = verify(demo_bundle / "09_resumed")
    assert code == 0
    assert any("09_resumed: every receipt (1) is covered" in line for line in lines)


def test_byte_inventory_catches_a_change_meaning_would_not(bundle_with_inventory: Path) -> None:
    readme = bundle_with_inventory / "01_killed_after_requested" / "case.json"
    doc = json.loads(readme.read_text())
    doc["description"] = "edited"
    readme.write_text(json.dumps(doc))
    code, lines, _ = verify(bundle_with_inventory)
    assert code == 1
    fails(lines, "FAIL bundle: byte inventory: 1 of", "01_killed_after_requested/case.json changed")
    assert sum(line.startswith("FAIL") for line in lines) == 1


def test_byte_inventory_present_and_passing(demo_bundle: Path) -> None:
    code, lines, _ = verify(demo_bundle)
    assert code == 0
    assert any(line.startswith("PASS bundle: byte inventory: all") for line in lines)


def _sqlite3_shell(db: Path, sql: str) -> None:
    """What an operator does with an ordinary client: open read-write, query, close."""
    import shutil
    import subprocess

    shell = shutil.which("sqlite3")
    if shell is None:  # the same effect through Python's read-write connection
        conn = sqlite3.connect(db)
        conn.execute(sql).fetchall()
        conn.close()
        return
    subprocess.run([shell, str(db), sql], check=True, capture_output=True, timeout=30)


def test_a_checkpoint_by_another_sqlite_client_is_information_not_failure(
    bundle_with_inventory: Path,
) -> None:
    """Opening ledgers read-write with the sqlite3 shell checkpoints their WAL on close:
    bytes change, events do not. Verify judges the events and only reports the bytes."""
    cases = ("04_killed_in_flight", "02_killed_after_manifest")
    for name in cases:
        _sqlite3_shell(bundle_with_inventory / name / "ledger.sqlite3", "SELECT count(*) FROM events")
    import hashlib

    recorded = json.loads((bundle_with_inventory / "hashes.json").read_text())["files"]
    changed = [rel for rel, sha in recorded.items()
               if rel.split("/")[0] in cases and "ledger.sqlite3" in rel
               and hashlib.sha256((bundle_with_inventory / rel).read_bytes()
                                  if (bundle_with_inventory / rel).exists() else b"").hexdigest() != sha]
    assert changed, "the shell changed no ledger byte: this test would prove nothing"
    code, lines, _ = verify(bundle_with_inventory)
    assert code == 0, "\n".join(line for line in lines if line.startswith("FAIL"))
    info = [line for line in lines if line.startswith("INFO bundle:")]
    assert len(info) == 1 and "differ in bytes but not in events" in info[0]
    assert any(line.startswith("PASS bundle: ledger content: all") for line in lines)


def test_an_edited_event_fails_the_ledger_content_claim(bundle_with_inventory: Path) -> None:
    conn = rw(bundle_with_inventory / "02_killed_after_manifest")
    conn.execute("UPDATE events SET recorded_at = '2001-01-01T00:00:00Z' WHERE seq = 1")
    conn.close()
    code, lines, _ = verify(bundle_with_inventory)
    assert code == 1
    fails(lines, "FAIL bundle: ledger content:", "02_killed_after_manifest: events differ")


def test_special_files_in_a_case_fail_verify_without_hanging(bundle_copy: Path) -> None:
    """A FIFO as the receipt log or beside the ledger must not block the verifier."""
    import os

    receipts = bundle_copy / "02_killed_after_manifest" / "provider" / "receipts.jsonl"
    if receipts.exists():
        receipts.unlink()
    receipts.parent.mkdir(exist_ok=True)
    os.mkfifo(receipts)
    wal = bundle_copy / "09_resumed" / "ledger.sqlite3-shm"
    if wal.exists():
        wal.unlink()
    os.mkfifo(wal)
    done = cli("verify", str(bundle_copy), timeout=30)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    fails(done.stdout.splitlines(), "02_killed_after_manifest", "receipt log unreadable")
    fails(done.stdout.splitlines(), "09_resumed", "not a regular file")


# ---- tool cases: the stores, the signed receipts and effects.json


def _change_one_byte(path: Path, marker: bytes) -> None:
    """Replace the hex digit right after `marker` with another hex digit (still canonical
    JSON, so only the signature can catch it)."""
    data = bytearray(path.read_bytes())
    at = data.index(marker) + len(marker)
    data[at] = ord("0") if data[at] != ord("0") else ord("1")
    path.write_bytes(bytes(data))


def test_one_changed_byte_in_a_tool_receipt_fails(bundle_copy: Path) -> None:
    receipts = bundle_copy / "11_tool_generate" / "tools" / "receipts.ndjson"
    _change_one_byte(receipts, b'"result_sha256":"')
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 11_tool_generate: tools/receipts.ndjson line 1: signature does not verify "
                 "against tools/kernel.pub")
    fails(lines, "11_tool_generate: tools/receipts.ndjson and the ledger disagree")
    fails(lines, "11_tool_generate: publication 1", "its receipt (line 1) is invalid")
    assert sum(line.startswith("FAIL 12_tool_stream") for line in lines) == 0  # only that case


def test_a_changed_signature_byte_fails(bundle_copy: Path) -> None:
    receipts = bundle_copy / "12_tool_stream" / "tools" / "receipts.ndjson"
    data = receipts.read_bytes()
    at = data.index(b'"sig":"') + len(b'"sig":"') + 5
    receipts.write_bytes(data[:at] + (b"A" if data[at:at + 1] != b"A" else b"B") + data[at + 1:])
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 12_tool_stream: tools/receipts.ndjson line 1: signature does not verify")


def test_a_deleted_publication_row_fails(bundle_copy: Path) -> None:
    conn = sqlite3.connect(bundle_copy / "12_tool_stream" / "tools" / "reports.sqlite3",
                           isolation_level=None)
    conn.execute("DELETE FROM publications")
    conn.close()
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL bundle: effects.json stream (12_tool_stream) disagrees with the stores: "
                 "publications 1, counted 0")
    fails(lines, "FAIL 12_tool_stream: stream: 0 publication(s) in tools/reports.sqlite3",
          "preregistered 1 / 2 / true")
    fails(lines, "FAIL 12_tool_stream: receipt(s) for operation(s) the tool's store has no "
                 "publication of")


def test_a_second_publication_of_one_operation_fails(bundle_copy: Path) -> None:
    conn = sqlite3.connect(bundle_copy / "11_tool_generate" / "tools" / "reports.sqlite3",
                           isolation_level=None)
    conn.execute("INSERT INTO publications (operation_key, tool_call_id, title, body, published_at)"
                 " SELECT operation_key, tool_call_id, title, body, published_at FROM publications")
    conn.close()
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 11_tool_generate: publication 2", "2 publications under this operation")
    fails(lines, "effects.json generate (11_tool_generate) disagrees", "publications 1, counted 2")


def test_effects_json_that_disagrees_with_the_stores_fails(bundle_copy: Path) -> None:
    path = bundle_copy / "effects.json"
    rows = json.loads(path.read_text())
    rows[0]["provider_calls"] = 1  # generate: the seed's "no third request" made to look better
    rows[2]["complete"] = "false"  # truncated-stream: a string is not the boolean counted
    path.write_text(json.dumps(rows))
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL bundle: effects.json generate (11_tool_generate) disagrees with the "
                 "stores: provider_calls 1, counted 2")
    fails(lines, "effects.json truncated-stream (13_tool_truncated_stream) disagrees",
          "complete 'false', counted False")


def test_effects_json_missing_a_mode_or_missing_fails(bundle_copy: Path) -> None:
    path = bundle_copy / "effects.json"
    path.write_text(json.dumps(json.loads(path.read_text())[:3]))
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL bundle: effects.json: rows for modes", "preregistered one each")
    path.unlink()
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL bundle: effects.json is missing")


def test_a_single_tool_case_is_checked_on_its_own(demo_bundle: Path) -> None:
    code, lines, _ = verify(demo_bundle / "11_tool_generate")
    assert code == 0, "\n".join(lines)
    assert any("one admission" in line and "one valid receipt naming it" in line for line in lines)
    code, lines, _ = verify(demo_bundle / "14_tool_killed_in_tool")
    assert code == 0, "\n".join(lines)
    assert any("no outcome and no receipt: its effect is unknown" in line for line in lines)


def test_a_broken_worker_record_fails_without_traceback(bundle_copy: Path) -> None:
    (bundle_copy / "12_tool_stream" / "worker_runs.json").write_text("{not json")
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "effects.json stream (12_tool_stream) disagrees", "complete True, counted False")


def test_a_plan_made_up_for_the_cut_off_stream_fails(bundle_copy: Path) -> None:
    """Someone records a tool plan for the truncated decision after the fact: the call no
    longer derives as effect_unknown, and a saved plan exists where none may."""
    conn = rw(bundle_copy / "13_tool_truncated_stream")
    payload = json.dumps({"transport": {"status": 200, "bytes": 1, "stream": True},
                          "tool_plan": [{"tool_call_id": "call_x", "name": "publish_report",
                                         "arguments_sha256": "0" * 64}]})
    conn.execute("INSERT INTO events VALUES (5, ?, '2026-01-01T00:00:00Z', 'attempt.observed', "
                 "'t1', 'turn-1-m1', 'turn-1-m1-a1', NULL, ?)", (uuid.uuid4().hex, payload))
    conn.close()
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 13_tool_truncated_stream: truncated-stream: calls derived as ['observed'], "
                 "1 saved response(s) with a tool plan; preregistered calls")


def test_a_receipt_bound_to_another_admission_fails(bundle_copy: Path) -> None:
    """The admission's arguments hash is rewritten: the valid, signed receipt no longer
    names the admission the ledger holds."""
    conn = rw(bundle_copy / "11_tool_generate")
    ((seq, payload),) = conn.execute(
        "SELECT seq, payload FROM events WHERE kind = 'tool.admitted'").fetchall()
    changed = {**json.loads(payload), "arguments_sha256": "0" * 64}
    conn.execute("UPDATE events SET payload = ? WHERE seq = ?", (json.dumps(changed), seq))
    conn.close()
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 11_tool_generate: publication 1", "names another admission than the "
                 f"ledger's (seq {seq})")


def test_fifos_in_a_tool_case_and_as_effects_json_fail_without_hanging(bundle_copy: Path) -> None:
    import os

    receipts = bundle_copy / "11_tool_generate" / "tools" / "receipts.ndjson"
    receipts.unlink()
    os.mkfifo(receipts)
    (bundle_copy / "effects.json").unlink()
    os.mkfifo(bundle_copy / "effects.json")
    done = cli("verify", str(bundle_copy), timeout=30)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stdout.splitlines()
    fails(lines, "FAIL 11_tool_generate: tools/receipts.ndjson is not a regular file")
    fails(lines, "FAIL bundle: effects.json is unreadable", "not a regular file")


def test_a_receipt_the_ledger_holds_but_the_file_lacks_is_information(bundle_copy: Path) -> None:
    """A kernel stopped between committing tool.completed and appending its receipt line
    leaves a state the next replay repairs: verify says so and does not fail it."""
    receipts = bundle_copy / "11_tool_generate" / "tools" / "receipts.ndjson"
    lines = receipts.read_bytes().splitlines(keepends=True)
    assert lines, "the generate case must hold a receipt for this test to mean anything"
    receipts.write_bytes(b"".join(lines[:-1]))
    code, out, _ = verify(bundle_copy)
    assert code == 0, "\n".join(line for line in out if line.startswith("FAIL"))
    info = [line for line in out if line.startswith("INFO 11_tool_generate:")]
    assert len(info) == 1 and "not yet in tools/receipts.ndjson" in info[0]


def test_a_resumed_decision_that_lost_its_turn_fails(bundle_copy: Path) -> None:
    """The successor's `turn` is removed (what resume wrote before it carried the turn):
    the verifier names the call that no longer keys its operations to the turn."""
    conn = rw(bundle_copy / "18_tool_resumed_decision")
    ((seq, call_id, payload),) = conn.execute(
        "SELECT seq, call_id, payload FROM events WHERE kind = 'call.requested' "
        "AND json_extract(payload, '$.resumed_from') = 'turn-1-m1'").fetchall()
    lost = {k: v for k, v in json.loads(payload).items() if k != "turn"}
    conn.execute("UPDATE events SET payload = ? WHERE seq = ?", (json.dumps(lost), seq))
    conn.close()
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, f"FAIL 18_tool_resumed_decision: call {call_id}, resumed from turn-1-m1 "
                 "(turn report-v1/thread-1/turn-1), names no turn")
    fails(lines, f"FAIL 18_tool_resumed_decision: call {call_id}'s saved response cannot be "
                 "checked: it names no turn")


def test_a_publication_under_another_tool_call_id_fails(bundle_copy: Path) -> None:
    """The tool's store says it published under an id the saved response never chose."""
    store = bundle_copy / "18_tool_resumed_decision" / "tools" / "reports.sqlite3"
    conn = sqlite3.connect(store, isolation_level=None)
    conn.execute("UPDATE publications SET tool_call_id = 'call_fresh', "
                 "operation_key = 'report-v1/thread-1/turn-1/call_fresh'")
    conn.close()
    code, lines, _ = verify(bundle_copy)
    assert code == 1
    fails(lines, "FAIL 18_tool_resumed_decision: tools/reports.sqlite3 publications",
          "call_fresh", "are not one per tool call of the saved decision response")
