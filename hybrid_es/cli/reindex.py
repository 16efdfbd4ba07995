"""``hybrid-es reindex``: a tenant's chunks index rebuilt online as its next generation
(``ingest.rebuild``), switched to at once, and back.

Exit status: 0 when the rebuild (or the switch back, the drop, the adoption) did what it says; 1
when its checks refused the switch (the new generation stays, unswitched: run it again, it
resumes); the usual statuses of ``hybrid_es.cli.exits`` for bad input, a refused credential or
an engine error.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from hybrid_es.cli.common import (
    Embedder,
    Json,
    Tenant,
    add_row,
    console,
    deployment,
    emit_json,
    err_console,
    make_principal,
    settings,
    title,
)


def reindex(
    tenant: Tenant,
    embedder: Embedder = None,
    switch_back: Annotated[
        bool,
        typer.Option(
            "--switch-back",
            help="Point the tenant's index back at the generation it served before the last "
            "switch (after copying what was written since).",
        ),
    ] = False,
    drop: Annotated[
        bool,
        typer.Option("--drop", help="Delete the generations the tenant's index does not serve."),
    ] = False,
    adopt: Annotated[
        bool,
        typer.Option(
            "--adopt",
            help="Put an index of an earlier release behind an alias (a short write block while "
            "it is cloned), so that it can be rebuilt.",
        ),
    ] = False,
    no_switch: Annotated[
        bool,
        typer.Option("--no-switch", help="Build and check the new generation, switch later."),
    ] = False,
    switch_wait: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            help="How long the switch waits for the tenant's writes in flight to finish.",
        ),
    ] = 60.0,
    as_json: Json = False,
) -> None:
    """Rebuild a tenant's chunks index online, from the records already stored: the next
    generation built beside the live one (embedded again with --embedder, or analysed again
    with the templates installed now), checked, then switched to at once; searches and writes
    go on throughout. The old generation stays until --drop; --switch-back returns to it."""
    chosen = [
        f for f, on in (("--switch-back", switch_back), ("--drop", drop), ("--adopt", adopt)) if on
    ]
    if len(chosen) > 1:
        raise typer.BadParameter(f"give one of {', '.join(chosen)}")
    s = settings()
    writer = make_principal(tenant, "cli", writer=True)
    hes = deployment(s)
    action = {"--switch-back": "switch-back", "--drop": "drop", "--adopt": "adopt"}.get(
        chosen[0] if chosen else "", "build"
    )
    if action == "build":
        with Progress(
            TextColumn("reindex"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=err_console,
            disable=as_json,
        ) as bar:
            task = bar.add_task("records", total=None)
            result: Any = hes.rebuild(
                writer,
                embedder=embedder,
                switch_now=not no_switch,
                switch_wait=switch_wait,
                on_total=lambda n: bar.update(task, total=n),
                progress=lambda k: bar.advance(task, k),
            )
    elif action == "switch-back":
        result = hes.rebuild(writer, action=action, switch_wait=switch_wait)
    else:
        result = hes.rebuild(writer, action=action)
    _print(action, result, as_json)


def _print(action: str, result: Any, as_json: bool) -> None:
    if action == "drop":
        data: dict[str, Any] = {"dropped": list(result)}
    elif action == "adopt":
        data = {"name": result.name, "index": result.index, "generation": result.number}
    else:
        data = {
            k: getattr(result, k)
            for k in (
                "tenant", "name", "source", "target", "model_from", "model_to", "copied",
                "embedded", "removed", "catch_up", "checks", "switched", "seconds", "failed",
            )
        }  # fmt: skip
    if as_json:
        emit_json(data)
        return
    t = Table(title=title(f"reindex {action}"))
    t.add_column("what")
    t.add_column("value")
    for k, v in data.items():
        add_row(t, k, v)
    console.print(t)
