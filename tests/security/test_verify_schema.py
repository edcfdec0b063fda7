"""`verify` reads a bundle with its own code (codeai_tui/verify), so it has its own gate:
a ledger whose schema holds a trigger, a view or a virtual table is a FAIL line naming
it, read no further (a view named events read for ever; a trigger may have swallowed
the events a claim rests on)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hostile import SCHEMA_CORPUS
from inspectrun import CLI

# the corpus cases the verifier's own gate refuses, and the words of each one's line
REFUSED = {
    "trigger_swallows_resume": "holds trigger 'hide'",
    "trigger_rewrites_history": "holds trigger 'rewrite'",
    "events_view_endless": "holds view 'events'",
    "meta_view_endless": "holds view 'ledger_meta'",
    "events_view_4gb_of_payloads": "holds view 'events'",
    "events_virtual_table": "holds virtual table 'events'",
}


def test_verify_names_schema_code_and_reads_no_further(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    for h in SCHEMA_CORPUS:
        if h.name in REFUSED:
            h.build(bundle / h.name)
    try:
        proc = subprocess.run([CLI, "verify", str(bundle)], capture_output=True, text=True,
                              timeout=30, env={**os.environ, "CODEAI_TUI_DEBUG": ""},
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError("verify still reading after 30 s") from None
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stdout.splitlines()
    for name, words in REFUSED.items():
        assert (f"FAIL {name}: cannot read the case: ValueError: the ledger's schema "
                f"{words}: not read") in lines, proc.stdout
    assert lines[-1] == f"0 passed, {len(REFUSED)} failed"
