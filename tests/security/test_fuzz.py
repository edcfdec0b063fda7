"""Random damage beyond the fixed corpus: bytes flipped anywhere in a ledger, a receipt
log or case.json. Whatever the damage, `inspect` ends in a projection (exit 0) or one line
(exit 2), never an internal error, and writes nothing."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import random
from pathlib import Path

import pytest
from hostile import GOOD_RECEIPT, rollback_ledger, wal_only

from codeai_tui.cli.main import main

SEEDS = range(60)


def _damage(data: bytes, rng: random.Random, flips: int) -> bytes:
    buf = bytearray(data)
    for _ in range(flips):
        i = rng.randrange(len(buf))
        buf[i] = rng.randrange(256)
    return bytes(buf)


def _inspect(case: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["inspect", str(case)])
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("seed", SEEDS)
def test_flipped_bytes_end_in_a_projection_or_one_line(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    case = tmp_path / "case"
    rollback_ledger(case, n=120)
    ledger = case / "ledger.sqlite3"
    ledger.write_bytes(_damage(ledger.read_bytes(), rng, rng.randint(1, 64)))
    (case / "provider").mkdir()
    lines = "".join(json.dumps({**GOOD_RECEIPT, "receipt_id": f"r{i}"}) + "\n" for i in range(5))
    (case / "provider" / "receipts.jsonl").write_bytes(_damage(lines.encode(), rng, 6))
    (case / "case.json").write_bytes(_damage(b'{"provider": {"model": "m"}}', rng, 2))
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in case.rglob("*")
              if p.is_file()}
    rc, out, err = _inspect(case)
    assert "internal error" not in err and "Traceback" not in out + err
    if rc == 2:
        assert len(err.splitlines()) == 1 and out == "", err
    else:
        assert rc == 0 and err == "" and out.startswith("case "), (rc, err)
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in case.rglob("*")
             if p.is_file() and not p.name.endswith(("-shm", "-wal"))}
    assert after == {k: v for k, v in before.items() if not k.endswith(("-shm", "-wal"))}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("seed", range(30))
def test_a_damaged_wal_of_a_killed_producer_never_breaks_inspect(tmp_path: Path, seed: int
                                                                 ) -> None:
    rng = random.Random(1000 + seed)
    case = tmp_path / "case"
    wal_only(case)
    wal = case / "ledger.sqlite3-wal"
    wal.write_bytes(_damage(wal.read_bytes(), rng, rng.randint(1, 16)))
    before = (case / "ledger.sqlite3").read_bytes(), wal.read_bytes()
    rc, out, err = _inspect(case)
    assert "internal error" not in err and "Traceback" not in out + err
    assert (rc == 2 and len(err.splitlines()) == 1) if rc else (err == "" and "events" in out)
    assert ((case / "ledger.sqlite3").read_bytes(), wal.read_bytes()) == before


@pytest.mark.parametrize("seed", [0, 3, 9, 17])
async def test_the_console_survives_the_same_damage(tmp_path: Path, seed: int) -> None:
    """Seeds with both outcomes (a projection, a corrupt ledger): the console shows the
    projection or its error screen within 5 s and no worker dies behind it."""
    import consoleprobe as probe
    from apphelpers import SIZE, frozen_clock

    from codeai_tui.app import create_app

    rng = random.Random(seed)
    case = tmp_path / "case"
    rollback_ledger(case, n=120)
    ledger = case / "ledger.sqlite3"
    ledger.write_bytes(_damage(ledger.read_bytes(), rng, rng.randint(1, 64)))
    rc, _, _ = _inspect(case)
    app = create_app(case, clock=frozen_clock)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        if rc == 2:
            await probe.error_shown(pilot, f"seed {seed}")
        else:
            await probe.projected(pilot, f"seed {seed}")
        await pilot.pause()
        assert probe.internal_errors(app) == []
        await pilot.press("q")
