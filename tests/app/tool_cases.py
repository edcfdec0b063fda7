"""Tool-case fixtures for the console tests: the tool conformance vectors written as case
directories (ledger, and `tools/kernel.pub` + `tools/receipts.ndjson` as docs/tools.md lays
them out), with fixed event ids for snapshots."""

from __future__ import annotations

import json
from pathlib import Path

from ledgerfactory import write_ledger

from tests.support import TESTS

EXT = TESTS / "conformance_ext"


def tool_case(root: Path, name: str, dirname: str = "case") -> Path:
    """The vector `name` as the case directory root/dirname; returns root/dirname."""
    data = json.loads((EXT / f"{name}.json").read_text(encoding="utf-8"))
    events = [dict(e, event_id=f"ev-{e['seq']:04d}") for e in data["events"]]
    case = write_ledger(root / dirname, events, receipts=data.get("receipts")).parent
    tools = data.get("tools")
    if tools is not None:
        (case / "tools").mkdir()
        (case / "tools" / "kernel.pub").write_text(tools["kernel_pub"])
        (case / "tools" / "receipts.ndjson").write_text(
            "".join(line + "\n" for line in tools["receipts_ndjson"]))
    return case
