"""The experiment's preregistered outcomes, held by the verifier itself.

bundle.json only names which directory plays which role; what each role must show is
written here, from the seed's experiment ("Kill it, reopen it, resume it"), so a
bundle that recorded a different outcome fails even if it is self-consistent.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from codeai_tui.verify.claims import Claim, as_dict, short
from codeai_tui.verify.effects import TOOL_EXPECTED
from codeai_tui.verify.rules import Derived
from codeai_tui.verify.store import CaseData

CallShape = tuple[str, str, str]  # stage, next_operation, provider_effect


@dataclass(frozen=True, slots=True)
class Expect:
    termination: tuple[str, str]  # event, point
    calls: tuple[CallShape, ...]
    compilations: tuple[tuple[str, str], ...]
    tasks: tuple[str, ...]
    receipts: int
    resume_exit: int | None = None
    duplicates: bool = False
    plan: str | None = None  # the verdict a read-only resume plan recorded
    action: tuple[str, str] | None = None  # an operator action after the kill: verb, finding


_COMP_OK = (("completed", "none"),)
EXPECTED: dict[str, Expect] = {
    "killed_after_requested": Expect(("call.requested", "after_commit"),
                                     (("requested", "start_call", "none"),), _COMP_OK, ("start_call",), 0,
                                     plan="no drift check possible"),
    "killed_after_manifest": Expect(("call.manifest", "after_commit"),
                                    (("manifest_recorded", "start_call", "none"),), _COMP_OK, ("start_call",), 0,
                                    plan="match"),
    "drift_refused": Expect(("call.manifest", "after_commit"),
                            (("manifest_recorded", "start_call", "none"),), _COMP_OK, ("start_call",), 0,
                            resume_exit=3),
    "killed_in_flight": Expect(("attempt.started", "provider_holding_request"),
                               (("effect_unknown", "reconcile_effect", "unknown"),), _COMP_OK,
                               ("reconcile_effect",), 1, resume_exit=3),
    "naive_restart": Expect(("attempt.started", "provider_holding_request"),
                            (("effect_unknown", "reconcile_effect", "unknown"),), _COMP_OK,
                            ("reconcile_effect",), 2, duplicates=True),
    "killed_after_observed": Expect(("attempt.observed", "after_commit"),
                                    (("observed", "reinterpret", "happened"),), _COMP_OK,
                                    ("reinterpret",), 1, resume_exit=3),
    "killed_after_compilation_requested": Expect(("context.compilation_requested", "after_commit"),
                                                 (), (("requested", "recompile"),), ("recompile",), 0),
    "compilation_failed": Expect(("context.compilation_failed", "after_commit"),
                                 (), (("failed", "fix_inputs"),), ("fix_inputs",), 0),
    "resumed": Expect(("call.manifest", "after_commit"),
                      (("completed", "none", "happened"), ("superseded", "none", "none")),
                      _COMP_OK, ("check_and_accept",), 1, resume_exit=0),
    # a case for each advance step (15, 16 after a separate reconcile process)
    "reconciled_not_received": Expect(("attempt.started", "after_commit"),
                                      (("reconciled_not_received", "start_next_attempt", "none"),),
                                      _COMP_OK, ("start_next_attempt",), 0,
                                      action=("reconcile", "not_received")),
    "reconciled_received": Expect(("attempt.started", "provider_holding_request"),
                                  (("reconciled_received", "decide_duplicate", "happened"),),
                                  _COMP_OK, ("decide_duplicate",), 1,
                                  action=("reconcile", "received")),
    "killed_after_interpreted": Expect(("attempt.interpreted", "after_commit"),
                                       (("interpreted", "redecide", "happened"),), _COMP_OK,
                                       ("redecide",), 1),
    "completed_and_accepted": Expect(("task.accepted", "after_commit"),
                                     (("completed", "none", "happened"),) * 2, _COMP_OK * 2,
                                     ("none", "repeat_acceptance"), 2),
}

# The seed's inventory: A required (size 12, estimated), B required (0), D optional (0).
INVENTORY = {"A": (True, 12, True), "B": (True, 0, False), "D": (False, 0, False)}


def role_claims(case: CaseData, role: str, derived: Derived) -> list[Claim]:
    exp = EXPECTED[role]
    claims = [_states_claim(case, role, exp, derived), _termination_claim(case, exp)]
    n = len(case.receipts)
    claims.append(Claim(n == exp.receipts, case.name,
                        f"the provider's own log holds {n} receipt(s) (preregistered: {exp.receipts})"))
    if exp.resume_exit is not None:
        claims += _resume_claims(case, role, exp.resume_exit, derived)
    if exp.plan is not None:
        claims.append(_plan_claim(case, exp.plan, derived))
    if exp.action is not None:
        claims.append(_action_claim(case, exp.action))
    if role == "naive_restart":
        claims += _naive_claims(case, derived)
    if role in ("compilation_failed", "killed_after_compilation_requested"):
        claims += _inventory_claims(case, role, derived)
    return claims


def _states_claim(case: CaseData, role: str, exp: Expect, d: Derived) -> Claim:
    calls = sorted((s["stage"], s["next_operation"], s["provider_effect"]) for s in d.calls.values())
    comps = sorted((s["stage"], s["next_operation"]) for s in d.compilations.values())
    tasks = sorted(s["next_operation"] for s in d.tasks.values())
    got = (tuple(calls), tuple(comps), tuple(tasks))
    want = (tuple(sorted(exp.calls)), tuple(sorted(exp.compilations)), tuple(sorted(exp.tasks)))
    text = (f"{role}: calls {[c[0] for c in calls]}, compilations {[c[0] for c in comps]}, "
            f"tasks {list(tasks)}")
    return Claim(got == want, case.name, text + (" as preregistered" if got == want
                                                 else f"; preregistered {want}"))


def _action_claim(case: CaseData, action: tuple[str, str]) -> Claim:
    """The operator's action ran in its own process, appended exactly its one event (the
    finding, on the killed attempt) and sent nothing."""
    rec = as_dict(case.json_doc("operator_action.json"))
    before, after = as_dict(rec.get("before")), as_dict(rec.get("after"))
    verb, finding = action
    n = before.get("event_count")
    appended = [r for r in case.rows if isinstance(n, int) and r.seq > n]
    ok = (rec.get("action") == verb and rec.get("exit_code") == 0
          and isinstance(n, int) and after.get("event_count") == n + 1
          and before.get("receipt_count") == after.get("receipt_count")
          and [r.kind for r in appended] == [f"attempt.{verb}d"]
          and appended[0].payload.get("finding") == finding)
    return Claim(ok, case.name,
                 f"a separate {verb} process recorded {finding} and nothing else (events "
                 f"{n} -> {after.get('event_count')}, receipts {before.get('receipt_count')} "
                 f"-> {after.get('receipt_count')})" + ("" if ok else " (does not hold)"))


def _termination_claim(case: CaseData, exp: Expect) -> Claim:
    t = as_dict(case.json_doc("termination.json"))
    got = (t.get("event"), t.get("point"))
    return Claim(got == exp.termination, case.name,
                 f"killed at the preregistered checkpoint {exp.termination[0]} ({exp.termination[1]})"
                 if got == exp.termination else f"killed at {got}, preregistered {exp.termination}")


def _unchanged(before: dict[str, Any], after: dict[str, Any]) -> bool:
    keys = ("event_count", "max_seq", "events_sha256", "receipt_count")
    return bool(before) and all(before.get(k) == after.get(k) for k in keys)


def _resume_claims(case: CaseData, role: str, want_exit: int, d: Derived) -> list[Claim]:
    rec = as_dict(case.json_doc("resume_attempt.json"))
    before, after = as_dict(rec.get("before")), as_dict(rec.get("after"))
    code = rec.get("exit_code")
    claims: list[Claim] = []
    if want_exit != 0:
        ok = code == want_exit and _unchanged(before, after)
        claims.append(Claim(ok, case.name,
                            f"a separate resume process refused (exit {code}) and appended nothing "
                            f"(events {before.get('event_count')} -> {after.get('event_count')}, "
                            f"receipts {before.get('receipt_count')} -> {after.get('receipt_count')})"))
        if role == "drift_refused":
            config = as_dict(as_dict(case.json_doc("case.json")).get("provider"))
            manifests = [c.payload("call.manifest") or {} for c in d.call_evidence.values()]
            recorded = {m.get("model") for m in manifests}
            drift = bool(manifests) and config.get("model") not in recorded
            claims.append(Claim(drift and "drift" in str(rec.get("stderr")), case.name,
                                f"refused for drift: case.json configures {config.get('model')!r}, "
                                f"the manifest recorded {sorted(map(str, recorded))}; nothing sent"))
        return claims
    ok = code == 0 and before.get("receipt_count") == 0 and after.get("receipt_count") == 1
    claims.append(Claim(ok, case.name,
                        f"a separate resume process resumed (exit {code}); events "
                        f"{before.get('event_count')} -> {after.get('event_count')}, receipts "
                        f"{before.get('receipt_count')} -> {after.get('receipt_count')}"))
    claims.append(_resumed_link_claim(case, d))
    return claims


def _plan_claim(case: CaseData, verdict: str, d: Derived) -> Claim:
    rec = as_dict(case.json_doc("resume_plan.json"))
    plan = as_dict(rec.get("plan"))
    manifests = {str((c.payload("call.manifest") or {}).get("request_sha256"))
                 for c in d.call_evidence.values() if "call.manifest" in c.seen}
    ok = (rec.get("exit_code") == 0 and plan.get("verdict") == verdict and not plan.get("drift")
          and _unchanged(as_dict(rec.get("before")), as_dict(rec.get("after"))))
    if verdict == "match":
        ok = ok and plan.get("drift_check_possible") is True and \
            {plan.get("request_sha256_rebuilt"), plan.get("request_sha256_recorded")} == manifests
        text = (f"a separate process planned the resume: rebuilt request hash "
                f"{short(plan.get('request_sha256_rebuilt'))} equals the manifest's; appended nothing")
    else:
        ok = ok and plan.get("drift_check_possible") is False and not manifests
        text = ("a separate process planned the resume: no manifest, so no drift check is "
                "possible; appended nothing")
    return Claim(ok, case.name, text if ok else f"resume plan does not show {verdict!r}: {plan}")


def _resumed_link_claim(case: CaseData, d: Derived) -> Claim:
    old = [c for c in d.call_evidence.values() if "call.resumed" in c.seen]
    if len(old) != 1:
        return Claim(False, case.name, f"expected one resumed call, found {len(old)}")
    new_id = str((old[0].payload("call.resumed") or {}).get("resumed_as"))
    new = d.call_evidence.get(new_id)
    if new is None:
        return Claim(False, case.name, f"call.resumed names {new_id}, which is not in the ledger")
    hashes = {str((c.payload("call.manifest") or {}).get("request_sha256")) for c in (old[0], new)}
    bodies = [str(r.get("body_sha256")) for r in case.receipts]
    linked = (str((new.payload("call.requested") or {}).get("resumed_from")) == old[0].call_id
              and old[0].key == new.key)
    task = d.tasks.get(new.task_id, {})
    ok = (linked and len(hashes) == 1 and bodies == list(hashes)
          and task.get("subject_id") == new_id and d.calls[new_id]["stage"] == "completed")
    return Claim(ok, case.name,
                 f"{old[0].call_id} superseded by {new_id} under key {new.key}; exactly one receipt "
                 f"whose body hash equals both manifests' request hash ({short(bodies[0] if bodies else None)}); "
                 f"task at {task.get('next_operation')} for {task.get('subject_id')}")


def _naive_claims(case: CaseData, d: Derived) -> list[Claim]:
    rec = as_dict(case.json_doc("naive_restart.json"))
    before, after = as_dict(rec.get("before")), as_dict(rec.get("after"))
    appended_none = all(before.get(k) == after.get(k) and before.get(k) is not None
                        for k in ("event_count", "events_sha256"))
    ok = rec.get("exit_code") == 0 and appended_none and \
        (before.get("receipt_count"), after.get("receipt_count")) == (1, 2)
    claims = [Claim(ok, case.name,
                    f"the naive restart (exit {rec.get('exit_code')}) re-sent the recorded request "
                    f"and appended no events ({before.get('event_count')} -> "
                    f"{after.get('event_count')}); receipts {before.get('receipt_count')} -> "
                    f"{after.get('receipt_count')}")]
    manifests = {str((c.payload("call.manifest") or {}).get("request_sha256"))
                 for c in d.call_evidence.values()}
    bodies = {str(r.get("body_sha256")) for r in case.receipts}
    keys = {str(r.get("idempotency_key")) for r in case.receipts}
    same = len(case.receipts) == 2 and len(bodies) == 1 and len(keys) == 1 and bodies == manifests
    claims.append(Claim(same, case.name,
                        f"both receipts carry the manifest's request hash {short(next(iter(bodies), None))} "
                        f"under one key {sorted(keys)}: the effect was duplicated"))
    return claims


def _inventory_claims(case: CaseData, role: str, d: Derived) -> list[Claim]:
    claims: list[Claim] = []
    for comp in d.compilation_evidence.values():
        req = comp.seen.get("context.compilation_requested", {})
        offered = {str(o.get("id")): (o.get("required"), o.get("size"), o.get("size_estimated"))
                   for o in req.get("offered") or [] if isinstance(o, dict)}
        ok = offered == INVENTORY
        text = (f"offered inventory recoverable: {', '.join(f'{k} required={v[0]} size={v[1]} estimated={v[2]}' for k, v in sorted(offered.items()))}")
        claims.append(Claim(ok, case.name, text if ok else text + f" (preregistered {INVENTORY})"))
        if role == "compilation_failed":
            err = as_dict(comp.seen.get("context.compilation_failed", {}).get("error"))
            missing = d.compilations[comp.compilation_id]["missing_required"]
            ok = err.get("type") == "RequiredContextMissing" and missing == ["C"]
            claims.append(Claim(ok, case.name,
                                f"failure recorded as {err.get('type')}; missing required derived as "
                                f"{missing} (required {req.get('required_ids')}, never offered)"))
    return claims


def bundle_claims(manifest: dict[str, Any], found: dict[str, CaseData]) -> list[Claim]:
    cases = [c for c in manifest.get("cases") or [] if isinstance(c, dict)]
    roles = Counter(str(c.get("role")) for c in cases)
    preregistered = set(EXPECTED) | set(TOOL_EXPECTED)
    missing_roles = sorted(preregistered - set(roles))
    unknown = sorted(r for r in roles if r not in preregistered)
    absent = sorted(str(c.get("dir")) for c in cases if str(c.get("dir")) not in found)
    ok = not missing_roles and not unknown and not absent and all(v == 1 for v in roles.values())
    text = (f"bundle.json names all {len(preregistered)} preregistered cases and each directory holds a ledger"
            if ok else f"bundle.json: missing roles {missing_roles}, unknown {unknown}, "
            f"directories without a ledger {absent}")
    return [Claim(ok, "bundle", text)]


def copy_source_claim(case: CaseData, copy_of: str | None, bundle: dict[str, CaseData]) -> list[Claim]:
    """A copy starts where its source was killed: same termination, same first receipt."""
    if not copy_of:
        return []
    src = bundle.get(copy_of)
    if src is None:
        return [Claim(False, case.name, f"copy of {copy_of}, which is not in the bundle")]
    same_kill = as_dict(case.json_doc("termination.json")).get("event_id") == \
        as_dict(src.json_doc("termination.json")).get("event_id")
    prefix = [r.event_id for r in src.rows] == [r.event_id for r in case.rows[:len(src.rows)]]
    first = [str(r.get("receipt_id")) for r in src.receipts]
    mine = [str(r.get("receipt_id")) for r in case.receipts[:len(first)]]
    ok = same_kill and prefix and first == mine
    return [Claim(ok, case.name,
                  f"a copy of {copy_of}: same kill, its {len(src.rows)} events and its "
                  f"{len(first)} receipt(s) come first" + ("" if ok else " (does not hold)"))]

