"""One action registry: it feeds the screen's bindings, the help screen and the command
palette, so a key remapped with `App.set_keymap` shows the same everywhere.

No private Textual API: the app records the keymap it was given (`keymap_in_use`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True, slots=True)
class ActionSpec:
    id: str  # the binding id (what a keymap names)
    keys: str  # default keys, comma-separated, Textual names
    action: str  # the screen action it runs
    description: str  # footer / help
    title: str  # command palette
    show: bool = False  # in the footer
    writes: bool = False  # hidden in read-only mode
    palette: bool = True
    group: str = "move"  # where the help lists it (GROUPS)


# the help lists keys by what they do, in this order
GROUPS: tuple[tuple[str, str], ...] = (
    ("act", "Act on the selected call (a dialog with Cancel focused; y confirms)"),
    ("find", "Find what matters"),
    ("time", "Step through time"),
    ("move", "Move and look"),
    ("session", "This session"),
)


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec("resume", "r", "resume", "Resume", "Resume the selected call (gated by the "
               "projection and the drift check)", show=True, writes=True, palette=False, group="act"),
    ActionSpec("advance", "v", "advance", "Advance", "Advance the selected call as the "
               "projection says: reinterpret, redecide, finalize, next attempt, or decide a "
               "duplicate (confirmation first)", show=True, writes=True, palette=False, group="act"),
    ActionSpec("reconcile", "x", "reconcile", "Reconcile", "Reconcile the selected call's "
               "unknown effect: record received / not received, from the provider's log; or "
               "its tool operation's: record executed / not executed",
               show=True, writes=True, palette=False, group="act"),
    ActionSpec("goto_receipt", "p", "goto_receipt", "Go to receipt",
               "Go to the provider receipt(s) matching the selected call", group="find"),
    ActionSpec("goto_call", "c", "goto_call", "Go to call",
               "Go to the call and attempt the selected receipt matches", group="find"),
    ActionSpec("replay", "R", "replay", "Replay", "Replay the selected call's saved tool plan "
               "(gated by the projection; no provider)", show=True, writes=True, palette=False, group="act"),
    ActionSpec("next_effect_unknown", "e", "next_effect_unknown", "Next unknown",
               "Next effect_unknown call (all cases)", show=True, group="find"),
    ActionSpec("help", "question_mark,f1", "help", "Help", "Help: all key bindings", show=True, group="session"),
    ActionSpec("quit", "q", "quit", "Quit", "Quit", show=True, group="session"),
    ActionSpec("filter", "slash", "filter", "Filter", "Filter the focused pane", show=True, group="find"),
    ActionSpec("time_travel", "t", "time_travel", "Time travel",
               "Time travel to the selected event / back to live", show=True, group="time"),
    ActionSpec("action_log", "a", "action_log", "Actions",
               "Action log: what was done this session", show=True, group="session"),
    ActionSpec("toggle_follow", "f", "toggle_follow", "Follow",
               "Toggle follow (live / paused)", show=True, group="session"),
    ActionSpec("focus.cases", "1", "focus_pane('cases')", "Cases", "Focus Cases"),
    ActionSpec("focus.tasks", "2", "focus_pane('tasks')", "Tasks", "Focus Tasks"),
    ActionSpec("focus.calls", "3", "focus_pane('calls')", "Calls", "Focus Calls"),
    ActionSpec("focus.compilations", "4", "focus_pane('compilations')", "Compilations",
               "Focus Compilations"),
    ActionSpec("focus.timeline", "5", "focus_pane('timeline')", "Timeline", "Focus Timeline"),
    ActionSpec("focus.receipts", "6", "focus_pane('receipts')", "Receipts", "Focus Receipts"),
    ActionSpec("focus.lanes", "l", "focus_pane('lanes')", "Lanes",
               "Lanes: one lane per call, attempts and effect-unknown spans on a seq or "
               "time axis"),
    ActionSpec("next_pane", "tab", "next_pane", "Next pane", "Next pane"),
    ActionSpec("step.back", "left_square_bracket", "step(-1)", "Step back",
               "Step back one event", group="time"),
    ActionSpec("step.forward", "right_square_bracket", "step(1)", "Step forward",
               "Step forward one event", group="time"),
    ActionSpec("call_event.next", "n", "call_event(1)", "Next event of call",
               "Next event of the selected call", group="find"),
    ActionSpec("call_event.previous", "N", "call_event(-1)", "Previous event of call",
               "Previous event of the selected call", group="find"),
    ActionSpec("back", "escape", "back", "Back to live / clear filter",
               "Back to live, or clear the focused pane's filter", group="time"),
    ActionSpec("toggle_hashes", "h", "toggle_hashes", "Full hashes",
               "Show full / short hashes in Detail"),
    ActionSpec("open_case", "enter", "open_case", "Open case", "Open the selected case",
               palette=False),
    ActionSpec("sort_cases", "o", "sort_cases", "Sort cases",
               "Sort the Cases pane: by path / worst first"),
    ActionSpec("command_palette", "colon", "app.command_palette", "Commands", "Commands",
               palette=False, group="session"),
)

BY_ID = {spec.id: spec for spec in ACTIONS}
# A gated write's key where the write is not permitted (or the console is read-only)
# explains why; the companion follows the write's key. The footer shows a write's key
# only where the selected call's next operation is that write, so the key on screen is
# the next step.
EXPLAIN_RESUME_ID = "resume.explain"
EXPLAIN_RECONCILE_ID = "reconcile.explain"
COMPANIONS = {"resume": EXPLAIN_RESUME_ID, "reconcile": EXPLAIN_RECONCILE_ID,
              "advance": "advance.explain", "replay": "replay.explain"}
# gated write actions: the action, and the one that explains a refusal in its place
GATED = {"resume": "explain_resume", "reconcile": "explain_reconcile",
         "advance": "explain_advance", "replay": "explain_replay"}


def key_of(action_id: str) -> str:
    """The registry key (codeai_tui/actions/registry.py) of a gated write's binding: its
    default key, whatever keymap remaps it to."""
    return BY_ID[action_id].keys


def gated_answer(action: str, read_only: bool, permitted: Callable[[str], bool]
                 ) -> bool | None:
    """For a gated write or its explaining companion: whether it answers now (None: not
    such an action). A write answers (and its key shows) only where `permitted(key)` (the
    action flow: the selected call's next operation is that write); elsewhere, and always
    in read-only mode, the companion answers the same key and says why nothing is written."""
    if action in GATED:
        return not read_only and permitted(key_of(action))
    write = next((w for w, explain in GATED.items() if explain == action), None)
    if write is None:
        return None
    return read_only or not permitted(key_of(write))


def bindings() -> list[Binding]:
    out = [Binding(s.keys, s.action, s.description, show=s.show, id=s.id) for s in ACTIONS]
    for bid, explain in GATED.items():
        spec = BY_ID[bid]
        out.append(Binding(spec.keys, explain, spec.description, show=False,
                           id=COMPANIONS[bid]))
    return out


def with_companions(keymap: Mapping[str, str]) -> dict[str, str]:
    out = dict(keymap)
    for bid, companion in COMPANIONS.items():
        if bid in out:
            out.setdefault(companion, out[bid])
    return out


def keys_for(spec: ActionSpec, keymap: Mapping[str, str]) -> list[str]:
    """The keys this action answers to now (Textual key names)."""
    return [k.strip() for k in keymap.get(spec.id, spec.keys).split(",") if k.strip()]


def visible_actions(read_only: bool) -> Iterable[ActionSpec]:
    return (s for s in ACTIONS if not (read_only and s.writes))
