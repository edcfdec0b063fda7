"""The reliability harness: races, kills mid-action, faults, read-only
checks and a soak, run against every registered write action as real OS processes.

`codeai-tui reliability` runs it and prints one Markdown table; the tests run quick
versions. Imports no Textual and nothing from app/ (the console is driven by tests, or
through its Textual-free follower here).
"""

from codeai_tui.lab.reliability.actions import (
    CONTROLS,
    REGISTRY,
    Action,
    Boundary,
    Target,
    register,
)

__all__ = ["Action", "Boundary", "CONTROLS", "REGISTRY", "Target", "register"]
