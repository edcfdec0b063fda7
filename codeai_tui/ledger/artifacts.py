"""Content-addressed artifact store: `artifacts/sha256/ab/<64 hex>`.

Only 64-lowercase-hex names are accepted, so an id taken from a ledger can never
address a path outside the store.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

_HEX64 = re.compile(r"[0-9a-f]{64}")


def is_sha256_hex(name: object) -> bool:
    return isinstance(name, str) and _HEX64.fullmatch(name) is not None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ArtifactStore:
    def __init__(self, case_dir: str | os.PathLike[str]) -> None:
        self.root = Path(case_dir) / "artifacts" / "sha256"

    def path_for(self, sha: str) -> Path:
        if not is_sha256_hex(sha):
            raise ValueError(f"not a sha256 artifact name: {str(sha)[:80]!r}")
        return self.root / sha[:2] / sha

    def put(self, data: bytes) -> str:
        """Store bytes durably (write, fsync, rename); returns their sha256."""
        sha = sha256_hex(data)
        dest = self.path_for(sha)
        if dest.exists():
            return sha
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{sha}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, dest)
        return sha

    def get(self, sha: str) -> bytes | None:
        """The stored bytes, or None if absent or the name is not a sha256."""
        try:
            return self.path_for(sha).read_bytes()
        except (ValueError, OSError):
            return None

    def exists(self, sha: str) -> bool:
        try:
            return self.path_for(sha).is_file()
        except ValueError:
            return False

    def verify(self, sha: str) -> bool:
        """True when the artifact exists and its bytes hash to its name."""
        data = self.get(sha)
        return data is not None and sha256_hex(data) == sha

    def names(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(
            p.name for p in self.root.glob("??/*") if p.is_file() and is_sha256_hex(p.name)
        )
