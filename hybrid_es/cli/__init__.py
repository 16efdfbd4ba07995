"""The ``hybrid-es`` command line (typer + rich, the ``cli`` extra): one module per command group,
each command parsing its options, calling one library function and printing what it returns.

Entry point: :func:`main` (the console script), which says which extra to install when typer or
rich is missing; ``main.main`` runs the app. May import: every other layer.
"""

from __future__ import annotations

import sys


def main() -> None:
    """The ``hybrid-es`` console script: the app, or a clear message (and the configuration exit
    status) when the ``cli`` extra is not installed."""
    try:
        import rich  # noqa: F401
        import typer  # noqa: F401
    except ImportError as exc:
        if exc.name not in ("typer", "rich"):
            raise
        from hybrid_es.cli.exits import ExitCode

        sys.stderr.write(
            f"hybrid-es: the command line needs {exc.name}, which is not installed.\n"
            "Install the cli extra: pip install '.[cli]' (the models extra includes it).\n"
        )
        raise SystemExit(ExitCode.CONFIG) from None
    from hybrid_es.cli.main import main as run

    run()


__all__ = ["main"]
