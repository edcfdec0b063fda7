"""The Textual operator console. `create_app` is the one factory (CLI and tests)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from codeai_tui.console.head_start import HeadStart, single_case
from codeai_tui.services.glibc_malloc import fix_mmap_threshold, limit_malloc_arenas

if TYPE_CHECKING:  # (importing these costs ~0.1 s the head start would wait for)
    from collections.abc import Mapping

    from codeai_tui.actions.protocol import GatedAction
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
    actions: Mapping[str, GatedAction] | None = None,
    provider_note: str | None = None,
    kernel_key: str | os.PathLike[str] | None = None,
):  # noqa: ANN201 - CodeAIApp, imported lazily so `import codeai_tui.app` stays cheap
    """The console for a case or a bundle. `clock` fixes "now" (tests, screenshots).

    A single case's first reads begin here, in a thread, while Textual is imported and
    the screen mounted (console/head_start.py)."""
    limit_malloc_arenas()  # (before the first thread: the head start's)
    fix_mmap_threshold()
    case = single_case(path)
    head_start = HeadStart(case) if case is not None else None
    try:
        from codeai_tui.app.app import CodeAIApp

        return CodeAIApp(Path(path), theme=theme, read_only=read_only, model=model,
                         base_url=base_url, api_key_env=api_key_env, clock=clock,
                         actions=actions,
                         provider_note=provider_note,
                         kernel_key=Path(kernel_key) if kernel_key is not None else None,
                         head_start=head_start)
    except BaseException:
        if head_start is not None:
            head_start.close()
        raise


__all__ = ["create_app"]
