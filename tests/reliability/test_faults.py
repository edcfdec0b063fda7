"""Faults around resume: each ends in a clear outcome and a case that passes the checks.
(The full disk has its own test, tests/core/test_disk_full.py; the long outside lock
costs the 10 s busy timeout and runs in `codeai-tui reliability`.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codeai_tui.lab.reliability.faults import (
    ordinary_client,
    outside_lock_brief,
    provider_dies_holding,
    provider_overloaded,
    provider_refuses,
)


@pytest.mark.parametrize("fault", [provider_refuses, provider_dies_holding, outside_lock_brief,
                                   ordinary_client], ids=lambda f: f.__name__)
def test_fault_is_handled(tmp_path: Path, provider: Any, cli: Any, fault: Any) -> None:
    result = fault(tmp_path, provider.base_url, cli)
    assert result.handled, (result.detail, result.problems)
    assert result.problems == []


def test_a_503_retry_is_recorded_and_the_contract_flags_it(
    tmp_path: Path, provider: Any, cli: Any
) -> None:
    """The runner retries a 503 with the same bytes; docs/ledger.md section 5 calls two
    receipts with one key and body a duplicate effect. The harness says so as a note."""
    result = provider_overloaded(tmp_path, provider.base_url, cli)
    assert result.handled, (result.detail, result.problems)
    assert any("duplicate effect" in n for n in result.notes)
