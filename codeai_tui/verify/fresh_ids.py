"""The verifier's claims for a tool case whose provider gives new tool-call ids on every
request, and for its counterfactual (the hazard the seed "Model-call recovery" is about).

A provider asked again can return a new tool-call id, which is a second operation. The
case's replay must have kept the saved decision's ids everywhere (admission, publication,
receipt, the follow-up request); its counterfactual, a copy of the case as killed that a
naive worker asked again, must show the same request bytes answered with a new id and a
second publication, signed by the same kernel. All read with the verifier's own code:
the ledger for the saved plan, the artifacts for the follow-up request's bytes, plain
sqlite3 for the tool's stores, the provider's own logs.
"""

from __future__ import annotations

import json
from typing import Any

from codeai_tui.verify.claims import Claim, as_dict
from codeai_tui.verify.effects import (
    KERNEL_PUB,
    PROVIDER_LOG,
    REPORTS,
    TOOL_EXPECTED,
    TOOL_RECEIPTS,
    Counterfactual,
    ToolEvidence,
    check_line,
    counterfactual_phases,
    read_tool_evidence,
)
from codeai_tui.verify.store import CaseData, read_file, read_receipts


def _saved_plan_ids(case: CaseData) -> list[str]:
    """The tool-call ids of the saved decision: every tool_plan the ledger holds."""
    return [str(as_dict(t).get("tool_call_id")) for r in case.rows
            if r.kind == "attempt.observed" and isinstance(r.payload.get("tool_plan"), list)
            for t in r.payload["tool_plan"]]


def _decision_manifest(case: CaseData) -> dict[str, Any]:
    """The manifest of the call whose saved response holds the plan."""
    planning = {r.call_id for r in case.rows
                if r.kind == "attempt.observed" and r.payload.get("tool_plan")}
    found = [r.payload for r in case.rows if r.kind == "call.manifest" and r.call_id in planning]
    return found[-1] if found else {}


def _follow_up_ids(case: CaseData) -> list[list[str]]:
    """Per request that carries tool results: the ids its tool messages answer, read from
    the request bytes the ledger's manifest names."""
    out: list[list[str]] = []
    for r in case.rows:
        sha = r.payload.get("request_artifact") if r.kind == "call.manifest" else None
        if not isinstance(sha, str) or len(sha) < 3:
            continue
        try:
            request = json.loads(read_file(case.path / "artifacts" / "sha256" / sha[:2] / sha))
        except (OSError, ValueError):
            continue
        messages = [as_dict(m) for m in as_dict(request).get("messages") or []]
        answered = [str(m.get("tool_call_id")) for m in messages if m.get("role") == "tool"]
        if answered:
            out.append(answered)
    return out


def _kept_ids_claim(case: CaseData, ev: ToolEvidence) -> Claim:
    plan = _saved_plan_ids(case)
    admitted = [str(r.payload.get("tool_call_id")) for r in case.rows if r.kind == "tool.admitted"]
    published = [call for _, _, call in ev.publications]
    # recovery may append a receipt again: each distinct line counts once
    receipted = [str((ln.body or {}).get("tool_call_id")) for ln in
                 {ln.text: ln for ln in ev.lines}.values()]
    follow_up = _follow_up_ids(case)
    ok = (bool(plan) and admitted == plan and published == plan and receipted == plan
          and follow_up == [plan])
    return Claim(ok, case.name,
                 f"the replay kept the saved decision's tool-call id(s) {plan}: the admission, "
                 f"the publication in {REPORTS}, the receipt and the follow-up request carry "
                 "them" if ok else
                 f"tool-call ids differ from the saved plan {plan}: admitted {admitted}, "
                 f"published {published}, receipted {receipted}, follow-up {follow_up}")


def _naive_record(case: CaseData, cf: Counterfactual) -> tuple[Claim, dict[str, Any]]:
    phases = counterfactual_phases(case, cf)
    got = [(str(p.get("step")), p.get("exit_code")) for p in phases]
    lines = str(phases[-1].get("stdout") or "").strip().splitlines() if phases else []
    try:
        said = as_dict(json.loads(lines[-1])) if lines else {}
    except (ValueError, RecursionError):
        said = {}
    ok = got == [("reask", 0)] and bool(said)
    return Claim(ok, case.name,
                 f"{cf.subdir}/worker_runs.json: one naive worker process (reask exit 0) "
                 "asked the provider again on a copy of this case as killed" if ok else
                 f"{cf.subdir}/worker_runs.json: processes {got}, preregistered one reask exit 0"
                 ), said


