"""Signed tool receipts: canonical bytes, Ed25519 signatures, keys, and verification.

A receipt is one line of text, kept byte for byte wherever it travels (the ledger's
`tool.completed`, the case's `tools/receipts.ndjson`):

    {"alg":"Ed25519","body":{...},"kid":"<16 hex>","sig":"<base64url, no padding>"}

`sig` signs the canonical bytes of `body`; the whole line must itself be in canonical
form, so any changed byte either breaks the form or the signature. Canonical form:
sorted keys, separators `,` and `:`, UTF-8 without escaping non-ASCII, and no floats.
For such values (ASCII keys, integers, strings, booleans, null) this is the same byte
sequence as RFC 8785 (JCS), so any JCS library can check our receipts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# cryptography is imported where a key is used: loading it costs ~10 MB of memory, which
# the console and `inspect` need not pay for a case without tool receipts
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

from codeai_tui.ledger.jsontypes import JsonObject

RECEIPT_FORMAT = "codeai.tool_receipt.v1"
ALG = "Ed25519"
TOOLS_DIR = "tools"
# a case\'s counterfactual copy (the naive re-ask): its stores, never a ledger
NAIVE_DIR = "naive"
PUBLIC_KEY_FILE = "kernel.pub"
RECEIPTS_FILE = "receipts.ndjson"
_ENVELOPE_KEYS = frozenset({"alg", "body", "kid", "sig"})



class KeyProblem(ValueError):
    """A key file that cannot be used (one operator-readable line)."""


class ToolsDirProblem(KeyProblem):
    """A case's tools/ that must not be written through (a link, not a directory)."""


def checked_tools_dir(case_dir: Path) -> Path:
    """The case's tools/ directory, made if missing; refused when it is a symlink or not
    a directory, so nothing the kernel or a tool writes can land outside the case."""
    tools_dir = case_dir / TOOLS_DIR
    if tools_dir.is_symlink() or (tools_dir.exists() and not tools_dir.is_dir()):
        raise ToolsDirProblem(f"{tools_dir}: is a link or not a directory; refusing to write there")
    tools_dir.mkdir(parents=True, exist_ok=True)
    if tools_dir.is_symlink():  # replaced between the check and mkdir
        raise ToolsDirProblem(f"{tools_dir}: is a link; refusing to write there")
    return tools_dir


def _check_canonical_value(value: object) -> None:
    if isinstance(value, float):
        raise ValueError("floats have no single canonical form here; use integers or strings")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError("object keys must be strings")
            _check_canonical_value(v)
    elif isinstance(value, list):
        for v in value:
            _check_canonical_value(v)


