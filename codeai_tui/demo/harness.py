"""Build the demo bundle: the seed's experiment "Kill it, reopen it, resume it".

Every phase is a separate OS process over one case directory: a producer (killed with
SIGKILL at a durable checkpoint), `codeai-tui inspect --json` (recorded with proof it
appended nothing), `codeai-tui resume` (refusals and the one resume, recorded with exit
codes and counts) and the naive restart (on a copy). Provider effects are counted by the
synthetic provider's own fsync'd receipt log, outside the ledger.

The tool cases (11-14 and 18, the seed "Model-call recovery") run the report worker
(`codeai_tui.demo.effects`) per mode, killed and replayed as separate processes, two at
a time beside the producers above (against the fast provider; truncated-stream against
its own truncating one); their effect counts, taken from the tool's own store and the
provider's own log, go to `effects.json` at the bundle root and to stderr.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeai_tui.demo import DEMO_PROVIDER_PORT
from codeai_tui.demo.effects import (
    OWN_PROVIDER_MODES,
    EffectRow,
    ScenarioError,
    run_effect_run,
)
from codeai_tui.demo.evidence import (
    EVENTS_DIGEST_DEFINITION,
    LEDGER,
    file_sha256,
    ledger_summary,
    snapshot,
    write_json,
)
from codeai_tui.demo.processes import DemoError, Phase, produce_and_kill, run_phase
from codeai_tui.lab.provider import ProviderProcess, bundle_case_url, new_bundle_id
from codeai_tui.tools.receipts import load_or_create_signing_key

BUNDLE_FORMAT = "codeai.demo_bundle.v1"
MODEL = "synthetic-small"
DRIFT_MODEL = "synthetic-large"
IN_FLIGHT_LATENCY_S = 120.0
INVENTORY = "hashes.json"  # the slow provider holds a request far longer than the kill takes
EFFECTS = "effects.json"
OPERATOR_ACTION = "operator_action.json"
WORKER_RUNS = "worker_runs.json"
TOOL_WORKERS = 2  # tool cases built at once (each is a provider and 1-2 worker processes)


@dataclass(frozen=True, slots=True)
class CaseSpec:
    name: str
    role: str
    description: str
    scenario: str = "call"
    checkpoint: str = "call.manifest"
    occurrence: int = 1
    in_flight: bool = False
    model: str = MODEL
    copy_of: str | None = None
    effect_mode: str | None = None  # a tool case: the mode of tools.effects it runs
    # an operator action run (its own process) after the kill: (verb, *args), e.g. a
    # reconcile finding, recorded in operator_action.json (a case for each step)
    action: tuple[str, ...] | None = None


CASES: tuple[CaseSpec, ...] = (
    CaseSpec("01_killed_after_requested", "killed_after_requested",
             "Killed right after call.requested: start the call, but no manifest exists, "
             "so no drift check is possible.", checkpoint="call.requested"),
    CaseSpec("02_killed_after_manifest", "killed_after_manifest",
             "Killed right after call.manifest: nothing was sent; resumable "
             "(resume it from the console to see it superseded).", checkpoint="call.manifest"),
    CaseSpec("03_drift_refused", "drift_refused",
             "The same interruption, but case.json now configures another model: resume "
             "rebuilds a different request and refuses; nothing is sent.",
             checkpoint="call.manifest", model=DRIFT_MODEL),
    CaseSpec("04_killed_in_flight", "killed_in_flight",
             "Killed while the provider held the request: one receipt, effect unknown, "
             "resume refused (reconcile the effect).", checkpoint="attempt.started",
             in_flight=True),
    CaseSpec("05_naive_restart", "naive_restart",
             "A copy of 04 handed to a naive restart that re-sent the recorded request "
             "without consulting the projection: two identical receipts under one key, "
             "no events appended.", checkpoint="attempt.started", in_flight=True,
             copy_of="04_killed_in_flight"),
    CaseSpec("06_killed_after_observed", "killed_after_observed",
             "Killed after attempt.observed: the response bytes are stored; reinterpret, "
             "the provider is not needed. Resume refused.", checkpoint="attempt.observed"),
    CaseSpec("07_killed_after_compilation_requested", "killed_after_compilation_requested",
             "Killed after context.compilation_requested: the offered inventory (A, B, D) "
             "is recoverable; recompile is always safe.",
             checkpoint="context.compilation_requested"),
    CaseSpec("08_compilation_failed", "compilation_failed",
             "A compilation failed on a missing required input: C was required and never "
             "offered (A required, size 12 estimated; B required, size 0; D optional).",
             scenario="compile_fail", checkpoint="context.compilation_failed"),
    CaseSpec("09_resumed", "resumed",
             "Case 02 after a third process resumed it: old call superseded, new call "
             "completed, exactly one receipt whose body hash equals both manifests' "
             "request hash; the task moved to check_and_accept.",
             checkpoint="call.manifest", copy_of="02_killed_after_manifest"),
    CaseSpec("10_completed_and_accepted", "completed_and_accepted",
             "task-1 completed end to end; task-2 accepted but killed before its "
             "task.completed: repeat the acceptance.", scenario="accept",
             checkpoint="task.accepted", occurrence=2),
    CaseSpec("11_tool_generate", "tool_generate",
             "The \"publish report\" turn, killed right after its first tool receipt was "
             "saved, then replayed from the saved response and finished: one publication, "
             "two provider calls (the decision and the follow-up), no decision asked twice.",
             scenario="tool", checkpoint="receipt", effect_mode="generate"),
    CaseSpec("12_tool_stream", "tool_stream",
             "The same with streaming: killed after the first tool receipt, replayed and "
             "finished: one publication, two provider calls.",
             scenario="tool", checkpoint="receipt", effect_mode="stream"),
    CaseSpec("13_tool_truncated_stream", "tool_truncated_stream",
             "The decision's stream was cut off mid-response: no saved response, no tool "
             "plan, no publication, one provider call; the call's effect is unknown.",
             scenario="tool", checkpoint="truncated", effect_mode="truncated-stream"),
    CaseSpec("14_tool_killed_in_tool", "tool_killed_in_tool",
             "Killed while the tool ran (after its publication, before the kernel recorded "
             "the outcome): admitted without an outcome, effect unknown; replay refused.",
             scenario="tool", checkpoint="tool-effect", effect_mode="killed-in-tool"),
    # Cases 15-17: the advance actions each have a case where they are the next step.
    CaseSpec("15_reconciled_not_received", "reconciled_not_received",
             "Killed right after attempt.started, before sending: no receipt. A separate "
             "reconcile recorded not_received (the provider's log proves it): start the "
             "next attempt (next-attempt sends the recorded request once).",
             checkpoint="attempt.started",
             action=("reconcile", "--finding", "not_received", "--note",
                     "demo harness: no receipt in the provider's log")),
    CaseSpec("16_reconciled_received", "reconciled_received",
             "A copy of 04 where a separate reconcile recorded received (its receipt is "
             "the evidence): the response is lost. Decide: finalize as failed, or accept "
             "a duplicate explicitly (redecide --accept-duplicate) and send again.",
             checkpoint="attempt.started", in_flight=True, copy_of="04_killed_in_flight",
             action=("reconcile", "--finding", "received", "--note",
                     "demo harness: the provider's receipt matches")),
    CaseSpec("17_killed_after_interpreted", "killed_after_interpreted",
             "Killed after attempt.interpreted (success): no retry decision recorded. "
             "Redecide under the stated policy (stop: adopt it), then finalize.",
             checkpoint="attempt.interpreted"),
    CaseSpec("18_tool_resumed_decision", "tool_resumed_decision",
             "The \"publish report\" turn, killed right after its decision call's manifest "
             "(nothing sent). `codeai-tui resume` sent the decision under a new call id that "
             "keeps the turn (namespace, thread, turn); a new worker found it through the "
             "resume chain, replayed the saved response and finished: one publication under "
             "the response's original tool-call id, two provider calls.",
             scenario="tool", checkpoint="call.manifest", effect_mode="resumed-decision"),
    CaseSpec("19_tool_fresh_ids", "tool_fresh_ids",
             "The \"publish report\" turn against a provider that answers every request "
             "with new tool-call ids. Killed after the first tool receipt, replayed from "
             "the saved response under its original id: one publication. naive/ holds the "
             "counterfactual, measured on a copy: asked again, the provider gave a new id "
             "and the tool published twice.",
             scenario="tool", checkpoint="receipt", effect_mode="fresh-ids"),
)


def case_base_url(name: str, port: int = DEMO_PROVIDER_PORT,
                  bundle_id: str | None = None) -> str:
    """Where case `name` of the bundle `bundle_id` sends: its bundle-mode provider on
    `port` answers this path only for its own bundle (codeai_tui/lab/provider.py)."""
    return bundle_case_url(port, name, bundle_id)


_SAY_LOCK = threading.Lock()


def _say(message: str) -> None:
    """One whole line per message: the cases are built by several threads at once, and
    print() writes a line and its newline apart, so two threads' lines interleaved."""
    line = "".join(f"demo: {part}\n" for part in message.splitlines() or [""])
    with _SAY_LOCK:
        sys.stderr.write(line)
        sys.stderr.flush()


