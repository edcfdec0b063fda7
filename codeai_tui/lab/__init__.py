"""The lab beside the product: the synthetic provider, the bench, the reliability harness.

No product layer imports it (an import-linter contract); the command line starts it.
"""
