"""The argument types the commands share: each names a bad value in one line (argparse
turns it into exit 2) before any command runs."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path


def finite(unit: str, *, positive: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number of `unit`, >= 0 (> 0 if `positive`); argparse
    turns the error into one line and exit 2. NaN or a negative value was taken silently
    (the provider held no request for `--latency nan`) and inf never ends."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number of {unit}: {text!r}") from None
        in_range = value > 0 if positive else value >= 0  # (False for NaN)
        if not in_range or math.isinf(value):
            bound = "> 0" if positive else ">= 0"
            raise argparse.ArgumentTypeError(f"{unit} must be finite and {bound}: {text!r}")
        return value

    return parse


seconds = finite("seconds")


def whole(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer from `low` (to `high`): a count, a port or a seq that
    SQLite's INTEGER can hold, named in one line instead of failing later."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"from {low:,} to {high:,}" if high is not None else f">= {low:,}"
            raise argparse.ArgumentTypeError(f"must be an integer {bound}: {text!r}")
        return value

    return parse


def path_text(text: str) -> str:
    """An argparse type: a path, never empty. "" is not ".": `inspect "$CASE"` with CASE
    unset read whatever lay below the working directory, and `resume "$CASE" ...` would
    act on the case it stood in."""
    if not text:
        raise argparse.ArgumentTypeError("the path is empty")
    return text


def path(text: str) -> Path:
    """An argparse type: a path (never empty), as a Path."""
    return Path(path_text(text))


def base_url(text: str) -> str:
    """An argparse type: an http(s) URL with a host. An empty value is an error, not "use
    the case's": `--base-url "$URL"` with URL unset must not fall back to a destination
    the case directory chose."""
    from codeai_tui.runtime.destination import DestinationError, check_base_url

    try:
        check_base_url(text)
    except DestinationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def env_name(text: str) -> str:
    """An argparse type: the name of an environment variable (never empty, so an unset
    `$VAR` cannot silently mean "the case's variable")."""
    if not text.isascii() or not (text[:1].isalpha() or text[:1] == "_") \
            or not all(c.isalnum() or c == "_" for c in text):
        raise argparse.ArgumentTypeError(f"not an environment variable name: {text!r}")
    return text


def model(text: str) -> str:
    """An argparse type: a model name (never empty: an empty one was ignored)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the model name is empty")
    return text


def send_limits(p: argparse.ArgumentParser) -> None:
    """--timeout and --deadline of the commands that send (runner.send_request)."""
    p.add_argument("--timeout", type=seconds, default=None, metavar="S",
                   help="the longest wait for progress: the connect (TLS included) and each "
                        "read or write; a provider that keeps sending is stopped only by "
                        "--deadline (default 30)")
    p.add_argument("--deadline", type=finite("seconds", positive=True), default=None,
                   metavar="S", help="wall-clock seconds for each attempt's whole exchange: "
                                     "connect, request, status line, headers, body and "
                                     "stream, bytes arriving or not; an answer not whole by "
                                     "then is not recorded and the attempt's effect is unknown "
                                     "(default 600)")


def destination(p: argparse.ArgumentParser) -> None:
    """--base-url and --api-key-env of the commands that send: both trusted, because the
    operator gave them, not the case directory."""
    p.add_argument("--base-url", type=base_url, default=None,
                   help="where to send (trusted: given by you, not by the case directory)")
    p.add_argument("--api-key-env", type=env_name, default=None, metavar="VAR",
                   help="the environment variable holding the credential (trusted)")
