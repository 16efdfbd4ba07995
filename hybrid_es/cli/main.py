"""The ``hybrid-es`` command line (typer + rich).

The CLI is an operator tool: ``--tenant``/``--user``/``--group`` stand in for the authenticated
context that an application hands to the library.
"""

from __future__ import annotations

import sys
import time
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from hybrid_es.cli.common import (
    AsOf,
    Booking,
    Groups,
    Historical,
    Json,
    Jurisdiction,
    Property,
    SourceType,
    Stay,
    Tenant,
    User,
    client,
    console,
    emit_json,
    err_console,
    hits_table,
    make_principal,
    make_scope,
    make_searcher,
    settings,
)
from hybrid_es.errors import HybridEsError, TemplateConflictError
from hybrid_es.settings import Settings

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Permission-safe hybrid retrieval for Elasticsearch.",
)
_state: dict[str, bool] = {"debug": False}


@app.callback()
def _root(debug: Annotated[bool, typer.Option(help="Show tracebacks on errors.")] = False) -> None:
    _state["debug"] = debug


# -- bootstrap -------------------------------------------------------------------------------


@app.command()
def capabilities(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Probe the cluster and print what it can do."""
    from hybrid_es.cluster.capabilities import probe

    s = settings()
    caps = probe(client(s), url=s.redacted_url())
    if as_json:
        emit_json(caps.model_dump())
        return
    _print_caps(caps, s)


def _print_caps(caps: Any, s: Settings) -> None:
    t = Table(title=f"Capabilities of {s.redacted_url()}", show_header=True)
    t.add_column("capability")
    t.add_column("value")
    for k, v in caps.rows():
        t.add_row(k, v)
    console.print(t)
    for note in caps.notes:
        console.print(f"  note: {note}", style="dim", markup=False, highlight=False)


@app.command()
def bootstrap(
    force: Annotated[bool, typer.Option(help="Overwrite installed templates that differ.")] = False,
    check: Annotated[
        bool, typer.Option(help="Only compare installed objects with the files.")
    ] = False,
    tenant: Annotated[
        list[str] | None, typer.Option(help="Install the reader role for a tenant.")
    ] = None,
    kibana: Annotated[
        str | None, typer.Option(help="Kibana URL to import saved objects into.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Install templates, indices and roles idempotently, then print the capability report."""
    from hybrid_es.cluster.bootstrap import bootstrap as run_bootstrap
    from hybrid_es.cluster.capabilities import probe

    s = settings()
    es = client(s)
    caps = probe(es, url=s.redacted_url())
    try:
        report = run_bootstrap(es, caps, s, force=force, check=check, tenants=tuple(tenant or ()))
    except TemplateConflictError as exc:
        for name, d in exc.diffs.items():
            err_console.print(f"[bold]{name}[/bold] differs:")
            err_console.print(d, markup=False, highlight=False)
        raise
    imported = None
    if kibana and not check:
        from hybrid_es.cluster.kibana import import_saved_objects

        imported = import_saved_objects(kibana, s)
    if as_json:
        emit_json(
            {
                "capabilities": caps.model_dump(),
                "applied": report.applied,
                "actions": [
                    {"kind": a.kind, "name": a.name, "status": a.status, "diff": a.diff}
                    for a in report.actions
                ],
                "kibana": imported,
            }
        )
    else:
        t = Table(title="check" if check else "bootstrap")
        for c in ("kind", "name", "status"):
            t.add_column(c)
        for a in report.actions:
            style = {
                "create": "green",
                "update": "yellow",
                "missing": "red",
                "conflict": "red",
            }.get(a.status, "")
            t.add_row(a.kind, a.name, f"[{style}]{a.status}[/{style}]" if style else a.status)
        console.print(t)
        if imported is not None:
            console.print(f"Kibana: imported {imported} saved object(s)")
        _print_caps(caps, s)
    if check and any(a.status in ("missing", "conflict") for a in report.actions):
        raise typer.Exit(1)


# -- search ----------------------------------------------------------------------------------


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="The question.")],
    tenant: Tenant,
    user: User = "cli",
    group: Groups = None,
    as_of: AsOf = None,
    stay: Stay = None,
    booking: Booking = None,
    prop: Property = None,
    source_type: SourceType = None,
    jurisdiction: Jurisdiction = None,
    historical: Historical = False,
    top_k: Annotated[int, typer.Option(help="Hits to return.")] = 5,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Skip the cross-encoder.")] = False,
    fusion: Annotated[str | None, typer.Option(help="auto | native | client")] = None,
    embedder: Annotated[str | None, typer.Option(help="minilm | e5 | a model path")] = None,
    as_json: Json = False,
) -> None:
    """Hybrid search with a provenance table."""
    s = settings()
    scope = make_scope(
        as_of=as_of,
        stay=stay,
        booking=booking,
        prop=prop,
        source_type=source_type,
        jurisdiction=jurisdiction,
        historical=historical,
    )
    principal = make_principal(tenant, user, group)
    t_load = time.perf_counter()
    searcher = make_searcher(s, embedder, fusion)
    load_ms = (time.perf_counter() - t_load) * 1000
    resp = searcher.search(
        query,
        principal,
        scope,
        top_k=top_k,
        rerank=not no_rerank,
        rerank_depth=min(s.rerank_depth, searcher.params.window),
    )
    if as_json:
        emit_json(resp.model_dump(mode="json", exclude={"hits": {"__all__": {"source"}}}))
        return
    t = hits_table(f"{query!r} as {tenant}/{user}")
    for h in resp.hits:
        t.add_row(
            str(h.final_rank),
            h.chunk_id,
            str(h.source_version),
            str(h.sparse_rank or "-"),
            str(h.dense_rank or "-"),
            f"{h.fused_score:.6f}",
            "-" if h.rerank_score is None else f"{h.rerank_score:.3f}",
            h.authorization.short(),
        )
    console.print(t)
    timing = ", ".join(f"{k} {v:.1f} ms" for k, v in resp.timings_ms.items())
    console.print(f"fusion: {resp.fusion_path} ({resp.fusion_reason})", markup=False)
    console.print(f"rerank: {resp.rerank_note}", markup=False)
    console.print(f"candidates: {resp.candidates}; {timing} (model load {load_ms:.0f} ms, once)")


