"""The one confirmation every write command asks, and the one mapping of how a command
ended to its exit code: --yes asks nothing; off a terminal nothing is asked and nothing
runs (exit 2, naming the command); only the typed id (or y where none is asked for)
confirms, anything else is exit 3 with the command's own line."""

from __future__ import annotations

import io
import sys

import pytest

from codeai_tui.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_REFUSED,
    CliError,
    Refused,
    confirm,
    exit_code,
)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _answering(monkeypatch: pytest.MonkeyPatch, answer: str | None) -> list[str]:
    """Standard input is a terminal (or, with no answer, a pipe); returns the questions
    asked."""
    asked: list[str] = []
    monkeypatch.setattr(sys, "stdin", _Terminal() if answer is not None else io.StringIO())

    def answer_with(question: str) -> str:
        asked.append(question)
        assert answer is not None
        return answer

    monkeypatch.setattr("builtins.input", answer_with)
    return asked


def test_yes_asks_nothing_even_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _answering(monkeypatch, None)
    confirm(True, "reconcile", "Type the call id: ", typed="call-1", declined="not reconciled")
    assert asked == []


def test_off_a_terminal_nothing_is_asked_and_the_command_is_named(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    asked = _answering(monkeypatch, None)
    with pytest.raises(CliError) as caught:
        confirm(False, "replay", "Run? [y/N] ", typed=None, declined="not replayed",
                shown=["  call  call-1"])
    assert asked == [] and capsys.readouterr().err == ""  # not even the plan is shown
    assert exit_code(caught.value) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == ("codeai-tui: refusing to replay without confirmation: "
                                       "run on a terminal or pass --yes\n")


@pytest.mark.parametrize(("typed", "answer", "confirmed"), [
    ("call-1", " call-1 \n", True), ("call-1", "y", False), ("call-1", "call-2", False),
    (None, "YES", True), (None, "y", True), (None, "call-1", False), (None, "", False),
])
def test_only_the_typed_id_or_a_clear_yes_confirms(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        typed: str | None, answer: str, confirmed: bool) -> None:
    asked = _answering(monkeypatch, answer)
    shown = ["  call              call-\x1b]0;x\x07"]
    try:
        confirm(False, "resume", "Resume call-\x1b[2J? ", typed=typed, declined="not resumed",
                shown=shown)
        said: int | None = None
    except Refused as exc:
        said = exit_code(exc)
    assert asked == ["Resume call-⟨ESC⟩[2J? "]  # an id is shown inert in the question
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "  call              call-⟨ESC⟩]0;x⟨U+0007⟩"  # the plan first, inert
    if confirmed:
        assert said is None and lines == lines[:1]
    else:
        assert said == EXIT_REFUSED and lines[1:] == ["not resumed"]
