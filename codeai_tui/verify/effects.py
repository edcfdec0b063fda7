"""The verifier's checks of tool cases and `effects.json`, with its own code.

What a tool case claims (the seed "Model-call recovery") is checked
from the stores the effects live in, never from the project's tool code: publications
are rows of the tool's own `tools/reports.sqlite3` (plain sqlite3, read-only), provider
calls are lines of the provider's own `provider/receipts.jsonl`, and every line of
`tools/receipts.ndjson` is checked here as canonical JSON signed with Ed25519 by the key
in `tools/kernel.pub` (`cryptography` directly; the project's `codeai_tui.tools` is not
used, so a bug there shows up as a disagreement here). The ledger is consulted only for
what it must agree with: one `tool.admitted` per publication, the `tool.completed`
receipt byte for byte, and whether the task completed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sqlite3
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from codeai_tui.verify.claims import Claim, as_dict
from codeai_tui.verify.rules import derive
from codeai_tui.verify.store import CaseData, read_file, read_receipts
from codeai_tui.verify.tool_rungs import ToolOp, derive_tools, turn_prefix

TOOLS = "tools"
KERNEL_PUB = f"{TOOLS}/kernel.pub"
TOOL_RECEIPTS = f"{TOOLS}/receipts.ndjson"
REPORTS = f"{TOOLS}/reports.sqlite3"
PROVIDER_LOG = "provider/receipts.jsonl"
EFFECTS = "effects.json"
WORKER_RUNS = "worker_runs.json"
RECEIPT_FORMAT = "codeai.tool_receipt.v1"
ROW_KEYS = ("mode", "case", "publications", "provider_calls", "complete")


@dataclass(frozen=True, slots=True)
class Counterfactual:
    """A naive path measured on a copy of the case as killed, kept in the case's `subdir`
    (its stores and its worker's record, no ledger): its row in effects.json and the
    effects its stores must show."""

    mode: str
    subdir: str
    publications: int
    provider_calls: int


@dataclass(frozen=True, slots=True)
class ToolExpect:
    """One preregistered tool case: the seed's effect row and how its workers ended."""

    mode: str
    publications: int
    provider_calls: int
    complete: bool
    receipted: bool  # each publication completed with a receipt; False: no outcome recorded
    phases: tuple[tuple[str, int], ...]  # (step, exit code) of each worker process
    calls: tuple[tuple[str, str, str], ...]  # (stage, next_operation, provider_effect), sorted
    kill_at: str | None = None
    # each tool operation's (state, next_operation, receipt verdict or None) and the
    # task's next operation (docs/tools.md's rungs, derived by tool_rungs.py)
    ops: tuple[tuple[str, str, str | None], ...] = ()
    task_op: str = "none"
    # the decision was resumed by an operator: a successor keeps the turn, and each tool
    # call of the response the successor saved published exactly once under its own id
    resumed: bool = False
    counterfactual: Counterfactual | None = None


_KILLED = -9
_DONE = ("completed", "none", "happened")
TOOL_EXPECTED: dict[str, ToolExpect] = {
    # decision and follow-up both answered; the replay asked for no new decision
    "tool_generate": ToolExpect("generate", 1, 2, True, True,
                                (("run", _KILLED), ("replay", 0)), (_DONE, _DONE), "receipt",
                                (("completed", "none", "valid"),)),
    "tool_stream": ToolExpect("stream", 1, 2, True, True,
                              (("run", _KILLED), ("replay", 0)), (_DONE, _DONE), "receipt",
                              (("completed", "none", "valid"),)),
    # the cut-off stream saved no response: the decision's effect is unknown, no plan
    "tool_truncated_stream": ToolExpect("truncated-stream", 0, 1, False, False, (("run", 0),),
                                        (("effect_unknown", "reconcile_effect", "unknown"),),
                                        task_op="reconcile_effect"),
    # the decision answered; no follow-up was ever sent (the replay refused)
    "tool_killed_in_tool": ToolExpect("killed-in-tool", 1, 1, False, False,
                                      (("run", _KILLED), ("replay", 3)), (_DONE,), "tool-effect",
                                      (("effect_unknown", "reconcile_effect", None),),
                                      task_op="reconcile_effect"),
    # killed before the decision was sent; resumed (the original superseded, never sent),
    # then a new worker replayed the successor's saved response and finished
    "tool_resumed_decision": ToolExpect("resumed-decision", 1, 2, True, True,
                                        (("run", _KILLED), ("resume", 0), ("replay", 0)),
                                        (("superseded", "none", "none"), _DONE, _DONE),
                                        "call.manifest", (("completed", "none", "valid"),),
                                        resumed=True),
    # the provider gives new tool-call ids on every request: the replay kept the saved
    # one (as generate); asked again on a copy, the same decision published twice
    "tool_fresh_ids": ToolExpect("fresh-ids", 1, 2, True, True,
                                 (("run", _KILLED), ("replay", 0)), (_DONE, _DONE), "receipt",
                                 (("completed", "none", "valid"),),
                                 counterfactual=Counterfactual("naive-reask", "naive", 2, 2)),
}


# ---- reading, with the verifier's own code


@dataclass(frozen=True, slots=True)
class ReceiptLine:
    number: int
    text: str
    body: dict[str, Any] | None
    problem: str | None  # None exactly when canonical and the signature verifies


@dataclass(slots=True)
class ToolEvidence:
    publications: list[tuple[int, str, str]] = field(default_factory=list)  # id, op key, call id
    problems: list[str] = field(default_factory=list)  # unreadable stores
    lines: list[ReceiptLine] = field(default_factory=list)
    key_id: str | None = None
    public: Ed25519PublicKey | None = None
    # receipts the ledger's tool.completed holds that the file does not (yet): a kernel
    # stopped between committing tool.completed and appending the line; checked the same
    ledger_only: list[ReceiptLine] = field(default_factory=list)

    def receipts(self) -> list[ReceiptLine]:
        """Every receipt known: the file's lines, then those only the ledger holds."""
        return self.lines + self.ledger_only

    @property
    def present(self) -> bool:
        return bool(self.publications or self.lines or self.key_id or self.problems)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def _kid(public: Ed25519PublicKey) -> str:
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def check_line(number: int, raw: bytes, public: Ed25519PublicKey | None) -> ReceiptLine:
    """One receipt line: canonical JSON {alg, body, kid, sig}, sig = Ed25519 over the
    canonical bytes of body, kid naming the trusted key (the docs/tools.md extension)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ReceiptLine(number, raw.decode("utf-8", "replace"), None, "not UTF-8")
    try:
        env = json.loads(text)
    except (ValueError, RecursionError):
        return ReceiptLine(number, text, None, "not JSON")
    if not isinstance(env, dict) or set(env) != {"alg", "body", "kid", "sig"} \
            or not isinstance(env["body"], dict):
        return ReceiptLine(number, text, None, "not a receipt {alg, body, kid, sig}")
    body: dict[str, Any] = env["body"]
    if _has_float(env) or _canonical(env) != text:
        return ReceiptLine(number, text, body, "not in canonical form (a byte was changed)")
    if env["alg"] != "Ed25519" or body.get("format") != RECEIPT_FORMAT:
        return ReceiptLine(number, text, body, f"alg {env['alg']!r} / format {body.get('format')!r}")
    if public is None:
        return ReceiptLine(number, text, body, f"no usable {KERNEL_PUB} to verify it against")
    if env["kid"] != _kid(public):
        return ReceiptLine(number, text, body, f"signed by another key than {KERNEL_PUB}")
    sig = env["sig"]
    try:
        if not isinstance(sig, str) or "=" in sig:
            raise ValueError("not unpadded base64url")
        public.verify(base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4)),
                      _canonical(body).encode("utf-8"))
    except (InvalidSignature, ValueError):
        return ReceiptLine(number, text, body, f"signature does not verify against {KERNEL_PUB}")
    return ReceiptLine(number, text, body, None)


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def read_tool_evidence(case: Path) -> ToolEvidence:
    """Never raises: what cannot be read is a problem (a FAIL line), not a crash."""
    ev = ToolEvidence()
    try:
        _read_into(case, ev)
    except OSError as exc:
        ev.problems.append(f"{TOOLS}/: cannot be read ({exc.strerror or exc})")
    return ev


def _read_into(case: Path, ev: ToolEvidence) -> None:
    tools = case / TOOLS
    if tools.is_symlink():
        ev.problems.append(f"{TOOLS}/ is a link; nothing is read through it")
        return
    if not tools.is_dir():
        return
    public: Ed25519PublicKey | None = None
    pub = case / KERNEL_PUB
    if _regular(pub):
        try:
            loaded = serialization.load_pem_public_key(read_file(pub))
        except (ValueError, TypeError):
            loaded = None
        if isinstance(loaded, Ed25519PublicKey):
            public, ev.key_id = loaded, _kid(loaded)
            ev.public = public
        else:
            ev.problems.append(f"{KERNEL_PUB} is not an Ed25519 public key")
    receipts = case / TOOL_RECEIPTS
    if _regular(receipts):
        for number, raw in enumerate(read_file(receipts).split(b"\n"), start=1):
            if raw.strip():
                ev.lines.append(check_line(number, raw, public))
    for name in (KERNEL_PUB, TOOL_RECEIPTS, REPORTS):
        if (case / name).is_symlink() or ((case / name).exists() and not _regular(case / name)):
            ev.problems.append(f"{name} is not a regular file; not read")
    reports = case / REPORTS
    if _regular(reports):
        try:
            rows = _read_publications(reports)
            ev.publications = [(int(r[0]), str(r[1]), str(r[2])) for r in rows]
        except sqlite3.Error as exc:
            ev.problems.append(f"{REPORTS}: cannot read publications ({exc})")


def _read_publications(reports: Path) -> list[tuple[Any, ...]]:
    """The store's rows, read from a scratch copy (the database with its -journal or
    -wal): a tool killed inside its transaction leaves a hot journal that a `mode=ro`
    connection cannot roll back ("attempt to write a readonly database"); the copy
    recovers in the scratch directory and the case is never written."""
    with tempfile.TemporaryDirectory(prefix="codeai-verify-") as scratch:
        copy = Path(scratch) / reports.name
        shutil.copyfile(reports, copy)
        for suffix in ("-journal", "-wal"):
            side = reports.with_name(reports.name + suffix)
            if _regular(side):
                shutil.copyfile(side, copy.with_name(copy.name + suffix))
        conn = sqlite3.connect(f"file:{quote(str(copy))}", uri=True, isolation_level=None,
                               timeout=5.0)
        try:
            try:
                return conn.execute("SELECT id, operation_key, tool_call_id FROM publications"
                                    " ORDER BY id").fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return []  # killed while creating its store: no row can exist yet
                raise
        finally:
            conn.close()


# ---- counting (what effects.json must agree with)


@dataclass(frozen=True, slots=True)
class Counted:
    publications: int
    provider_calls: int
    complete: bool
    worker_complete: bool | None
    ledger_complete: bool


def _last_json(text: Any) -> dict[str, Any]:
    lines = str(text or "").strip().splitlines()
    try:
        return as_dict(json.loads(lines[-1])) if lines else {}
    except (ValueError, RecursionError):
        return {}


def worker_phases(case: CaseData) -> list[dict[str, Any]]:
    """The recorded worker processes; none when the record is absent or broken (the
    phase claim then fails; counting must not crash the bundle-level effects check)."""
    try:
        doc = as_dict(case.json_doc(WORKER_RUNS))
    except (OSError, ValueError):
        return []
    return [as_dict(p) for p in doc.get("phases") or [] if isinstance(p, dict)]


def count_effects(case: CaseData, ev: ToolEvidence) -> Counted:
    """Publications from the tool's store, provider calls from the provider's log;
    complete when the last worker said so and the ledger holds the task's completion."""
    phases = worker_phases(case)
    said = _last_json(phases[-1].get("stdout")).get("complete") if phases else None
    worker = said if isinstance(said, bool) else None
    ledger = any(r.kind == "task.completed" for r in case.rows)
    return Counted(len(ev.publications), len(case.receipts), worker is True and ledger,
                   worker, ledger)


