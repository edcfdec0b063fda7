"""Every shared conformance vector, through the library and through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ledgerfactory import write_ledger

from codeai_tui.read.inspection import project_case
from tests.support import CONFORMANCE, cli, load_vectors

VECTORS = load_vectors()
SHARED = Path(__file__).resolve().parents[3] / "shared" / "conformance"


def _check(doc: dict[str, Any], expect: dict[str, Any]) -> list[str]:
    """Compare an inspect-shaped document with a vector's expectations."""
    problems = []
    by_id = {
        "calls": {c["call_id"]: c for c in doc["calls"]},
        "compilations": {c["compilation_id"]: c for c in doc["compilations"]},
        "tasks": {t["task_id"]: t for t in doc["tasks"]},
    }
    for section, items in expect.items():
        if section not in by_id:
            continue
        for ident, fields in items.items():
            got = by_id[section].get(ident)
            if got is None:
                problems.append(f"{section}.{ident} missing")
                continue
            for key, want in fields.items():
                if got[key] != want:
                    problems.append(f"{section}.{ident}.{key}: got {got[key]!r}, want {want!r}")
        extra = set(by_id[section]) - set(items)
        if section != "tasks" and extra:
            problems.append(f"{section}: unexpected {sorted(extra)}")
    return problems


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("vectors")
    out = {}
    for v in VECTORS:
        out[v["name"]] = write_ledger(root / v["name"], v["events"], receipts=v["receipts"]).parent
    return out


def test_vectors_are_present() -> None:
    assert len(VECTORS) >= 12


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/conformance beside this clone")
def test_copy_of_vectors_is_current() -> None:
    shared = {p.name: p.read_bytes() for p in SHARED.glob("*.json")}
    ours = {p.name: p.read_bytes() for p in CONFORMANCE.glob("*.json")}
    assert ours == shared, "tests/conformance differs from ../shared/conformance: copy it again"


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_library_projection(vector: dict[str, Any], cases: dict[str, Path]) -> None:
    state = project_case(cases[vector["name"]])
    doc = state.as_json("x")
    assert _check(doc, vector["expect"]) == []
    assert doc["anomalies"] == []
    assert doc["event_count"] == len(vector["events"])


@pytest.mark.parametrize(
    "vector", [v for v in VECTORS if "expect_as_of" in v], ids=lambda v: v["name"]
)
def test_library_as_of(vector: dict[str, Any], cases: dict[str, Path]) -> None:
    for seq, expect in vector["expect_as_of"].items():
        state = project_case(cases[vector["name"]], as_of=int(seq))
        assert state.as_of_seq == int(seq)
        assert _check(state.as_json("x"), expect) == [], f"as of {seq}"


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_cli_inspect_json(vector: dict[str, Any], cases: dict[str, Path]) -> None:
    case = cases[vector["name"]]
    proc = cli("inspect", str(case), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format"] == "codeai.work_state.v1"
    assert doc["case"] == str(case)
    assert _check(doc, vector["expect"]) == []
    receipts = vector["receipts"] or []
    assert doc["receipts"]["count"] == len(receipts)
    for seq, expect in vector.get("expect_as_of", {}).items():
        proc = cli("inspect", str(case), "--json", "--as-of", seq)
        assert _check(json.loads(proc.stdout), expect) == [], f"as of {seq}"


def test_cli_bundle_prints_every_case(cases: dict[str, Path]) -> None:
    bundle = next(iter(cases.values())).parent
    proc = cli("inspect", str(bundle), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert sorted(Path(c["case"]).name for c in doc["cases"]) == sorted(cases)


def test_naive_restart_copy_flags_duplicate(cases: dict[str, Path]) -> None:
    doc = project_case(cases["naive_restart_copy"]).as_json("x")
    assert doc["receipts"] == {"count": 2, "uncovered": [], "duplicates": [["r-1", "r-2"]]}
