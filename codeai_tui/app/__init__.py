"""The Textual operator console. `create_app` is the one factory (CLI and tests)."""

from __future__ import annotations

import os
from pathlib import Path

from textual.app import App

from codeai_tui.app.clock import Clock


def create_app(
    path: str | os.PathLike[str],
    *,
    theme: str | None = None,
    read_only: bool = False,
    model: str | None = None,
    base_url: str | None = None,
    api_key_env: str | None = None,
    clock: Clock | None = None,
) -> App[None]:
    """The console for a case or a bundle. `clock` fixes "now" (tests, screenshots)."""
    from codeai_tui.app.app import CodeAIApp

    return CodeAIApp(Path(path), theme=theme, read_only=read_only, model=model,
                     base_url=base_url, api_key_env=api_key_env, clock=clock)


__all__ = ["create_app"]
