"""The evidence harness: a demo bundle built by real kills of separate processes.

`build_demo(out)` runs the seed's experiment into a bundle of case directories;
`start_live(bundle, rate)` starts a producer that keeps a `live` case changing.
"""

from codeai_tui.demo.harness import DEMO_PROVIDER_PORT, build_demo
from codeai_tui.demo.live import start_live

__all__ = ["DEMO_PROVIDER_PORT", "build_demo", "start_live"]
