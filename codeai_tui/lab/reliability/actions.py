"""The write actions the harness exercises, registered by name.

An action says how to make a case where it is permitted, how to run it as its own OS
process (a module run with arguments: the real command line), which boundaries a kill
must land on, and how to audit what it appended. Races, kills, the read-only matrix's
"the writer can still write" and the property test all take actions from REGISTRY, so
the registry follows the product's one registry of gated writes
(codeai_tui/actions/registry.py): a write registered there without an `Action` here
stops the harness at import.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codeai_tui.actions.registry import ACTIONS as GATED
from codeai_tui.lab.reliability.action_types import Action, Audit, Boundary, Target
from codeai_tui.lab.reliability.advance_actions import ADVANCE_ACTIONS
from codeai_tui.lab.reliability.cases import case_base_url, make_call_case
from codeai_tui.ledger.schema import Event


def _calls(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(c.get("call_id")): c for c in doc.get("calls") or [] if isinstance(c, dict)}


def _resume_setup(case: Path, provider_url: str) -> Target:
    return Target(case, make_call_case(case, provider_url))


def _resume_audit(target: Target, before: Sequence[Event], after: Sequence[Event]) -> Audit:
    new = list(after[len(before):])
    claims = [e for e in new if e.kind == "call.resumed" and e.call_id == target.subject]
    owned = {target.subject} | {str((e.payload or {}).get("resumed_as")) for e in claims}
    foreign = sum(1 for e in new if e.call_id not in owned)
    return Audit(len(claims), foreign)


def _resume_permitted(target: Target, doc: dict[str, Any]) -> bool:
    call = _calls(doc).get(target.subject) or {}
    return call.get("stage") in ("requested", "manifest_recorded")


RESUME_BOUNDARIES = (
    Boundary("planned, before BEGIN", "txn.begin"),
    Boundary("in the transaction, before COMMIT", "txn.before_commit", "call.resumed"),
    Boundary("after COMMIT", "txn.after_commit", "call.resumed"),
    Boundary("after attempt.started", "txn.after_commit", "attempt.started"),
    Boundary("provider holds the request", "net.connect", None, hold=True),
    Boundary("after attempt.observed", "txn.after_commit", "attempt.observed"),
)

RESUME = Action(
    name="resume",
    setup=_resume_setup,
    module="codeai_tui",
    args=lambda t: ["resume", str(t.case), t.subject, "--yes"],
    boundaries=RESUME_BOUNDARIES,
    audit=_resume_audit,
    permitted=_resume_permitted,
    warm=("codeai_tui.cli.main", "codeai_tui.actions.resume"),
    won_codes=frozenset({0, 4, 5}),  # cli.py: succeeded, failed, effect unknown
    description="codeai-tui resume CASE CALL --yes",
)

NAIVE_RESUME = Action(
    name="naive-claim",
    setup=_resume_setup,
    module="codeai_tui.lab.reliability.naive_claim",
    args=lambda t: [str(t.case), t.subject],
    boundaries=RESUME_BOUNDARIES,
    audit=_resume_audit,
    permitted=_resume_permitted,
    warm=("codeai_tui.lab.reliability.naive_claim",),
    won_codes=frozenset({0, 4, 5}),
    control=True,
    description="check, then append outside one write transaction (control)",
)

def _kernel_key(case: Path) -> Path:
    """The tool kernel's private key, kept outside the case (as the operator would): one
    per work directory, shared by the killed worker's case and every copy of it."""
    return case.parent / "keys" / "kernel.key"


def _killed_tool_case(case: Path, provider_url: str, kill_at: str) -> None:
    """A new case where the tool worker killed itself at `kill_at`.

    The worker runs once per work directory and moment; each case is a copy of the one
    it left (taken while nothing has it open: ledger and -wal together), since what is
    exercised is the action on that state, not the worker."""
    import shutil
    import subprocess
    import sys

    template = case.parent / f"tool-template-{kill_at}"
    if not (template / "ledger.sqlite3").exists():
        done = subprocess.run(
            [sys.executable, "-m", "codeai_tui.tools.worker", "run", str(template),
             case_base_url(provider_url, template), str(_kernel_key(template)), "--stream",
             "--kill-at", kill_at], capture_output=True, text=True, timeout=120)
        if done.returncode != -9:
            raise RuntimeError(f"the tool worker was not killed where asked: "
                               f"{done.stderr[-300:]}")
    shutil.copytree(template, case, ignore=shutil.ignore_patterns("*-shm"))


