"""From the demo bundle, every non-terminal call is driven to a
terminal state through the command line alone, doing at each step what the projection
names; no receipt is duplicated except where a duplicate was explicitly accepted.

One case (16, a received effect whose response is lost) accepts the duplicate on
purpose (`redecide --accept-duplicate`, then `next-attempt`); every other received
effect is finalized as failed. A tool operation whose effect is unknown (14) is
reconciled from the tool's own store (`reconcile-tool`), its turn goes on through
`replay` and `resume`, and the tool never runs twice. Receipt counts before and after
are asserted per case and printed as a table (`pytest -s` shows it)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from codeai_tui.lab.provider import ProviderProcess
from codeai_tui.lab.reliability.sendgate import unsafe_sends
from codeai_tui.ledger import LedgerReader
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.tools import count_publications
from tests.support import cli

ACCEPT_DUPLICATE = {"16_reconciled_received"}
MODEL = "synthetic-small"  # the model every demo manifest recorded (03's case.json drifted)
# receipts each case must hold after being driven to its end (before: the bundle's own)
EXPECTED = {
    "01_killed_after_requested": (0, 1), "02_killed_after_manifest": (0, 1),
    "03_drift_refused": (0, 1), "04_killed_in_flight": (1, 1), "05_naive_restart": (2, 2),
    "06_killed_after_observed": (1, 1), "07_killed_after_compilation_requested": (0, 0),
    "08_compilation_failed": (0, 0), "09_resumed": (1, 1), "10_completed_and_accepted": (2, 2),
    "11_tool_generate": (2, 2), "12_tool_stream": (2, 2), "13_tool_truncated_stream": (1, 1),
    "14_tool_killed_in_tool": (1, 2), "15_reconciled_not_received": (0, 1),
    "16_reconciled_received": (1, 2), "17_killed_after_interpreted": (1, 1),
    "18_tool_resumed_decision": (2, 2),
}


def _doc(case: Path) -> dict[str, Any]:
    done = cli("inspect", str(case), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _duplicate_groups(case: Path) -> int:
    pairs = Counter((r.idempotency_key, r.body_sha256) for r in read_receipts(case).receipts)
    return sum(1 for n in pairs.values() if n > 1)


def _step(case: Path, call: dict[str, Any], url: str) -> tuple[str, list[str]]:
    """The command for the call's projected next operation."""
    op, cid, c = call["next_operation"], call["call_id"], str(case)
    if op == "start_call":
        return op, ["resume", c, cid, "--base-url", url, "--model", MODEL, "--yes"]
    if op == "reconcile_effect":
        received = bool(call["evidence"]["attempts"][-1]["received"])
        finding = "received" if received else "not_received"
        return op, ["reconcile", c, cid, "--finding", finding, "--yes"]
    if op == "decide_duplicate" and case.name in ACCEPT_DUPLICATE:
        return op, ["redecide", c, cid, "--accept-duplicate", "--note", "accepted", "--yes"]
    if op == "decide_duplicate":
        return op, ["finalize", c, cid, "--yes"]
    if op == "start_next_attempt":
        return op, ["next-attempt", c, cid, "--base-url", url, "--yes"]
    return op, [op, c, cid, "--yes"]  # reinterpret, redecide, finalize


def _tool_step(case: Path, doc: dict[str, Any], kernel_key: Path) -> list[str] | None:
    """The command for a task whose next step is a tool operation's or its turn's: a
    finding from the tool's own store (publications), or the replay that records the
    follow-up call. None when no task waits on a tool."""
    calls = {c["call_id"]: c for c in doc["calls"]}
    for task in doc["tasks"]:
        subject = task["subject_id"]
        if task["next_operation"] == "reconcile_effect" and subject not in calls:
            ran = count_publications(case) > 0  # what the operator reads in the store
            return ["reconcile-tool", str(case), subject, "--finding",
                    "executed" if ran else "not_executed", "--yes"]
        if task["next_operation"] in ("start_call", "start_tool") and subject is None:
            planning = next((c for c in doc["calls"] if c.get("tools")
                             and c["tools"]["plan_adopted"]), None)
            ops = planning["tools"]["operations"] if planning is not None else []
            turn = ops[0]["operation_key"].split("/")[2] if ops else None
            if planning is not None and f"{turn}-m2" not in calls:  # replay records it
                return ["replay", str(case), planning["call_id"], "--kernel-key",
                        str(kernel_key), "--yes"]
    return None


def _drive(case: Path, url: str, kernel_key: Path) -> list[str]:
    steps: list[str] = []
    for _ in range(30):
        doc = _doc(case)
        pending = [c for c in doc["calls"] if c["next_operation"] != "none"]
        if not pending:
            argv = _tool_step(case, doc, kernel_key)
            if argv is None:
                return steps
            done = cli(*argv)
            assert done.returncode == 0, (case.name, argv, done.stderr)
            steps.append(argv[0])
            continue
        op, argv = _step(case, pending[0], url)
        done = cli(*argv)
        assert done.returncode == 0, (case.name, argv, done.stderr)
        steps.append(argv[0] if argv[0] != "redecide" or op != "decide_duplicate"
                     else "accept-duplicate")
    raise AssertionError(f"{case.name}: not terminal after 30 steps: {steps}")


def test_every_demo_call_is_driven_to_an_end(bundle_with_inventory: Path,
                                              demo_bundle: Path) -> None:
    bundle = bundle_with_inventory
    kernel_key = demo_bundle.parent / "keys" / "kernel.key"  # `demo --kernel-key` kept it
    assert kernel_key.is_file()
    cases = [json.loads((bundle / "bundle.json").read_text())["cases"][i]["dir"]
             for i in range(len(EXPECTED))]
    assert cases == list(EXPECTED)
    rows = ["| case | receipts before | after | steps |", "|---|---|---|---|"]
    with ProviderProcess(receipts_root=bundle) as provider:  # (under the bundle's own id)
        for name in cases:
            case = bundle / name
            before, dups = len(read_receipts(case).receipts), _duplicate_groups(case)
            publications = count_publications(case) if (case / "tools").is_dir() else 0
            steps = _drive(case, provider.case_url(name), kernel_key)
            after = len(read_receipts(case).receipts)
            assert (before, after) == EXPECTED[name], (name, steps)
            # a new duplicate only where one was accepted, and then exactly one
            assert _duplicate_groups(case) == dups + (name in ACCEPT_DUPLICATE), name
            with LedgerReader(case) as reader:
                assert unsafe_sends(reader.events()) == []
            doc = _doc(case)
            assert doc["receipts"]["uncovered"] == []
            assert all(c["stage"] in ("completed", "superseded") for c in doc["calls"]), name
            assert all(o["next_operation"] == "none" for c in doc["calls"] if c.get("tools")
                       for o in c["tools"]["operations"]), name
            if (case / "tools").is_dir():  # no tool ran twice
                assert count_publications(case) == publications, name
            rows.append(f"| {name} | {before} | {after} | {', '.join(steps) or '-'} |")
    print("\n" + "\n".join(rows))
