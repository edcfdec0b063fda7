"""Where a request may go, and whether a credential may go with it.

A case directory is untrusted: its case.json can name any URL and any environment
variable (`MY_DB_PASSWORD`). So a credential is sent only to a destination the operator
trusts: the URL and the variable both come from the operator (the command line, the
operator's own configuration outside the case directory, or the built-in defaults), or
the operator confirmed that pair interactively after seeing both. The URL itself is
checked before anything is written, so a typo cannot consume a call's only resume.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from codeai_tui.ledger.case import CaseConfig, ProviderConfig

CONFIG_ENV = "CODEAI_TUI_CONFIG"
FROM_COMMAND_LINE = "command line"
FROM_OPERATOR_CONFIG = "operator config"
FROM_CASE = "case.json"
FROM_DEFAULT = "built-in default"
_OPERATOR_SOURCES = frozenset({FROM_COMMAND_LINE, FROM_OPERATOR_CONFIG, FROM_DEFAULT})


class DestinationError(ValueError):
    """The destination cannot be used (bad URL, unreadable operator config): one line."""


@dataclass(frozen=True, slots=True)
class Destination:
    """Where a resume would send its request, where each half came from, and whether the
    credential variable's value may travel with it without asking."""

    base_url: str
    base_url_from: str
    api_key_env: str | None
    api_key_env_from: str
    credential_set: bool  # the variable names a non-empty value (never stored here)
    trusted: bool

    @property
    def needs_credential_confirmation(self) -> bool:
        """A credential exists but only the case directory vouches for where it would go."""
        return self.credential_set and not self.trusted

    def credential_line(self, send: bool) -> str:
        """What happens to the credential, for the dialog and the prompt."""
        var = self.api_key_env or "(no variable)"
        if not self.api_key_env or not self.credential_set:
            return f"no credential: {var} is not set; the request goes without one"
        if send:
            return f"the value of {var} is sent as Authorization: Bearer to {self.base_url}"
        halves = [name for name, source in (("the variable name", self.api_key_env_from),
                                            ("the URL", self.base_url_from))
                  if source not in _OPERATOR_SOURCES]
        return (f"no credential will be sent: {' and '.join(halves) or 'the destination'} "
                f"come from {FROM_CASE}, not from you")


def operator_config_path() -> Path:
    """$CODEAI_TUI_CONFIG, else $XDG_CONFIG_HOME/codeai-tui/config.json (~/.config)."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "codeai-tui" / "config.json"


def _same_url(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


def load_trusted_pairs(case_dir: Path, path: Path | None = None) -> list[tuple[str, str | None]]:
    """The operator's trusted (base_url, api_key_env) pairs:
    `{"trusted_destinations": [{"base_url": ..., "api_key_env": ...}]}`. A config file
    inside the case directory is not the operator's and is refused."""
    cfg = path or operator_config_path()
    try:
        resolved = cfg.resolve()
    except OSError:
        return []
    if resolved.is_relative_to(case_dir.resolve()):
        raise DestinationError(f"{cfg}: the operator config must not live inside the case directory")
    if not resolved.is_file():
        return []
    try:
        data = json.loads(resolved.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DestinationError(f"{cfg}: unreadable operator config ({exc})") from None
    entries = data.get("trusted_destinations") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise DestinationError(f"{cfg}: expected {{\"trusted_destinations\": [...]}}")
    pairs: list[tuple[str, str | None]] = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("base_url"), str):
            raise DestinationError(f"{cfg}: each trusted destination needs a base_url string")
        env = entry.get("api_key_env")
        pairs.append((entry["base_url"], env if isinstance(env, str) else None))
    return pairs


def check_base_url(url: str) -> None:
    """Raise DestinationError unless `url` is an http(s) URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DestinationError(
            f"base URL {url[:120]!r} is not usable: it needs http:// or https:// and a host"
        )
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise DestinationError("base URL contains whitespace or control characters")


def resolve_destination(
    case_dir: str | os.PathLike[str],
    config: CaseConfig,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    operator_config: Path | None = None,
) -> Destination:
    """Combine the command line, the operator's config and case.json into a Destination.
    Raises DestinationError for an unusable URL or operator config."""
    defaults = ProviderConfig()
    url, url_from = _first(base_url, config.provider.base_url if config.base_url_set else None,
                           defaults.base_url)
    env, env_from = _first(api_key_env,
                           config.provider.api_key_env if config.api_key_env_set else None,
                           defaults.api_key_env)
    check_base_url(url or "")
    if url_from not in _OPERATOR_SOURCES or env_from not in _OPERATOR_SOURCES:
        for t_url, t_env in load_trusted_pairs(Path(case_dir), operator_config):
            if _same_url(t_url, url) and t_env == env:
                if url_from == FROM_CASE:
                    url_from = FROM_OPERATOR_CONFIG
                if env_from == FROM_CASE:
                    env_from = FROM_OPERATOR_CONFIG
                break
    trusted = url_from in _OPERATOR_SOURCES and env_from in _OPERATOR_SOURCES
    return Destination(
        base_url=url or "", base_url_from=url_from, api_key_env=env or None, api_key_env_from=env_from,
        credential_set=bool(env and os.environ.get(env)), trusted=trusted,
    )


def _first(command_line: str | None, case_value: str | None,
           default: str | None) -> tuple[str | None, str]:
    """The operator's value, else the case's, else the built-in default, with its source."""
    if command_line:
        return command_line, FROM_COMMAND_LINE
    if case_value is not None:
        return case_value, FROM_CASE
    return default, FROM_DEFAULT


def credential_for(destination: Destination, send: bool) -> str | None:
    """The credential's value, read at send time, only when the caller may send it."""
    if not send or not destination.api_key_env:
        return None
    return os.environ.get(destination.api_key_env) or None
