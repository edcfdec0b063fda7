"""The command line: a module per command group, one mapping of refusals to exit codes."""
