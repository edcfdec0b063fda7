"""Content-addressed artifact store: `artifacts/sha256/ab/<64 hex>`.

A case directory is untrusted input (it may come from a ticket), so every read checks
what it reads: the name must be 64 lowercase hex (an id from a ledger can never address a
path outside the store), no component below the case directory may be a symlink, the
artifact must be a regular file, and its bytes must hash to its name. Anything else is
not the artifact: `read()` says why, `get()` returns None. A write never follows a link
out of the case and never trusts a file that is already there without checking it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from codeai_tui.ledger.errors import LedgerError, LedgerProblem

_HEX64 = re.compile(r"[0-9a-f]{64}")
# Requests, rendered contexts and responses are kilobytes; a bigger "artifact" in a case
# directory is not one of ours, and reading it whole could exhaust memory.
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _remove_stale_temps(directory: Path) -> None:
    """A writer killed between write and rename leaves `.<sha>.<pid>.tmp`; the next write
    into that directory removes those whose process is gone."""
    try:
        names = [e.name for e in os.scandir(directory)
                 if e.name.startswith(".") and e.name.endswith(".tmp")
                 and e.is_file(follow_symlinks=False)]
    except OSError:
        return
    for name in names:
        parts = name.split(".")
        pid = int(parts[-2]) if len(parts) >= 4 and parts[-2].isdigit() else None
        if pid is None or pid == os.getpid() or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(directory / name)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_sha256_hex(name: object) -> bool:
    return isinstance(name, str) and _HEX64.fullmatch(name) is not None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class ArtifactStatus(StrEnum):
    OK = "ok"
    MISSING = "missing"
    BAD_NAME = "bad_name"
    NOT_REGULAR = "not_regular"  # a symlink, FIFO, device or directory, or under a symlink
    HASH_MISMATCH = "hash_mismatch"
    TOO_LARGE = "too_large"
    UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class ArtifactRead:
    status: ArtifactStatus
    data: bytes | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status is ArtifactStatus.OK

    def describe(self, sha: str) -> str:
        """One operator line: what is wrong with artifact `sha` (shortened)."""
        name = f"artifact {sha[:12]}…" if is_sha256_hex(sha) else f"artifact name {sha[:40]!r}"
        return {
            ArtifactStatus.OK: f"{name} verified",
            ArtifactStatus.MISSING: f"{name} is missing",
            ArtifactStatus.BAD_NAME: f"{name} is not a sha256 name",
            ArtifactStatus.NOT_REGULAR: f"{name} is not a regular file in the case ({self.detail})",
            ArtifactStatus.HASH_MISMATCH: f"{name}: its bytes do not hash to its name",
            ArtifactStatus.TOO_LARGE: f"{name} is larger than {MAX_ARTIFACT_BYTES} bytes",
            ArtifactStatus.UNREADABLE: f"{name} cannot be read ({self.detail})",
        }[self.status]


class ArtifactError(LedgerError):
    """An artifact cannot be written safely (a link or special file in the way)."""

    def __init__(self, message: str) -> None:
        super().__init__(LedgerProblem.CORRUPT, message)


class ArtifactStore:
    def __init__(self, case_dir: str | os.PathLike[str]) -> None:
        self.case_dir = Path(case_dir)
        self.root = self.case_dir / "artifacts" / "sha256"

    def path_for(self, sha: str) -> Path:
        if not is_sha256_hex(sha):
            raise ValueError(f"not a sha256 artifact name: {str(sha)[:80]!r}")
        return self.root / sha[:2] / sha

    def _linked_dir(self, *parts: str) -> str | None:
        """The first of case/artifacts/sha256/<parts> that is a symlink or not a directory
        (None when the chain is plain directories or ends in a missing one)."""
        current = self.case_dir
        for part in ("artifacts", "sha256", *parts):
            current = current / part
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                return None
            if not stat.S_ISDIR(st.st_mode):
                kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a directory"
                return f"{current.relative_to(self.case_dir)} is {kind}"
        return None

    def read(self, sha: str) -> ArtifactRead:
        """The verified bytes of artifact `sha`, or why there are none. Never blocks on a
        FIFO, never follows a symlink, never returns bytes that do not hash to `sha`."""
        if not is_sha256_hex(sha):
            return ArtifactRead(ArtifactStatus.BAD_NAME)
        linked = self._linked_dir(sha[:2])
        if linked is not None:
            return ArtifactRead(ArtifactStatus.NOT_REGULAR, detail=linked)
        path = self.path_for(sha)
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError:
            return ArtifactRead(ArtifactStatus.MISSING)
        except OSError as exc:
            if os.path.islink(path):
                return ArtifactRead(ArtifactStatus.NOT_REGULAR, detail="a symlink")
            return ArtifactRead(ArtifactStatus.UNREADABLE, detail=exc.strerror or str(exc))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return ArtifactRead(ArtifactStatus.NOT_REGULAR, detail="a special file")
            if st.st_size > MAX_ARTIFACT_BYTES:
                return ArtifactRead(ArtifactStatus.TOO_LARGE)
            chunks: list[bytes] = []
            remaining = MAX_ARTIFACT_BYTES + 1
            while remaining > 0:
                chunk = os.read(fd, min(remaining, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
        except OSError as exc:
            return ArtifactRead(ArtifactStatus.UNREADABLE, detail=exc.strerror or str(exc))
        finally:
            os.close(fd)
        data = b"".join(chunks)
        if len(data) > MAX_ARTIFACT_BYTES:
            return ArtifactRead(ArtifactStatus.TOO_LARGE)
        if sha256_hex(data) != sha:
            return ArtifactRead(ArtifactStatus.HASH_MISMATCH)
        return ArtifactRead(ArtifactStatus.OK, data)

    def get(self, sha: str) -> bytes | None:
        """The verified bytes, or None (absent, not a sha256 name, not a regular file,
        or bytes that do not hash to the name)."""
        return self.read(sha).data

    def exists(self, sha: str) -> bool:
        """True when a verified artifact is stored under `sha`."""
        return self.read(sha).ok

    def verify(self, sha: str) -> bool:
        return self.read(sha).ok

    def put(self, data: bytes) -> str:
        """Store bytes durably (write, fsync, rename); returns their sha256.

        An existing artifact is kept only when it verifies. Anything else in its place (a
        symlink, a FIFO, other bytes) or a link among its directories raises ArtifactError:
        the case was tampered with, and writing through it could land outside the case.
        """
        sha = sha256_hex(data)
        found = self.read(sha)
        if found.ok:
            return sha
        if found.status is not ArtifactStatus.MISSING:
            raise ArtifactError(f"{self.case_dir}: refusing to store over {found.describe(sha)}")
        dest = self.path_for(sha)
        dest.parent.mkdir(parents=True, exist_ok=True)
        linked = self._linked_dir(sha[:2])
        if linked is not None:  # created concurrently, or a race: check again after mkdir
            raise ArtifactError(f"{self.case_dir}: refusing to store an artifact: {linked}")
        _remove_stale_temps(dest.parent)
        tmp = dest.with_name(f".{sha}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, dest)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            if exc.errno == errno.ENOSPC:
                raise ArtifactError(f"{self.case_dir}: the disk is full: artifact "
                                    f"{sha[:12]}… was not stored and nothing was appended") from None
            raise ArtifactError(f"{self.case_dir}: cannot store artifact {sha[:12]}…: "
                                f"{exc.strerror or exc}") from None
        return sha

    def names(self) -> list[str]:
        """Names of the regular files in the store that look like artifacts (unverified)."""
        if self._linked_dir() is not None:
            return []
        try:
            entries = [d for d in os.scandir(self.root) if d.is_dir(follow_symlinks=False)]
        except OSError:
            return []
        names: list[str] = []
        for sub in entries:
            try:
                names.extend(
                    f.name for f in os.scandir(sub.path)
                    if f.is_file(follow_symlinks=False) and is_sha256_hex(f.name)
                )
            except OSError:
                continue
        return sorted(names)
