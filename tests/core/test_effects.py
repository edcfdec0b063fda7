"""The seed's effect table from real kills (SIGKILL of real worker processes), each
figure counted in the tool's own store and the provider's own receipt log."""

from __future__ import annotations

from pathlib import Path

import pytest

from codeai_tui.demo.effects import EFFECT_MODES, run_effect_case
from codeai_tui.tools import Verdict, verify_case_receipts

EXPECTED = {  # mode: (publications, provider_calls, complete), as in the seed
    "generate": (1, 2, True),
    "stream": (1, 2, True),
    "truncated-stream": (0, 1, False),
    "killed-in-tool": (1, 1, False),  # the effect happened; nothing may run it again
    "resumed-decision": (1, 2, True),  # resumed before anything was sent, then replayed
    "fresh-ids": (1, 2, True),  # new tool-call ids on every request: the replay kept the saved one
}


@pytest.mark.parametrize("mode", EFFECT_MODES)
def test_effect_row(tmp_path: Path, mode: str) -> None:
    case = tmp_path / mode
    row = run_effect_case(case, mode, tmp_path / "keys" / "kernel.key")
    assert (row.publications, row.provider_calls, row.complete) == EXPECTED[mode]
    assert row.as_json() == {"mode": mode, "case": mode, "publications": EXPECTED[mode][0],
                             "provider_calls": EXPECTED[mode][1], "complete": EXPECTED[mode][2]}
    if mode == "truncated-stream":
        assert not (case / "tools" / "receipts.ndjson").exists()
        return
    report = verify_case_receipts(case)
    assert report.ok
    expected = Verdict.NO_OUTCOME if mode == "killed-in-tool" else Verdict.VALID
    assert [v.verdict for v in report.verdicts] == [expected]
    if mode == "fresh-ids":  # its counterfactual: the decision asked again on a copy
        from codeai_tui.tools import count_publications

        assert count_publications(case / "naive") == 2
        assert not (case / "naive" / "ledger.sqlite3").exists()


def test_a_re_ask_with_request_derived_ids_is_refused_by_the_kernel(tmp_path: Path) -> None:
    """The naive re-ask publishes twice only because the ids are new: against a provider
    whose ids derive from the request bytes, the same decision comes back under the
    operation key already completed, and the kernel refuses it."""
    import json
    import shutil
    import subprocess
    import sys

    from codeai_tui.lab.provider import ProviderProcess
    from codeai_tui.tools import count_publications

    key = tmp_path / "keys" / "kernel.key"
    case = tmp_path / "generate"
    run_effect_case(case, "generate", key)
    copy = tmp_path / "copy"
    shutil.copytree(case, copy, ignore=shutil.ignore_patterns("*-shm"))
    with ProviderProcess(copy / "provider" / "receipts.jsonl") as prov:
        done = subprocess.run([sys.executable, "-m", "codeai_tui.tools.worker", "reask",
                               str(copy), prov.base_url, str(key)],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["reasked_tool_call_ids"] == said["saved_tool_call_ids"]
    assert [op["outcome"] for op in said["operations"]] == ["refused"]
    assert count_publications(copy) == count_publications(case) == 1


def test_unknown_mode_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown mode"):
        run_effect_case(tmp_path / "x", "regenerate", tmp_path / "k")


def test_an_exported_tool_case_keeps_its_tool_evidence(tmp_path: Path) -> None:
    from codeai_tui.read.export import export_case
    from codeai_tui.tools import count_publications

    case = tmp_path / "generate"
    run_effect_case(case, "generate", tmp_path / "keys" / "kernel.key")
    result = export_case(case, tmp_path / "shared")
    assert {"tools/kernel.pub", "tools/receipts.ndjson", "tools/reports.sqlite3"} <= set(result.files)
    assert not result.skipped
    exported = tmp_path / "shared"
    assert count_publications(exported) == 1
    report = verify_case_receipts(exported)
    assert report.ok and [v.verdict for v in report.verdicts] == [Verdict.VALID]


def test_a_truncated_stream_needs_its_own_truncating_provider(tmp_path: Path) -> None:
    from codeai_tui.demo.effects import run_effect_run

    with pytest.raises(ValueError, match="its own truncating provider"):
        run_effect_run(tmp_path / "x", "truncated-stream", tmp_path / "k",
                       base_url="http://127.0.0.1:9/v1")
    assert not (tmp_path / "x").exists()  # refused before any process ran


def test_worker_phases_record_the_kill_and_the_replay(tmp_path: Path) -> None:
    from codeai_tui.demo.effects import run_effect_run

    run = run_effect_run(tmp_path / "generate", "generate", tmp_path / "keys" / "kernel.key")
    got = [(p.as_json()["step"], p.exit_code, p.as_json()["signal"]) for p in run.phases]
    assert got == [("run", -9, "SIGKILL"), ("replay", 0, None)]
    assert str(tmp_path / "keys") not in " ".join(run.phases[0].argv)  # the key path is not recorded
    assert run.phases[0].argv[-2:] == ["--kill-at", "receipt"]
