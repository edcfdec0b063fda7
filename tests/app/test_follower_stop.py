"""What lets `q` answer during a first load: reads stop when told, and a reader
cancelled while opening leaves no thread behind (the process could not exit)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codeai_tui.console.model import CaseFollower
from codeai_tui.ledger import LedgerError

BIGLEDGER = Path(__file__).resolve().parent / "bigledger.py"


@pytest.fixture(scope="module")
def big_case(tmp_path_factory: pytest.TempPathFactory) -> Path:
    case = tmp_path_factory.mktemp("big") / "case"
    subprocess.run([sys.executable, str(BIGLEDGER), str(case), "20000"], check=True)
    return case


def test_a_catch_up_ends_with_a_ledger_error_once_stop_turns_true(big_case: Path) -> None:
    asked = 0

    def stop() -> bool:
        nonlocal asked
        asked += 1
        # true from the first check on, which SQLite makes inside the first read long
        # enough to be checked (reader.STOP_CHECK_OPS steps): 20,000 events give two
        return asked > 0

    follower = CaseFollower(big_case)
    try:
        follower.stop = stop
        with pytest.raises(LedgerError, match="interrupted"):
            follower.catch_up()
        assert follower.projector.event_count == 0
        follower.stop = None  # the same follower reads on once the stop is withdrawn
        follower.catch_up()
        assert follower.snapshot().event_count == 20000
    finally:
        follower.close()


CANCEL_WHILE_OPENING = """
import asyncio, sys
from pathlib import Path
from codeai_tui.ledger.areader import AsyncLedgerReader

async def main():
    cancelled, kept = 0, []  # errors kept, as a worker keeps its own: no GC closes for us
    for step in range(60):  # an open takes a few ms: cancel all through it
        task = asyncio.create_task(AsyncLedgerReader(Path(sys.argv[1])).open())
        await asyncio.sleep(step * 0.0002)
        task.cancel()
        try:
            reader = await task
        except asyncio.CancelledError as exc:
            cancelled += 1
            kept.append(exc)
            continue
        await reader.close()
    print(cancelled)

asyncio.run(main())
"""


def test_a_reader_cancelled_while_opening_lets_the_process_exit(big_case: Path) -> None:
    """aiosqlite's thread is not a daemon: one left running keeps the process alive
    after the console's screen is gone (seen under load: the summary printed, no exit)."""
    proc = subprocess.Popen([sys.executable, "-c", CANCEL_WHILE_OPENING, str(big_case)],
                            stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError("a reader cancelled while opening kept the process alive") \
            from None
    assert proc.returncode == 0
    assert int(out) >= 5  # the cancels did land inside open()


def test_a_bundle_summary_ends_with_a_ledger_error_once_stop_turns_true(big_case: Path
                                                                        ) -> None:
    """A bundle's case summaries run in the console's worker: `q` must not wait for the
    whole projection of the case being summarised (its reads stop as the follower's do)."""
    from codeai_tui.console.fleet import summarize

    with pytest.raises(LedgerError, match="interrupted"):
        summarize(big_case, lambda: True)
    assert summarize(big_case).event_count == 20000
