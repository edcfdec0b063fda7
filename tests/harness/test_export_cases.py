"""Every demo case, exported to be shared, still verifies on its own, and no exported
byte names where the case lived."""

from __future__ import annotations

import json
from pathlib import Path

from codeai_tui.read.export import export_case
from codeai_tui.verify.command import verify_path
from tests.support import cli


def _case_dirs(bundle: Path) -> list[Path]:
    return sorted(p for p in bundle.iterdir() if (p / "ledger.sqlite3").exists())


def test_every_exported_demo_case_verifies_and_names_no_source_path(
    demo_bundle: Path, tmp_path: Path
) -> None:
    cases = _case_dirs(demo_bundle)
    assert len(cases) >= 17
    failed: dict[str, list[str]] = {}
    named: list[str] = []
    # the source, the export, and the temp dir the run built both in (bundle/shared-demo/..)
    needles = {str(p).encode() for p in (demo_bundle.resolve(), tmp_path.resolve(),
                                         demo_bundle.resolve().parent.parent)}
    for case in cases:
        out = tmp_path / case.name
        result = export_case(case, out)
        assert not result.skipped, (case.name, result.skipped)
        lines = [c.line() for c in verify_path(str(out)) if not c.ok]
        if lines:
            failed[case.name] = lines
        for f in sorted(p for p in out.rglob("*") if p.is_file()):
            data = f.read_bytes()
            named += [f"{f.relative_to(tmp_path)} names {n.decode()}" for n in needles if n in data]
    assert not failed, failed
    assert not named, named


def test_an_operators_records_travel_with_the_export(demo_bundle: Path, tmp_path: Path) -> None:
    """The cases an operator acted on (a resume, a reconcile, a naive restart) carry the
    record of that action, so the verifier knows whose events came after the kill; the
    command line says PASS for the export of the resumed case."""
    for name, record in (("09_resumed", "resume_attempt.json"),
                         ("15_reconciled_not_received", "operator_action.json"),
                         ("16_reconciled_received", "operator_action.json"),
                         ("05_naive_restart", "naive_restart.json")):
        export_case(demo_bundle / name, tmp_path / name)
        assert (tmp_path / name / record).read_bytes() == (demo_bundle / name / record).read_bytes()
    doc = json.loads((tmp_path / "09_resumed" / "export.json").read_text())
    assert "resume_attempt.json" in doc["files"] and "exported_from" not in doc
    done = cli("verify", str(tmp_path / "09_resumed"))
    assert done.returncode == 0, done.stdout
    assert "until an operator acted (resume, reconcile)" in done.stdout


def test_an_exported_duplicate_passes_only_as_the_recorded_re_send(
    demo_bundle: Path, tmp_path: Path
) -> None:
    """The naive restart's record explains exactly one identical pair under its key: a
    log without the pair, or a record that does not show the one re-send, fails."""
    def failures(out: Path) -> list[str]:
        return [c.text for c in verify_path(str(out)) if not c.ok]

    lost = tmp_path / "lost"
    export_case(demo_bundle / "05_naive_restart", lost)
    log = lost / "provider" / "receipts.jsonl"
    log.write_text(log.read_text().splitlines()[0] + "\n")
    assert any("records a re-send under key key-1" in f for f in failures(lost))

    doctored = tmp_path / "doctored"
    export_case(demo_bundle / "05_naive_restart", doctored)
    record = json.loads((doctored / "naive_restart.json").read_text())
    record["after"]["receipt_count"] = record["before"]["receipt_count"]
    (doctored / "naive_restart.json").write_text(json.dumps(record))
    assert any(f.startswith("unexpected duplicate effect") for f in failures(doctored))
