"""The main screen composes its flows; it is not assembled from mixins."""

from __future__ import annotations

import inspect
import re

from textual.screen import Screen

from codeai_tui.app.screens import (
    advance,
    evidence_actions,
    flow_host,
    replay_flow,
    resume_flow,
)
from codeai_tui.app.screens.main import MainScreen

FLOW_MODULES = (advance, evidence_actions, replay_flow, resume_flow, flow_host)


def test_main_screen_is_a_plain_screen_with_no_mixins() -> None:
    assert MainScreen.__bases__ == (Screen,)
    flow_names = {module.__name__ for module in FLOW_MODULES}
    mixed_in = [cls for cls in MainScreen.__mro__ if cls.__module__ in flow_names]
    assert mixed_in == []


def test_flows_use_no_private_name_of_their_host() -> None:
    for module in (advance, evidence_actions, replay_flow, resume_flow):
        source = inspect.getsource(module)
        assert re.findall(r"\bhost\._\w+", source) == [], module.__name__
        assert "screens.main" not in source, module.__name__  # no import of the screen


def test_resume_is_a_composed_flow() -> None:
    """The resume workers and handlers live in ResumeFlow; MainScreen only delegates."""
    own = vars(MainScreen)
    for name in ("_plan", "_run_resume", "_check_modal_evidence"):
        assert name not in own, name
    for name in ("action_resume", "action_explain_resume", "on_plan_ready",
                 "on_resume_note", "on_resume_done"):
        source = inspect.getsource(own[name])
        assert "self.resume_flow." in source, name  # a one-line delegate
        assert len(source.strip().splitlines()) == 2, name
    flow = vars(resume_flow.ResumeFlow)
    for name in ("action_resume", "action_explain_resume", "on_plan_ready", "on_note",
                 "on_done", "_plan", "_run"):
        assert callable(flow[name]), name
    # the workers are started through the host (FlowHost.run_worker) in group "resume"
    source = inspect.getsource(resume_flow)
    assert source.count('group="resume"') == 2
    assert "@work" not in source