class Harness:
    """Runs the experiment into one bundle directory with two build-time providers."""

    def __init__(self, bundle: Path, fast: ProviderProcess, slow: ProviderProcess,
                 kernel_key: Path, case_port: int = DEMO_PROVIDER_PORT,
                 bundle_id: str | None = None) -> None:
        self.bundle = bundle
        self.fast = fast
        self.slow = slow
        self.kernel_key = kernel_key  # outside the bundle: whoever holds it can forge receipts
        self.case_port = case_port  # where case.json sends resumes (`demo --open` serves it)
        self.bundle_id = bundle_id  # in every case's URL: only this bundle's provider answers

    def url(self, name: str, provider: ProviderProcess | None = None) -> str:
        return (provider or self.fast).case_url(name)

    # ---- phases

    def produce(self, spec: CaseSpec) -> None:
        case = self.bundle / spec.name
        case.mkdir()
        provider = self.slow if spec.in_flight else self.fast
        args = ["--scenario", spec.scenario, "--base-url", self.url(spec.name, provider),
                "--model", MODEL, "--checkpoint", spec.checkpoint,
                "--occurrence", str(spec.occurrence),
                "--then", "continue" if spec.in_flight else "block"]
        record = produce_and_kill(case, args, spec.in_flight)
        write_json(case / "termination.json", record)
        _say(f"{spec.name}: SIGKILL pid {record['pid']} after {record['event']} "
             f"(seq {record['seq']}, {record['point']})")

    def tool_case(self, spec: CaseSpec) -> tuple[EffectRow, ...]:
        """Run the report worker for the case's mode (kill, replay: separate processes);
        its effect rows (fresh-ids adds its naive counterfactual's)."""
        assert spec.effect_mode is not None
        case = self.bundle / spec.name
        try:
            # a truncating or fresh-id provider is the case's own; the others share the fast one
            shared = None if spec.effect_mode in OWN_PROVIDER_MODES else self.url(spec.name)
            run = run_effect_run(case, spec.effect_mode, self.kernel_key, base_url=shared)
        except (ScenarioError, subprocess.TimeoutExpired) as exc:
            raise DemoError(f"{spec.name}: {exc}") from None
        write_json(case / WORKER_RUNS, {"mode": spec.effect_mode,
                                        "phases": [p.as_json() for p in run.phases]})
        steps = ", ".join(f"{p.step} exit {p.exit_code}" + (" (SIGKILL)" if p.exit_code == -9 else "")
                          for p in run.phases)
        _say(f"{spec.name}: {steps}")
        return run.rows

    def copy_case(self, spec: CaseSpec) -> None:
        """Copy a dead producer's case; this process holds no connection to it."""
        assert spec.copy_of is not None
        src, dst = self.bundle / spec.copy_of, self.bundle / spec.name
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns(f"{LEDGER}-shm"))
        _say(f"{spec.name}: copied from {spec.copy_of}")

    def write_case_json(self, spec: CaseSpec) -> None:
        write_json(self.bundle / spec.name / "case.json", {
            "provider": {"base_url": case_base_url(spec.name, self.case_port, self.bundle_id),
                         "model": spec.model,
                         "api_key_env": "CODEAI_API_KEY",
                         "identity": self.bundle_id},
            "description": spec.description,
        })

    def cli(self, *args: str) -> Phase:
        return run_phase(self.bundle, "codeai_tui", *args)

    def inspect(self, name: str, filename: str = "inspection.json") -> dict[str, Any]:
        case = self.bundle / name
        before = snapshot(case)
        phase = self.cli("inspect", name, "--json")
        after = snapshot(case)
        if phase.exit_code != 0:
            raise DemoError(f"{name}: inspect exited {phase.exit_code}: {phase.stderr.strip()}")
        record = {"argv": phase.argv, "exit_code": phase.exit_code, "before": before,
                  "projection": json.loads(phase.stdout), "after": after}
        write_json(case / filename, record)
        return record

    def resume_attempt(self, name: str, call_id: str, expect_exit: int) -> dict[str, Any]:
        case = self.bundle / name
        before = snapshot(case)
        phase = self.cli("resume", name, call_id, "--yes", "--base-url", self.url(name),
                         "--reason", "demo harness")
        after = snapshot(case)
        record = {"call_id": call_id, **phase.as_json(), "before": before, "after": after}
        write_json(case / "resume_attempt.json", record)
        if phase.exit_code != expect_exit:
            raise DemoError(f"{name}: resume exited {phase.exit_code}, expected {expect_exit}: "
                            f"{phase.stderr.strip()}")
        verdict = "resumed" if phase.exit_code == 0 else "refused"
        _say(f"{name}: resume {verdict} (exit {phase.exit_code}); events "
             f"{before['event_count']} -> {after['event_count']}, receipts "
             f"{before['receipt_count']} -> {after['receipt_count']}")
        return record

    def resume_plan(self, name: str, call_id: str) -> dict[str, Any]:
        """What a resume would do (read-only), shown by its own process."""
        case = self.bundle / name
        before = snapshot(case)
        phase = run_phase(self.bundle, "codeai_tui.demo.plan", name, call_id)
        after = snapshot(case)
        plan = json.loads(phase.stdout) if phase.stdout.strip() else None
        record = {**phase.as_json(), "plan": plan, "before": before, "after": after}
        write_json(case / "resume_plan.json", record)
        if phase.exit_code != 0 or plan is None:
            raise DemoError(f"{name}: resume plan exited {phase.exit_code}: {phase.stderr.strip()}")
        _say(f"{name}: resume plan: {plan['stage']}, {plan['verdict']}")
        return record

    def operator_action(self, spec: CaseSpec, call_id: str) -> dict[str, Any]:
        """An operator's action after the kill, by its own process; exit 0 expected."""
        assert spec.action is not None
        case = self.bundle / spec.name
        before = snapshot(case)
        verb, *rest = spec.action
        phase = self.cli(verb, spec.name, call_id, *rest, "--yes")
        after = snapshot(case)
        record = {"call_id": call_id, "action": verb, **phase.as_json(), "before": before,
                  "after": after}
        write_json(case / OPERATOR_ACTION, record)
        if phase.exit_code != 0:
            raise DemoError(f"{spec.name}: {verb} exited {phase.exit_code}: "
                            f"{phase.stderr.strip()}")
        _say(f"{spec.name}: {verb} (exit 0); events {before['event_count']} -> "
             f"{after['event_count']}, receipts {before['receipt_count']} -> "
             f"{after['receipt_count']}")
        return record

    def naive_restart(self, name: str) -> dict[str, Any]:
        case = self.bundle / name
        before = snapshot(case)
        phase = run_phase(self.bundle, "codeai_tui.demo.naive", name, "--base-url", self.url(name))
        after = snapshot(case)
        record = {**phase.as_json(), "before": before, "after": after}
        write_json(case / "naive_restart.json", record)
        if phase.exit_code != 0:
            raise DemoError(f"{name}: naive restart exited {phase.exit_code}: {phase.stderr.strip()}")
        _say(f"{name}: naive restart re-sent the request; events {before['event_count']} -> "
             f"{after['event_count']}, receipts {before['receipt_count']} -> "
             f"{after['receipt_count']}")
        return record

    # ---- the experiment

    def run(self) -> None:
        by_role = {spec.role: spec for spec in CASES}
        load_or_create_signing_key(self.kernel_key)  # made once, before workers race for it
        with ThreadPoolExecutor(TOOL_WORKERS, thread_name_prefix="tool-case") as pool:
            tool_runs: list[Future[tuple[EffectRow, ...]]] = [
                pool.submit(self.tool_case, spec) for spec in CASES if spec.effect_mode]
            for spec in CASES:
                if spec.copy_of is None and spec.effect_mode is None:
                    self.produce(spec)
            rows = [row for f in tool_runs for row in f.result()]
        # the seed's row order and key order (write_json would sort the keys)
        (self.bundle / EFFECTS).write_text(
            json.dumps([row.as_json() for row in rows], indent=1) + "\n", encoding="utf-8")
        for line in effect_table(rows):
            _say(line)
        for spec in CASES:
            if spec.copy_of is not None:
                self.copy_case(spec)
        for spec in CASES:
            self.write_case_json(spec)
        call = "call-1"
        self.resume_plan(by_role["killed_after_requested"].name, call)
        self.resume_plan(by_role["killed_after_manifest"].name, call)
        self.resume_attempt(by_role["drift_refused"].name, call, expect_exit=3)
        self.resume_attempt(by_role["killed_in_flight"].name, call, expect_exit=3)
        self.resume_attempt(by_role["killed_after_observed"].name, call, expect_exit=3)
        self.naive_restart(by_role["naive_restart"].name)
        resumed = by_role["resumed"].name
        self.inspect(resumed, "inspection_before_resume.json")
        self.resume_attempt(resumed, call, expect_exit=0)
        for spec in CASES:
            if spec.action is not None:
                self.operator_action(spec, call)
        for spec in CASES:
            self.inspect(spec.name)
        write_json(self.bundle / "bundle.json", {
            "format": BUNDLE_FORMAT,
            # the bundle's identity: in its case.json URLs, and what its provider answers
            "bundle_id": self.bundle_id,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "events_digest": EVENTS_DIGEST_DEFINITION,
            "cases": [{"dir": s.name, "role": s.role, "description": s.description,
                       "copy_of": s.copy_of} for s in CASES],
        })
        (self.bundle / "README.txt").write_text(readme(self.case_port), encoding="utf-8")
        write_json(self.bundle / INVENTORY, byte_inventory(self.bundle))


