"""The head start (console/head_start.py): a case's first open and skeleton read, begun
before Textual loads, handed to the follower thread once, released if no one takes it,
and silent when it fails (the follower's own open reports the problem)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeai_tui.console.head_start import HeadStart, single_case
from codeai_tui.console.model import CaseFollower
from codeai_tui.ledger import LedgerError

BIGLEDGER = Path(__file__).resolve().parent / "bigledger.py"
EVENTS = 20_000  # above the fast path's threshold, so there is a skeleton

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"),
                                reason="the open-file checks read /proc/self/fd")


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Path:
    case = tmp_path_factory.mktemp("head") / "case"
    subprocess.run([sys.executable, str(BIGLEDGER), str(case), str(EVENTS)], check=True)
    return case


def open_ledger_fds(case: Path) -> int:
    """This process's open descriptors on the case's ledger file."""
    ledger = os.path.realpath(case / "ledger.sqlite3")
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == ledger:
                count += 1
        except OSError:
            continue
    return count


def released(case: Path, deadline_s: float = 10.0) -> bool:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if open_ledger_fds(case) == 0:
            return True
        time.sleep(0.01)
    return False


@pytest.fixture
def head(case: Path) -> Iterator[HeadStart]:
    assert open_ledger_fds(case) == 0
    head = HeadStart(case)
    yield head
    head.close()


def test_it_hands_over_the_follower_and_skeleton_a_plain_open_makes(
        case: Path, head: HeadStart) -> None:
    plain = CaseFollower(case)
    try:
        want = plain.skeleton()
    finally:
        plain.close()
    assert want is not None and want.effect_unknown_ids

    got = head.take(case, lambda: False)
    assert got is not None
    follower, skeleton = got
    try:
        assert skeleton is not None
        assert skeleton.effect_unknown_ids == want.effect_unknown_ids
        assert list(skeleton.calls) == list(want.calls)
        assert (follower.event_count, follower.max_seq) == (EVENTS, EVENTS)
        assert head.take(case, lambda: False) is None  # once
        head.close()  # (the console closes it once taken) the follower reads on
        follower.catch_up()
        assert follower.snapshot().state.effect_unknown_ids == want.effect_unknown_ids
    finally:
        follower.close()


def test_the_follower_handed_over_stops_with_the_takers_stop(case: Path,
                                                             head: HeadStart) -> None:
    told = False
    got = head.take(case, lambda: told)
    assert got is not None
    follower = got[0]
    try:
        told = True
        with pytest.raises(LedgerError, match="interrupted"):
            follower.catch_up()
    finally:
        follower.close()


def test_a_stop_already_true_takes_nothing_and_releases_the_ledger(
        case: Path, head: HeadStart) -> None:
    assert head.take(case, lambda: True) is None
    assert released(case)


def test_unclaimed_it_releases_the_ledger_on_close(case: Path, head: HeadStart,
                                                   tmp_path: Path) -> None:
    assert head.take(tmp_path, lambda: False) is None  # another case: not handed over
    deadline = time.monotonic() + 10
    while open_ledger_fds(case) == 0 and time.monotonic() < deadline:
        time.sleep(0.01)  # the head start holds the ledger open (until closed)
    assert open_ledger_fds(case) > 0
    head.close()
    assert released(case)


def test_a_ledger_it_cannot_read_is_left_to_the_follower_to_report(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "case"
    case.mkdir()
    (case / "ledger.sqlite3").write_bytes(b"not a database" * 100)
    head = HeadStart(case)
    try:
        assert head.take(case, lambda: False) is None
    finally:
        head.close()
    assert capfd.readouterr() == ("", "")  # no thread traceback under the screen
    with pytest.raises(LedgerError):
        CaseFollower(case)


def test_single_case_names_a_case_directory_or_its_ledger_never_a_bundle(
        case: Path, tmp_path: Path) -> None:
    assert single_case(case) == case
    assert single_case(case / "ledger.sqlite3") == case
    assert single_case(case.parent) is None  # a bundle of one: opened later, as a bundle
    assert single_case(tmp_path / "missing") is None
    assert single_case(tmp_path / ("x" * 300)) is None  # a name too long to stat: no raise
