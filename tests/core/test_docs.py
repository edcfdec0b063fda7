"""The contract ships with the code and says what the code does: docs/ledger.md names every
event kind, stage and next operation, holds the writer's exact schema, and its ladder has a
row for every verdict a conformance vector expects; and no documentation, help text, error
message or comment names a file that is not in the repository."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from codeai_tui.cli.main import build_parser
from codeai_tui.ledger.schema import KNOWN_KINDS, SCHEMA_SQL
from codeai_tui.workstate.tool_ops import ToolOpStage
from codeai_tui.workstate.vocab import CallStage, CompilationStage, NextOperation
from tests.support import TESTS

REPO = TESTS.parent
DOCS = REPO / "docs"
LEDGER_DOC = DOCS / "ledger.md"
TOOLS_DOC = DOCS / "tools.md"
OPERATIONS = {o.value for o in NextOperation}


def _backticked(text: str) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", text))


# ---- the contract names what the code knows


def test_every_event_kind_is_in_the_contract() -> None:
    named = _backticked(LEDGER_DOC.read_text())
    assert sorted(KNOWN_KINDS - named) == []


def test_every_stage_and_next_operation_is_in_the_contract() -> None:
    named = _backticked(LEDGER_DOC.read_text())
    for vocabulary in (NextOperation, CallStage, CompilationStage, ToolOpStage):
        assert sorted({v.value for v in vocabulary} - named) == [], vocabulary.__name__


def test_the_contract_holds_the_writers_schema() -> None:
    blocks = re.findall(r"```sql\n(.*?)```", LEDGER_DOC.read_text(), re.S)
    assert [b.strip() for b in blocks] == [SCHEMA_SQL.strip()]


# ---- the ladder tables against the conformance vectors


def _table_pairs(text: str, first: str, second: str) -> set[tuple[str, str]]:
    """(first, second) word pairs of every markdown table whose header has both columns:
    each backticked word of the one cell with each of the other's."""
    pairs: set[tuple[str, str]] = set()
    columns: tuple[int, int] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            columns = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if columns is None:
            names = [c.strip("`") for c in cells]
            columns = (names.index(first), names.index(second)) if (
                first in names and second in names) else (-1, -1)
            continue
        if columns == (-1, -1) or set(line) <= set("|-: "):
            continue
        a, b = (_backticked(cells[i]) for i in columns)
        pairs |= {(x, y) for x in a for y in b & OPERATIONS}
    return pairs


def _vector_points() -> Iterator[tuple[str, dict[str, object]]]:
    for d in ("conformance", "conformance_ext"):
        for p in sorted((TESTS / d).glob("*.json")):
            v = json.loads(p.read_text())
            yield p.stem, v["expect"]
            for seq, expect in v.get("expect_as_of", {}).items():
                yield f"{p.stem}@{seq}", expect


def _expected(section: str, state_key: str) -> Iterator[tuple[str, tuple[str, str]]]:
    for name, expect in _vector_points():
        for ident, fields in expect.get(section, {}).items():  # type: ignore[attr-defined]
            if state_key in fields and "next_operation" in fields:
                yield f"{name} {ident}", (fields[state_key], fields["next_operation"])


def _section(text: str, heading: str) -> str:
    """The text under `heading` up to the next heading of any level."""
    return re.split(r"\n#+ ", text.split(f"\n{heading}\n", 1)[1], maxsplit=1)[0]


@pytest.mark.parametrize(("section", "heading"), [("calls", "### The call ladder"),
                                                  ("compilations", "### Compilations")])
def test_every_verdict_of_the_vectors_has_its_rung(section: str, heading: str) -> None:
    rungs = _table_pairs(_section(LEDGER_DOC.read_text(), heading), "stage", "next operation")
    seen = dict(_expected(section, "stage"))
    assert len(rungs) >= 3 and len(seen) >= 5
    assert {where: pair for where, pair in seen.items() if pair not in rungs} == {}


def test_every_tool_operation_verdict_of_the_vectors_has_its_rung() -> None:
    rungs = _table_pairs(TOOLS_DOC.read_text(), "state", "next_operation")
    seen = {f"{name} {ident} #{i}": (op["state"], op["next_operation"])
            for name, expect in _vector_points()
            for ident, fields in expect.get("calls", {}).items()  # type: ignore[attr-defined]
            for i, op in enumerate(fields.get("tool_operations", []))}
    assert len(seen) >= 20
    assert {where: pair for where, pair in seen.items() if pair not in rungs} == {}


# ---- every file named exists


MD_NAME = re.compile(r"[\w./-]*\w\.md\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"`((?:codeai_tui|tests|docs)/[^`\s]*)`")


def _exists(name: str, beside: Path) -> bool:
    """A name resolves from the repository root or from the directory of the file that
    names it (a glob from the root must match something)."""
    if "*" in name:
        return any(REPO.glob(name))
    return (REPO / name).exists() or (beside / name).exists()


def missing_names(path: Path) -> list[str]:
    """The `*.md` names, markdown link targets and backticked repository paths in `path`
    that name nothing in the repository."""
    text = path.read_text(encoding="utf-8")
    names = set(MD_NAME.findall(text))
    if path.suffix == ".md":
        names |= {t.split("#")[0] for t in LINK.findall(text)
                  if not re.match(r"[a-z]+:|#", t)}
        names |= {t.split("::")[0].rstrip(".,;:") for t in REPO_PATH.findall(text)}
    return sorted(f"{path.relative_to(REPO)}: {n}" for n in names
                  if n and not _exists(n, path.parent))


def _sources() -> list[Path]:
    files = [*(REPO / "codeai_tui").rglob("*.py"), *(REPO / "codeai_tui").rglob("*.md"),
             *DOCS.rglob("*.md")]
    return sorted(p for p in files if "__pycache__" not in p.parts)


def test_code_and_docs_name_only_files_in_the_repository() -> None:
    sources = _sources()
    assert [m for p in sources for m in missing_names(p)] == []
    assert LEDGER_DOC in sources and len(sources) > 100


def test_the_readme_names_only_files_in_the_repository() -> None:
    assert missing_names(REPO / "README.md") == []


def _help(*argv: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out), pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--help"])
    return out.getvalue()


def _helps() -> Iterator[tuple[str, str]]:
    """Every command's `--help`, the commands read from the top-level help's list."""
    top = _help()
    yield "codeai-tui", top
    listed = top.split("COMMAND\n", 1)[1].split("\n\n", 1)[0]
    for command in re.findall(r"^    ([a-z][a-z-]+)", listed, re.M):
        yield command, _help(command)


def test_help_texts_name_the_contract_that_ships() -> None:
    helps = dict(_helps())
    for command, text in helps.items():
        named = set(MD_NAME.findall(text)) | set(
            re.findall(r"\b(?:codeai_tui|docs)/[\w./-]*", text))
        assert [n for n in sorted(named) if not (REPO / n).exists()] == [], command
    assert len(helps) > 15
    assert "docs/ledger.md" in helps["inspect"]
