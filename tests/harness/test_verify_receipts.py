"""The verifier's own receipt check (verify/effects.py) against receipts signed by the
project's kernel code: two independent implementations of docs/tools.md must agree, and
every changed byte must be caught."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from codeai_tui.tools.receipts import RECEIPT_FORMAT, sign_receipt
from codeai_tui.verify.effects import check_line

KEY = Ed25519PrivateKey.generate()
BODY = {"format": RECEIPT_FORMAT, "operation_key": "ns/t/u/call_1", "outcome": "succeeded",
        "result": {"publication_id": 1}, "title": "Wochenbericht ü"}
LINE = sign_receipt(KEY, BODY).encode("utf-8")


def test_a_receipt_signed_by_the_kernel_code_is_valid_here() -> None:
    checked = check_line(1, LINE, KEY.public_key())
    assert checked.problem is None and checked.body == BODY


@pytest.mark.parametrize("at", range(0, len(LINE), 7))
def test_every_changed_byte_is_caught(at: int) -> None:
    changed = LINE[:at] + bytes([LINE[at] ^ 0x01]) + LINE[at + 1:]
    assert check_line(1, changed, KEY.public_key()).problem is not None


def test_another_key_and_a_missing_key_are_problems() -> None:
    other = Ed25519PrivateKey.generate().public_key()
    assert "another key" in str(check_line(1, LINE, other).problem)
    assert "no usable" in str(check_line(1, LINE, None).problem)


def test_a_re_serialised_receipt_is_not_the_original_text() -> None:
    spaced = json.dumps(json.loads(LINE), sort_keys=True).encode()  # same meaning, other bytes
    assert "canonical" in str(check_line(1, spaced, KEY.public_key()).problem)
