"""The work a demo producer does: the seed's "review a paragraph" task, step by step.

Kept apart from the process plumbing (producer.py) so the live producer and the harness
run exactly the same sequence of durable checkpoints. Ids are deterministic per task
number so every build of the bundle projects the same states.
"""

from __future__ import annotations

from typing import Any

from codeai_tui.runtime.request_bytes import intent_for
from codeai_tui.runtime.runner import CallRunner

TITLE = "review a paragraph"
OBJECTIVE = "flag unclear sentences"
PURPOSE = "review"
PARAGRAPH = "Teh results, which were unclear, was reviewed by the comittee twice."

# The inventory of the seed's experiment: A required (size estimated from its serialized
# payload), B required (a claim, size 0), D optional. Case 8 also requires C, never offered.
OFFERED: list[dict[str, Any]] = [
    {"id": "A", "required": True, "size": 12, "size_estimated": True, "lineage": ["artifact:para"]},
    {"id": "B", "required": True, "size": 0, "size_estimated": False, "lineage": ["claim:1"]},
    {"id": "D", "required": False, "size": 0, "size_estimated": False, "lineage": []},
]
REQUIRED = ["A", "B"]
REQUIRED_WITH_MISSING = ["A", "B", "C"]
INPUTS = {"A": PARAGRAPH, "B": "claim 1: the paragraph is the committee's summary", "D": ""}

SCENARIOS = ("call", "compile_fail", "accept")


def ids(n: int) -> dict[str, str]:
    return {"task": f"task-{n}", "comp": f"comp-{n}", "call": f"call-{n}", "key": f"key-{n}"}


def open_task(runner: CallRunner, n: int, pid: int) -> str:
    task = ids(n)["task"]
    runner.append("task.created", task, {"title": TITLE})
    runner.append("task.objective", task, {"objective": OBJECTIVE})
    runner.append("task.claimed", task, {"worker": "demo-producer", "pid": pid})
    return task


def run_call_task(runner: CallRunner, n: int, pid: int) -> str:
    """Task -> compilation -> call -> attempts. Returns the call's final status."""
    i = ids(n)
    task = open_task(runner, n, pid)
    package = runner.compile_context(task, i["comp"], OFFERED, REQUIRED, INPUTS)
    runner.request(task, i["call"], i["key"], PURPOSE)
    intent = intent_for(PURPOSE, OBJECTIVE, {"paragraph_ref": "A"})
    manifest = runner.manifest(task, i["call"], i["key"], intent, package)
    sha = (manifest.payload or {})["request_sha256"]
    return runner.execute(task, i["call"], i["key"], sha)


def run_compile_fail(runner: CallRunner, n: int, pid: int) -> None:
    i = ids(n)
    task = open_task(runner, n, pid)
    offered = [dict(o) for o in OFFERED]
    offered[1]["lineage"] = []
    runner.compile_context(task, i["comp"], offered, REQUIRED_WITH_MISSING, INPUTS)


def accept(runner: CallRunner, n: int, complete: bool) -> None:
    i = ids(n)
    acc = f"acc-{n}"
    runner.append("task.accepted", i["task"], {"acceptance_id": acc, "call_id": i["call"]})
    if complete:
        runner.append("task.completed", i["task"], {"acceptance_id": acc})


def run_accept(runner: CallRunner, n: int, pid: int) -> None:
    """Task n completed end to end; task n+1 accepted (the completion never comes)."""
    for number, complete in ((n, True), (n + 1, False)):
        if run_call_task(runner, number, pid) == "succeeded":
            accept(runner, number, complete)


def run(scenario: str, runner: CallRunner, n: int, pid: int) -> None:
    if scenario == "call":
        run_call_task(runner, n, pid)
    elif scenario == "compile_fail":
        run_compile_fail(runner, n, pid)
    elif scenario == "accept":
        run_accept(runner, n, pid)
    else:
        raise ValueError(f"unknown scenario {scenario!r}")
