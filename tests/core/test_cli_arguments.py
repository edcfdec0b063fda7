"""Every argument of every command is text first: bytes that are not UTF-8, an empty value
and a huge one are each refused with exit 2 and one line naming the argument, before the
command runs (nothing read, nothing written, nothing sent)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ledgerfactory import write_ledger

from codeai_tui.cli.main import ARGUMENT_LIMIT, build_parser
from tests.support import load_vectors

# Linux refuses one argument of 128 KiB (MAX_ARG_STRLEN, the NUL included) with E2BIG
# before any program runs: measured here, 131,071 bytes pass and 131,072 do not. The
# huge value stays below that, so it reaches the command.
HUGE_BYTES = 131_000

# Each command with a placeholder `{}` where the argument under test goes; the others
# are plain, valid values. Every id, path and text argument of every command.
ARGUMENTS: list[tuple[str, list[str]]] = [
    ("path", ["open", "{}"]),
    ("--theme", ["open", "case", "--theme", "{}"]),
    ("--model", ["open", "case", "--model", "{}"]),
    ("--base-url", ["open", "case", "--base-url", "{}"]),
    ("--api-key-env", ["open", "case", "--api-key-env", "{}"]),
    ("--kernel-key", ["open", "case", "--kernel-key", "{}"]),
    ("path", ["inspect", "{}"]),
    ("case", ["resume", "{}", "call-1"]),
    ("call_id", ["resume", "case", "{}"]),
    ("--model", ["resume", "case", "call-1", "--model", "{}"]),
    ("--base-url", ["resume", "case", "call-1", "--base-url", "{}"]),
    ("--api-key-env", ["resume", "case", "call-1", "--api-key-env", "{}"]),
    ("--reason", ["resume", "case", "call-1", "--reason", "{}"]),
    ("case", ["reconcile", "{}", "call-1", "--finding", "received"]),
    ("call_id", ["reconcile", "case", "{}", "--finding", "received"]),
    ("--finding", ["reconcile", "case", "call-1", "--finding", "{}"]),
    ("--note", ["reconcile", "case", "call-1", "--finding", "received", "--note", "{}"]),
    ("case", ["reconcile-tool", "{}", "n/t/1/x", "--finding", "executed"]),
    ("operation_key", ["reconcile-tool", "case", "{}", "--finding", "executed"]),
    ("--note", ["reconcile-tool", "case", "n/t/1/x", "--finding", "executed", "--note", "{}"]),
    *[(name, [verb, *args]) for verb in ("reinterpret", "redecide", "finalize", "next-attempt")
      for name, args in (("case", ["{}", "call-1"]), ("call_id", ["case", "{}"]))],
    ("--note", ["redecide", "case", "call-1", "--note", "{}"]),
    ("--note", ["finalize", "case", "call-1", "--note", "{}"]),
    ("--base-url", ["next-attempt", "case", "call-1", "--base-url", "{}"]),
    ("--api-key-env", ["next-attempt", "case", "call-1", "--api-key-env", "{}"]),
    ("--host", ["provider", "--receipts", "r", "--host", "{}"]),
    ("--receipts", ["provider", "--receipts", "{}"]),
    ("--receipts-root", ["provider", "--receipts-root", "{}"]),
    ("--retry-after", ["provider", "--receipts", "r", "--retry-after", "{}"]),
    ("out_dir", ["demo", "{}"]),
    ("--kernel-key", ["demo", "--kernel-key", "{}"]),
    ("case", ["export", "{}", "out"]),
    ("out", ["export", "case", "{}"]),
    ("path", ["verify", "{}"]),
    ("case", ["receipts", "verify", "{}"]),
    ("--trusted-key", ["receipts", "verify", "case", "--trusted-key", "{}"]),
    ("case", ["replay", "{}", "call-1", "--kernel-key", "k"]),
    ("call_id", ["replay", "case", "{}", "--kernel-key", "k"]),
    ("--kernel-key", ["replay", "case", "call-1", "--kernel-key", "{}"]),
    ("--keep", ["bench", "--keep", "{}"]),
]
# (an empty path, model, URL, variable name or finding is refused by its own type, and
# tested with those types)
OWN_EMPTY_CHECK = {"path", "case", "out", "out_dir", "--kernel-key", "--receipts",
                   "--receipts-root", "--trusted-key", "--keep", "--model", "--base-url",
                   "--api-key-env", "--finding"}
NOT_UTF8 = os.fsdecode(b"call-\xff")  # what Python makes of the bytes the shell passed


def _parse(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as ended:
        build_parser().parse_args(argv)
    return int(ended.value.code or 0), capsys.readouterr().err


def _with(template: list[str], value: str) -> list[str]:
    return [value if part == "{}" else part for part in template]


@pytest.mark.parametrize(("name", "template"), ARGUMENTS,
                         ids=[" ".join(t) for _, t in ARGUMENTS])
def test_every_argument_refuses_bytes_that_are_not_utf8(
        name: str, template: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _parse(_with(template, NOT_UTF8), capsys)
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert f"argument {name}: not UTF-8 text (byte 0xff at offset 5)" in err, err


@pytest.mark.parametrize(("name", "template"), ARGUMENTS,
                         ids=[" ".join(t) for _, t in ARGUMENTS])
def test_every_argument_refuses_a_huge_value_without_echoing_it(
        name: str, template: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _parse(_with(template, "x" * (ARGUMENT_LIMIT + 1)), capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and len(err) < 200, err[:300]
    assert f"argument {name}: {ARGUMENT_LIMIT + 1:,} bytes long; at most {ARGUMENT_LIMIT:,}" \
        in err, err


@pytest.mark.parametrize(("name", "template"),
                         [a for a in ARGUMENTS if a[0] not in OWN_EMPTY_CHECK],
                         ids=[" ".join(t) for n, t in ARGUMENTS if n not in OWN_EMPTY_CHECK])
def test_every_text_argument_refuses_an_empty_value(
        name: str, template: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _parse(_with(template, ""), capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and f"argument {name}: " in err, err


def test_the_limit_is_on_bytes_and_a_value_at_it_is_taken(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A path may be long: the limit is PATH_MAX bytes, exactly; one more is refused."""
    at_limit = "\u00e9" * (ARGUMENT_LIMIT // 2)  # 2 bytes each: exactly the limit
    args = build_parser().parse_args(["resume", "case", at_limit])
    assert args.call_id == at_limit
    code, err = _parse(["resume", "case", at_limit + "x"], capsys)
    assert code == 2 and f"{ARGUMENT_LIMIT + 1:,} bytes long" in err, err


# ---- the real command, given the bytes on its command line


def _case(tmp_path: Path) -> Path:
    v = next(x for x in load_vectors() if x["name"] == "killed_after_manifest")
    case = tmp_path / "case"
    write_ledger(case, v["events"])
    return case


def _hashes(case: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(case.rglob("*")) if p.is_file() and not p.name.endswith("-shm")}


def _run(*args: bytes | str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    argv = [os.fsencode(sys.executable), b"-m", b"codeai_tui",
            *(a if isinstance(a, bytes) else a.encode() for a in args)]
    return subprocess.run(argv, capture_output=True, timeout=60, cwd=cwd,
                          stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})


@pytest.mark.parametrize("command", [
    ["resume", "{case}", b"call-\xff", "--yes"],
    ["reconcile", "{case}", b"call-\xff", "--finding", "received", "--yes"],
    ["finalize", "{case}", b"call-\xff", "--yes"],
    ["next-attempt", "{case}", b"call-\xff", "--yes"],
    ["replay", "{case}", b"call-\xff", "--kernel-key", "{case}/ledger.sqlite3", "--yes"],
    ["export", b"{case}/\xff", "{tmp}/out"],
])
def test_bytes_that_are_not_utf8_on_the_command_line_are_bad_input(
        tmp_path: Path, command: list[str | bytes]) -> None:
    """A call id that is not UTF-8 was "internal error: UnicodeEncodeError" (exit 70)."""
    case = _case(tmp_path)
    before = _hashes(case)
    places = {b"{case}": os.fsencode(case), b"{tmp}": os.fsencode(tmp_path)}

    def filled(part: str | bytes) -> bytes:
        raw = part if isinstance(part, bytes) else part.encode()
        for mark, value in places.items():
            raw = raw.replace(mark, value)
        return raw

    proc = _run(*(filled(p) for p in command), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count(b"\n") == 1 and b"not UTF-8 text (byte 0xff" in proc.stderr, \
        proc.stderr
    assert b"internal error" not in proc.stderr and proc.stdout == b""
    assert _hashes(case) == before and not (tmp_path / "out").exists()


def test_a_huge_argument_the_system_passes_is_refused_before_anything_is_written(
        tmp_path: Path) -> None:
    """A 131,000-byte --reason on a resumable call: refused, not recorded in call.resumed
    (and no request sent to the unreachable URL)."""
    case = _case(tmp_path)
    before = _hashes(case)
    proc = _run("resume", str(case), "call-16", "--yes", "--base-url", "http://127.0.0.1:9/v1",
                "--reason", "r" * HUGE_BYTES, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (b"codeai-tui resume: argument --reason: 131,000 bytes long; "
                           b"at most 4,096\n")
    assert _hashes(case) == before


def test_an_empty_reason_on_the_command_line_is_bad_input(tmp_path: Path) -> None:
    """`--reason "$WHY"` with WHY unset: refused, not a resume recorded without one."""
    case = _case(tmp_path)
    before = _hashes(case)
    proc = _run("resume", str(case), "call-16", "--yes", "--base-url", "http://127.0.0.1:9/v1",
                "--reason", "", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == b"codeai-tui resume: argument --reason: empty\n"
    assert _hashes(case) == before