def effect_table(rows: list[EffectRow]) -> list[str]:
    """The seed's table as printed: counted in the tool's store and the provider's log."""
    lines = [f"{'mode':<17} {'case':<25} {'publications':>12} {'provider_calls':>14} complete"]
    lines += [f"{r.mode:<17} {r.case:<25} {r.publications:>12} {r.provider_calls:>14} "
              f"{str(r.complete).lower()}" for r in rows]
    return ["effects (publications: tools/reports.sqlite3; provider calls: provider/receipts.jsonl)",
            *lines]


def readme(case_port: int = DEMO_PROVIDER_PORT) -> str:
    lines = [
        "CodeAI demo bundle: the experiment \"Kill it, reopen it, resume it\".",
        "",
        "Each directory is one case. Producers were killed with SIGKILL at durable",
        "checkpoints (termination.json); a separate `codeai-tui inspect --json` process",
        "recorded the projection with before/after counts and hashes (inspection.json);",
        "resumes, refusals and the naive restart ran as separate processes too",
        "(resume_attempt.json, resume_plan.json, naive_restart.json, operator_action.json).",
        "Provider effects are counted by the synthetic provider's own log",
        "(provider/receipts.jsonl).",
        "Tool cases (tools/) ran the report worker, killed and replayed as separate",
        "processes (worker_runs.json); effects.json counts their publications in",
        "tools/reports.sqlite3 and their provider calls in provider/receipts.jsonl.",
        "The fresh-id case's naive/ holds its counterfactual: the stores of a copy of",
        "the case as killed, whose decision a naive worker asked the provider again.",
        "",
        "  codeai-tui verify THIS_DIR     re-derive every state independently",
        "  codeai-tui THIS_DIR            open the console; resumes need this bundle's",
        "                                 provider, the only one its case.json URLs reach:",
        f"  codeai-tui provider --receipts-root THIS_DIR --port {case_port}",
        "",
    ]
    lines += [f"{s.name}\n    {s.description}" for s in CASES]
    return "\n".join(lines) + "\n"


