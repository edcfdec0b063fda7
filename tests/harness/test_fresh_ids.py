"""The demo's fresh-id case: a provider that answers every request with new tool-call ids.
Replay from the saved response keeps the original id and publishes once; the naive
re-ask, measured on a copy of the case as killed, gets a new id for the same request
bytes and publishes twice. Recounted here with plain sqlite3 and file reads."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from tests.support import cli

CASE = "19_tool_fresh_ids"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def publications(store: Path) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, operation_key, tool_call_id FROM publications"
                            " ORDER BY id").fetchall()
    finally:
        conn.close()


def saved_plan(case: Path) -> list[str]:
    conn = sqlite3.connect(f"file:{case / 'ledger.sqlite3'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT payload FROM events WHERE kind = 'attempt.observed'")
        return [t["tool_call_id"] for (payload,) in rows
                for t in json.loads(payload).get("tool_plan") or []]
    finally:
        conn.close()


def log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_replay_kept_the_saved_id_and_the_naive_re_ask_published_twice(demo_bundle: Path) -> None:
    case = demo_bundle / CASE
    (saved,) = saved_plan(case)
    # the replay: one publication, under the saved decision's id
    assert [call for _, _, call in publications(case / "tools" / "reports.sqlite3")] == [saved]
    replayed = [p for p in load(case / "worker_runs.json")["phases"] if p["step"] == "replay"]
    assert replayed[0]["exit_code"] == 0
    # the counterfactual: the same request bytes asked twice, a new id, two publications
    asked = log(case / "naive" / "provider" / "receipts.jsonl")
    assert len(asked) == 2 and asked[0]["body_sha256"] == asked[1]["body_sha256"]
    assert asked[0]["receipt_id"] == log(case / "provider" / "receipts.jsonl")[0]["receipt_id"]
    naive = publications(case / "naive" / "tools" / "reports.sqlite3")
    ids = [call for _, _, call in naive]
    assert len(naive) == 2 and ids[0] == saved and ids[1] != saved
    assert len({key for _, key, _ in naive}) == 2  # two operations of one turn
    assert {key.rsplit("/", 1)[0] for _, key, _ in naive} == {"report-v1/thread-1/turn-1"}
    (phase,) = load(case / "naive" / "worker_runs.json")["phases"]
    said = json.loads(phase["stdout"].splitlines()[-1])
    assert (phase["step"], phase["exit_code"]) == ("reask", 0)
    assert said["saved_tool_call_ids"] == [saved] and said["reasked_tool_call_ids"] == [ids[1]]
    assert not (case / "naive" / "ledger.sqlite3").exists()  # evidence of the case, not a case


def test_the_effect_table_counts_both_paths(demo_bundle: Path) -> None:
    rows = {r["mode"]: r for r in load(demo_bundle / "effects.json")}
    assert rows["fresh-ids"] == {"mode": "fresh-ids", "case": CASE, "publications": 1,
                                 "provider_calls": 2, "complete": True}
    assert rows["naive-reask"] == {"mode": "naive-reask", "case": f"{CASE}/naive",
                                   "publications": 2, "provider_calls": 2, "complete": False}
    printed = (demo_bundle.parent / "demo.stderr").read_text()
    assert f"demo: {'naive-reask':<17} {CASE + '/naive':<25} {2:>12} {2:>14} false" in printed


def test_verify_states_the_fresh_id_claims(demo_bundle: Path) -> None:
    done = cli("verify", str(demo_bundle))
    assert done.returncode == 0, done.stdout
    passed = [line for line in done.stdout.splitlines() if line.startswith(f"PASS {CASE}")]
    for fragment in ("the replay kept the saved decision's tool-call id",
                     "the provider answered with new tool-call id",
                     "naive/tools/reports.sqlite3: 2 publications of one turn",
                     "naive/tools/receipts.ndjson: 2 receipts, each verifying",
                     "the same decision asked twice"):
        assert any(fragment in line for line in passed), fragment
    assert "PASS bundle: effects.json naive-reask (19_tool_fresh_ids/naive): 2 / 2 / false" \
        in done.stdout


def test_verify_catches_a_doctored_counterfactual_or_replay(bundle_copy: Path) -> None:
    case = bundle_copy / CASE
    # the naive copy's second publication removed: the hazard would vanish from the table
    conn = sqlite3.connect(case / "naive" / "tools" / "reports.sqlite3", isolation_level=None)
    conn.execute("DELETE FROM publications WHERE id = 2")
    conn.close()
    # the replay's publication made to carry another id than the saved decision's
    conn = sqlite3.connect(case / "tools" / "reports.sqlite3", isolation_level=None)
    conn.execute("UPDATE publications SET tool_call_id = 'call_other'")
    conn.close()
    # the naive copy's log made to show two different requests
    path = case / "naive" / "provider" / "receipts.jsonl"
    first, second = log(path)
    second["body_sha256"] = "0" * 64
    path.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    done = cli("verify", str(bundle_copy))
    assert done.returncode == 1
    fail = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    for fragment in (f"FAIL bundle: effects.json naive-reask ({CASE}/naive) disagrees with the "
                     "stores: publications 2, counted 1",
                     f"FAIL {CASE}: naive/tools/reports.sqlite3: publications",
                     f"FAIL {CASE}: naive/tools/receipts.ndjson",
                     f"FAIL {CASE}: tool-call ids differ from the saved plan",
                     f"FAIL {CASE}: naive/provider/receipts.jsonl: 2 receipts"):
        assert any(line.startswith(fragment) for line in fail), (fragment, fail)


def test_a_missing_counterfactual_fails(bundle_copy: Path) -> None:
    shutil.rmtree(bundle_copy / CASE / "naive")
    done = cli("verify", str(bundle_copy))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    fail = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert any(line.startswith(f"FAIL {CASE}: naive/worker_runs.json: processes []")
               for line in fail), fail
    assert any("effects.json naive-reask" in line and "counted 0" in line for line in fail), fail
