"""`codeai-tui verify PATH`: one line per claim, then `N passed, M failed`.

Exit 0 when every claim passes, 1 when any fails, 2 on bad input (missing path, no
ledger anywhere): one line, never a traceback. A case that cannot be read at all is a
FAIL for that case, not a crash; the others are still checked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from codeai_tui.textsafe import visible
from codeai_tui.verify.claims import (
    Claim,
    artifact_claims,
    as_dict,
    attempt_claims,
    inspection_claims,
    inventory_claims,
    ledger_claims,
    receipt_claims,
    recorded_restart_key,
    termination_claims,
)
from codeai_tui.verify.effects import TOOL_EXPECTED, effects_claims, tool_case_claims
from codeai_tui.verify.experiment import EXPECTED, bundle_claims, copy_source_claim, role_claims
from codeai_tui.verify.fresh_ids import fresh_id_claims
from codeai_tui.verify.rules import derive
from codeai_tui.verify.store import CaseData, find_case_dirs, read_case, read_file

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(Exception):
    """Not something verify can check: one line, exit 2."""


def load_manifest(root: Path) -> tuple[dict[str, Any] | None, list[Claim]]:
    path = root / "bundle.json"
    if not path.exists():
        return None, []
    try:
        doc = json.loads(read_file(path).decode("utf-8"))
    except (OSError, ValueError) as exc:
        return None, [Claim(False, "bundle", f"bundle.json is unreadable ({exc})")]
    if not isinstance(doc, dict):
        return None, [Claim(False, "bundle", "bundle.json is not a JSON object")]
    return doc, []


def case_claims(case: CaseData, entry: dict[str, Any], cases: dict[str, CaseData]) -> list[Claim]:
    role = str(entry.get("role")) if entry else None
    expect = EXPECTED.get(role or "")
    derived = derive(case.rows)
    resume = as_dict(case.json_doc("resume_attempt.json"))
    claims = ledger_claims(case)
    termination = case.json_doc("termination.json")
    if termination is not None:
        acted = as_dict(case.json_doc("operator_action.json")).get("exit_code") == 0
        claims += termination_claims(case, termination,
                                     resumed=resume.get("exit_code") == 0 or acted)
    elif entry and role not in TOOL_EXPECTED:  # tool cases record their workers instead
        claims.append(Claim(False, case.name, "termination.json is missing"))
    for filename, final in (("inspection_before_resume.json", False), ("inspection.json", True)):
        doc = case.json_doc(filename)
        if doc is not None:
            claims += inspection_claims(case, doc, filename, final)
        elif entry and final:
            claims.append(Claim(False, case.name, "inspection.json is missing"))
    claims += receipt_claims(case, derived, duplicates_expected=bool(expect and expect.duplicates),
                             restarted=recorded_restart_key(case))
    artifacts = artifact_claims(case)
    claims += artifacts[:1]
    if entry:
        # What the demo's producer guarantees beyond the contract: attempts send the
        # manifest's bytes, and every artifact a case names ships with it.
        claims += attempt_claims(case, derived)
        claims += artifacts[1:]
    if expect is not None and role is not None:
        claims += role_claims(case, role, derived)
        copy_of = entry.get("copy_of")
        claims += copy_source_claim(case, copy_of if isinstance(copy_of, str) else None, cases)
    claims += tool_case_claims(case, role)
    claims += fresh_id_claims(case, role)
    return claims


def verify_path(path: str) -> list[Claim]:
    root = Path(path)
    if not root.exists():
        raise BadInput(f"{path}: no such file or directory")
    if root.is_file() and root.name == "ledger.sqlite3":
        root = root.parent
    if not root.is_dir():
        raise BadInput(f"{path}: not a bundle or a case directory")
    dirs = find_case_dirs(root)
    if not dirs:
        raise BadInput(f"{path}: not a bundle (no ledger.sqlite3 in it or below it)")
    manifest, claims = load_manifest(root)
    entries = {str(c.get("dir")): c for c in (manifest or {}).get("cases") or [] if isinstance(c, dict)}
    cases: dict[str, CaseData] = {}
    for d in dirs:
        label = d.relative_to(root).as_posix() if d != root else d.name
        try:
            data = read_case(d)
        except Exception as exc:  # noqa: BLE001 - any unreadable case is a FAIL line
            claims.append(Claim(False, label, f"cannot read the case: {type(exc).__name__}: {exc}"))
            continue
        cases[label] = data
    if manifest is not None:
        claims += bundle_claims(manifest, cases)
        claims += inventory_claims(root, cases)
        claims += effects_claims(root, entries, cases)
    for label, data in cases.items():
        try:
            claims += case_claims(data, entries.get(label, {}), cases)
        except Exception as exc:  # noqa: BLE001 - malformed recorded evidence
            claims.append(Claim(False, label, f"could not be checked: {type(exc).__name__}: {exc}"))
    return claims


def run_verify_command(path: str) -> int:
    try:
        claims = verify_path(path)
    except BadInput as exc:
        print(f"codeai-tui verify: {visible(str(exc), one_line=True)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"codeai-tui verify: {visible(f'{path}: {exc.strerror or exc}', one_line=True)}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - never a traceback: could not verify = failed
        print(f"codeai-tui verify: could not verify: "
              f"{visible(f'{type(exc).__name__}: {exc}', one_line=True)}", file=sys.stderr)
        return EXIT_FAILED
    for claim in claims:
        print(claim.line())
    failed = sum(1 for c in claims if not c.ok)
    passed = sum(1 for c in claims if c.ok and not c.info)
    print(f"{passed} passed, {failed} failed")
    return EXIT_FAILED if failed else EXIT_OK
