"""B: a bundle of 1,000 cases lists every case's verdict quickly (0.7 s before v2)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from apphelpers import frozen_clock, make_case, ready, wait_for

from codeai_tui.app import create_app

# measured 1.7 s on an idle machine (48 s before summaries were batched); the bound is
# loose because the full suite shares 2 cores with other work
LIMIT_S = 15.0


async def test_a_thousand_cases_list_fast(tmp_path: Path) -> None:
    template = make_case(tmp_path / "template", "killed_in_flight")
    bundle = tmp_path / "bundle"
    for i in range(1000):
        shutil.copytree(template, bundle / f"case-{i:04d}")
    app = create_app(bundle, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        started = time.monotonic()
        await ready(pilot)
        cases = app.main.cases_pane
        await wait_for(pilot, lambda: len(cases.verdicts) == 1000, timeout=60,
                       what="1,000 verdicts")
        took = time.monotonic() - started
        assert cases.row_count == 1000
        assert took < LIMIT_S, f"1,000 cases took {took:.2f} s"
        print(f"1,000 cases listed in {took:.2f} s")
