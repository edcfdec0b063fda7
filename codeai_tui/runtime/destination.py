"""Where a request may go, whether a credential may go with it, and whether the server
there is the one the case means.

A case directory is untrusted: its case.json can name any URL and any environment
variable (`MY_DB_PASSWORD`). So a credential is sent only to a destination the operator
named: the URL comes from the operator (the command line or the operator's own
configuration outside the case directory) and so does the variable (or it is the
built-in `CODEAI_API_KEY`), or the operator confirmed that pair interactively after
seeing both. The built-in default URL is nobody's choice: any local user can listen on
127.0.0.1:8768, so it never gets a credential unless the operator names it. The URL
itself is checked before anything is written, so a typo cannot consume a call's only
resume.

A case may also name its destination's identity (a demo bundle's id, which its
bundle-mode provider answers on `GET {base_url}/health`): before anything is written or
sent, that server must say it is this case's, so a port reused by another bundle's
provider, or by nobody, refuses instead of sending.
"""

from __future__ import annotations

import json
import os
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from codeai_tui.ledger.case import CaseConfig, ProviderConfig

CONFIG_ENV = "CODEAI_TUI_CONFIG"
FROM_COMMAND_LINE = "command line"
FROM_OPERATOR_CONFIG = "operator config"
FROM_CASE = "case.json"
FROM_DEFAULT = "built-in default"
# Who may vouch for where a credential goes: only the operator. The built-in default URL
# is not a choice anyone made; the built-in variable is the operator's own environment.
_URL_VOUCHERS = frozenset({FROM_COMMAND_LINE, FROM_OPERATOR_CONFIG})
_VARIABLE_VOUCHERS = frozenset({FROM_COMMAND_LINE, FROM_OPERATOR_CONFIG, FROM_DEFAULT})
IDENTITY_TIMEOUT_S = 5.0  # the whole identity check; a loopback provider answers in ms
IDENTITY_ANSWER_LIMIT = 64 * 1024  # bytes of the health answer read
_SSL_CONTEXT: ssl.SSLContext | None = None


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
    # what the server at base_url must answer to be the case's (case.json's `identity`,
    # kept only while the URL is the case's own); None: nothing to check
    identity: str | None = None

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
        return f"no credential will be sent: {self.unnamed()}"

    def unnamed(self) -> str:
        """Which half of the destination the operator did not name, and where it came
        from instead."""
        halves = [name for name, source, vouchers in (
            ("the variable name", self.api_key_env_from, _VARIABLE_VOUCHERS),
            ("the URL", self.base_url_from, _URL_VOUCHERS)) if source not in vouchers]
        if self.base_url_from == FROM_DEFAULT:
            return (f"{' and '.join(halves)} {'is' if len(halves) == 1 else 'are'} not "
                    f"named by you (the URL is the {FROM_DEFAULT}: anyone on this machine "
                    "may listen there; name it with --base-url or a trusted destination)")
        return (f"{' and '.join(halves) or 'the destination'} come from {FROM_CASE}, "
                "not from you")

    def credential_question(self) -> str:
        """The y/N question before a credential goes where the operator did not name."""
        return (f"The destination was not named by you ({self.unnamed()}). Send the value "
                f"of {self.api_key_env} to {self.base_url}? [y/N] ")


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
    # the case's identity belongs to the case's URL: a URL the operator gave is theirs
    identity = config.provider.identity if url_from != FROM_COMMAND_LINE else None
    if url_from not in _URL_VOUCHERS or env_from not in _VARIABLE_VOUCHERS:
        for t_url, t_env in load_trusted_pairs(Path(case_dir), operator_config):
            if _same_url(t_url, url) and t_env == env:
                if url_from in (FROM_CASE, FROM_DEFAULT):
                    url_from = FROM_OPERATOR_CONFIG
                if env_from == FROM_CASE:
                    env_from = FROM_OPERATOR_CONFIG
                break
    trusted = url_from in _URL_VOUCHERS and env_from in _VARIABLE_VOUCHERS
    return Destination(
        base_url=url or "", base_url_from=url_from, api_key_env=env or None, api_key_env_from=env_from,
        credential_set=bool(env and os.environ.get(env)), trusted=trusted, identity=identity,
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


def identity_problem(destination: Destination, provider_hint: str = "",
                     timeout: float = IDENTITY_TIMEOUT_S) -> str | None:
    """Why the server at the destination is not the one its case names, in one line, or
    None: it answered `GET {base_url}/health` with the case's identity, or the case names
    none (or the operator named the URL). The question carries no body and no credential
    and follows no redirect; the whole exchange is bounded by `timeout`. `provider_hint`
    says how to start the right provider, for the line that says none is running."""
    expected = destination.identity
    if expected is None:
        return None
    import httpx  # (here: readers import this module and never send; see runner.py)

    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:  # one per process: httpx builds one per client (~20 ms)
        _SSL_CONTEXT = httpx.create_ssl_context()
    url = destination.base_url.rstrip("/") + "/health"
    ends = time.monotonic() + timeout
    answer = bytearray()
    try:
        with (httpx.Client(timeout=timeout, verify=_SSL_CONTEXT, follow_redirects=False)
              as client,
              client.stream("GET", url) as resp):
            status = resp.status_code
            for piece in resp.iter_bytes():
                answer += piece
                if len(answer) > IDENTITY_ANSWER_LIMIT or time.monotonic() > ends:
                    break
    except httpx.HTTPError as exc:
        why = str(exc) or type(exc).__name__
        return (f"no provider answers at {destination.base_url} ({why[:120]}): the "
                f"provider this case names is not running{provider_hint}; nothing was sent")
    said = _identity_said(bytes(answer)) if status == 200 else None
    if said == expected:
        return None
    shown = f"HTTP {status}" if status != 200 else f"identity {said!r:.80}"
    return (f"the server at {destination.base_url} is not this case's provider ({shown}; "
            f"case.json names identity {expected!r:.80}): another bundle's provider or "
            f"another server answers there{provider_hint}; nothing was sent")


def _identity_said(answer: bytes) -> str | None:
    try:
        doc = json.loads(answer)
    except (ValueError, RecursionError):
        return None
    said = doc.get("identity") if isinstance(doc, dict) else None
    return said if isinstance(said, str) else None
