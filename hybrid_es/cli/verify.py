"""``hybrid-es verify``: what hybrid-es relies on, checked on this cluster (``hybrid_es.verify``).

A table of items, pass, fail or unavailable with the reason (``--json`` for scripts); exit status
1 when an item failed (unavailable is not a failure), 0 otherwise; 130 or 143 when SIGINT or
SIGTERM stopped a writing run, after its scratch objects were removed.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from hybrid_es.cli.common import Json, add_row, client, console, emit_json, err_console, safe, title
from hybrid_es.cli.common import settings as read_settings

STYLE = {"pass": "green", "fail": "red", "unavailable": "yellow"}


def verify(
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Also make scratch objects under the deployment's prefixes (an index with "
            "records of two scratch tenants; a role and a credential where these credentials "
            "may) for the items that need them; all removed afterwards, also when interrupted. "
            "Without it nothing is written.",
        ),
    ] = False,
    as_json: Json = False,
) -> None:
    """Check on this cluster what hybrid-es relies on: native fusion equals client fusion, the
    policy filter in both legs, document-level security, the analysis profile, trace storage,
    versions, and whether each index needs new fields or a rebuild (with the command). Exit
    status 1 when an item failed."""
    from hybrid_es.verify.interrupt import VerifyInterrupted
    from hybrid_es.verify.run import verify as run_verify

    s = read_settings()
    try:
        report = run_verify(client(s), s, write=write, on_step=_step)
    except VerifyInterrupted as exc:
        err_console.print(
            safe(f"interrupted: {exc}; the scratch objects were removed", style="yellow")
        )
        raise typer.Exit(128 + exc.signum) from None
    if as_json:
        emit_json(report.as_dict())
    else:
        _print(report)
    if not report.ok:
        raise typer.Exit(1)


def _step(text: str) -> None:
    err_console.print(safe(text, style="dim"), highlight=False)


def _print(report: Any) -> None:
    who = f" as {report.user}" if report.user else ""
    mode = "writing scratch objects" if report.write else "read-only"
    t = Table(title=title(f"verify {report.url}{who} ({mode})"), show_lines=True)
    t.add_column("#", justify="right")
    t.add_column("item", max_width=14)
    t.add_column("result")
    t.add_column("why", overflow="fold")
    for c in report.checks:
        why = Text("\n").join([safe(c.reason), *(safe(f"- {d}", style="dim") for d in c.details)])
        t.add_row(safe(c.item), safe(c.name), safe(c.status, style=STYLE[c.status]), why)
    console.print(t)
    about = Table.grid(padding=(0, 1))
    add_row(about, "server:", f"{report.flavor} {report.server_version}")
    add_row(about, "client:", report.client_library)
    add_row(about, "tolerance:", f"native and client fused scores within {report.tolerance:g}")
    console.print(about)
    skipped = [c.item for c in report.skipped]
    if skipped:
        console.print(
            safe(
                f"skipped: {', '.join(map(str, skipped))} (the reason says what each needs)",
                style="yellow",
            )
        )
    bad = [str(c.item) for c in report.failed]
    console.print(safe(f"failed: {', '.join(bad)}", style="red") if bad else safe("nothing failed"))
