"""The independent verifier of a demo bundle (`codeai-tui verify PATH`).

It reads ledgers with plain sqlite3 and holds its own implementation of the
classification rules; import-linter forbids it the projection, resume and inspect
modules, so it cannot inherit their mistakes.
"""

from codeai_tui.verify.command import run_verify_command, verify_path

__all__ = ["run_verify_command", "verify_path"]