def _replay_setup(case: Path, provider_url: str) -> Target:
    """A tool-using turn killed right after its decision was saved: no tool admitted."""
    _killed_tool_case(case, provider_url, "call.completed")
    return Target(case, "turn-1-m1")


def _replay_audit(target: Target, before: Sequence[Event], after: Sequence[Event]) -> Audit:
    new = list(after[len(before):])
    admitted = [e for e in new if e.kind == "tool.admitted"]
    follow_up = f"{target.subject.rsplit('-m', 1)[0]}-m2"
    owned = {target.subject, follow_up}
    foreign = sum(1 for e in new if e.call_id not in owned)
    extra_follow_ups = max(0, sum(1 for e in new if e.kind == "call.requested") - 1)
    return Audit(len(admitted), foreign + extra_follow_ups)


def _replay_permitted(target: Target, _doc: dict[str, Any]) -> bool:
    from codeai_tui.actions.gate import ActionRefused
    from codeai_tui.actions.replay import plan_replay

    try:
        plan = plan_replay(target.case, target.subject)
    except ActionRefused:
        return False
    return plan.refusal is None and bool(plan.to_run)


def _replay_landed(target: Target, _doc: dict[str, Any]) -> str:
    from codeai_tui.actions.replay import plan_replay

    plan = plan_replay(target.case, target.subject)
    states = ",".join(op.state.value for op in plan.operations)
    return f"operation {states}" + (", refused" if plan.refusal else "")


