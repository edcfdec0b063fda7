"""codeai-tui: an operator console for CodeAI ledgers.

The one question it answers after a crash: could the provider effect have happened?
"""

__version__ = "0.1.0"
