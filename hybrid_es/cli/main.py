"""The ``hybrid-es`` command line (typer + rich): the app, its command groups, and the entry
point that turns errors into one clear message and an exit status.

The CLI is an operator tool: ``--tenant``/``--user``/``--group`` stand in for the authenticated
context that an application hands to the library.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.text import Text

from hybrid_es.cli.common import err_console, safe
from hybrid_es.cli.exits import ExitCode, exit_code_for, help_text
from hybrid_es.errors import HybridEsError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Permission-safe hybrid retrieval for Elasticsearch.",
    epilog=help_text(),
)
_state: dict[str, bool] = {"debug": False}


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # the installed distribution's, as __version__

        typer.echo(f"hybrid-es {version('hybrid-es')}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option(help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    _state["debug"] = debug


def _register() -> None:
    """Commands that live in their own modules (one command group per module)."""
    from hybrid_es.cli import bootstrap, embedder, ingest, packet, reranker, search, traces, verify
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
