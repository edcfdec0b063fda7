"""Open only regular files inside a case directory, and never block on one.

A case directory is untrusted input. A FIFO named `ledger.sqlite3`, `case.json` or
`provider/receipts.jsonl` makes a plain `open()` wait forever for a writer; a symlink
makes us read (and show, or send) a file from anywhere on the operator's machine. The
policy: every file we read from a case must be a regular file reached without following
a symlink; anything else is refused with one line. The case directory itself may be a
symlink (the operator chose that path).

Files SQLite opens (the ledger, its -wal and -shm) are checked with `lstat` only: opening
and closing them from a process that holds SQLite connections to them would drop that
process's POSIX locks on them. Files we read ourselves are opened with
O_NONBLOCK|O_NOFOLLOW and checked with `fstat` on the open descriptor, so nothing swapped
in after the check is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from codeai_tui.ledger.errors import LedgerError, LedgerProblem

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symlink"),
)


def describe_mode(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def refusal(path: Path | str, mode: int) -> LedgerError:
    if stat.S_ISLNK(mode):
        return LedgerError(LedgerProblem.UNSAFE_FILE,
                           f"{path}: is a symlink; links inside a case are never followed")
    return LedgerError(
        LedgerProblem.UNSAFE_FILE,
        f"{path}: is {describe_mode(mode)}, not a regular file; refusing to read it",
    )


def check_regular(path: Path, *, missing_ok: bool) -> bool:
    """True if `path` is a regular file (not followed through a symlink); False if it is
    absent and `missing_ok`; raises LedgerError(UNSAFE_FILE) for anything else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if missing_ok:
            return False
        raise LedgerError(LedgerProblem.MISSING, f"{path}: no such file") from None
    except OSError as exc:
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: cannot stat ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise refusal(path, st.st_mode)
    return True


def check_no_symlinked_dirs(base: Path, rel: Path) -> None:
    """Each directory between `base` and the file `rel` names must be a real directory."""
    cur = base
    for part in rel.parts[:-1]:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return  # the file cannot exist either; the caller reports it as absent
        except OSError as exc:
            raise LedgerError(LedgerProblem.CORRUPT, f"{cur}: cannot stat ({exc.strerror})"
                              ) from None
        if not stat.S_ISDIR(st.st_mode):
            raise refusal(cur, st.st_mode)


FileId = tuple[int, int]  # (st_dev, st_ino): which file a path named when it was read


def read_regular(base: Path, rel: Path, *, limit: int) -> bytes | None:
    """The bytes of `base/rel`, or None if it does not exist.

    Refuses (LedgerError UNSAFE_FILE) a symlink anywhere below `base`, a FIFO, a device, a
    socket, a directory; never blocks; reads at most `limit` bytes (TOO_LARGE beyond)."""
    got = read_regular_since(base, rel, limit=limit)
    return None if got is None else got[0]


def read_regular_since(base: Path, rel: Path, *, limit: int,
                       since: tuple[FileId, int] | None = None
                       ) -> tuple[bytes, FileId, int] | None:
    """Like `read_regular`, for a file that grows: `since` is (file, offset) of an
    earlier read. When the path still names that file and it holds at least `offset`
    bytes, only the bytes after `offset` are read; else all of them (it was replaced or
    cut). Returns (bytes, the file read, the offset they start at). `limit` bounds the
    whole file."""
    path = base / rel
    opened = open_regular_since(base, rel, limit=limit, since=since)
    if opened is None:
        return None
    fd, file, start, size = opened
    try:
        os.lseek(fd, start, os.SEEK_SET)
        # what the file holds now in one read (one buffer: read in 1 MiB pieces and
        # joined, a 33 MB receipt log took twice its size at once, and the pieces were
        # left in the heap for the projection to grow around), then whatever it grew by
        chunks = [os.read(fd, size - start)] if size > start else []
        total = start + sum(map(len, chunks))
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:  # grew while we read
                raise LedgerError(LedgerProblem.TOO_LARGE,
                                  f"{path}: more than the {limit} bytes read here")
            chunks.append(chunk)
        return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), file, start
    except OSError as exc:
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: cannot read ({exc.strerror})"
                          ) from None
    finally:
        os.close(fd)


def open_regular_since(base: Path, rel: Path, *, limit: int,
                       since: tuple[FileId, int] | None = None
                       ) -> tuple[int, FileId, int, int] | None:
    """`read_regular_since`'s checks, its file left open for the caller to read (and
    close): (descriptor, the file, the offset to read from, its size now), or None if
    it does not exist. A file that only grows at its end (a provider's log) holds the
    same bytes up to that size when they are read later, so a reader can pin what the
    file held now without holding its bytes meanwhile."""
    check_no_symlinked_dirs(base, rel)
    path = base / rel
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise refusal(path, st.st_mode) from None  # ELOOP from O_NOFOLLOW, ENXIO ...
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: cannot read ({exc.strerror})"
                          ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refusal(path, st.st_mode)
        if st.st_size > limit:
            raise LedgerError(LedgerProblem.TOO_LARGE,
                              f"{path}: is {st.st_size} bytes, more than the {limit} bytes "
                              "read here")
    except LedgerError:
        os.close(fd)
        raise
    except OSError as exc:
        os.close(fd)
        raise LedgerError(LedgerProblem.CORRUPT, f"{path}: cannot read ({exc.strerror})"
                          ) from None
    file = (st.st_dev, st.st_ino)
    start = since[1] if since is not None and since[0] == file and since[1] <= st.st_size \
        else 0
    return fd, file, start, st.st_size
