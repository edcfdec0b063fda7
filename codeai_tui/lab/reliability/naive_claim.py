"""`python -m codeai_tui.lab.reliability.naive_claim CASE CALL_ID`: the control for the race
harness. NOT a product path: it exists so the harness can show it detects duplicates.

It does what resume does, except the claim is naive: it checks the projection (the same
plan_resume), then appends call.resumed, call.requested and call.manifest each in its
own transaction, without re-checking inside one write transaction. Racers that all
checked before any of them appended all win, and each sends the request.
Exit 0 won, 3 refused (like `codeai-tui resume`).
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.resume import plan_resume
from codeai_tui.ledger.case import load_case_config
from codeai_tui.ledger.writer import LedgerWriter
from codeai_tui.runtime.destination import credential_for
from codeai_tui.runtime.runner import CallRunner


def main(argv: list[str] | None = None) -> int:
    case_arg, call_id = (argv if argv is not None else sys.argv[1:])[:2]
    case = Path(case_arg)
    try:
        plan = plan_resume(case, call_id)  # the check ...
    except ActionRefused as exc:
        print(f"refused: {exc.reason}", file=sys.stderr)
        return 3
    config = load_case_config(case).with_overrides(base_url=plan.destination.base_url)
    key = plan.idempotency_key or f"key-{call_id}"
    new_id = f"call-{uuid.uuid4().hex[:12]}"
    with LedgerWriter.open(case) as writer:
        runner = CallRunner(case, writer, config,
                            credential=credential_for(plan.destination, False))
        package = ((plan.context_package_now, plan.rendered_sha256_now)
                   if plan.context_package_now and plan.rendered_sha256_now else None)
        manifest = runner.manifest_payload(key, plan.intent, package)
        # ... then the append, outside any transaction that re-checked
        writer.append("call.resumed", plan.task_id,
                      {"resumed_as": new_id, "idempotency_key": key,
                       "request_sha256": plan.request_sha256_recorded, "by": {}, "reason": None},
                      call_id=call_id)
        writer.append("call.requested", plan.task_id,
                      plan.successor_requested(key, config.provider.model), call_id=new_id)
        writer.append("call.manifest", plan.task_id, manifest, call_id=new_id)
        status = runner.execute(plan.task_id, new_id, key, manifest["request_sha256"])
    print(f"resumed {call_id} as {new_id}: {status}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
