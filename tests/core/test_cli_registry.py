"""Each subcommand is one record in the command line's registry: `codeai-tui --help` lists
every record once, each has its own --help ending with its exit codes, and one record is
all a new command takes (the parser, the value checks, the dispatch, options before the
command and the unknown-command message all follow from it)."""

from __future__ import annotations

import argparse
from collections import Counter

import pytest

from codeai_tui.cli import main as cli
from codeai_tui.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_CODES_HELP,
    EXIT_OK,
    EXIT_REFUSED,
    Command,
)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _listed(top_help: str) -> list[str]:
    """The command names in the COMMAND block of the top level's --help (a long name
    stands alone on its line, its help on the next, indented further)."""
    block = top_help.split("\n  COMMAND\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines()
            if line.startswith("    ") and line[4] != " "]


def _words(text: str) -> str:
    return " ".join(text.split())  # argparse wraps lines to the terminal's width


def test_every_registered_command_is_listed_once_with_its_own_help(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, top, _ = _run(capsys, "--help")
    assert code == EXIT_OK
    names = [command.name for command in cli.REGISTRY]
    listed = Counter(_listed(top))
    assert listed == Counter(names)  # each registered name listed, and nothing else
    assert [name for name, n in listed.items() if n > 1] == []  # none registered twice
    for command in cli.REGISTRY:
        code, text, err = _run(capsys, command.name, "--help")
        assert code == EXIT_OK, err
        assert text.startswith(f"usage: codeai-tui {command.name} "), text[:80]
        assert _words(command.help) in _words(top)
        assert _words(text).endswith(_words(command.exit_codes or EXIT_CODES_HELP)), \
            f"{command.name}: its --help does not end with its exit codes"


def test_one_record_adds_a_command(monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    ran: list[tuple[str, bool]] = []

    def add_arguments(p: argparse.ArgumentParser) -> None:
        p.add_argument("subject")
        p.add_argument("--flag", action="store_true", help="a flag of the probe")

    def run(args: argparse.Namespace) -> int:
        ran.append((args.subject, args.flag))
        return EXIT_REFUSED

    probe = Command("probe-command", "a command this test registers", add_arguments, run,
                    exit_codes="exit codes: 0 probed; 3 the probe said no")
    monkeypatch.setattr(cli, "REGISTRY", (*cli.REGISTRY, probe))

    assert _run(capsys, "probe-command", "s1", "--flag")[0] == EXIT_REFUSED
    assert _run(capsys, "--flag", "probe-command", "s2")[0] == EXIT_REFUSED  # options first
    assert ran == [("s1", True), ("s2", True)]
    code, _, err = _run(capsys, "probe-command", "")  # every value passes the one check
    assert code == EXIT_BAD_INPUT and len(err.strip().splitlines()) == 1 and ran[2:] == []
    assert "probe-command" in _listed(_run(capsys, "--help")[1])
    code, text, _ = _run(capsys, "probe-command", "--help")
    assert code == EXIT_OK
    assert "a flag of the probe" in text
    assert _words(text).endswith("exit codes: 0 probed; 3 the probe said no")
    code, _, err = _run(capsys, "probe-commnd")
    assert code == EXIT_BAD_INPUT and "unknown command" in err and "probe-command" in err


def test_a_name_registered_twice_stops_the_parser_being_built(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "REGISTRY", (*cli.REGISTRY, cli.REGISTRY[-1]))
    with pytest.raises(argparse.ArgumentError, match="conflicting subparser"):
        cli.build_parser()
