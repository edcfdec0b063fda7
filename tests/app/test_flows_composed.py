"""The main screen composes its flows; it is not assembled from mixins (issue 9, C)."""

from __future__ import annotations

import inspect
import re

from textual.screen import Screen

from codeai_tui.app.screens import advance, evidence_actions, flow_host, replay_flow
from codeai_tui.app.screens.main import MainScreen

FLOW_MODULES = (advance, evidence_actions, replay_flow, flow_host)


def test_main_screen_is_a_plain_screen_with_no_mixins() -> None:
    assert MainScreen.__bases__ == (Screen,)
    flow_names = {module.__name__ for module in FLOW_MODULES}
    mixed_in = [cls for cls in MainScreen.__mro__ if cls.__module__ in flow_names]
    assert mixed_in == []


def test_flows_use_no_private_name_of_their_host() -> None:
    for module in (advance, evidence_actions, replay_flow):
        source = inspect.getsource(module)
        assert re.findall(r"\bhost\._\w+", source) == [], module.__name__
        assert "screens.main" not in source, module.__name__  # no import of the screen
