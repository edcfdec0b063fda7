"""The verifier's own rules agree with every conformance vector (written with plain
sqlite3, read back by the verifier's own reader)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ledgerfactory import write_ledger

from codeai_tui.verify.rules import check_receipts, derive
from codeai_tui.verify.store import read_case
from tests.support import load_vectors

VECTORS = load_vectors()


def _subset(derived: dict[str, dict[str, Any]], expected: dict[str, dict[str, Any]]) -> None:
    assert set(derived) == set(expected)
    for ident, want in expected.items():
        got = derived[ident]
        for field, value in want.items():
            if field in got:
                assert got[field] == value, (ident, field)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_verifier_rules_match_the_vector(tmp_path: Path, vector: dict[str, Any]) -> None:
    write_ledger(tmp_path, vector["events"], receipts=vector["receipts"])
    case = read_case(tmp_path)
    derived = derive(case.rows)
    _subset(derived.calls, vector["expect"]["calls"])
    _subset(derived.compilations, vector["expect"]["compilations"])
    _subset(derived.tasks, vector["expect"]["tasks"])
    for seq, expect in vector.get("expect_as_of", {}).items():
        partial = derive([r for r in case.rows if r.seq <= int(seq)])
        for ident, want in expect.get("calls", {}).items():
            assert {k: partial.calls[ident][k] for k in want} == want, (seq, ident)
        for ident, want in expect.get("compilations", {}).items():
            assert {k: partial.compilations[ident][k] for k in want} == want, (seq, ident)
    verdict = check_receipts(case.receipts, derived.call_evidence)
    if vector["name"] == "naive_restart_copy":
        assert len(verdict.duplicates) == 1 and not verdict.uncovered


def test_verify_on_foreign_ledgers_fails_only_the_duplicate(tmp_path: Path) -> None:
    """Ledgers nobody here wrote (plain sqlite3, no bundle.json): the only finding is the
    naive restart's duplicate effect, which outside the experiment is a real finding."""
    from tests.support import cli

    for vector in VECTORS:
        write_ledger(tmp_path / vector["name"], vector["events"], receipts=vector["receipts"])
    done = cli("verify", str(tmp_path))
    lines = done.stdout.splitlines()
    failed = [line for line in lines if line.startswith("FAIL")]
    assert done.returncode == 1
    assert len(failed) == 1 and failed[0].startswith(
        "FAIL naive_restart_copy: unexpected duplicate effect: shows 2 identical receipts")
    assert lines[-1].endswith("passed, 1 failed")


EXT_RECONCILED = [json.loads(p.read_text()) for p in sorted(
    (Path(__file__).resolve().parents[1] / "conformance_ext").glob("*.json"))
    if p.name.startswith(("reconciled_", "advanced_"))]


@pytest.mark.parametrize("vector", EXT_RECONCILED, ids=[v["name"] for v in EXT_RECONCILED])
def test_verifier_rules_match_the_reconcile_vectors(tmp_path: Path,
                                                    vector: dict[str, Any]) -> None:
    """The verifier's own reading of docs/reconcile.md section 2 agrees with the
    extension's vectors (the demo's cases 15 and 16 depend on it)."""
    write_ledger(tmp_path, vector["events"], receipts=vector["receipts"])
    derived = derive(read_case(tmp_path).rows)
    _subset(derived.calls, vector["expect"]["calls"])
    for ident, want in vector.get("expect_as_of", {}).items():
        partial = derive([r for r in read_case(tmp_path).rows if r.seq <= int(ident)])
        _subset(partial.calls, want.get("calls", {}))