def canonical_bytes(value: object) -> bytes:
    """Sorted keys, compact, UTF-8, no floats (see the module docstring)."""
    _check_canonical_value(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def key_id(public: Ed25519PublicKey) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


def public_pem(public: Ed25519PublicKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    if not isinstance(text, str) or "=" in text:
        raise ValueError("signature is not unpadded base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def sign_receipt(private: Ed25519PrivateKey, body: JsonObject) -> str:
    """The receipt line (without newline) for `body`."""
    public = private.public_key()
    envelope = {
        "alg": ALG,
        "body": body,
        "kid": key_id(public),
        "sig": _b64(private.sign(canonical_bytes(body))),
    }
    return canonical_bytes(envelope).decode("utf-8")


@dataclass(frozen=True, slots=True)
class ReceiptCheck:
    """What one receipt line says and whether it holds. `body` is None when the line is
    not even a receipt; `problem` is None exactly when the signature is valid."""

    text: str
    body: JsonObject | None
    problem: str | None

    @property
    def valid(self) -> bool:
        return self.problem is None

    @property
    def operation_key(self) -> str | None:
        key = self.body.get("operation_key") if self.body is not None else None
        return key if isinstance(key, str) else None


def check_receipt(text: str, public: Ed25519PublicKey) -> ReceiptCheck:
    """Verify one receipt line against the trusted key; never raises."""
    from cryptography.exceptions import InvalidSignature

    try:
        envelope = json.loads(text)
    except (ValueError, RecursionError):
        return ReceiptCheck(text, None, "not JSON")
    if not isinstance(envelope, dict) or set(envelope) != _ENVELOPE_KEYS:
        return ReceiptCheck(text, None, "not a receipt (expected alg, body, kid, sig)")
    body = envelope["body"]
    if not isinstance(body, dict):
        return ReceiptCheck(text, None, "receipt body is not an object")
    try:
        canonical = canonical_bytes(envelope).decode("utf-8")
    except ValueError as exc:
        return ReceiptCheck(text, body, f"not canonical JSON ({exc})")
    if canonical != text:
        return ReceiptCheck(text, body, "not in canonical form (the text was changed)")
    if envelope["alg"] != ALG:
        return ReceiptCheck(text, body, f"unsupported alg {str(envelope['alg'])[:20]!r}")
    if body.get("format") != RECEIPT_FORMAT:
        return ReceiptCheck(text, body, f"body format is not {RECEIPT_FORMAT}")
    if envelope["kid"] != key_id(public):
        return ReceiptCheck(text, body, "signed by another key than the trusted one")
    try:
        public.verify(_unb64(envelope["sig"]), canonical_bytes(body))
    except (InvalidSignature, ValueError):
        return ReceiptCheck(text, body, "signature does not verify")
    return ReceiptCheck(text, body, None)


# ---- keys on disk


def _read_regular(path: Path, what: str, max_bytes: int | None = 64 * 1024) -> bytes:
    """Read a key file or log, refusing symlinks and non-regular files."""
    try:
        # O_NONBLOCK: a FIFO in the case must not hang the open (fstat then refuses it)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise KeyProblem(f"{path}: no such {what}") from None
    except OSError as exc:
        raise KeyProblem(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyProblem(f"{path}: {what} is not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise KeyProblem(f"{path}: too large for a {what}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read()
        return data
    finally:
        os.close(fd)


def load_public_key(path: Path) -> Ed25519PublicKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    data = _read_regular(path, "public key")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        raise KeyProblem(f"{path}: not a PEM public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyProblem(f"{path}: not an Ed25519 public key")
    return key


def load_or_create_signing_key(path: Path) -> Ed25519PrivateKey:
    """The kernel's private key: created once with mode 0600, then reused, so receipts
    signed before and after a restart verify against one public key. Refused when group
    or others may read it. Keep it outside case directories: a case is evidence handed
    to others, and whoever holds this key can forge receipts."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if not path.exists() and not path.is_symlink():
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            return load_or_create_signing_key(path)  # another process made it first
        try:
            os.write(fd, pem)
            os.fsync(fd)
        finally:
            os.close(fd)
        return key
    if path.is_symlink():
        raise KeyProblem(f"{path}: the kernel key must not be a symlink")
    if path.stat().st_mode & 0o077:
        raise KeyProblem(f"{path}: the kernel key is readable by others; chmod 600 it")
    data = _read_regular(path, "kernel key")
    try:
        loaded = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise KeyProblem(f"{path}: not an unencrypted PEM private key") from None
    if not isinstance(loaded, Ed25519PrivateKey):
        raise KeyProblem(f"{path}: not an Ed25519 private key")
    return loaded


def write_durable(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write a whole small file atomically (tmp, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def append_line(path: Path, text: str) -> None:
    """Append one receipt line in one write and fsync it (what the seed's onReceipt does)."""
    if "\n" in text:
        raise ValueError("a receipt is one line")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (text + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def read_receipt_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of every non-empty line, as emitted."""
    data = _read_regular(path, "receipt log", max_bytes=None)
    out: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            out.append((number, raw.decode("utf-8", "replace")))
    return out
