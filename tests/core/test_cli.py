"""The command line's contract with operators: one line per bad input, clear exits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ledgerfactory import write_ledger

from tests.support import cli, load_vectors

HOSTILE = "\x1b]52;c;ZXZpbA==\x07\x1b[2J[@click=app.quit]\u202e"


@pytest.mark.parametrize(
    "args",
    [
        ["inspect"],
        ["inspect", "/definitely/not/here"],
        ["inspect", "/etc/hostname"],
        ["inspect", ".", "--as-of", "minus-one"],
        ["resume", "/definitely/not/here", "call-1", "--yes"],
        ["verify", "/definitely/not/here"],
        ["/definitely/not/here"],
        ["--no-such-flag"],
        ["demo", "/etc/hostname"],
    ],
)
def test_bad_input_is_one_line_exit_2(args: list[str]) -> None:
    proc = cli(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("codeai-tui"), proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


LONG = "/tmp/" + "x" * 300  # a name the kernel refuses to look up (ENAMETOOLONG)


@pytest.mark.parametrize("args", [[LONG], ["inspect", LONG], ["verify", LONG],
                                  ["resume", LONG, "call-1", "--yes"],
                                  ["export", LONG, "/tmp/never-written.tar.gz"],
                                  ["reconcile", LONG, "call-1", "--finding", "not_received"]])
def test_a_path_that_cannot_be_looked_at_is_named_with_why(args: list[str]) -> None:
    """Not "internal error": the operator's path and the system's reason, exit 2."""
    proc = cli(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert LONG in proc.stderr and "File name too long" in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr


def test_untrusted_ids_never_reach_the_terminal_raw(tmp_path: Path) -> None:
    v = next(x for x in load_vectors() if x["name"] == "killed_in_flight")
    events = [dict(e) for e in v["events"]]
    for e in events:
        if e.get("call_id"):
            e["call_id"] = "call-" + HOSTILE
        e["task_id"] = "task-" + HOSTILE
    events[0]["payload"] = {"title": HOSTILE}
    write_ledger(tmp_path / "evil", events)
    table = cli("inspect", str(tmp_path / "evil"))
    assert table.returncode == 0, table.stderr
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in table.stdout
    assert "⟨ESC⟩" in table.stdout
    doc = json.loads(cli("inspect", str(tmp_path / "evil"), "--json").stdout)
    assert doc["calls"][0]["call_id"] == "call-" + HOSTILE  # JSON keeps data exact, escaped
    refused = cli("resume", str(tmp_path / "evil"), "call-" + HOSTILE, "--yes")
    assert refused.returncode == 3
    assert "\x1b" not in refused.stderr and "⟨ESC⟩" in refused.stderr


def test_version_and_help() -> None:
    assert cli("--version").stdout.startswith("codeai-tui ")
    proc = cli("--help")
    assert proc.returncode == 0 and "inspect" in proc.stdout


def test_unknown_theme_is_named_before_the_screen_opens(tmp_path: Path) -> None:
    v = next(x for x in load_vectors() if x["name"] == "completed_task")
    write_ledger(tmp_path / "case", v["events"])
    proc = cli(str(tmp_path / "case"), "--theme", "no-such-theme")
    assert proc.returncode == 2
    assert "unknown theme 'no-such-theme'" in proc.stderr and "incident-dark" in proc.stderr


def test_demo_refuses_a_kernel_key_inside_its_bundle(tmp_path: Path) -> None:
    """Whoever holds the kernel key can sign receipts: it never goes into the evidence."""
    out = tmp_path / "bundle"
    done = cli("demo", str(out), "--kernel-key", str(out / "keys" / "kernel.key"))
    assert done.returncode == 2
    assert "must live outside the bundle" in done.stderr
    assert not out.exists()  # refused before anything was built


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["inspect", ".", "--as-of", str(2**63)], "argument --as-of: must be an integer from 0"),
        (["inspect", ".", "--as-of", "-5"], "argument --as-of: must be an integer from 0"),
        (["provider", "--port", "99999", "--receipts", "r.jsonl"],
         "argument --port: must be an integer from 0 to 65,535"),
        (["provider", "--latency", "nan", "--receipts", "r.jsonl"],
         "argument --latency: seconds must be finite and >= 0"),
        (["provider", "--latency", "-1", "--receipts", "r.jsonl"],
         "argument --latency: seconds must be finite and >= 0"),
        (["provider", "--fail-first", "-1", "--receipts", "r.jsonl"],
         "argument --fail-first: must be an integer >= 0"),
        (["demo", "--live", "--rate", "nan"],
         "argument --rate: events per second must be finite and > 0"),
        (["demo", "--live", "--rate", "0"],
         "argument --rate: events per second must be finite and > 0"),
        (["bench", "--events", "-1"], "argument --events: must be an integer >= 100"),
        (["bench", "--runs", "0"], "argument --runs: must be an integer >= 1"),
        (["bench", "--cases", "-1"], "argument --cases: must be an integer >= 0"),
        (["bench", "--live-seconds", "inf"], "argument --live-seconds: seconds must be finite"),
        (["reliability", "--rounds", "0"], "argument --rounds: must be an integer >= 1"),
        (["reliability", "--kills", "-1"], "argument --kills: must be an integer >= 1"),
        (["reliability", "--soak-minutes", "nan"],
         "argument --soak-minutes: minutes must be finite and > 0"),
    ],
)
def test_a_number_out_of_range_is_named_before_anything_runs(
        tmp_path: Path, args: list[str], said: str) -> None:
    """Not an internal error, not a value taken silently (the provider ignored a NaN
    latency), and not a run that starts (a bench writing its ledger for --cases -1, a
    reliability run racing zero rounds)."""
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert proc.stdout == "" and list(tmp_path.iterdir()) == []


_DESTINATION_FLAGS = [
    (["--base-url", "ftp://x"], "argument --base-url: base URL 'ftp://x' is not usable"),
    # an unset $URL in a script: never "use the destination the case chose"
    (["--base-url", ""], "argument --base-url: base URL '' is not usable"),
    (["--api-key-env", ""], "argument --api-key-env: not an environment variable name"),
    (["--api-key-env", "A=B"], "argument --api-key-env: not an environment variable name"),
    (["--model", ""], "argument --model: the model name is empty"),
]


# (next-attempt sends the recorded request again: it takes no --model)
@pytest.mark.parametrize(
    ("command", "flags", "said"),
    [(command, flags, said) for command in ("open", "resume", "next-attempt")
     for flags, said in _DESTINATION_FLAGS
     if not (command == "next-attempt" and flags[0] == "--model")],
)
def test_an_empty_or_unusable_destination_flag_is_refused_before_anything_is_sent(
        tmp_path: Path, command: str, flags: list[str], said: str) -> None:
    """`resume` with `--base-url ""` sent to the case's own URL: an empty value is not
    an absent one. The console names it before its screen opens."""
    v = next(x for x in load_vectors() if x["name"] == "killed_after_manifest")
    case = tmp_path / "case"
    write_ledger(case, v["events"])
    args = [str(case)] if command == "open" else [command, str(case), "call-1", "--yes"]
    proc = cli(*args, *flags)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert _kinds(case) == [e["kind"] for e in v["events"]]


def test_the_console_names_a_missing_kernel_key_before_the_screen_opens(
        tmp_path: Path) -> None:
    """Not first when `R` is pressed in the middle of an incident."""
    v = next(x for x in load_vectors() if x["name"] == "killed_after_manifest")
    write_ledger(tmp_path / "case", v["events"])
    proc = cli(str(tmp_path / "case"), "--kernel-key", "/definitely/not/here.key")
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr == ("codeai-tui: --kernel-key /definitely/not/here.key: no such file "
                           "(the tool kernel's signing key)\n"), proc.stderr
    assert proc.stdout == ""


def _kinds(case: Path) -> list[str]:
    from codeai_tui.ledger import LedgerReader

    with LedgerReader(case) as reader:
        return [e.kind for e in reader.events()]


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", ""],
        [""],
        ["resume", "", "call-1", "--yes"],
        ["reconcile", "", "call-1", "--finding", "not_received", "--yes"],
        ["finalize", "", "call-1", "--yes"],
        ["export", "", "out"],
        ["export", ".", ""],
        ["verify", ""],
        ["demo", ""],
        ["receipts", "verify", ".", "--trusted-key", ""],
        ["replay", ".", "call-1", "--kernel-key", "", "--yes"],
        ["provider", "--receipts", ""],
        ["bench", "--keep", ""],
    ],
)
def test_an_empty_path_is_bad_input_not_the_working_directory(
        tmp_path: Path, args: list[str]) -> None:
    """`resume "$CASE" call-1 --yes` with CASE unset, run from inside a case, would have
    resumed that case: "" is refused, whatever the working directory holds."""
    v = next(x for x in load_vectors() if x["name"] == "killed_after_manifest")
    case = tmp_path / "case"
    write_ledger(case, v["events"])
    before = sorted(p.name for p in case.iterdir())
    proc = cli(*args, cwd=case)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "the path is empty" in proc.stderr, proc.stderr
    assert proc.stdout == ""
    assert sorted(p.name for p in case.iterdir()) == before
    assert _kinds(case) == [e["kind"] for e in v["events"]]


def test_options_before_the_path_or_the_command_are_taken(tmp_path: Path) -> None:
    """`codeai-tui --read-only CASE` opens the console (here: reaches its path check, a
    missing path, exit 2 with its line), and `--json inspect CASE` is inspect --json."""
    missing = cli("--read-only", str(tmp_path / "nowhere"), "--theme", "light")
    assert missing.returncode == 2, missing.stderr
    assert "invalid choice" not in missing.stderr
    assert "nowhere" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    write_ledger(tmp_path / "case", [dict(seq=1, kind="task.created", task_id="t1",
                                          payload={"title": "x"})])
    doc = cli("--json", "inspect", str(tmp_path / "case"))
    assert doc.returncode == 0, doc.stderr
    assert json.loads(doc.stdout)["format"] == "codeai.work_state.v1"


def test_an_unknown_command_is_named_as_one(tmp_path: Path) -> None:
    proc = cli("bogus-command", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("codeai-tui: unknown command 'bogus-command'")
    assert len(proc.stderr.strip().splitlines()) == 1
    (tmp_path / "bogus-command").mkdir()  # a directory of that name is a path after all
    there = cli("bogus-command", cwd=tmp_path)
    assert "unknown command" not in there.stderr


@pytest.mark.parametrize("command", ["open", "inspect", "resume", "reconcile",
                                     "reconcile-tool", "reinterpret", "redecide", "finalize",
                                     "next-attempt", "replay", "export", "verify", "demo",
                                     "provider", "bench", "reliability"])
def test_every_subcommand_help_says_each_argument_and_the_exit_codes(command: str) -> None:
    proc = cli(command, "--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "exit codes: 0 ok" in text and "2 bad input" in text and "3 refused" in text
    # every argument's line says what it is: no name left alone on its line
    body = text.split("positional arguments:", 1)[-1].split("exit codes:", 1)[0]
    lines = [line for line in body.splitlines() if line.startswith("  ") and line.strip()]
    for line in lines:
        name_and_help = line.strip().split("  ", 1)
        if line.startswith("  ") and not line.startswith("    ") and len(name_and_help) == 1:
            at = lines.index(line)
            follow = lines[at + 1] if at + 1 < len(lines) else ""
            assert follow.startswith("   "), f"{command}: {line!r} has no help"


def test_the_console_without_a_terminal_is_one_line_not_a_spinning_screen(
        tmp_path: Path) -> None:
    """Without a terminal the console drew into the pipe, spun a core and ignored
    SIGTERM; now it says what to use instead (exit 2), within the subprocess timeout."""
    v = next(x for x in load_vectors() if x["name"] == "completed_task")
    write_ledger(tmp_path / "case", v["events"])
    proc = cli(str(tmp_path / "case"), input="")
    assert proc.returncode == 2, proc.stderr[-500:]
    assert proc.stderr.startswith("codeai-tui: the console needs a terminal")
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stdout == ""