def _publications(case: Path) -> int:
    """Rows in the tool's own store, read from a copy (database and -wal, no -shm).

    A tool killed inside its transaction leaves a WAL that needs recovery, which a
    `mode=ro` connection cannot do ("attempt to write a readonly database",
    SQLITE_READONLY_RECOVERY): tools.count_publications raises then, as it does for a
    store killed before its table existed. A copy recovers in a scratch directory and the
    source is never written."""
    import shutil
    import sqlite3
    import tempfile

    from codeai_tui.tools.publish import reports_path

    source = reports_path(case)
    if not source.exists():
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / source.name
        shutil.copyfile(source, copy)
        wal = source.with_name(source.name + "-wal")
        if wal.exists():
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        conn = sqlite3.connect(copy)
        try:
            return int(conn.execute("SELECT count(*) FROM publications").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return 0  # killed while creating its store: no row can exist yet
            raise
        finally:
            conn.close()


def _replay_invariants(target: Target) -> list[str]:
    from codeai_tui.ledger import LedgerReader

    with LedgerReader(target.case) as reader:
        admitted = sum(1 for e in reader.events() if e.kind == "tool.admitted")
    published = _publications(target.case)
    return [] if published <= admitted and admitted <= 1 else [
        f"{published} tool effects for {admitted} admissions"]


REPLAY = Action(
    name="replay",
    setup=_replay_setup,
    module="codeai_tui",
    args=lambda t: ["replay", str(t.case), t.subject, "--kernel-key", str(_kernel_key(t.case)),
                    "--yes"],
    boundaries=(
        Boundary("planned, before BEGIN", "txn.begin"),
        Boundary("admission, before COMMIT", "txn.before_commit", "tool.admitted"),
        Boundary("admitted, before completion", "txn.after_commit", "tool.admitted"),
        Boundary("after tool.completed", "txn.after_commit", "tool.completed"),
        Boundary("after the follow-up is recorded", "txn.after_commit", "call.manifest"),
    ),
    audit=_replay_audit,
    permitted=_replay_permitted,
    sends=False,  # a replay never asks the provider again; its effect is the tool's
    claim_kind="tool.admitted",
    noop_codes=frozenset({0}),  # "nothing to run: every planned operation is completed"
    loser_may_record=frozenset({"call.requested", "call.manifest"}),  # the follow-up
    warm=("codeai_tui.cli.main", "codeai_tui.actions.replay"),
    invariants=_replay_invariants,
    landed=_replay_landed,
    description="codeai-tui replay CASE CALL --kernel-key KEY --yes",
)

def _tool_reconcile_setup(case: Path, provider_url: str) -> Target:
    """A tool-using turn killed right after its admission committed: the tool never ran,
    and the operation's effect is unknown (T2). The subject is its operation key."""
    import json
    import subprocess
    import sys

    _killed_tool_case(case, provider_url, "tool.admitted")
    doc = subprocess.run([sys.executable, "-m", "codeai_tui", "inspect", str(case), "--json"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    return Target(case, str(_tool_ops(json.loads(doc))[0]["operation_key"]))


def _tool_ops(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [o for c in doc.get("calls") or [] if isinstance(c, dict) and c.get("tools")
            for o in c["tools"].get("operations") or [] if isinstance(o, dict)]


def _tool_op(target: Target, doc: dict[str, Any]) -> dict[str, Any]:
    return next((o for o in _tool_ops(doc) if o.get("operation_key") == target.subject), {})


def _tool_reconcile_audit(target: Target, before: Sequence[Event],
                          after: Sequence[Event]) -> Audit:
    new = list(after[len(before):])
    claims = sum(1 for e in new if e.kind == "tool.reconciled"
                 and (e.payload or {}).get("operation_key") == target.subject
                 and "decided_by" in (e.payload or {}))
    return Audit(claims, len(new) - claims)


def _tool_reconcile_landed(target: Target, doc: dict[str, Any]) -> str:
    op = _tool_op(target, doc)
    return f"operation {op.get('state')}, next {op.get('next_operation')}"


TOOL_RECONCILE = Action(
    name="reconcile-tool",
    setup=_tool_reconcile_setup,
    module="codeai_tui",
    # the setup killed the worker before the tool ran: not_executed is the truth here
    args=lambda t: ["reconcile-tool", str(t.case), t.subject, "--finding", "not_executed",
                    "--yes"],
    boundaries=(
        Boundary("planned, before BEGIN", "txn.begin"),
        Boundary("in the transaction, before COMMIT", "txn.before_commit", "tool.reconciled"),
        Boundary("after COMMIT", "txn.after_commit", "tool.reconciled"),
    ),
    audit=_tool_reconcile_audit,
    permitted=lambda t, doc: _tool_op(t, doc).get("state") == "effect_unknown",
    sends=False,
    claim_kind="tool.reconciled",
    warm=("codeai_tui.cli.main", "codeai_tui.actions.reconcile"),
    landed=_tool_reconcile_landed,
    description="codeai-tui reconcile-tool CASE OPERATION_KEY --finding not_executed --yes",
)

# How the harness drives each gated write, by the name the product's registry gives it
# (codeai_tui/actions/registry.py): setups, kill boundaries and audits.
HARNESSED: dict[str, Action] = {a.name: a for a in (RESUME, REPLAY, TOOL_RECONCILE,
                                                     *ADVANCE_ACTIONS)}


def from_product_registry(harnessed: dict[str, Action]) -> dict[str, Action]:
    """Every gated write the product registers, in its order, as the harness drives it.
    A write registered without a harness entry stops the harness at import: every write
    path is raced, killed and checked read-only, or the harness does not run."""
    missing = [g.name for g in GATED if g.name not in harnessed]
    if missing:
        raise RuntimeError(f"no reliability harness entry for the gated write(s) "
                           f"{', '.join(missing)}: add one to lab/reliability/actions.py")
    return {g.name: harnessed[g.name] for g in GATED}


REGISTRY: dict[str, Action] = from_product_registry(HARNESSED)
CONTROLS: dict[str, Action] = {NAIVE_RESUME.name: NAIVE_RESUME}


def register(action: Action) -> Action:
    """Add an action to every part of the harness (a control: a deliberately broken
    twin the harness must catch)."""
    (CONTROLS if action.control else REGISTRY)[action.name] = action
    return action
