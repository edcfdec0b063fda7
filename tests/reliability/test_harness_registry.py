"""The harness drives exactly the product's gated writes, in the product's order, and
refuses to start where a registered write has no harness entry (no write path goes
unraced)."""

from __future__ import annotations

import pytest

from codeai_tui.actions.registry import ACTIONS
from codeai_tui.lab.reliability import REGISTRY
from codeai_tui.lab.reliability.actions import HARNESSED, from_product_registry


def test_the_harness_registry_is_the_product_registry() -> None:
    assert list(REGISTRY) == [a.name for a in ACTIONS]


def test_a_gated_write_without_a_harness_entry_stops_the_harness() -> None:
    fewer = {name: a for name, a in HARNESSED.items() if name != "finalize"}
    with pytest.raises(RuntimeError, match="finalize"):
        from_product_registry(fewer)
