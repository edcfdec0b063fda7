"""Show what a resume would do, from its own process: `python -m codeai_tui.demo.plan CASE CALL`.

Prints the resume plan as one JSON object (read-only: plan_resume appends nothing), so
the bundle records, for a call killed before its manifest, that no drift check is
possible, and for one killed after it, that the rebuilt request matches the recorded one.
Exit 0 with a plan, 3 when resume would be refused.
"""

from __future__ import annotations

import argparse
import json

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.actions.resume import plan_resume


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="codeai_tui.demo.plan")
    p.add_argument("case")
    p.add_argument("call_id")
    p.add_argument("--base-url", default=None)
    args = p.parse_args(argv)
    try:
        plan = plan_resume(args.case, args.call_id, base_url=args.base_url)
    except ActionRefused as exc:
        op = exc.next_operation.value if exc.next_operation else None
        print(json.dumps({"refused": exc.reason, "next_operation": op}, sort_keys=True))
        return 3
    print(json.dumps({
        "call_id": plan.call_id,
        "stage": plan.stage.value,
        "drift_check_possible": plan.drift_check_possible,
        "verdict": plan.verdict,
        "drift": list(plan.drift),
        "model_recorded": plan.model_recorded,
        "model_configured": plan.model_configured,
        "request_sha256_recorded": plan.request_sha256_recorded,
        "request_sha256_rebuilt": plan.request_sha256_rebuilt,
    }, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