def counterfactual_phases(case: CaseData, cf: Counterfactual) -> list[dict[str, Any]]:
    """The recorded worker processes of a counterfactual (none when absent or broken)."""
    try:
        doc = json.loads(read_file(case.path / cf.subdir / WORKER_RUNS).decode("utf-8"))
    except (OSError, ValueError):
        return []
    return [as_dict(p) for p in as_dict(doc).get("phases") or [] if isinstance(p, dict)]


def count_counterfactual(case: CaseData, cf: Counterfactual) -> Counted:
    """A counterfactual's effects, from its own stores: the tool's and the provider's. It
    has no ledger, so complete is what its worker said."""
    sub = case.path / cf.subdir
    phases = counterfactual_phases(case, cf)
    said = _last_json(phases[-1].get("stdout")).get("complete") if phases else None
    worker = said if isinstance(said, bool) else None
    return Counted(len(read_tool_evidence(sub).publications), len(read_receipts(sub)[0]),
                   worker is True, worker, False)


# ---- claims per tool case


def _ops(case: CaseData, kind: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in case.rows:
        if r.kind == kind and isinstance(r.payload.get("operation_key"), str):
            out.setdefault(r.payload["operation_key"], []).append(r)
    return out


def _signature_claim(case: CaseData, ev: ToolEvidence) -> Claim:
    bad = [f"{TOOL_RECEIPTS} line {ln.number}: {ln.problem}" for ln in ev.lines if ln.problem]
    distinct = len({ln.text for ln in ev.lines})
    if bad:
        return Claim(False, case.name, "; ".join(bad[:5]))
    return Claim(True, case.name,
                 f"{TOOL_RECEIPTS}: {len(ev.lines)} line(s) ({distinct} distinct), each canonical "
                 f"JSON with an Ed25519 signature that verifies against {KERNEL_PUB} "
                 f"(kid {ev.key_id})")


def _ledger_agreement_claims(case: CaseData, ev: ToolEvidence) -> list[Claim]:
    """Every line of the file is a tool.completed receipt of the ledger and the other way
    round, but for one recoverable state: a receipt the ledger holds for an operation the
    file has no line for, which verifies on its own (the kernel was stopped between the
    commit and the append; the next replay appends it) is information, not a failure."""
    completed = _ops(case, "tool.completed")
    in_ledger = {str(rows[0].payload.get("receipt")) for rows in completed.values()}
    in_file = {ln.text for ln in ev.lines}
    file_ops = {ln.body.get("operation_key") for ln in ev.lines if ln.body}
    extra = sorted(ln.number for ln in ev.lines if ln.text not in in_ledger)
    missing: list[ReceiptLine] = []
    for text in sorted(in_ledger - in_file):
        line = check_line(0, text.encode("utf-8"), ev.public)
        op = line.body.get("operation_key") if line.body else None
        if line.problem is None and op not in file_ops:
            ev.ledger_only.append(line)
        else:
            missing.append(line)
    ok = not missing and not extra
    text = (f"every tool.completed receipt in the ledger ({len(in_ledger)}) is in {TOOL_RECEIPTS} "
            "byte for byte, and every line there is one of them")
    if ev.ledger_only:
        text = (f"every line of {TOOL_RECEIPTS} is a tool.completed receipt of the ledger; "
                f"{len(in_ledger) - len(ev.ledger_only)} of the ledger's {len(in_ledger)} are in it")
    if not ok:
        text = (f"{TOOL_RECEIPTS} and the ledger disagree: {len(missing)} ledger receipt(s) not in "
                f"the file; line(s) {extra[:5]} match no tool.completed receipt")
    claims = [Claim(ok, case.name, text)]
    if ev.ledger_only:
        claims.append(Claim(True, case.name, info=True, text=(
            f"{len(ev.ledger_only)} signed receipt(s) in the ledger are not yet in "
            f"{TOOL_RECEIPTS}: the kernel stopped between tool.completed and the append; each "
            "verifies against the kernel key, and the next replay appends it")))
    return claims


def _where(line: ReceiptLine) -> str:
    return f"line {line.number}" if line.number else "in the ledger only"


def _readmitted(admissions: int) -> str:
    return (f", admitted again after {admissions - 1} not_executed finding(s)"
            if admissions > 1 else "")


def _names_other_admission(body: dict[str, Any], admitted: Any) -> bool:
    """A receipt is bound to its admission: same seq, planning call and attempt, tool call,
    tool and arguments hash."""
    p = admitted.payload
    return (body.get("admitted_seq") != admitted.seq or body.get("call_id") != admitted.call_id
            or body.get("attempt_id") != admitted.attempt_id
            or any(body.get(k) != p.get(k) for k in ("tool_call_id", "tool", "arguments_sha256")))


def _publication_claims(case: CaseData, ev: ToolEvidence, receipted: bool | None) -> list[Claim]:
    """Every publication: exactly one admission that stands (earlier ones each closed by a
    not_executed finding, docs/tools.md), and exactly one valid receipt naming it (or, where
    preregistered, none: admitted without an outcome, its effect unknown)."""
    admitted = _ops(case, "tool.admitted")
    completed = _ops(case, "tool.completed")
    standing = {o.operation_key: o for ct in derive_tools(case.rows).values() for o in ct.ops}
    claims: list[Claim] = []
    keys = Counter(key for _, key, _ in ev.publications)
    for pid, key, call in ev.publications:
        op = standing.get(key)
        stood = op.admissions if op is not None else 0
        adm = [op.admitted] if op is not None and op.admitted is not None else []
        texts = {ln.text: ln for ln in ev.receipts()
                 if ln.body and ln.body.get("operation_key") == key}
        done = completed.get(key, [])
        want_receipt = receipted if receipted is not None else bool(done)
        problems: list[str] = []
        if keys[key] != 1:
            problems.append(f"{keys[key]} publications under this operation")
        n = len(admitted.get(key, []))
        if not adm or n != stood:
            problems.append(f"{n} tool.admitted events" + (
                f", {n - stood} of them a second admission without a not_executed finding"
                if adm and n > stood else ""))
        elif adm[0].payload.get("tool_call_id") != call:
            problems.append("its tool_call_id differs from the admission's")
        if want_receipt:
            ln = next(iter(texts.values())) if len(texts) == 1 else None
            result = as_dict((ln.body or {}).get("result")) if ln else {}
            if len(done) != 1:
                problems.append(f"{len(done)} tool.completed events")
            if len(texts) != 1:
                problems.append(f"{len(texts)} distinct receipts")
            elif ln is not None and ln.problem:
                problems.append(f"its receipt ({_where(ln)}) is invalid: {ln.problem}")
            elif ln is not None and (result.get("publication_id") != pid
                                     or (ln.body or {}).get("outcome") != "succeeded"):
                problems.append(f"its receipt names publication {result.get('publication_id')!r}")
            elif ln is not None and len(adm) == 1 and _names_other_admission(ln.body or {}, adm[0]):
                problems.append(f"its receipt ({_where(ln)}) names another admission than "
                                f"the ledger's (seq {adm[0].seq})")
            text = (f"publication {pid} ({key}): one admission (seq {adm[0].seq if adm else '?'}"
                    f"{_readmitted(stood)}) and one valid receipt naming it")
        else:
            if texts or done:
                problems.append(f"{len(texts)} receipt(s), {len(done)} tool.completed; "
                                "preregistered: none")
            unknown = ("reconciled executed at seq "
                       f"{op.reconciled.seq}" if op is not None and op.reconciled is not None
                       and op.finding == "executed" else "its effect is unknown to the kernel")
            text = (f"publication {pid} ({key}): one admission (seq {adm[0].seq if adm else '?'}"
                    f"{_readmitted(stood)}), no outcome and no receipt: {unknown}"
                    + (", as preregistered" if receipted is not None else ""))
        claims.append(Claim(not problems, case.name,
                            text if not problems else f"publication {pid} ({key}): "
                            + "; ".join(problems)))
    # A failed outcome legitimately published nothing; a preregistered case has none.
    succeeded = {k for k, rows in completed.items() if rows[0].payload.get("outcome") == "succeeded"}
    stray = sorted(k for k in admitted if k not in keys and (receipted is not None or k in succeeded))
    if stray:
        claims.append(Claim(False, case.name,
                            f"{len(stray)} operation(s) admitted with no publication in {REPORTS}: "
                            f"{', '.join(stray[:3])}"))
    named = {ln.body.get("operation_key") for ln in ev.receipts()
             if ln.body and (receipted is not None or ln.body.get("outcome") == "succeeded")}
    orphan = sorted(str(k) for k in named if k not in keys)
    if orphan:
        claims.append(Claim(False, case.name,
                            f"receipt(s) for operation(s) the tool's store has no publication of: "
                            f"{', '.join(orphan[:3])}"))
    return claims


def _finding_claims(case: CaseData, ev: ToolEvidence) -> list[Claim]:
    """An operator's finding that stands (`tool.reconciled`, docs/tools.md) against the tool's
    own store: executed needs the operation's publication there, not_executed has none
    (the operation has not run again since). Only for the demo tool, whose store this is,
    and only when that store was read."""
    if ev.problems or not _regular(case.path / REPORTS):
        return []
    published = {key for _, key, _ in ev.publications}
    claims: list[Claim] = []
    for ct in derive_tools(case.rows).values():
        for op in ct.ops:
            if op.state not in ("reconciled_executed", "reconciled_not_executed") \
                    or op.admitted is None or op.reconciled is None \
                    or op.admitted.payload.get("tool") != "publish_report":
                continue
            found = op.operation_key in published
            claims.append(Claim(
                found == (op.finding == "executed"), case.name,
                f"operation {op.operation_key}: reconciled {op.finding} at seq "
                f"{op.reconciled.seq}; {REPORTS} "
                + ("has its publication" if found else "has no publication of it")))
    return claims


def _phase_claim(case: CaseData, exp: ToolExpect) -> Claim:
    phases = worker_phases(case)
    got = tuple((str(p.get("step")), p.get("exit_code")) for p in phases)
    ok = got == exp.phases and all((p.get("signal") == "SIGKILL") == (p.get("exit_code") == _KILLED)
                                   for p in phases)
    if exp.kill_at is not None:
        ok = ok and bool(phases) and exp.kill_at in [str(a) for a in phases[0].get("argv") or []]
    if ok and exp.phases[-1] == ("replay", 3):
        ok = "refused" in _last_json(phases[-1].get("stdout"))
    shown = ", ".join(f"{s} exit {c}" for s, c in got) or "none recorded"
    kill = f", killed by SIGKILL at {exp.kill_at}" if exp.kill_at else ""
    text = f"worker processes ({WORKER_RUNS}): {shown}{kill}" + (
        ", replay refused" if exp.phases[-1] == ("replay", 3) else "")
    return Claim(ok, case.name, text if ok else
                 f"{text}; preregistered {', '.join(f'{s} exit {c}' for s, c in exp.phases)}")


def _provider_keys_claim(case: CaseData) -> Claim:
    keys = Counter(str(r.get("idempotency_key")) for r in case.receipts)
    twice = sorted(k for k, n in keys.items() if n > 1)
    return Claim(not twice, case.name,
                 f"each of the {len(case.receipts)} provider request(s) has its own key: no model "
                 "decision was asked twice" if not twice else
                 f"the provider was asked twice under {', '.join(twice[:3])}")


def _counts_claim(case: CaseData, exp: ToolExpect, c: Counted) -> Claim:
    got = (c.publications, c.provider_calls, c.complete)
    want = (exp.publications, exp.provider_calls, exp.complete)
    text = (f"{exp.mode}: {c.publications} publication(s) in {REPORTS}, {c.provider_calls} "
            f"provider call(s) in {PROVIDER_LOG}, complete {str(c.complete).lower()} (worker "
            f"{c.worker_complete}, task.completed in the ledger {c.ledger_complete})")
    return Claim(got == want, case.name,
                 text + (" as preregistered" if got == want else
                         f"; preregistered {want[0]} / {want[1]} / {str(want[2]).lower()}"))


def _calls_claim(case: CaseData, exp: ToolExpect) -> Claim:
    """The model calls as the verifier's own rules derive them; and no tool plan was
    journaled where the stream was cut off (nothing may make one up later)."""
    calls = tuple(sorted((s["stage"], s["next_operation"], s["provider_effect"])
                         for s in derive(case.rows).calls.values()))
    plans = sum(1 for r in case.rows if r.kind == "attempt.observed" and r.payload.get("tool_plan"))
    ok = calls == tuple(sorted(exp.calls)) and plans == (1 if exp.publications else 0)
    text = (f"{exp.mode}: calls derived as {[c[0] for c in calls]}, {plans} saved response(s) "
            "with a tool plan")
    return Claim(ok, case.name, text + (" as preregistered" if ok else
                                        f"; preregistered calls {list(exp.calls)}"))


def _successor_turn_claims(case: CaseData, exp: ToolExpect | None) -> list[Claim]:
    """Every call resumed from a call of a turn names that same turn (the identity fixed
    for every attempt, docs/tools.md), so its saved plan keys the same operations."""
    requested = {r.call_id: r for r in case.rows if r.kind == "call.requested" and r.call_id}
    claims: list[Claim] = []
    for cid, row in requested.items():
        origin = row.payload.get("resumed_from")
        before = requested.get(origin) if isinstance(origin, str) else None
        turn = turn_prefix(before.payload) if before is not None else None
        if turn is None:
            continue  # resumed from a call of no turn: nothing to keep
        kept = turn_prefix(row.payload)
        claims.append(Claim(kept == turn, case.name,
                            f"call {cid}, resumed from {origin}, names the same turn {turn}"
                            if kept == turn else f"call {cid}, resumed from {origin} (turn "
                            f"{turn}), names {kept or 'no turn'}: its operations are keyed "
                            "to no turn of the task"))
    if exp is not None and exp.resumed and not claims:
        claims.append(Claim(False, case.name, "preregistered a resumed decision: no call is "
                            "resumed from a call that names a turn"))
    return claims


def _saved_tool_call_ids(case: CaseData, call_id: str) -> tuple[str | None, list[str] | str]:
    """The adopted attempt and the tool-call ids of the response it saved, read from the
    stored artifact with this module's own code (a JSON answer); or why they cannot be."""
    done = next((r for r in case.rows if r.call_id == call_id and r.kind == "call.completed"), None)
    attempt = done.payload.get("adopted_attempt_id") if done is not None else None
    observed = next((r for r in case.rows if r.call_id == call_id and r.attempt_id == attempt
                     and r.kind == "attempt.observed"), None)
    sha = observed.payload.get("response_artifact") if observed is not None else None
    if not isinstance(attempt, str) or not isinstance(sha, str) or len(sha) != 64:
        return None, "no adopted attempt with a saved response"
    if as_dict(observed.payload.get("transport") if observed else None).get("stream") is True:
        return attempt, "a streamed response (this check reads JSON answers)"
    try:
        data = read_file(case.path / "artifacts" / "sha256" / sha[:2] / sha)
        if hashlib.sha256(data).hexdigest() != sha:
            return attempt, f"response artifact {sha[:12]} does not hash to its name"
        message = as_dict(as_dict((json.loads(data).get("choices") or [{}])[0]).get("message"))
        ids = [as_dict(tc).get("id") for tc in message.get("tool_calls") or []]
    except (OSError, ValueError, AttributeError, TypeError, IndexError) as exc:
        return attempt, f"response artifact {sha[:12]} unreadable ({exc})"
    if not all(isinstance(i, str) for i in ids):
        return attempt, "a tool call without an id"
    return attempt, [str(i) for i in ids]


def _original_ids_claim(case: CaseData, ev: ToolEvidence) -> Claim:
    """Counted from the tool's own store: exactly one publication per tool call of the
    saved decision response, under that response's (original) tool-call id and keyed by
    the planning call's turn; nothing else published."""
    requested = {r.call_id: r for r in case.rows if r.kind == "call.requested"}
    want: list[tuple[str, str]] = []
    shown: list[str] = []
    for ct in derive_tools(case.rows).values():
        if not ct.plan or not ct.adopted:
            continue
        attempt, ids = _saved_tool_call_ids(case, ct.call_id)
        row = requested.get(ct.call_id)
        prefix = turn_prefix(row.payload) if row is not None else None
        if isinstance(ids, str) or prefix is None:
            why = ids if isinstance(ids, str) else "it names no turn"
            return Claim(False, case.name, f"call {ct.call_id}'s saved response cannot be "
                         f"checked: {why}")
        want += [(f"{prefix}/{i}", i) for i in ids]
        shown.append(f"call {ct.call_id} attempt {attempt}: {', '.join(ids)}")
    got = sorted((key, tcid) for _, key, tcid in ev.publications)
    ok = bool(want) and got == sorted(want)
    return Claim(ok, case.name,
                 f"{REPORTS}: {len(got)} publication(s), exactly one under each tool-call id "
                 f"of the saved decision response ({'; '.join(shown)}), keyed by its turn"
                 if ok else f"{REPORTS} publications {got} are not one per tool call of the "
                 f"saved decision response {sorted(want)}")


def receipt_verdict(op: ToolOp, ev: ToolEvidence) -> str | None:
    """valid / invalid / missing for a completed operation (docs/tools.md), None otherwise."""
    if op.completed is None:
        return None
    text = op.completed.payload.get("receipt")
    line = next((ln for ln in ev.lines if ln.body
                 and ln.body.get("operation_key") == op.operation_key), None)
    if line is None:
        # the recoverable state (a kernel stopped between tool.completed and the append),
        # reported as INFO by the ledger-agreement claim: the receipt itself verifies
        pending = any(ln.text == text and ln.problem is None for ln in ev.ledger_only)
        return "valid" if pending else "missing"
    others = {ln.text for ln in ev.lines if ln.body
              and ln.body.get("operation_key") == op.operation_key}
    body = line.body or {}
    if (line.text != text or line.problem is not None or len(others) > 1
            or op.admitted is None or _names_other_admission(body, op.admitted)
            or body.get("outcome") != op.completed.payload.get("outcome")):
        return "invalid"
    return "valid"


def _tool_rungs_claim(case: CaseData, exp: ToolExpect, ev: ToolEvidence) -> Claim:
    """Each tool operation's rung and receipt verdict, and the task's next operation, as
    the verifier's own rules derive them, against what was preregistered."""
    tools = derive_tools(case.rows)
    got = tuple((o.state, o.next_operation, receipt_verdict(o, ev))
                for ct in tools.values() for o in ct.ops)
    task = next(iter(derive(case.rows).tasks.values()), {}).get("next_operation")
    ok = got == exp.ops and task == exp.task_op
    text = (f"{exp.mode}: tool operations derived as {[' / '.join(map(str, g)) for g in got]}, "
            f"task next operation {task}")
    return Claim(ok, case.name, text + (" as preregistered" if ok else
                                        f"; preregistered {list(exp.ops)}, task {exp.task_op}"))


def _recorded_tools_claim(case: CaseData, ev: ToolEvidence) -> Claim | None:
    """The recorded inspection's `tools` sections agree with the operations re-derived
    here (state, next operation, receipt verdict)."""
    try:
        proj = as_dict(as_dict(case.json_doc("inspection.json")).get("projection"))
    except (OSError, ValueError):
        return None
    calls = [c for c in proj.get("calls") or [] if isinstance(c, dict)]
    if not any("tools" in c for c in calls) and not any(
            r.kind.startswith("tool.") for r in case.rows):
        return None  # recorded before tool sections existed and nothing to compare
    recorded = {}
    for c in calls:
        for op in as_dict(c.get("tools")).get("operations") or []:
            op = as_dict(op)
            recorded[(c.get("call_id"), op.get("operation_key"))] = (
                op.get("state"), op.get("next_operation"),
                as_dict(op.get("receipt")).get("verdict"))
    derived = {(o.call_id, o.operation_key): (o.state, o.next_operation, receipt_verdict(o, ev))
               for ct in derive_tools(case.rows).values() for o in ct.ops}
    ok = recorded == derived
    return Claim(ok, case.name, f"inspection.json: {len(recorded)} tool operation(s), each with "
                 "the state, next operation and receipt verdict re-derived here" if ok else
                 f"inspection.json tool operations {recorded} differ from re-derived {derived}")


def tool_case_claims(case: CaseData, role: str | None) -> list[Claim]:
    """Claims for a case with a tools/ directory (any case; preregistered ones by role)."""
    exp = TOOL_EXPECTED.get(role or "")
    ev = read_tool_evidence(case.path)
    if exp is None and not ev.present:
        return []
    claims = [Claim(False, case.name, p) for p in ev.problems]
    if ev.lines:
        claims.append(_signature_claim(case, ev))
    if ev.lines or _ops(case, "tool.completed"):
        claims += _ledger_agreement_claims(case, ev)
    claims += _publication_claims(case, ev, exp.receipted if exp else None)
    claims += _finding_claims(case, ev)
    claims += _successor_turn_claims(case, exp)
    if exp is not None:
        claims.append(_counts_claim(case, exp, count_effects(case, ev)))
        claims.append(_calls_claim(case, exp))
        claims.append(_tool_rungs_claim(case, exp, ev))
        recorded = _recorded_tools_claim(case, ev)
        if recorded is not None:
            claims.append(recorded)
        claims.append(_provider_keys_claim(case))
        claims.append(_phase_claim(case, exp))
        if exp.resumed:
            claims.append(_original_ids_claim(case, ev))
        if not exp.receipted and ev.lines:
            claims.append(Claim(False, case.name, f"{TOOL_RECEIPTS} holds {len(ev.lines)} line(s); "
                                "preregistered: none"))
    return claims


# ---- effects.json at the bundle root


def effects_claims(root: Path, entries: dict[str, dict[str, Any]],
                   cases: dict[str, CaseData]) -> list[Claim]:
    """effects.json has one row per preregistered mode, each naming the case that plays
    it, with the figures counted here from that case's stores."""
    # mode -> (the case its row names, the case directory, the counterfactual counted)
    by_mode: dict[str, tuple[str, str, Counterfactual | None]] = {}
    for d, e in entries.items():
        exp = TOOL_EXPECTED.get(str(e.get("role")))
        if exp is not None:
            by_mode[exp.mode] = (d, d, None)
            cf = exp.counterfactual
            if cf is not None:
                by_mode[cf.mode] = (f"{d}/{cf.subdir}", d, cf)
    path = root / EFFECTS
    if not path.exists():
        return [Claim(False, "bundle", f"{EFFECTS} is missing")] if by_mode else []
    try:
        doc = json.loads(read_file(path).decode("utf-8"))
    except (OSError, ValueError) as exc:
        return [Claim(False, "bundle", f"{EFFECTS} is unreadable ({exc})")]
    rows = [r for r in doc if isinstance(r, dict)] if isinstance(doc, list) else []
    modes = [str(r.get("mode")) for r in rows]
    want = sorted([e.mode for e in TOOL_EXPECTED.values()]
                  + [e.counterfactual.mode for e in TOOL_EXPECTED.values() if e.counterfactual])
    shaped = isinstance(doc, list) and len(rows) == len(doc) \
        and all(tuple(sorted(r)) == tuple(sorted(ROW_KEYS)) for r in rows)
    ok = shaped and sorted(modes) == want
    claims = [Claim(ok, "bundle",
                    f"{EFFECTS}: one row {{{', '.join(ROW_KEYS)}}} per preregistered mode "
                    f"({', '.join(want)})" if ok else
                    f"{EFFECTS}: rows for modes {modes}, preregistered one each of {want}"
                    + ("" if shaped else f", each with exactly the keys {list(ROW_KEYS)}"))]
    for row in rows:
        mode, name = str(row.get("mode")), str(row.get("case"))
        named, home, cf = by_mode.get(mode, (None, "", None))
        case = cases.get(home)
        if named != name or case is None:
            claims.append(Claim(False, "bundle", f"{EFFECTS}: mode {mode} names case {name!r}; "
                                f"bundle.json gives that mode to {named!r}"))
            continue
        c = (count_effects(case, read_tool_evidence(case.path)) if cf is None
             else count_counterfactual(case, cf))
        counted = {"publications": c.publications, "provider_calls": c.provider_calls,
                   "complete": c.complete}
        diff = [f"{k} {row.get(k)!r}, counted {v!r}" for k, v in counted.items()
                if row.get(k) != v or type(row.get(k)) is not type(v)]
        where = f"{cf.subdir}/" if cf is not None else ""
        claims.append(Claim(not diff, "bundle",
                            f"{EFFECTS} {mode} ({name}): {c.publications} / {c.provider_calls} / "
                            f"{str(c.complete).lower()} agrees with {where}{REPORTS}, "
                            f"{where}{PROVIDER_LOG} and the worker" if not diff else
                            f"{EFFECTS} {mode} ({name}) disagrees with the stores: "
                            + "; ".join(diff)))
    return claims


__all__ = ["TOOL_EXPECTED", "effects_claims", "tool_case_claims"]
