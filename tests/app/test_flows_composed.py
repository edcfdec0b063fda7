"""The main screen composes one flow for every gated action; it is not assembled from
mixins, and the flow is the same four steps for every action in the registry."""

from __future__ import annotations

import inspect
import re

from textual.screen import Screen

from codeai_tui.actions.registry import ACTIONS
from codeai_tui.app import actions as bindings
from codeai_tui.app.screens import action_flow, evidence_actions, flow_host
from codeai_tui.app.screens.main import MainScreen
from codeai_tui.console.actions import Outcome

FLOW_MODULES = (action_flow, evidence_actions, flow_host)


def test_main_screen_is_a_plain_screen_with_no_mixins() -> None:
    assert MainScreen.__bases__ == (Screen,)
    flow_names = {module.__name__ for module in FLOW_MODULES}
    mixed_in = [cls for cls in MainScreen.__mro__ if cls.__module__ in flow_names]
    assert mixed_in == []


def test_flows_use_no_private_name_of_their_host() -> None:
    for module in (action_flow, evidence_actions):
        source = inspect.getsource(module)
        assert re.findall(r"\bhost\._\w+", source) == [], module.__name__
        assert "screens.main" not in source, module.__name__  # no import of the screen


def test_every_gated_key_is_a_one_line_delegate_to_the_one_flow() -> None:
    """The plan and run workers live in ActionFlow; MainScreen only delegates, for every
    gated write's key and its explaining companion alike. What the workers post, the flow
    handles itself: the screen routes none of it."""
    own = vars(MainScreen)
    for name in ("_plan", "_run", "_run_resume", "_check_modal_evidence"):
        assert name not in own, name
    for write, explain in bindings.GATED.items():
        for name in (f"action_{write}", f"action_{explain}"):
            source = inspect.getsource(own[name])
            assert "self.action_flow." in source, name
            assert len(source.strip().splitlines()) == 2, name
    for name in ("on_action_planned", "on_action_progressed", "on_action_ended"):
        assert name not in own, name
        assert name in vars(action_flow.ActionFlow), name


def test_one_flow_plans_and_runs_every_action_in_its_own_worker_group() -> None:
    source = inspect.getsource(action_flow)
    assert source.count('group="action"') == 2  # the plan worker and the run worker
    assert "@work" not in source
    # every registered action has its dialog, and every gated key starts one of them
    assert set(action_flow.DIALOGS) == {a.name for a in ACTIONS}
    assert {bindings.key_of(write) for write in bindings.GATED} == {a.key for a in ACTIONS}
    # what the action log calls a run that ended well is an outcome it knows
    assert {a.done_word for a in ACTIONS} <= {o.value for o in Outcome}


def test_the_flow_host_has_one_in_progress_state_and_no_shared_flags() -> None:
    members = set(vars(flow_host.FlowHost)) | set(flow_host.FlowHost.__annotations__)
    for flag in ("planning", "resuming", "reconciling", "replaying", "service",
                 "replay_service"):
        assert flag not in members, flag
