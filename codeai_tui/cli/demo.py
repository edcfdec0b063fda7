"""`codeai-tui demo [OUT_DIR] [--open] [--live]`: build the evidence bundle by real kills,
and with --open (beside the bundle's own provider) open the console on it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from codeai_tui.cli import arguments as arg
from codeai_tui.cli.common import EXIT_OK, CliError, Command, say
from codeai_tui.cli.console import open_console

if TYPE_CHECKING:
    import subprocess

    from codeai_tui.lab.provider import ProviderProcess


def _demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("out_dir", nargs="?", type=arg.path_text, default=None)
    p.add_argument("--open", action="store_true", help="open the console on the bundle")
    p.add_argument("--live", action="store_true", help="keep a producer appending until Ctrl-C")
    p.add_argument("--rate", type=arg.finite("events per second", positive=True), default=4.0,
                   help="events per second with --live")
    p.add_argument("--kernel-key", type=arg.path, default=None, metavar="PATH",
                   help="keep the tool kernel's signing key at PATH (outside the bundle; "
                        "made if missing), so `replay` and the console's R can run the "
                        "bundle's tool plans later; by default it is deleted (with --open: "
                        "when the console closes)")


def cmd_demo(args: argparse.Namespace) -> int:
    """Build the bundle by real kills; optionally keep a live producer and open the app.

    With --open, the bundle's own bundle-mode provider is started first, on 8768, or on
    a port the system gives it where 8768 is taken: the provider process binds the port
    itself and reports it, and only then is the bundle built with that port in its
    case.json files, so nothing can take it between the choice and the use. It serves
    for as long as the console is open, under the bundle's id, so a resume confirmed in
    the console reaches it and no other bundle's provider (and logs to that case's own
    receipt log); the console says where resumes go. Should no provider start at all,
    the console still opens, and says resumes will be refused.
    """
    from codeai_tui.lab.provider import new_bundle_id

    out = Path(args.out_dir) if args.out_dir else None
    if out is not None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CliError(f"{out}: exists and is not an empty directory; give a new directory")
    # with --open the console may replay tool plans (R): the kernel's key lives, outside
    # the bundle, exactly as long as the console is open (or where --kernel-key keeps it)
    kernel_key: Path | None = args.kernel_key
    if kernel_key is not None and out is not None and kernel_key.resolve().is_relative_to(
            out.resolve()):
        raise CliError(f"{kernel_key}: the kernel key must live outside the bundle "
                       "(whoever holds it can sign receipts)")
    import tempfile  # (here: most commands never need it, and every one pays its import)

    if args.open and out is None:  # its provider is rooted there before the build starts
        out = Path(tempfile.mkdtemp(prefix="codeai-demo-"))
    keys = (tempfile.TemporaryDirectory(prefix="codeai-demo-kernel-")
            if args.open and kernel_key is None else None)
    if keys is not None:
        kernel_key = Path(keys.name) / "kernel.key"
    try:
        return _demo(args, out, kernel_key, new_bundle_id())
    finally:
        if keys is not None:
            keys.cleanup()


def _start_demo_provider(bundle: Path, bundle_id: str) -> tuple[ProviderProcess | None, str]:
    """The bundle's provider for `demo --open`, bound before any case.json names its port:
    on the usual port, else on one the system chooses (bound by the provider itself and
    reported back). Returns it (None if none could start) and the console's note."""
    from codeai_tui.demo import DEMO_PROVIDER_PORT
    from codeai_tui.lab.provider import ProviderProcess

    problems: list[str] = []
    for port in (DEMO_PROVIDER_PORT, 0):
        provider = ProviderProcess(receipts_root=bundle, port=port, bundle_id=bundle_id)
        try:
            provider.start()
        except RuntimeError as exc:
            problems.append(str(exc))
            continue
        if provider.port != DEMO_PROVIDER_PORT:
            say(f"note: port {DEMO_PROVIDER_PORT} is taken; this bundle's case.json files "
                f"name port {provider.port} instead")
        return provider, (f"demo provider on 127.0.0.1:{provider.port}: resumes from this "
                          "console reach it (receipts go to each case's "
                          "provider/receipts.jsonl)")
    why = "; ".join(problems)
    say(f"note: no provider for resumes from the console ({why})")
    return None, (f"no demo provider ({why[:160]}): resumes from this console are refused "
                  "and send nothing")


def _demo(args: argparse.Namespace, out: Path | None, kernel_key: Path | None,
          bundle_id: str) -> int:
    from codeai_tui.demo import DEMO_PROVIDER_PORT, build_demo, start_live

    provider: ProviderProcess | None = None
    note = ""
    if args.open:
        assert out is not None
        out.mkdir(parents=True, exist_ok=True)
        provider, note = _start_demo_provider(out.resolve(), bundle_id)
    port = provider.port if provider is not None else DEMO_PROVIDER_PORT
    live: subprocess.Popen[str] | None = None
    try:
        bundle = build_demo(out, port, kernel_key, bundle_id)
        # at once: with --live or --open the command runs on, and a script reading the
        # path from a pipe (block-buffered) would otherwise get it only when it ends
        print(bundle, flush=True)
        live = start_live(bundle, args.rate, case_port=port) if args.live else None
        if args.open:
            args.path, args.theme, args.read_only = str(bundle), None, False
            args.model, args.base_url, args.api_key_env = None, None, None
            args.kernel_key = kernel_key
            return open_console(args, provider_note=note)
        if live is not None:
            print(f"live producer running (its notes go to {bundle / 'live.log'}); "
                  "Ctrl-C to stop", file=sys.stderr)
            live.wait()
    finally:
        if live is not None:
            _stop_process(live)
        if provider is not None:
            provider.stop()
    return EXIT_OK


def _stop_process(proc: subprocess.Popen[str]) -> None:
    """SIGTERM (the live producer then stops what it started), SIGKILL after 10 s."""
    import subprocess

    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


COMMANDS = (
    Command("demo", "build the demo bundle by real kills, then verify it", _demo_arguments,
            cmd_demo),
)
