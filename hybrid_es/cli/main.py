"""The ``hybrid-es`` command line (typer + rich): the app, its command groups, and the entry
point that turns errors into one clear message and an exit status.

The CLI is an operator tool: ``--tenant``/``--user``/``--group`` stand in for the authenticated
context that an application hands to the library.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Annotated

import typer
from rich.text import Text

from hybrid_es.cli.common import err_console, given_on_command_line, safe
from hybrid_es.cli.exits import ExitCode, exit_code_for, help_text
from hybrid_es.cli.help import App
from hybrid_es.errors import HybridEsError

app = App(
    help="Permission-safe hybrid retrieval for Elasticsearch.",
    epilog=help_text(),
)
_state: dict[str, bool] = {"debug": False}


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # the installed distribution's, as __version__

        typer.echo(f"hybrid-es {version('hybrid-es')}")
        raise typer.Exit()


class _JsonLines(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message (and the
    exception's class and text where there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        from datetime import UTC, datetime

        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and record.exc_info[0] is not None:
            line["error"] = f"{record.exc_info[0].__name__}: {record.exc_info[1]}"
        return json.dumps(line, ensure_ascii=True, default=str)


_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _configure_logging(level: str | None, fmt: str) -> None:
    """``--log-level``/``--log-format``: hybrid-es's log records (and only those) at ``level`` on
    stderr, as text or JSON lines. Without ``--log-level`` the defaults stand: warnings as
    ``warning:`` lines (``common.settings``)."""
    if level is None:
        if fmt != "text":
            level = "WARNING"
        else:
            return
    if level.upper() not in _LEVELS:
        raise typer.BadParameter(
            f"{level!r} is not one of {', '.join(_LEVELS)}", param_hint="--log-level"
        )
    if fmt not in ("text", "json"):
        raise typer.BadParameter(f"{fmt!r} is not text or json", param_hint="--log-format")
    logger = logging.getLogger("hybrid_es")
    for h in [h for h in logger.handlers if getattr(h, "_hybrid_es_cli", False)]:
        logger.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler._hybrid_es_cli = True  # type: ignore[attr-defined]
    handler.setFormatter(
        _JsonLines()
        if fmt == "json"
        else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = False
    _state["logging"] = True


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option(help="Show tracebacks on errors.")] = False,
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level",
            help="Log hybrid-es's records at this level on stderr: DEBUG, INFO, WARNING, ERROR.",
        ),
    ] = None,
    log_format: Annotated[
        str,
        typer.Option(
            "--log-format",
            help="text, or json: one object per line (time, level, logger, message).",
        ),
    ] = "text",
    start_local_env: Annotated[
        str | None,
        typer.Option(
            "--start-local-env",
            metavar="PATH|auto",
            help="Connect as Elastic start-local's .env says: this file, or auto for .env or "
            "elastic-start-local/.env here (HYBRID_ES_START_LOCAL_ENV; never read unasked).",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    _state["debug"] = debug
    given_on_command_line(start_local_env=start_local_env)
    _configure_logging(log_level, log_format)


def _register() -> None:
    """Commands that live in their own modules (one command group per module)."""
    from hybrid_es.cli import (
        bootstrap,
        embedder,
        ingest,
        packet,
        reindex,
        reranker,
        search,
        traces,
        verify,
    )
    from hybrid_es.cli import eval as eval_group

    app.command(name="capabilities")(bootstrap.capabilities)
    app.command(name="bootstrap")(bootstrap.bootstrap)
    app.command(name="search")(search.search)
    app.command(name="ingest")(ingest.ingest)
    app.add_typer(packet.app, name="packet")
    app.command(name="eval")(eval_group.eval_command)
    app.add_typer(traces.app, name="traces")
    app.add_typer(reranker.app, name="reranker")
    app.add_typer(embedder.app, name="embedder")
    app.command(name="verify")(verify.verify)
    app.command(name="reindex")(reindex.reindex)


_register()


def main() -> None:
    """Entry point: one clear message and a distinct exit status per kind of error (the table is
    ``exits.ERROR_CODES``; ``--help`` lists the codes), tracebacks only with --debug."""
    try:
        rc = app(standalone_mode=False)  # returns, rather than raises, a typer.Exit code
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(ExitCode.INTERRUPTED)
    except typer.TyperException as exc:  # usage errors: typer's own (vendored) click exceptions
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            err_console.print(safe(f"error: {exc.format_message()}", lines=True))
        # Click's usage status is 2; ours is Elasticsearch's (64).
        sys.exit(ExitCode.USAGE if exc.exit_code == 2 else exc.exit_code)
    except Exception as exc:
        if _state["debug"]:
            raise
        _report(exc)


def _report(exc: BaseException) -> None:
    """Print ``exc`` as ``error:`` and ``hint:`` lines and exit with its status."""
    code = exit_code_for(exc)
    # A message may quote what the caller gave or the cluster said: shown through safe().
    if isinstance(exc, HybridEsError):
        err_console.print(Text.assemble(("error: ", "red"), safe(exc.message, lines=True)))
        if exc.hint:
            err_console.print(safe(f"hint: {exc.hint}", lines=True, style="dim"))
    else:  # the unexpected: a bug
        err_console.print(
            Text.assemble(("error: ", "red"), safe(f"{type(exc).__name__}: {exc}", lines=True))
        )
        err_console.print(Text("hint: rerun with --debug for the traceback", style="dim"))
    sys.exit(code)


if __name__ == "__main__":
    main()