def _asked_twice_claim(case: CaseData, cf: Counterfactual) -> Claim:
    """The decision's exact request bytes reached the provider twice under its key; the
    first receipt is this case's own (a copy of the case as killed)."""
    log, problems = read_receipts(case.path / cf.subdir)
    manifest = _decision_manifest(case)
    keys = {str(r.get("idempotency_key")) for r in log}
    bodies = {str(r.get("body_sha256")) for r in log}
    same_start = bool(case.receipts) and bool(log) \
        and log[0].get("receipt_id") == case.receipts[0].get("receipt_id")
    ok = (not problems and len(log) == cf.provider_calls and same_start
          and keys == {str(manifest.get("idempotency_key"))}
          and bodies == {str(manifest.get("request_sha256"))})
    return Claim(ok, case.name,
                 f"{cf.subdir}/{PROVIDER_LOG}: {len(log)} receipts under the decision's key "
                 f"{sorted(keys)} with its request hash {sorted(b[:12] for b in bodies)}: the "
                 "same decision asked twice, the first receipt this case's own" +
                 ("" if ok else f" (does not hold; preregistered {cf.provider_calls} receipts"
                  f"{'; ' + '; '.join(problems[:2]) if problems else ''})"))


def _new_ids_claim(case: CaseData, said: dict[str, Any]) -> Claim:
    plan = _saved_plan_ids(case)
    saved, reasked = said.get("saved_tool_call_ids"), said.get("reasked_tool_call_ids")
    ok = (saved == plan and isinstance(reasked, list) and len(reasked) == len(plan)
          and bool(plan) and not set(map(str, reasked)) & set(plan))
    return Claim(ok, case.name,
                 f"asked again with the same bytes, the provider answered with new tool-call "
                 f"id(s) {reasked} where the saved decision has {plan}" if ok else
                 f"the naive worker reports saved ids {saved} and re-asked ids {reasked}; the "
                 f"ledger's saved plan is {plan}: no new id shown")


def _published_twice_claims(case: CaseData, cf: Counterfactual, ev: ToolEvidence,
                            said: dict[str, Any]) -> list[Claim]:
    """The copy's tool store: one publication per tool-call id, the saved one under this
    case's own operation key and the new one as a second operation of the same turn; the
    copy's receipts signed by this case's kernel key, one per publication."""
    sub = case.path / cf.subdir
    naive = read_tool_evidence(sub)
    plan = _saved_plan_ids(case)
    reasked = [str(x) for x in said.get("reasked_tool_call_ids") or []]
    own = {key for _, key, _ in ev.publications}
    calls = [call for _, _, call in naive.publications]
    keys = [key for _, key, _ in naive.publications]
    turns = {key.rsplit("/", 1)[0] for key in keys}
    saved_keys = {key for _, key, call in naive.publications if call in plan}
    ok = (not naive.problems and len(naive.publications) == cf.publications
          and sorted(calls) == sorted(plan + reasked) and len(set(keys)) == len(keys)
          and len(turns) == 1 and saved_keys == own)
    claims = [Claim(ok, case.name,
                    f"{cf.subdir}/{REPORTS}: {len(naive.publications)} publications of one turn "
                    f"under tool-call ids {calls}: the saved one (this case's own operation) "
                    "and the re-asked one, a second operation the kernel admitted" if ok else
                    f"{cf.subdir}/{REPORTS}: publications {naive.publications} "
                    f"{'; '.join(naive.problems)}; preregistered {cf.publications}, the saved "
                    f"id(s) {plan} and the re-asked {reasked}")]
    lines: list[str] = []
    try:
        raw = read_file(sub / TOOL_RECEIPTS)
        lines = [ln for ln in raw.decode("utf-8", "replace").split("\n") if ln.strip()]
    except OSError:
        pass
    checked = [check_line(n, text.encode("utf-8"), ev.public)
               for n, text in enumerate(lines, start=1)]
    bad = [f"line {c.number}: {c.problem}" for c in checked if c.problem]
    named = sorted((str((c.body or {}).get("operation_key")),
                    as_dict((c.body or {}).get("result")).get("publication_id"))
                   for c in checked)
    want = sorted((key, pid) for pid, key, _ in naive.publications)
    ok = bool(checked) and not bad and named == want
    claims.append(Claim(ok, case.name,
                        f"{cf.subdir}/{TOOL_RECEIPTS}: {len(checked)} receipts, each verifying "
                        f"against this case's {KERNEL_PUB} and naming one of those "
                        "publications" if ok else
                        f"{cf.subdir}/{TOOL_RECEIPTS}: {'; '.join(bad[:3]) or 'no line'}; "
                        f"receipts name {named}, publications {want}"))
    return claims


def fresh_id_claims(case: CaseData, role: str | None) -> list[Claim]:
    """For a preregistered case with a counterfactual (the demo's fresh-id case)."""
    exp = TOOL_EXPECTED.get(role or "")
    cf = exp.counterfactual if exp is not None else None
    if cf is None:
        return []
    ev = read_tool_evidence(case.path)
    record, said = _naive_record(case, cf)
    return [_kept_ids_claim(case, ev), record, _asked_twice_claim(case, cf),
            _new_ids_claim(case, said), *_published_twice_claims(case, cf, ev, said)]


__all__ = ["fresh_id_claims"]