def _register() -> None:
    """Commands that live in their own modules (one concept per file)."""
    from hybrid_es import cli_ingest, cli_packet, cli_traces

    app.command(name="ingest")(cli_ingest.ingest)
    app.add_typer(cli_packet.app, name="packet")
    from hybrid_es import cli_eval, cli_reranker

    app.command(name="eval")(cli_eval.eval_command)
    app.add_typer(cli_traces.app, name="traces")
    app.add_typer(cli_reranker.app, name="reranker")


_register()


def main() -> None:
    """Entry point: friendly errors unless --debug."""
    try:
        rc = app(standalone_mode=False)  # returns, rather than raises, a typer.Exit code
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except HybridEsError as exc:
        if _state["debug"]:
            raise
        err_console.print(Text.assemble(("error: ", "red"), exc.message), highlight=False)
        if exc.hint:
            err_console.print(Text(f"hint: {exc.hint}", style="dim"), highlight=False)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: typer's own (vendored) click exceptions
        show = getattr(exc, "show", None)
        if callable(show):
            show()
        else:
            err_console.print(Text(f"error: {exc.format_message()}"), highlight=False)
        sys.exit(exc.exit_code)
    except Exception as exc:  # the unexpected
        if _state["debug"]:
            raise
        err_console.print(
            Text.assemble(("error: ", "red"), f"{type(exc).__name__}: {exc}"), highlight=False
        )
        err_console.print(Text("hint: rerun with --debug for the traceback", style="dim"))
        sys.exit(1)


if __name__ == "__main__":
    main()
