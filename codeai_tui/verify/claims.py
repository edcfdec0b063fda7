"""Claims any case must satisfy, whoever built it: checked by meaning, not by bytes.

A claim is one line: PASS or FAIL, the case, what is claimed and the evidence. Recorded
files (inspection.json, termination.json, ...) are untrusted input: every field is
type-checked before use and a malformed file is a FAIL, never a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codeai_tui.textsafe import visible
from codeai_tui.verify.rules import Derived, check_receipts, derive
from codeai_tui.verify.store import (
    LEDGER_FORMAT,
    CaseData,
    Row,
    artifact_files,
    read_file,
    sha256_file,
)

CALL_FIELDS = ("stage", "next_operation", "provider_effect", "duplicate_effect_risk",
               "attempts", "superseded_by", "status")
COMPILATION_FIELDS = ("stage", "next_operation", "missing_required")
TASK_FIELDS = ("next_operation", "subject_id")
SUMMARY_FIELDS = ("event_count", "max_seq", "events_sha256")


@dataclass(frozen=True, slots=True)
class Claim:
    ok: bool
    case: str
    text: str
    info: bool = False  # information, neither passed nor failed (e.g. ledger file bytes)

    def line(self) -> str:
        word = "INFO" if self.info else ("PASS" if self.ok else "FAIL")
        return visible(f"{word} {self.case}: {self.text}", one_line=True)


def short(sha: Any) -> str:
    return str(sha)[:12]


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def ledger_claims(case: CaseData) -> list[Claim]:
    seqs = [r.seq for r in case.rows]
    problems: list[str] = []
    if case.format != LEDGER_FORMAT:
        problems.append(f"format {case.format!r}")
    if seqs != list(range(1, len(seqs) + 1)):
        gaps = sorted(set(range(1, (max(seqs) if seqs else 0) + 1)) - set(seqs))
        problems.append(f"seq not gap-free (missing {gaps[:5]})")
    bad = [r.seq for r in case.rows if not r.payload_ok]
    if bad:
        problems.append(f"payloads that are not JSON objects at seq {bad[:5]}")
    if case.lying_indexes:
        problems.append("the index disagrees with the table: run PRAGMA integrity_check "
                        f"({', '.join(case.lying_indexes)})")
    text = (f"ledger v1 with {len(seqs)} events, seq 1..{len(seqs)} gap-free, payloads are "
            "objects, every index agrees with the table")
    return [Claim(not problems, case.name, text if not problems else "ledger: " + "; ".join(problems))]


def termination_claims(case: CaseData, doc: Any, resumed: bool) -> list[Claim]:
    t = as_dict(doc)
    seq = t.get("seq")
    by_seq = {r.seq: r for r in case.rows}
    row = by_seq.get(seq) if isinstance(seq, int) else None
    problems: list[str] = []
    if t.get("signal") != "SIGKILL" or t.get("returncode") != -9:
        problems.append(f"signal {t.get('signal')!r}, returncode {t.get('returncode')!r}")
    if row is None or row.kind != t.get("event") or row.event_id != t.get("event_id"):
        found = f"{row.kind} {row.event_id[:8]}" if row else "nothing"
        problems.append(f"seq {seq} holds {found}, termination says {t.get('event')}")
    last = case.rows[-1].seq if case.rows else 0
    if not resumed and seq != last:
        problems.append(f"events were committed after the kill (last seq {last})")
    text = (f"producer pid {t.get('pid')} killed by SIGKILL right after {t.get('event')} "
            f"(seq {seq}, {t.get('point')}); nothing committed after it"
            + (" until an operator acted (resume, reconcile)" if resumed else ""))
    return [Claim(not problems, case.name, text if not problems else
                  f"termination.json disagrees with the ledger: {'; '.join(problems)}")]


def summary_of(case: CaseData) -> dict[str, Any]:
    return {"event_count": len(case.rows),
            "max_seq": case.rows[-1].seq if case.rows else 0, "events_sha256": case.digest}


def _diff(a: dict[str, Any], b: dict[str, Any], fields: tuple[str, ...]) -> list[str]:
    return [f"{f} {a.get(f)!r} vs {b.get(f)!r}" for f in fields if a.get(f) != b.get(f)]


def inspection_claims(case: CaseData, doc: Any, filename: str = "inspection.json",
                      final: bool = True) -> list[Claim]:
    """The inspecting process appended nothing; the ledger is as it saw it (final
    inspection only); and the states it recorded are the ones re-derived here."""
    rec = as_dict(doc)
    before, after = as_dict(rec.get("before")), as_dict(rec.get("after"))
    proj = as_dict(rec.get("projection"))
    claims: list[Claim] = []
    same = bool(before) and before == after and rec.get("exit_code") == 0
    claims.append(Claim(same, case.name,
                        f"{filename}: the inspecting process appended nothing "
                        f"({before.get('event_count')} events, events sha256 "
                        f"{short(before.get('events_sha256'))}, files and receipts unchanged)"
                        if same else f"{filename}: before and after differ or inspect failed "
                        f"(exit {rec.get('exit_code')!r}): {_diff(before, after, (*SUMMARY_FIELDS, 'receipt_count', 'files_sha256'))}"))
    if final:
        now = {**summary_of(case), "receipt_count": len(case.receipts)}
        diff = _diff(now, after, (*SUMMARY_FIELDS, "receipt_count"))
        claims.append(Claim(not diff, case.name,
                            f"ledger and receipt log unchanged since the inspection "
                            f"({now['event_count']} events, {now['receipt_count']} receipts)"
                            if not diff else "changed since the inspection (now vs recorded): "
                            + "; ".join(diff)))
    as_of = proj.get("as_of_seq")
    if not isinstance(as_of, int) or not isinstance(proj.get("calls"), list):
        claims.append(Claim(False, case.name, f"{filename}: projection is not a work-state document"))
        return claims
    derived = derive([r for r in case.rows if r.seq <= as_of])
    claims += _compare(case.name, filename, "call", "call_id", proj.get("calls"), derived.calls, CALL_FIELDS)
    claims += _compare(case.name, filename, "compilation", "compilation_id",
                       proj.get("compilations"), derived.compilations, COMPILATION_FIELDS)
    claims += _compare(case.name, filename, "task", "task_id", proj.get("tasks"), derived.tasks, TASK_FIELDS)
    if final:
        claims.append(_compare_receipts(case, as_dict(proj.get("receipts"))))
    return claims


def _compare(name: str, filename: str, what: str, id_field: str, recorded: Any,
             derived: dict[str, dict[str, Any]], fields: tuple[str, ...]) -> list[Claim]:
    rec = {str(d.get(id_field)): d for d in (recorded or []) if isinstance(d, dict)}
    claims: list[Claim] = []
    for ident in sorted(set(rec) | set(derived)):
        mine, theirs = derived.get(ident), rec.get(ident)
        if mine is None or theirs is None:
            where = "the inspection" if mine is None else "the ledger"
            claims.append(Claim(False, name, f"{what} {ident}: only in {where}"))
            continue
        diff = [f"{f}: inspection says {theirs.get(f)!r}, re-derived {mine.get(f)!r}"
                for f in fields if theirs.get(f) != mine.get(f)]
        state = " ".join(str(mine[f]) for f in fields[:2])
        claims.append(Claim(not diff, name,
                            f"{what} {ident} re-derived as {state}, as {filename} recorded"
                            if not diff else f"{what} {ident} {'; '.join(diff)}"))
    return claims


def _compare_receipts(case: CaseData, recorded: dict[str, Any]) -> Claim:
    verdict = check_receipts(case.receipts, derive(case.rows).call_evidence)
    mine = {"count": len(case.receipts),
            "uncovered": sorted(str(r.get("receipt_id")) for r in verdict.uncovered),
            "duplicates": sorted(sorted(str(r.get("receipt_id")) for r in g) for g in verdict.duplicates)}
    theirs = {"count": recorded.get("count"),
              "uncovered": sorted(str(x) for x in recorded.get("uncovered") or []),
              "duplicates": sorted(sorted(str(x) for x in g) for g in recorded.get("duplicates") or []
                                   if isinstance(g, list))}
    diff = [f"{k}: inspection says {theirs[k]}, re-derived {mine[k]}" for k in mine if mine[k] != theirs[k]]
    return Claim(not diff, case.name,
                 f"receipt checks re-derived as recorded ({mine['count']} receipts, "
                 f"{len(mine['uncovered'])} uncovered, {len(mine['duplicates'])} duplicate groups)"
                 if not diff else "receipt checks " + "; ".join(diff))


def _last_json_line(text: Any) -> dict[str, Any]:
    lines = str(text or "").strip().splitlines()
    try:
        return as_dict(json.loads(lines[-1])) if lines else {}
    except (ValueError, RecursionError):
        return {}


def recorded_restart_key(case: CaseData) -> str | None:
    """The idempotency key a recorded naive restart re-sent, when `naive_restart.json`
    shows the whole of it: exit 0, no event appended, exactly one more receipt in the
    provider's log. That one re-send explains one identical second receipt under its key
    in a case no role describes (an exported case carries the record, not the bundle).
    A record that cannot be read explains nothing."""
    try:
        rec = as_dict(case.json_doc("naive_restart.json"))
    except (OSError, ValueError, RecursionError):
        return None
    before, after = as_dict(rec.get("before")), as_dict(rec.get("after"))
    n = before.get("receipt_count")
    key = _last_json_line(rec.get("stdout")).get("idempotency_key")
    whole = (rec.get("exit_code") == 0 and isinstance(n, int) and isinstance(key, str)
             and after.get("receipt_count") == n + 1
             and all(before.get(k) is not None and before.get(k) == after.get(k)
                     for k in ("event_count", "events_sha256")))
    return key if whole else None


def receipt_claims(case: CaseData, derived: Derived, duplicates_expected: bool,
                   restarted: str | None = None) -> list[Claim]:
    """Receipts covered and duplicates listed. A duplicate group is expected where the
    role says so, or (`restarted`: the key a recorded naive restart re-sent once) when it
    is that key's pair of identical receipts."""
    verdict = check_receipts(case.receipts, derived.call_evidence)
    claims: list[Claim] = []
    if verdict.uncovered:
        shown = ", ".join(f"{r.get('receipt_id')} (key {r.get('idempotency_key')}, body "
                          f"{short(r.get('body_sha256'))})" for r in verdict.uncovered[:5])
        claims.append(Claim(False, case.name,
                            f"uncovered effect: {len(verdict.uncovered)} receipt(s) with no "
                            f"attempt.started of the same key and request hash: {shown}"))
    else:
        claims.append(Claim(True, case.name,
                            f"every receipt ({len(case.receipts)}) is covered by an attempt.started "
                            "with the same key and request hash"))
    if case.receipt_problems:
        claims.append(Claim(False, case.name, "receipt log: " + "; ".join(case.receipt_problems[:5])))
    explained = False
    for group in verdict.duplicates:
        first = group[0]
        ids = ", ".join(str(r.get("receipt_id")) for r in group)
        text = (f"shows {len(group)} identical receipts under key {first.get('idempotency_key')} "
                f"(body sha256 {short(first.get('body_sha256'))}: {ids})")
        by_restart = (not duplicates_expected and restarted is not None and len(group) == 2
                      and first.get("idempotency_key") == restarted)
        explained = explained or by_restart
        if by_restart:
            text += ": the second is the re-send naive_restart.json records"
        ok = duplicates_expected or by_restart
        claims.append(Claim(ok, case.name, text if ok else "unexpected duplicate effect: " + text))
    if duplicates_expected and not verdict.duplicates:
        claims.append(Claim(False, case.name, "expected identical receipts, found none"))
    if restarted is not None and not duplicates_expected and not explained:
        claims.append(Claim(False, case.name,
                            f"naive_restart.json records a re-send under key {restarted}, but "
                            "the provider's log holds no identical pair of receipts under it"))
    return claims


