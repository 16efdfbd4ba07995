"""The ``hybrid-es`` command line (typer + rich): one module per command group, each command
parsing its options, calling one library function and printing what it returns.

Entry point: ``main.main`` (the console script; re-exported here as ``hybrid_es.cli:main``).
May import: every other layer.
"""

from hybrid_es.cli.main import main

__all__ = ["main"]
