"""The naive restart: `python -m codeai_tui.demo.naive CASE --base-url URL`.

What restart loops usually do: find the step that did not finish and run it again. It
takes the last recorded request (the manifest's stored bytes and idempotency key) and
sends it, without consulting the work-state projection and without appending anything
to the ledger. On an effect_unknown call this duplicates the provider-side effect,
which is the point of the demonstration: restart is not resume.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from codeai_tui.ledger.artifacts import ArtifactStore
from codeai_tui.ledger.reader import LedgerReader
from codeai_tui.runtime.runner import send_request


def last_recorded_request(case: Path) -> tuple[str, str, bytes]:
    """(call_id, idempotency_key, request bytes) of the last call.manifest."""
    with LedgerReader(case) as reader:
        manifests = [e for e in reader.events() if e.kind == "call.manifest" and e.payload]
    if not manifests:
        raise SystemExit("naive restart: no call.manifest recorded, nothing to re-run")
    last = manifests[-1]
    payload = last.payload or {}
    body = ArtifactStore(case).get(str(payload.get("request_artifact")))
    if body is None:
        raise SystemExit("naive restart: the request artifact is missing")
    return str(last.call_id), str(payload.get("idempotency_key")), body


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="codeai_tui.demo.naive")
    p.add_argument("case")
    p.add_argument("--base-url", required=True)
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args(argv)
    call_id, key, body = last_recorded_request(Path(args.case))
    transport = send_request(args.base_url, body, key, None, args.timeout)
    print(json.dumps({"re_sent_call_id": call_id, "idempotency_key": key,
                      "status": transport.status, "error": transport.error,
                      "response_bytes": len(transport.body)}, sort_keys=True))
    sys.stdout.flush()
    return 0 if transport.status is not None and 200 <= transport.status < 300 else 1


if __name__ == "__main__":
    raise SystemExit(main())