def _referenced(rows: list[Row]) -> set[str]:
    refs: set[str] = set()
    for r in rows:
        p = r.payload
        names = {
            "call.manifest": ("request_artifact", "request_sha256"),
            "context.compilation_completed": ("rendered_sha256",),
            "attempt.observed": ("response_artifact",),
        }.get(r.kind, ())
        refs |= {str(p[n]) for n in names if isinstance(p.get(n), str)}
    return refs


def artifact_claims(case: CaseData) -> list[Claim]:
    files = artifact_files(case.path)
    bad: list[str] = []
    names: set[str] = set()
    for f in files:
        actual = sha256_file(f)
        names.add(f.name)
        if actual != f.name or f.parent.name != f.name[:2]:
            bad.append(f"{f.name[:16]}... holds bytes hashing to {actual[:16]}...")
    claims = [Claim(not bad, case.name,
                    f"{len(files)} artifacts hash to their names" if not bad
                    else f"artifact bytes do not match their names: {'; '.join(bad[:5])}")]
    missing = sorted(_referenced(case.rows) - names)
    claims.append(Claim(not missing, case.name,
                        "every artifact the ledger names is stored" if not missing
                        else f"ledger names artifacts that are not stored: {', '.join(m[:16] for m in missing[:5])}"))
    return claims


