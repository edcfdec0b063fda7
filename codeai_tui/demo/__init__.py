"""The evidence harness: a demo bundle built by real kills of separate processes.

`build_demo(out)` runs the seed's experiment into a bundle of case directories;
`start_live(bundle, rate)` starts a producer that keeps a `live` case changing.
The submodules are imported lazily: `python -m codeai_tui.demo.producer` (and .live,
.naive) must not find themselves half-imported by this package first.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

DEMO_PROVIDER_PORT = 8768


def build_demo(out: Path | None, case_port: int = DEMO_PROVIDER_PORT,
               kernel_key: Path | None = None, bundle_id: str | None = None) -> Path:
    from codeai_tui.demo.harness import build_demo as _build

    return _build(out, case_port, kernel_key, bundle_id)


def start_live(bundle: Path, rate: float, busy_timeout: float = 10.0,
               case_port: int = DEMO_PROVIDER_PORT) -> subprocess.Popen[str]:
    from codeai_tui.demo.live import start_live as _start

    return _start(bundle, rate, busy_timeout, case_port)


__all__ = ["DEMO_PROVIDER_PORT", "build_demo", "start_live"]
