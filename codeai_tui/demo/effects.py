"""The seed's effect table, by real kills: one case per mode, counted independently.

Each mode runs the report worker (`codeai_tui.tools.worker`) in its own process against
its own synthetic provider, kills it at the mode's moment with SIGKILL, and replays:

| mode | what happens | expected publications / provider calls / complete |
|---|---|---|
| generate | killed right after its first saved receipt, replayed | 1 / 2 / true |
| stream | the same, streaming | 1 / 2 / true |
| truncated-stream | the decision's stream is cut after 3 chunks | 0 / 1 / false |
| killed-in-tool | killed inside the tool after its effect, replay refuses | 1 / 1 / false |
| resumed-decision | killed after the decision's manifest (nothing sent); `codeai-tui resume` sends it under a new call id that keeps the turn; a new worker replays | 1 / 2 / true |
| fresh-ids | as generate, but the provider answers every request with new tool-call ids | 1 / 2 / true |
| naive-reask | fresh-ids' counterfactual: a copy as killed, the decision asked again | 2 / 2 / false |

`publications` is counted in the tool's own store, `provider_calls` in the provider's own
receipt log, `complete` is what the worker reported; none comes from our ledger. The
demo's tool cases come from `run_effect_run`, which also returns each worker process's
exit as evidence for the bundle.

fresh-ids shows the hazard the seed is about. Its replay keeps the saved decision's
tool-call id and publishes once; before it, a copy of the case as killed is handed to
the naive worker (`tools/reask.py`), which asks the provider again, gets a new id for the
same request bytes, and the kernel admits that new operation key, so the tool publishes a
second time. The copy's stores and the worker's record stay in the case's `naive/`
(its ledger does not: `naive/` is evidence of the case, not a case of its own).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from codeai_tui.lab.provider import ProviderProcess
from codeai_tui.ledger.receipts import read_receipts
from codeai_tui.tools.publish import count_publications
from codeai_tui.tools.receipts import NAIVE_DIR

EFFECT_MODES = ("generate", "stream", "truncated-stream", "killed-in-tool", "resumed-decision",
                "fresh-ids")
# modes that need a provider of their own (cut streams, fresh tool-call ids), never the
# demo's shared one
OWN_PROVIDER_MODES = ("truncated-stream", "fresh-ids")
TRUNCATE_AFTER = 3
NAIVE_MODE = "naive-reask"  # fresh-ids' counterfactual, counted in the case's NAIVE_DIR
# what the counterfactual keeps of its copy: the stores that count its effects, and the
# kernel's signed receipts of what it ran
NAIVE_KEPT = ("tools/reports.sqlite3", "tools/receipts.ndjson", "provider/receipts.jsonl")
WORKER_RUNS = "worker_runs.json"


@dataclass(frozen=True, slots=True)
class EffectRow:
    mode: str
    case: str
    publications: int
    provider_calls: int
    complete: bool

    def as_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class WorkerPhase:
    """One worker process as it ended: the evidence that it was killed or refused."""

    step: str  # "run" or "replay" (a worker), or "resume" (`codeai-tui resume`)
    argv: list[str]  # as run, with the case and the private key path named, not spelled
    exit_code: int
    stdout: str
    stderr: str

    def as_json(self) -> dict[str, object]:
        killed = self.exit_code == -signal.SIGKILL
        return {"step": self.step, "argv": self.argv, "exit_code": self.exit_code,
                "signal": "SIGKILL" if killed else None, "stdout": self.stdout,
                "stderr": self.stderr}


@dataclass(frozen=True, slots=True)
class EffectRun:
    row: EffectRow
    phases: tuple[WorkerPhase, ...]
    counterfactual: EffectRow | None = None  # fresh-ids: the naive re-ask, counted

    @property
    def rows(self) -> tuple[EffectRow, ...]:
        return (self.row,) if self.counterfactual is None else (self.row, self.counterfactual)


class ScenarioError(RuntimeError):
    """A worker did not end the way its mode requires (the run proves nothing)."""


def _worker(
    args: list[str], timeout: float, phases: list[WorkerPhase]
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "codeai_tui.tools.worker", *args],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )
    step, _case, base_url, _key, *flags = args
    case = "A COPY OF CASE (as killed)" if step == "reask" else "CASE"
    shown = ["python", "-m", "codeai_tui.tools.worker", step, case, base_url,
             "KERNEL_KEY (outside the case)", *flags]
    phases.append(WorkerPhase(step, shown, proc.returncode, proc.stdout, proc.stderr))
    return proc


def _resume(case_dir: Path, base_url: str, call_id: str, timeout: float,
            phases: list[WorkerPhase]) -> subprocess.CompletedProcess[str]:
    """The operator's step between the workers: `codeai-tui resume` of a call the killed
    worker left at manifest_recorded, in its own process, to the given provider."""
    tail = [call_id, "--yes", "--base-url", base_url, "--reason", "worker killed"]
    proc = subprocess.run(
        [sys.executable, "-m", "codeai_tui", "resume", str(case_dir), *tail],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
    )
    phases.append(WorkerPhase("resume", ["codeai-tui", "resume", "CASE", *tail],
                              proc.returncode, proc.stdout, proc.stderr))
    return proc


def _check_exit(proc: subprocess.CompletedProcess[str], code: int, step: str) -> None:
    if proc.returncode != code:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ScenarioError(f"{step}: exit {proc.returncode}, expected {code}: {tail}")


def _expect(proc: subprocess.CompletedProcess[str], code: int, step: str) -> dict[str, object]:
    _check_exit(proc, code, step)
    if code == -signal.SIGKILL:
        return {}
    last = proc.stdout.strip().splitlines()[-1]
    result = json.loads(last)
    if not isinstance(result, dict):
        raise ScenarioError(f"{step}: worker printed {last[:80]!r}")
    return result


def run_effect_case(case_dir: Path, mode: str, key_path: Path, timeout: float = 60.0) -> EffectRow:
    """Build one tool case for `mode` in the new directory `case_dir`; the kernel key
    lives at `key_path`, outside the case."""
    return run_effect_run(case_dir, mode, key_path, timeout).row


def run_effect_run(
    case_dir: Path, mode: str, key_path: Path, timeout: float = 60.0,
    base_url: str | None = None,
) -> EffectRun:
    """`run_effect_case`, also returning how each worker process ended. `base_url`: a
    running provider that logs this case's requests to `case_dir/provider/receipts.jsonl`
    (the demo's bundle-mode provider; not for OWN_PROVIDER_MODES, which need a truncating
    or fresh-id provider of their own); None starts one for this case."""
    if mode not in EFFECT_MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(EFFECT_MODES)}")
    truncate = TRUNCATE_AFTER if mode == "truncated-stream" else None
    if base_url is not None and truncate is not None:
        raise ValueError("truncated-stream needs its own truncating provider; pass no base_url")
    if base_url is not None and mode in OWN_PROVIDER_MODES:
        raise ValueError(f"{mode} needs its own provider (fresh tool-call ids); pass no base_url")
    receipts = case_dir / "provider" / "receipts.jsonl"
    with contextlib.ExitStack() as stack:
        if base_url is None:
            prov = stack.enter_context(ProviderProcess(
                receipts, truncate_after=truncate, fresh_tool_call_ids=mode == "fresh-ids"))
            base_url = prov.base_url
        return _run_workers(case_dir, mode, key_path, timeout, base_url)


def _resumed_decision(case_dir: Path, base: list[str], base_url: str, timeout: float,
                      phases: list[WorkerPhase]) -> dict[str, object]:
    """Killed before the decision was sent; the operator resumes it (the successor keeps
    the turn); a new worker finds the decision through the resume chain, runs the saved
    plan and finishes. A JSON answer, as in generate."""
    _expect(_worker(["run", *base, "--kill-at", "call.manifest"], timeout, phases),
            -signal.SIGKILL, "run until killed")
    _check_exit(_resume(case_dir, base_url, "turn-1-m1", timeout, phases), 0, "resume")
    return _expect(_worker(["replay", *base], timeout, phases), 0, "replay")


def _run_workers(case_dir: Path, mode: str, key_path: Path, timeout: float,
                 base_url: str) -> EffectRun:
    flags = ["--stream"] if mode not in ("generate", "fresh-ids") else []
    phases: list[WorkerPhase] = []
    base = [str(case_dir), base_url, str(key_path)]
    counterfactual = None
    if mode == "truncated-stream":
        outcome = _expect(_worker(["run", *base, *flags], timeout, phases), 0, "run")
    elif mode == "resumed-decision":
        outcome = _resumed_decision(case_dir, base, base_url, timeout, phases)
    else:
        kill_at = "tool-effect" if mode == "killed-in-tool" else "receipt"
        _expect(_worker(["run", *base, *flags, "--kill-at", kill_at], timeout, phases),
                -signal.SIGKILL, "run until killed")
        if mode == "fresh-ids":
            counterfactual = naive_reask(case_dir, key_path, timeout)
        refused = 3 if mode == "killed-in-tool" else 0
        outcome = _expect(_worker(["replay", *base, *flags], timeout, phases), refused, "replay")
    row = EffectRow(
        mode=mode,
        case=case_dir.name,
        publications=count_publications(case_dir),
        provider_calls=len(read_receipts(case_dir).receipts),
        complete=outcome.get("complete") is True,
    )
    return EffectRun(row, tuple(phases), counterfactual)


def naive_reask(case_dir: Path, key_path: Path, timeout: float) -> EffectRow:
    """The counterfactual of replay, measured for real: a copy of the killed case is
    handed to the naive worker (`reask`) against a fresh-id provider of its own; what
    counts its effects is kept in `case_dir/naive/` with the worker's record."""
    kept = case_dir / NAIVE_DIR
    with tempfile.TemporaryDirectory(prefix="codeai-naive-") as scratch:
        copy = Path(scratch) / case_dir.name  # the killed worker holds no connection to it
        shutil.copytree(case_dir, copy, ignore=shutil.ignore_patterns("*-shm"))
        phases: list[WorkerPhase] = []
        with ProviderProcess(copy / "provider" / "receipts.jsonl",
                             fresh_tool_call_ids=True) as prov:
            outcome = _expect(_worker(["reask", str(copy), prov.base_url, str(key_path)],
                                      timeout, phases), 0, "naive re-ask")
        for rel in NAIVE_KEPT:
            if (copy / rel).is_file():
                (kept / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(copy / rel, kept / rel)
    (kept / WORKER_RUNS).write_text(json.dumps(
        {"mode": NAIVE_MODE, "phases": [p.as_json() for p in phases]}, indent=1, sort_keys=True)
        + "\n", encoding="utf-8")
    return EffectRow(
        mode=NAIVE_MODE,
        case=f"{case_dir.name}/{NAIVE_DIR}",
        publications=count_publications(kept),
        provider_calls=len(read_receipts(kept).receipts),
        complete=outcome.get("complete") is True,
    )