def attempt_claims(case: CaseData, derived: Derived) -> list[Claim]:
    wrong: list[str] = []
    count = 0
    for call in derived.call_evidence.values():
        manifest = call.payload("call.manifest") or {}
        for aid, att in call.attempts.items():
            count += 1
            if att.started_seq is None or att.request_sha256 != manifest.get("request_sha256"):
                wrong.append(f"{aid}: started {short(att.request_sha256)}, manifest "
                             f"{short(manifest.get('request_sha256'))}")
    if not count:
        return []
    return [Claim(not wrong, case.name,
                  f"all {count} attempts started with the request hash their manifest recorded"
                  if not wrong else "attempts disagree with their manifests: " + "; ".join(wrong[:5]))]


def _is_ledger_file(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name in ("ledger.sqlite3", "ledger.sqlite3-wal")


def inventory_claims(
    root: Path, cases: dict[str, CaseData] | None = None, filename: str = "hashes.json"
) -> list[Claim]:
    """The build's inventory, when present. Every listed file still has its bytes, except
    ledgers: an ordinary SQLite client that opens one read-write checkpoints the WAL when
    it closes, so a ledger is judged by its events digest (recorded as `ledgers`) and its
    bytes are reported as information. (Tampering that also rewrites the inventory is
    caught by the claims of meaning.)"""
    path = root / filename
    if not path.exists():
        return []
    try:
        doc = json.loads(read_file(path).decode("utf-8"))
        files, ledgers = doc.get("files"), doc.get("ledgers")
    except (OSError, ValueError, AttributeError):
        files, ledgers = None, None
    if not isinstance(files, dict):
        return [Claim(False, "bundle", f"{filename} is not a byte inventory")]
    judged_by_content = isinstance(ledgers, dict) and cases is not None
    base = root.resolve()
    bad: list[str] = []
    ledger_bytes: list[str] = []
    for rel, sha in sorted(files.items()):
        p = (root / str(rel)).resolve()
        if not p.is_relative_to(base):
            bad.append(f"{rel} points outside the bundle")
        elif judged_by_content and _is_ledger_file(str(rel)):
            if not p.is_file() or sha256_file(p) != sha:
                ledger_bytes.append(str(rel))
        elif not p.is_file():
            bad.append(f"{rel} is missing")
        elif sha256_file(p) != sha:
            bad.append(f"{rel} changed")
    claims = [Claim(not bad, "bundle",
                    f"byte inventory: all {len(files) - len(ledger_bytes)} files match {filename}"
                    if not bad else
                    f"byte inventory: {len(bad)} of {len(files)} files differ: {'; '.join(bad[:5])}")]
    if judged_by_content:
        assert isinstance(ledgers, dict) and cases is not None
        wrong = [f"{rel}: events differ from the build" for rel, digest in sorted(ledgers.items())
                 if rel in cases and cases[rel].digest != digest]
        wrong += [f"{rel}: ledger missing" for rel in sorted(ledgers) if rel not in cases]
        claims.append(Claim(not wrong, "bundle",
                            f"ledger content: all {len(ledgers)} ledgers hold the events they "
                            "were built with" if not wrong else
                            f"ledger content: {'; '.join(wrong[:5])}"))
        if ledger_bytes:
            claims.append(Claim(True, "bundle", info=True, text=(
                f"{len(ledger_bytes)} ledger files differ in bytes but not in events (another "
                f"SQLite client checkpointed them?): {', '.join(ledger_bytes[:4])}")))
    return claims
