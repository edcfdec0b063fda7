"""Every write action of the CLI on one case, in one process: `python actionrun.py CASE URL
KEY` prints one JSON line per action as it ends ({"action", "rc", "out", "err"}). The
caller holds the deadline: an action that hangs leaves its line (and the later ones)
unprinted. URL is where a request sent by mistake must go (the corpus's capture
listener); KEY, a file given as the tool kernel's key."""

from __future__ import annotations

import contextlib
import io
import json
import sys

# argv of each action; {case}, {url}, {key} filled in. Each targets call-1 (requested:
# what resume would send) or an operation of it, with --yes: nothing waits for a person.
WRITE_ACTIONS: dict[str, list[str]] = {
    "resume": ["resume", "{case}", "call-1", "--yes", "--base-url", "{url}",
               "--timeout", "1", "--deadline", "2"],
    "reconcile": ["reconcile", "{case}", "call-1", "--finding", "received", "--yes"],
    "reconcile-tool": ["reconcile-tool", "{case}", "ns/thread/turn/tool-1",
                       "--finding", "not_executed", "--yes"],
    "reinterpret": ["reinterpret", "{case}", "call-1", "--yes"],
    "redecide": ["redecide", "{case}", "call-1", "--yes"],
    "finalize": ["finalize", "{case}", "call-1", "--yes"],
    "next-attempt": ["next-attempt", "{case}", "call-1", "--yes", "--base-url", "{url}"],
    "replay": ["replay", "{case}", "call-1", "--kernel-key", "{key}", "--yes"],
}


def run(case: str, url: str, key: str) -> None:
    from codeai_tui.cli.main import main

    for name, template in WRITE_ACTIONS.items():
        argv = [a.format(case=case, url=url, key=key) for a in template]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
        print(json.dumps({"action": name, "rc": rc, "out": out.getvalue(),
                          "err": err.getvalue()}), flush=True)


if __name__ == "__main__":
    run(*sys.argv[1:4])
