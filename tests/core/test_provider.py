"""The synthetic provider: receipt durable before work, no dedup, loopback only."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from codeai_tui.lab.provider import ProviderProcess, ProviderServer
from codeai_tui.ledger import read_receipts
from codeai_tui.runtime.runner import send_request
from tests.support import cli

BODY = b'{"messages":[],"model":"m"}'  # the least a chat-completions request must carry


def _wait_for(predicate, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    event = threading.Event()
    for _ in range(int(timeout / 0.02)):
        if predicate():
            return True
        event.wait(0.02)  # a poll with a timeout, not a sleep-as-synchronisation
    return predicate()


def test_receipt_is_written_before_the_held_request_is_answered(tmp_path: Path) -> None:
    receipts = tmp_path / "r.jsonl"
    with ProviderProcess(receipts, latency=3.0) as prov:
        body = b'{"model":"m","messages":[]}'
        result: list[object] = []
        sender = threading.Thread(
            target=lambda: result.append(send_request(prov.base_url, body, "k-1", None, 10)))
        sender.start()
        assert _wait_for(lambda: receipts.exists() and receipts.read_bytes().endswith(b"\n"))
        assert not result, "the provider answered before holding the request"
        log = read_receipts_file(receipts)
        assert log == [("k-1", hashlib.sha256(body).hexdigest(), len(body))]
        sender.join(timeout=10)
    assert result and getattr(result[0], "status", None) == 200


def read_receipts_file(path: Path) -> list[tuple[str, str, int]]:
    return [(r["idempotency_key"], r["body_sha256"], r["bytes"])
            for r in map(json.loads, path.read_text().splitlines())]


def test_no_deduplication_by_key(tmp_path: Path) -> None:
    receipts = tmp_path / "r.jsonl"
    with ProviderProcess(receipts) as prov:
        for _ in range(2):
            assert send_request(prov.base_url, BODY, "same-key", "sk-secretsecretsecret", 10).status == 200
    lines = read_receipts_file(receipts)
    assert len(lines) == 2 and lines[0] == lines[1]
    assert "sk-secret" not in receipts.read_text()


def test_bundle_mode_writes_each_case_log_and_rejects_escapes(tmp_path: Path) -> None:
    (tmp_path / "case-a").mkdir()
    with ProviderProcess(receipts_root=tmp_path) as prov:
        root = prov.base_url.rsplit("/v1", 1)[0]
        assert send_request(f"{root}/c/case-a/v1", BODY, "k", None, 10).status == 200
        assert send_request(f"{root}/c/../v1", BODY, "k", None, 10).status == 404
        assert send_request(f"{root}/c/missing/v1", BODY, "k", None, 10).status == 404
    assert len(read_receipts(tmp_path / "case-a").receipts) == 1


def test_provider_fail_first_answers_503(tmp_path: Path) -> None:
    with ProviderProcess(tmp_path / "r.jsonl", fail_first=1) as prov:
        assert send_request(prov.base_url, BODY, "k", None, 10).status == 503
        assert send_request(prov.base_url, BODY, "k", None, 10).status == 200


def test_provider_refuses_non_loopback(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ProviderServer("0.0.0.0", 0, tmp_path / "r.jsonl")
    proc = cli("provider", "--host", "0.0.0.0", "--port", "0", "--receipts", str(tmp_path / "r"))
    assert proc.returncode == 2 and "loopback" in proc.stderr
