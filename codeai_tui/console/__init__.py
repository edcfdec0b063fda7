"""The console's Textual-free model: case snapshots, the follower, time travel, pages.

Everything here runs in workers and is testable without a screen; `app/` draws it.
An import-linter contract keeps Textual and Rich out of this package.
"""
