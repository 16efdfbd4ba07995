"""The ``hybrid-es`` command run in the test's own process, for tests whose subject is what a
command does and prints rather than the process around it.

Why: a CLI subprocess imports torch, transformers and sentence-transformers afresh, 10-12 CPU
seconds on the 2-core CI machine, before the command does anything; most of what a CLI test cost
(scripts/test.sh prints the seconds per file). In the test's process those imports are done once.

What is kept of a process: the console script's entry point (``hybrid_es.cli.main``, which turns
errors into the exit statuses), ``argv``, the environment as the test gives it (variables not in
it are unset for the run, as ``subprocess.run(env=...)`` does), stdout and stderr apart, and what
the process would have lost as it exits: the CLI's per-process state (its client, its tracer)
and the hybrid-es logger's handlers, and its exit handlers run at the end. What only a process
shows (a SIGKILL mid-run, ``os._exit``, colour chosen from a terminal at start-up, an attacker's
output on every channel) stays a subprocess in its test.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any
from unittest import mock


def run_cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``hybrid-es ARGS`` in this process, as ``subprocess.run(..., capture_output=True,
    text=True)`` would report it: ``returncode``, ``stdout``, ``stderr``. ``env`` None: this
    process's environment."""
    from typer.testing import CliRunner

    from hybrid_es.cli import common

    # the module, not the package's ``main`` function of the same name
    cli = importlib.import_module("hybrid_es.cli.main")

    changes: dict[str, str | None] | None = None
    if env is not None:
        changes = {k: None for k in os.environ if k not in env} | dict(env)
    logger = logging.getLogger("hybrid_es")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    at_exit: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = []
    argv = sys.argv
    with (
        CliRunner().isolation(env=changes) as (out, err, _),
        mock.patch.object(atexit, "register", lambda f, *a, **k: at_exit.append((f, a, k))),
    ):
        sys.argv = ["hybrid-es", *args]
        try:
            cli.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        finally:
            for f, a, k in reversed(at_exit):  # as the interpreter would, last first
                f(*a, **k)
            sys.stdout.flush()  # the runner's text wrappers buffer, as a process's streams do
            sys.stderr.flush()
            sys.argv = argv
            common._process.clear()
            cli._state.clear()
            cli._state["debug"] = False
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate = propagate
        return subprocess.CompletedProcess(
            ["hybrid-es", *args], code, out.getvalue().decode(), err.getvalue().decode()
        )
