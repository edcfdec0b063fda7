"""The JSON Schemas of `inspect --json`, read from the installed package as it ships them,
and a check of a document against the schema its own `$schema` names."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource

# what a document's `$schema` names: a path from the repository root (and from the
# installed package's parent directory) to the schema file, which is also its `$id`
WORK_STATE_ID = "codeai_tui/schemas/work_state.v1.schema.json"
BUNDLE_ID = "codeai_tui/schemas/bundle.v1.schema.json"
TOOLS_ID = "codeai_tui/schemas/tools.v1.schema.json"
SCHEMA_FILES = ("work_state.v1.schema.json", "bundle.v1.schema.json", "tools.v1.schema.json",
                "counts.v1.schema.json")


@cache
def schemas() -> dict[str, dict[str, Any]]:
    """Each shipped schema by its `$id`."""
    out = {}
    for name in SCHEMA_FILES:
        schema = json.loads((files("codeai_tui") / "schemas" / name).read_text("utf-8"))
        Draft202012Validator.check_schema(schema)
        out[schema["$id"]] = schema
    return out


@cache
def _registry() -> Registry:
    return Registry().with_resources(
        (sid, Resource.from_contents(schema)) for sid, schema in schemas().items())


def validator(schema_id: str) -> Draft202012Validator:
    return Draft202012Validator(schemas()[schema_id], registry=_registry())


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def problems(doc: Any) -> list[str]:
    """Why `doc` does not follow the schema it names (none: it does). A document that
    names no shipped schema is one problem."""
    named = doc.get("$schema") if isinstance(doc, dict) else None
    if named not in schemas():
        return [f"the document names no shipped schema ($schema {_short(repr(named))})"]
    return [_worded(e) for e in validator(named).iter_errors(doc)]


def _worded(error: ValidationError) -> str:
    """Where and what: for a bundle's case that fits neither form, the error deepest in
    the case (not the whole case repeated)."""
    if error.context:
        error = best_match(error.context)
    return f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {_short(error.message)}"
