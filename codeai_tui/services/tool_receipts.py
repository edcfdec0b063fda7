"""Read a case's tool receipts and trusted key for the projection (docs/tools.md).

The projection judges receipts purely (workstate/tool_receipts.py); this module does the
file reading it must not: `tools/kernel.pub` (or an operator's trusted key) and
`tools/receipts.ndjson`, through the same safe reader as the provider's log (no symlink,
no FIFO, bounded). Never writes; never raises for a bad file (the verdicts say why).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from codeai_tui.ledger.errors import LedgerError
from codeai_tui.ledger.safefile import read_regular
from codeai_tui.workstate import WorkState
from codeai_tui.workstate.tool_receipts import ToolReceipts

TOOLS_DIR = "tools"
KEY_REL = Path(TOOLS_DIR) / "kernel.pub"
RECEIPTS_REL = Path(TOOLS_DIR) / "receipts.ndjson"
_KEY_LIMIT = 64 * 1024
_RECEIPTS_LIMIT = 256 * 1024 * 1024


def _raw_key(pem: bytes) -> bytes:
    # imported here: ~10 MB of memory, and most cases have no tools/kernel.pub
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    key = serialization.load_pem_public_key(pem)
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError("not an Ed25519 public key")
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _read_key(case: Path, trusted_key: Path | None) -> tuple[str, bytes | None, str | None]:
    if trusted_key is not None:
        base, rel, source = trusted_key.parent, Path(trusted_key.name), f"--trusted-key {trusted_key}"
    else:
        base, rel, source = case, KEY_REL, f"the case's {KEY_REL}"
    try:
        pem = read_regular(base, rel, limit=_KEY_LIMIT)
        if pem is None:
            return source, None, f"{base / rel} does not exist"
        return source, _raw_key(pem), None
    except (LedgerError, ValueError, TypeError) as exc:
        return source, None, f"{base / rel}: {exc}"


def read_tool_receipts(case_dir: str | os.PathLike[str],
                       trusted_key: Path | None = None) -> ToolReceipts | None:
    """The case's receipts and key, or None when the case has no tools/ at all."""
    case = Path(case_dir)
    if not os.path.lexists(case / TOOLS_DIR):
        return None
    source, key, problem = _read_key(case, trusted_key)
    try:
        data = read_regular(case, RECEIPTS_REL, limit=_RECEIPTS_LIMIT) or b""
    except LedgerError as exc:
        return ToolReceipts(source, None, f"receipts unreadable: {exc}")
    lines = [(n, raw.decode("utf-8", "replace"))
             for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]
    return ToolReceipts.build(source, key, problem, lines)


def with_tool_receipts(state: WorkState, case_dir: str | os.PathLike[str],
                       trusted_key: Path | None = None) -> WorkState:
    """`state` carrying the case's tool receipts (for `inspect --json` and the console)."""
    return replace(state, tool_receipts=read_tool_receipts(case_dir, trusted_key))
