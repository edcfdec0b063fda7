"""The header's pulse: events per second of the open case, drawn from what another
process commits, so a producer that writes (or stalls) shows at a glance."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from apphelpers import frozen_clock, make_case, ready, wait_for
from ledgerfactory import append_to_case, read_max_seq

from codeai_tui.app import create_app
from codeai_tui.app.widgets.pulse import Pulse

pytestmark = pytest.mark.timeout(90)


def _writer(case: Path, first_seq: int, stop: threading.Event) -> None:
    """Another process's producer: 20 events a second until stopped."""
    seq = first_seq
    while not stop.is_set():
        append_to_case(case, [{"seq": seq, "kind": "task.claimed", "task_id": "task-1",
                               "payload": {"worker": f"w{seq}"}}])
        seq += 1
        time.sleep(0.05)


async def test_the_pulse_draws_the_events_another_process_commits(tmp_path: Path) -> None:
    case = make_case(tmp_path / "c", "completed_task")
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        pulse = app.main.query_one(Pulse)
        assert pulse.region.width > 0 and not any(pulse.rates)
        assert "0 events/s" in str(pulse.query_one("#pulse-words").render())

        stop = threading.Event()
        writer = threading.Thread(target=_writer, args=(case, read_max_seq(case) + 1, stop))
        writer.start()
        try:
            await wait_for(pilot, lambda: sum(1 for r in pulse.rates if r >= 5) >= 2,
                           timeout=15, what="two seconds of events on the line")
            assert "events/s \u00b7 peak" in str(pulse.query_one("#pulse-words").render())
        finally:
            stop.set()
            writer.join()
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        assert app.main.query_one(Pulse).region.width == 0  # under 140 columns: words first
