"""Case directories and bundles (docs/ledger.md section 1) and the optional case.json."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codeai_tui.ledger.errors import LedgerError, LedgerProblem
from codeai_tui.ledger.safefile import read_regular
from codeai_tui.ledger.schema import LEDGER_FILENAME

BUNDLE_DEPTH = 4
RECEIPTS_RELPATH = Path("provider") / "receipts.jsonl"
CASE_JSON = Path("case.json")
CASE_JSON_LIMIT = 1024 * 1024


def named_case(p: Path) -> Path | None:
    """The case directory `p` itself names, without walking a bundle: `p` when it holds a
    ledger, its parent when it is one (not a directory), else None. lexists: a special
    file, a symlink or a dangling one named ledger.sqlite3 is the reader's to refuse,
    clearly. Raises OSError where `p` cannot be looked at."""
    if p.is_dir():
        return p if os.path.lexists(p / LEDGER_FILENAME) else None
    return p.parent if p.name == LEDGER_FILENAME and os.path.lexists(p) else None


def find_cases(path: str | os.PathLike[str]) -> list[Path]:
    """A case dir, a ledger file or a bundle -> the case directories, sorted.

    Raises LedgerError(MISSING) when the path does not exist, cannot be looked at (a name
    too long, a directory it may not search) or holds no ledger.
    """
    p = Path(path)
    try:
        exists, is_dir, case = p.exists(), p.is_dir(), named_case(p)
    except OSError as exc:
        raise LedgerError(LedgerProblem.MISSING, f"{path}: {exc.strerror or exc}") from None
    if not exists:
        raise LedgerError(LedgerProblem.MISSING, f"{path}: no such file or directory")
    if case is not None:
        return [case]
    if not is_dir:
        raise LedgerError(
            LedgerProblem.NOT_A_LEDGER,
            f"{path}: not a case directory (expected a directory holding {LEDGER_FILENAME})",
        )
    found: list[Path] = []
    base_depth = len(p.parts)
    for root, dirs, files in os.walk(p):
        depth = len(Path(root).parts) - base_depth
        dirs.sort()
        if depth >= BUNDLE_DEPTH:
            dirs[:] = []
        if LEDGER_FILENAME in files and depth >= 1:
            found.append(Path(root))
    if not found:
        raise LedgerError(
            LedgerProblem.NOT_A_LEDGER,
            f"{path}: no {LEDGER_FILENAME} in it or in its subdirectories (depth <= {BUNDLE_DEPTH})",
        )
    return sorted(found)


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    base_url: str = "http://127.0.0.1:8768/v1"
    model: str = "synthetic-small"
    api_key_env: str | None = "CODEAI_API_KEY"
    # what the provider at base_url must answer to be this case's (a demo bundle's id):
    # checked before anything is written or sent (codeai_tui/runtime/destination.py)
    identity: str | None = None


@dataclass(frozen=True, slots=True)
class CaseConfig:
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    description: str = ""
    present: bool = False
    # which provider keys case.json itself set (untrusted: see codeai_tui/runtime/destination.py)
    base_url_set: bool = False
    api_key_env_set: bool = False

    def with_overrides(
        self, *, model: str | None = None, base_url: str | None = None
    ) -> CaseConfig:
        prov = ProviderConfig(
            base_url=base_url or self.provider.base_url,
            model=model or self.provider.model,
            api_key_env=self.provider.api_key_env,
            identity=self.provider.identity,
        )
        return replace(self, provider=prov)


def load_case_config(case_dir: str | os.PathLike[str]) -> CaseConfig:
    """Read case.json; absent -> defaults. Malformed -> LedgerError with one line.

    Untrusted: a symlink, FIFO or device is refused without blocking; a value of the wrong
    type is an error, never silently replaced by a default (a default base_url would send
    the request somewhere the case never named)."""
    path = Path(case_dir) / CASE_JSON
    raw = read_regular(Path(case_dir), CASE_JSON, limit=CASE_JSON_LIMIT)
    if raw is None:
        return CaseConfig()
    try:
        data: Any = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: case.json is not UTF-8 text") from None
    except (ValueError, RecursionError) as exc:
        why = exc.args[0] if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: case.json is not JSON ({why})") from None
    if not isinstance(data, dict):
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: case.json is not a JSON object")
    prov = data.get("provider", {})
    if not isinstance(prov, dict):
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: 'provider' is not an object")
    defaults = ProviderConfig()

    def _str(key: str, default: str | None) -> str | None:
        value = prov.get(key, default)
        if isinstance(value, str) or (value is None and key in ("api_key_env", "identity")):
            return value
        raise LedgerError(LedgerProblem.CORRUPT,
                          f"{path}: provider.{key} is {type(value).__name__}, not a string")

    if not isinstance(data.get("description", ""), str):
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: 'description' is not a string")

    return CaseConfig(
        provider=ProviderConfig(
            base_url=_str("base_url", defaults.base_url) or defaults.base_url,
            model=_str("model", defaults.model) or defaults.model,
            api_key_env=_str("api_key_env", defaults.api_key_env),
            identity=_str("identity", None) or None,
        ),
        description=data.get("description", ""),
        present=True,
        base_url_set=isinstance(prov.get("base_url"), str) and bool(prov.get("base_url")),
        api_key_env_set=isinstance(prov.get("api_key_env"), str),
    )


def case_config_problem(case_dir: str | os.PathLike[str]) -> str | None:
    """One line saying why case.json cannot be used (for `inspect`), or None if it can."""
    try:
        load_case_config(case_dir)
    except LedgerError as exc:
        return str(exc)
    return None


TERMINATION_FILE = "termination.json"


def read_termination(case_dir: str | os.PathLike[str]) -> dict[str, object] | None:
    """The case's termination record (how its producer was stopped: the demo harness
    writes one), or None when there is none or it is not a small regular JSON object.
    Untrusted like every file of a case: it can only relax a warning, never permit."""
    try:
        data = read_regular(Path(case_dir), Path(TERMINATION_FILE), limit=64 * 1024)
    except (LedgerError, OSError):
        return None
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None
