"""What the gated writes that send a request share (resume, next-attempt): before
anything is written, the server at the destination must be the one the case names;
after the call ended, the case's own receipt log must have grown where its provider
keeps one."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from codeai_tui.actions.gate import ActionRefused
from codeai_tui.ledger.case import RECEIPTS_RELPATH
from codeai_tui.runtime.destination import Destination, identity_problem
from codeai_tui.workstate import NextOperation


def check_destination(case: Path, destination: Destination,
                      next_operation: NextOperation | None) -> None:
    """Raise ActionRefused unless the server at the destination is the one the case
    names (case.json's identity; nothing to check without one). Called before anything
    is written: a demo bundle reopened while its provider is not running, or while
    another bundle's listens on its port, says so and sends nothing."""
    if destination.identity is None:
        return
    try:
        port = urlsplit(destination.base_url).port
    except ValueError:  # a port out of range: the check itself says what answered
        port = None
    hint = (f" (this bundle's provider: codeai-tui provider --receipts-root "
            f"{case.resolve().parent}{f' --port {port}' if port else ''})")
    problem = identity_problem(destination, hint)
    if problem is not None:
        raise ActionRefused(next_operation, problem)


def receipts_warning(case: Path, destination: Destination, status: str,
                     before: int, after: int) -> str | None:
    """What to say when a request went out, the call ended (succeeded or failed), and the
    case's own receipt log did not grow, where the case's provider keeps one (case.json
    names its identity, or the log exists): that provider appends a receipt before it
    answers, so the answer came from another server, or none was reached. None otherwise."""
    if status not in ("succeeded", "failed") or after > before:
        return None
    if destination.identity is None and not (case / RECEIPTS_RELPATH).exists():
        return None
    return (f"provider receipts {before} -> {after}: this case's receipt log did not grow, "
            f"so the provider that keeps it did not receive this request (another server "
            f"at {destination.base_url} answered, or none did)")