def byte_inventory(bundle: Path) -> dict[str, Any]:
    """sha256 of every file the experiment wrote (not -shm: readers may rewrite it), and
    each ledger's events digest: any SQLite client that opens a ledger read-write
    checkpoints its WAL on close, changing the files' bytes but not one event, so the
    verifier judges ledgers by the digest and reports their bytes as information."""
    files = {
        p.relative_to(bundle).as_posix(): file_sha256(p)
        for p in sorted(bundle.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm") and p.name != INVENTORY
    }
    ledgers = {
        p.parent.relative_to(bundle).as_posix(): ledger_summary(p.parent)["events_sha256"]
        for p in sorted(bundle.rglob(LEDGER))
    }
    return {"algorithm": "sha256", "files": files, "ledgers": ledgers,
            "events_digest": EVENTS_DIGEST_DEFINITION}


def build_demo(out: Path | None, case_port: int = DEMO_PROVIDER_PORT,
               kernel_key: Path | None = None, bundle_id: str | None = None) -> Path:
    """Build the bundle into `out` (a fresh temp dir when None); returns its path.
    Its case.json files send resumes to 127.0.0.1:`case_port` under the bundle's id
    (`bundle_id`, a new one when None), which only this bundle's provider answers. The
    tool kernel's signing key is made at `kernel_key` (outside the bundle; the caller
    keeps it, e.g. for the console's replay), else in a temp dir deleted when the bundle
    is built.

    A failed experiment ends the command with one line and exit 1 (SystemExit), never a
    traceback; the partial bundle is left in place to look at.
    """
    try:
        bundle = Path(tempfile.mkdtemp(prefix="codeai-demo-")) if out is None else Path(out)
        bundle.mkdir(parents=True, exist_ok=True)
        bundle = bundle.resolve()
        started = time.monotonic()
        ident = bundle_id if bundle_id is not None else new_bundle_id()
        with tempfile.TemporaryDirectory(prefix="codeai-demo-kernel-") as keys, \
                ProviderProcess(receipts_root=bundle, bundle_id=ident) as fast, \
                ProviderProcess(receipts_root=bundle, latency=IN_FLIGHT_LATENCY_S,
                                bundle_id=ident) as slow:
            key = kernel_key if kernel_key is not None else Path(keys) / "kernel.key"
            Harness(bundle, fast, slow, key, case_port, ident).run()
    except (DemoError, RuntimeError, OSError, ValueError) as exc:
        print(f"codeai-tui demo: failed: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    _say(f"built {len(CASES)} cases in {time.monotonic() - started:.1f} s")
    verify_bundle(bundle)
    return bundle


def verify_bundle(bundle: Path) -> int:
    """Run the independent verifier in its own process; show its summary."""
    done = subprocess.run([sys.executable, "-m", "codeai_tui", "verify", str(bundle)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=120)
    lines = done.stdout.strip().splitlines()
    for line in lines:
        if line.startswith("FAIL"):
            _say(line)
    _say(f"verify: {lines[-1] if lines else done.stderr.strip()}")
    return done.returncode
