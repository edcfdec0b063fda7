"""`inspect --json` documents follow the JSON Schemas the package ships and that each
document names in its `$schema`: every conformance vector (now and as of every seq), every
demo case, and the schemas are strict enough to refuse a document that is not one."""

from __future__ import annotations

import copy
import io
import json
import tomllib
from collections.abc import Callable
from enum import StrEnum
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from ledgerfactory import write_ledger
from schemacheck import BUNDLE_ID, TOOLS_ID, WORK_STATE_ID, problems, schemas

from codeai_tui.read.inspection import write_json
from codeai_tui.workstate.tool_ops import ToolOpStage
from codeai_tui.workstate.tool_receipts import ReceiptVerdict
from codeai_tui.workstate.vocab import (
    CallStage,
    CompilationStage,
    NextOperation,
    ProviderEffect,
)
from tests.support import TESTS, cli, shared_demo_bundle

VECTOR_DIRS = ("conformance", "conformance_ext")
REPO = TESTS.parent


def _vectors() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{d}/{p.stem}", json.loads(p.read_text()))
            for d in VECTOR_DIRS for p in sorted((TESTS / d).glob("*.json"))]


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every conformance vector as a case of one bundle (as tests/core/test_conformance*.py
    write them: plain sqlite3, the receipt log, a tool case's key and receipt lines)."""
    bundle = tmp_path_factory.mktemp("vectors")
    for name, v in _vectors():
        case = write_ledger(bundle / name, v["events"], receipts=v["receipts"]).parent
        if "tools" in v:
            (case / "tools").mkdir()
            (case / "tools" / "kernel.pub").write_text(v["tools"]["kernel_pub"])
            (case / "tools" / "receipts.ndjson").write_text(
                "".join(line + "\n" for line in v["tools"]["receipts_ndjson"]))
    return bundle


def _inspect_json(path: Path, *extra: str) -> dict[str, Any]:
    proc = cli("inspect", str(path), "--json", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _case_names(doc: dict[str, Any], bundle: Path) -> list[str]:
    return sorted(Path(c["case"]).relative_to(bundle).as_posix() for c in doc["cases"])


def test_every_vector_follows_the_schema(vectors: Path) -> None:
    """The real command on a bundle of all vectors: the bundle document and each case's."""
    doc = _inspect_json(vectors)
    assert doc["$schema"] == BUNDLE_ID
    assert _case_names(doc, vectors) == sorted(name for name, _ in _vectors())
    assert all("error" not in c and c["$schema"] == WORK_STATE_ID for c in doc["cases"])
    assert problems(doc) == []
    assert any("tools" in call for c in doc["cases"] for call in c["calls"])  # tools checked


def test_a_single_case_document_follows_the_schema(vectors: Path) -> None:
    case = vectors / "conformance_ext" / "tool_reconciled_executed"
    doc = _inspect_json(case)
    assert doc["$schema"] == WORK_STATE_ID
    assert "counts" in doc and problems(doc) == []


def test_every_vector_as_of_every_seq_follows_the_schema(vectors: Path) -> None:
    """`--as-of` documents: every vector projected as of each of its seqs (0 included),
    through the same writer `inspect --json` uses; and the real command on the bundle."""
    assert len(_vectors()) >= 40
    for name, v in _vectors():
        for seq in range(max(e["seq"] for e in v["events"]) + 1):
            out = io.StringIO()
            write_json(str(vectors / name), seq, out)
            doc = json.loads(out.getvalue())
            assert doc["as_of_seq"] == seq
            assert problems(doc) == [], f"{name} as of {seq}"
    for seq in ("0", "4", "9"):
        assert problems(_inspect_json(vectors, "--as-of", seq)) == [], f"as of {seq}"


def test_every_demo_case_follows_the_schema(tmp_path_factory: pytest.TempPathFactory) -> None:
    bundle = shared_demo_bundle(tmp_path_factory.getbasetemp())
    cases = sorted(p.name for p in bundle.iterdir() if (p / "ledger.sqlite3").exists())
    for extra in ((), ("--as-of", "5")):
        doc = _inspect_json(bundle, *extra)
        assert [Path(c["case"]).name for c in doc["cases"]] == cases
        assert all("error" not in c for c in doc["cases"])
        assert problems(doc) == [], extra
    assert len(cases) >= 17


# ---- strict enough: a document that is not one is refused


def _tool_doc(vectors: Path) -> dict[str, Any]:
    out = io.StringIO()
    write_json(str(vectors / "conformance_ext" / "tool_mixed_operations"), None, out)
    doc = json.loads(out.getvalue())
    assert problems(doc) == []
    return doc


def _first_call(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["calls"][0]


def _first_op(doc: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in doc["calls"] if "tools" in c)["tools"]["operations"][0]


BROKEN: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "bogus stage": (lambda d: _first_call(d).update(stage="bogus"), "'bogus' is not one of"),
    "missing calls": (lambda d: d.pop("calls"), "'calls' is a required property"),
    "no $schema": (lambda d: d.pop("$schema"), "names no shipped schema"),
    "stage and next operation apart": (
        lambda d: _first_call(d).update(stage="effect_unknown", next_operation="finalize"),
        "'reconcile_effect' was expected"),
    "a call without its evidence": (lambda d: _first_call(d).pop("evidence"),
                                    "'evidence' is a required property"),
    "an extra top-level field": (lambda d: d.update(extra=1),
                                 "Additional properties are not allowed"),
    "bogus tool state": (lambda d: _first_op(d).update(state="ran"), "'ran' is not one of"),
    "tool operation without next operation": (lambda d: _first_op(d).pop("next_operation"),
                                              "'next_operation' is a required property"),
    "counts missing beside tools": (lambda d: d.pop("counts"), "'counts' is a required property"),
    "counts missing a field": (lambda d: d["counts"].pop("start_tool"),
                               "'start_tool' is a required property"),
    "a bogus receipt verdict": (
        lambda d: next(o for c in d["calls"] if "tools" in c for o in c["tools"]["operations"]
                       if "receipt" in o)["receipt"].update(verdict="fine"),
        "'fine' is not one of"),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_a_broken_document_is_refused(name: str, vectors: Path) -> None:
    doc = _tool_doc(vectors)
    breaks, words = BROKEN[name]
    breaks(doc)
    found = problems(doc)
    assert len(found) >= 1 and any(words in p for p in found), found


def test_a_bundle_case_without_calls_is_refused(vectors: Path) -> None:
    out = io.StringIO()
    write_json(str(vectors), None, out)
    doc = json.loads(out.getvalue())
    assert problems(doc) == []
    broken = copy.deepcopy(doc)
    del broken["cases"][3]["calls"]
    found = problems(broken)
    assert found == ["cases/3: 'calls' is a required property"], found


def test_counts_only_beside_tools(vectors: Path) -> None:
    """A v1 document (no call with tools) carries no `counts`: one added is refused."""
    out = io.StringIO()
    write_json(str(vectors / "conformance" / "retry_pending"), None, out)
    doc = json.loads(out.getvalue())
    assert problems(doc) == [] and "counts" not in doc
    doc["counts"] = {"effect_unknown": 0, "effect_unknown_calls": 0,
                     "effect_unknown_tool_operations": 0, "tool_operations": 0, "start_tool": 0}
    assert problems(doc) != []


# ---- the schemas and the code say the same


def _enum(path: list[str], schema_id: str) -> set[str]:
    node: Any = schemas()[schema_id]
    for key in path:
        node = node[key]
    return set(node["enum"])


def _values(enum: type[StrEnum]) -> set[str]:
    return {m.value for m in enum}


WORK, TOOLS = WORK_STATE_ID, TOOLS_ID
OP = ["$defs", "operation", "properties"]


def test_the_enums_are_the_projections_vocabulary() -> None:
    """A stage, operation or verdict added to the code without the schema fails here."""
    assert _enum(["$defs", "call", "properties", "stage"], WORK) == _values(CallStage)
    assert _enum(["$defs", "compilation", "properties", "stage"], WORK) == _values(
        CompilationStage)
    assert _enum(["$defs", "next_operation"], WORK) == _values(NextOperation)
    assert _enum(["$defs", "provider_effect"], WORK) == _values(ProviderEffect)
    assert _enum([*OP, "state"], TOOLS) == _values(ToolOpStage)
    assert _enum([*OP, "receipt", "properties", "verdict"], TOOLS) == _values(ReceiptVerdict)
    for path, sid in ((["$defs", "call", "properties", "next_operation"], WORK),
                      (["$defs", "compilation", "properties", "next_operation"], WORK),
                      ([*OP, "next_operation"], TOOLS)):
        assert _enum(path, sid) < _values(NextOperation), path


def test_each_schema_id_names_its_own_file() -> None:
    """A document's `$schema` is a path from the repository root (and from the installed
    package's parent directory) to the file."""
    assert WORK_STATE_ID in schemas() and BUNDLE_ID in schemas()
    for sid in schemas():
        assert (REPO / sid).is_file(), sid
        assert json.loads((REPO / sid).read_text())["$id"] == sid


def test_the_schemas_ship_as_package_data() -> None:
    """A wheel holds only what package-data names: every schema file must match it (a
    wheel built from this tree was seen to hold all four)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["codeai_tui"]
    for sid in schemas():
        inside = PurePosixPath(sid).relative_to("codeai_tui")
        assert any(fnmatch(str(inside), p) for p in patterns), sid
