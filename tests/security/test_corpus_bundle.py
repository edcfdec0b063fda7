"""The whole hostile corpus as one bundle: `inspect BUNDLE --json` prints one document that
follows the bundle schema, every case that cannot be read reported in place as its
one-line error (not a half-written document and exit 2), every other case in full."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hostile import CORPUS, Expect
from schemacheck import problems

from tests.support import cli


@pytest.fixture(scope="module")
def corpus_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus-bundle")
    for h in CORPUS:
        if not h.pending:
            h.build(root / h.name)
    return root


def test_the_corpus_as_one_bundle(corpus_bundle: Path) -> None:
    run = cli("inspect", str(corpus_bundle), "--json")  # (the per-case 5 s deadline: test_corpus)
    assert run.returncode == 0 and run.stderr == "", (run.returncode, run.stderr[-2000:])
    doc = json.loads(run.stdout)
    assert problems(doc) == []
    by_name = {Path(c["case"]).name: c for c in doc["cases"]}
    errors = {name for name, c in by_name.items() if "error" in c}
    readable = {h.name for h in CORPUS if h.expect is not Expect.ERROR and not h.pending}
    unreadable = {h.name for h in CORPUS if h.expect is Expect.ERROR}
    assert readable <= set(by_name) - errors
    assert errors == unreadable & set(by_name)
    assert len(errors) >= 15  # most unreadable ones are found as cases (a directory is not)
    for h in CORPUS:
        if h.name in errors:
            assert h.words in by_name[h.name]["error"], (h.name, by_name[h.name]["error"])
