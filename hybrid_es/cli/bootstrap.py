"""``hybrid-es capabilities`` and ``hybrid-es bootstrap``: what the cluster can do, and installing
the templates, indices and roles."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import typer
from rich.table import Table

from hybrid_es.cli.common import (
    Json,
    bad,
    client,
    console,
    emit_json,
    err_console,
    safe,
    settings,
)
from hybrid_es.errors import TemplateConflictError
from hybrid_es.settings import Settings


def capabilities(
    as_json: Json = False,
    probe_writes: Annotated[
        bool,
        typer.Option(
            "--probe-writes",
            help="Also create (and remove) probe indices and a probe role, to settle what read "
            "APIs cannot. Without it the probe writes nothing.",
        ),
    ] = False,
) -> None:
    """Probe the cluster and print what it can do, the licence matrix, and what these
    credentials may do per command. Writes nothing unless --probe-writes."""
    from hybrid_es.cluster.capabilities import probe

    s = settings()
    caps = probe(
        client(s),
        writes=probe_writes,
        layout=s.layout(),
        fusion=s.fusion,
        fusion_method=s.fusion_method,
        fusion_alpha=s.fusion_alpha,
    )
    caps = _with_source(caps, s)
    if as_json:
        emit_json(caps.model_dump())
        return
    _print_caps(caps, s)


def _with_source(caps: Any, s: Settings) -> Any:
    """The report with the source read's access, where ``HYBRID_ES_SOURCE_INDEX`` names a
    source (checked with the source's own credentials, read APIs only)."""
    from hybrid_es.cluster.access import source_access
    from hybrid_es.cluster.source_connection import connect_source, read_source_settings

    source = read_source_settings()
    if not source.index:
        return caps
    engine = connect_source(source, client(s), s.layout(), source.index)
    return caps.model_copy(update={"source": source_access(engine, source.index)})


def _print_caps(caps: Any, s: Settings) -> None:
    t = Table(title=f"Capabilities of {s.redacted_url()}", show_header=True)
    t.add_column("capability")
    t.add_column("value")
    for k, v in caps.rows():
        t.add_row(k, v)
    console.print(t)
    for note in caps.notes:
        console.print(f"  note: {note}", style="dim", markup=False, highlight=False)


# Long for its options and its two outputs (a table or --json) of one bootstrap call.
def bootstrap(
    force: Annotated[bool, typer.Option(help="Overwrite installed templates that differ.")] = False,
    check: Annotated[
        bool,
        typer.Option(
            help="Only compare installed objects with the files, and say what each existing "
            "index needs (new fields, or a rebuild and the command); exit 1 when anything does."
        ),
    ] = False,
    tenant: Annotated[
        list[str] | None,
        typer.Option(metavar="ID", help="Install the reader role for a tenant (repeatable)."),
    ] = None,
    roles: Annotated[
        bool,
        typer.Option(
            "--roles",
            help="Install the least-privilege roles hybrid-es-admin, -ingest, -app and "
            "-trace-reader (needs a security administrator's credential).",
        ),
    ] = False,
    kibana: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="Kibana URL to import saved objects into (TLS and credentials: the cluster's "
            "HYBRID_ES_* settings, or user:password in the URL).",
        ),
    ] = None,
    space: Annotated[
        str | None,
        typer.Option(
            "--space",
            "--kibana-space",
            metavar="ID",
            help="Kibana space id (default: the default).",
        ),
    ] = None,
    kibana_overwrite: Annotated[
        bool,
        typer.Option(
            "--kibana-overwrite",
            help="Replace the saved objects whose content differs from this version's (edits "
            "made in Kibana included); without it they are left alone.",
        ),
    ] = False,
    as_json: Json = False,
) -> None:
    """Install templates, indices and roles idempotently, then print the capability report.
    Each existing index is reported current, given the fields it lacks, or as needing a rebuild,
    with the command that does it (hybrid-es reindex --tenant T)."""
    from hybrid_es.cluster.bootstrap import bootstrap as run_bootstrap
    from hybrid_es.cluster.capabilities import probe
    from hybrid_es.encoders.embedder_choice import models_served

    if space and not kibana:
        raise bad("--space", "a Kibana space needs --kibana (the Kibana URL)")
    if kibana_overwrite and not kibana:
        raise bad("--kibana-overwrite", "it needs --kibana (the Kibana URL)")
    s = settings()
    es = client(s)
    # Read-only: bootstrap's own preflight (privileges, licence) runs before its first write.
    caps = probe(es, layout=s.layout())
    try:
        report = run_bootstrap(
            es,
            caps,
            s,
            force=force,
            check=check,
            tenants=tuple(tenant or ()),
            roles=roles,
            models=models_served(s.embedder),
        )
    except TemplateConflictError as exc:
        for name, d in exc.diffs.items():
            err_console.print(f"[bold]{name}[/bold] differs:")
            err_console.print(d, markup=False, highlight=False)
        raise
    skipped = sorted({a.diff for a in report.actions if a.status == "skipped"})
    for why in skipped:  # on stderr, so that --json shows it too
        err_console.print(f"warning: roles skipped: {why}", markup=False, soft_wrap=True)
    for a in report.pending:  # the same: each index that needs more than bootstrap does
        err_console.print(
            f"warning: index {a.name} {_NEEDS[a.status]}: {a.diff}", markup=False, soft_wrap=True
        )
    imported = None
    if kibana and not check:
        from hybrid_es.cluster.kibana import import_saved_objects

        imported = import_saved_objects(kibana, s, space=space, overwrite=kibana_overwrite)
    if as_json:
        emit_json(
            {
                "capabilities": caps.model_dump(),
                "applied": report.applied,
                "actions": [
                    {
                        "kind": a.kind,
                        "name": a.name,
                        "status": a.status,
                        "diff": a.diff,
                        "command": a.command,
                    }
                    for a in report.actions
                ],
                "kibana": None if imported is None else dataclasses.asdict(imported),
            }
        )
    else:
        t = Table(title="check" if check else "bootstrap")
        for c in ("kind", "name", "status"):
            t.add_column(c)
        t.add_column("what it needs", overflow="fold")
        for a in report.actions:
            style = {
                "create": "green",
                "update": "yellow",
                "missing": "red",
                "conflict": "red",
                "skipped": "yellow",
                "new-fields": "yellow",
                "rebuild": "red",
            }.get(a.status, "")
            t.add_row(
                safe(a.kind),
                safe(a.name),
                safe(a.status, style=style) if style else safe(a.status),
                safe(_detail(a)),
            )
        console.print(t)
        if imported is not None:
            console.print(
                f"Kibana: imported {imported.imported} saved object(s), "
                f"{len(imported.unchanged)} unchanged",
                markup=False,
                highlight=False,
            )
            for name in imported.kept:
                err_console.print(
                    f"warning: Kibana's {name} differs from this version's (edited there?): "
                    "left alone; --kibana-overwrite replaces it",
                    markup=False,
                    soft_wrap=True,
                )
        _print_caps(caps, s)
    if check and any(a.status in _NOT_CURRENT for a in report.actions):
        raise typer.Exit(1)


_NOT_CURRENT = ("missing", "conflict", "new-fields", "rebuild")
"""The statuses a ``--check`` exits 1 for: bootstrap (or a rebuild) would change something."""
_NEEDS = {"rebuild": "needs a rebuild", "conflict": "conflicts with the settings"}


def _detail(action: Any) -> str:
    """What an index or data stream row says it needs (with the command); nothing for a
    template, whose difference is printed whole where it refuses."""
    return action.diff if action.kind in ("index", "data stream") else ""
