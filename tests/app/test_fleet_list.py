"""B: a bundle of 1,000 cases lists every case's verdict. How fast is `codeai-tui bench`'s
business (its "1,000-case bundle" row), not a timed unit test's: here a generous deadline
only guards against a hang or a per-case cost gone quadratic."""

from __future__ import annotations

import shutil
from pathlib import Path

from apphelpers import frozen_clock, make_case, ready, wait_for

from codeai_tui.app import create_app

# 48 s before summaries were batched; ~1-2 s now (see the bench)
DEADLINE_S = 60.0


async def test_a_thousand_cases_are_all_listed(tmp_path: Path) -> None:
    template = make_case(tmp_path / "template", "killed_in_flight")
    bundle = tmp_path / "bundle"
    for i in range(1000):
        shutil.copytree(template, bundle / f"case-{i:04d}")
    app = create_app(bundle, clock=frozen_clock)
    async with app.run_test(size=(160, 48)) as pilot:
        await ready(pilot)
        cases = app.main.pane("cases")
        await wait_for(pilot, lambda: len(cases.verdicts) == 1000, timeout=DEADLINE_S,
                       what="1,000 verdicts")
        assert cases.row_count == 1000
