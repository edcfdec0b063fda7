"""An index that disagrees with its table (the corpus's lying-index cases, hostile.py):
no write acts on it, and no reader shows what it says as verdicts.

Every write action reads the call from the table itself as well as through the index
and refuses (exit 2, one line naming the disagreement) with nothing written or sent to
a real provider; `verify` fails the ledger's claim; the readers flag the ledger and take
the verdicts from the table, on the fast path of a big ledger too (the console's
skeleton included). The ledgers are built with plain sqlite3 (rootpages swapped).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import consoleprobe as probe
import pytest
from apphelpers import frozen_clock, wait_for
from hostile import IN_FLIGHT, INDEX_WORDS, LYING_INDEXES, ev, swapped_call_index
from test_corpus import assert_no_write, tree_state

from codeai_tui.app import create_app
from codeai_tui.console.model import CaseFollower
from codeai_tui.ledger import read_receipts
from tests.support import cli

# what the table says of call-1 in each case (the index says otherwise)
TABLE_STAGE = {"index_hides_attempt_started": "effect_unknown",
               "index_shows_completed": "effect_unknown",
               "index_shows_attempt_started": "manifest_recorded"}


def _case(tmp_path: Path, name: str, provider: Any) -> Path:
    """The corpus case, its case.json naming the real provider (bundle mode)."""
    case = tmp_path / name
    LYING_INDEXES[name](case)
    url = f"{provider.base_url.rsplit('/v1', 1)[0]}/c/{name}/v1"
    (case / "case.json").write_text(json.dumps({"provider": {"base_url": url}}))
    return case


def _refused(proc: Any, action: str) -> None:
    """Exit 2 and one error line naming the disagreement (after any note or preview)."""
    assert proc.returncode == 2, (action, proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    errors = [ln for ln in lines if ln.startswith("codeai-tui: ")
              and not ln.startswith("codeai-tui: note:")]
    assert len(errors) == 1 and errors[0] == lines[-1], (action, proc.stderr)
    assert INDEX_WORDS in errors[0] and "call 'call-1'" in errors[0], (action, proc.stderr)


ACTIONS: dict[str, tuple[str, ...]] = {
    "resume": (), "reconcile": ("--finding", "not_received"), "reinterpret": (),
    "redecide": (), "finalize": (), "next-attempt": (),
}


@pytest.mark.parametrize("name", list(LYING_INDEXES))
def test_no_write_action_acts_on_a_call_the_index_lies_about(
        tmp_path: Path, provider: Any, name: str) -> None:
    case = _case(tmp_path, name, provider)
    before = tree_state(case)
    for action, extra in ACTIONS.items():
        _refused(cli(action, str(case), "call-1", *extra, "--yes"), action)
    replay = cli("replay", str(case), "call-1", "--kernel-key",
                 str(tmp_path / "keys" / "kernel.key"), "--yes")
    _refused(replay, "replay")
    assert read_receipts(case).receipts == ()  # the provider received nothing
    assert_no_write(before, tree_state(case))


@pytest.mark.parametrize("name", list(LYING_INDEXES))
def test_verify_fails_the_ledger_claim(tmp_path: Path, name: str) -> None:
    case = tmp_path / name
    LYING_INDEXES[name](case)
    proc = cli("verify", str(case))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    failed = [ln for ln in proc.stdout.splitlines() if ln.startswith("FAIL")]
    assert len(failed) == 1 and INDEX_WORDS in failed[0] and "events_call" in failed[0]


@pytest.mark.parametrize("name", list(LYING_INDEXES))
def test_inspect_flags_the_ledger_first_and_judges_from_the_table(tmp_path: Path,
                                                                  name: str) -> None:
    case = tmp_path / name
    LYING_INDEXES[name](case)
    proc = cli("inspect", str(case), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["anomalies"][0] == {"seq": 0, "problem": INDEX_WORDS}
    (call,) = doc["calls"]
    assert call["stage"] == TABLE_STAGE[name]


async def test_the_console_resume_refuses_what_the_index_disagrees_on(
        tmp_path: Path, provider: Any) -> None:
    """The table says call-1 never started (resumable); the index shows it in flight.
    `r` asks the gate, which reads both and refuses: no dialog, nothing sent."""
    case = _case(tmp_path, "index_shows_attempt_started", provider)
    before = tree_state(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await probe.projected(pilot, "lying index")
        assert probe.anomalies(app)[0] == INDEX_WORDS
        await probe.select_call(pilot, "call-1")
        await pilot.press("r")
        await wait_for(pilot, lambda: any(INDEX_WORDS in n for n in probe.notes(app)),
                       timeout=probe.DEADLINE_S, what="the gate's refusal shown")
        assert not probe.dialog_open(app)
        assert probe.internal_errors(app) == []
        await pilot.press("q")
    assert read_receipts(case).receipts == ()
    assert_no_write(before, tree_state(case))


def test_a_big_ledger_s_fast_path_and_skeleton_do_not_trust_the_index(tmp_path: Path) -> None:
    """From 5,000 events the console paints a skeleton from the index and projects
    through the grouped reads: both compare the index with the table first."""
    filler = [ev(seq, "task.claimed", {"worker": "w"}) for seq in range(5, 6001)]
    case = tmp_path / "big"
    swapped_call_index(IN_FLIGHT + filler, IN_FLIGHT[:-1] + filler)(case)
    follower = CaseFollower(case)
    try:
        assert follower.skeleton() is None  # no stages from the index
        follower.catch_up()
        state = follower.snapshot().state
    finally:
        follower.close()
    assert state.anomalies[0].problem == INDEX_WORDS
    assert state.call("call-1").stage.value == "effect_unknown"  # type: ignore[union-attr]
    doc = json.loads(cli("inspect", str(case), "--json").stdout)
    assert doc["anomalies"][0]["problem"] == INDEX_WORDS
    assert doc["calls"][0]["stage"] == "effect_unknown"
