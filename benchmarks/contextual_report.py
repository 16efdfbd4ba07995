"""The contextual-retrieval benchmark's tables: the codebase ingests, Pass@k beside the cookbook's,
and the SciFact re-ingests.

The rows are built by pure functions from the benchmark's record (the same record ``--json``
prints); :func:`print_report` puts them in rich tables on a console.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from benchmarks.bench import engine_line
from benchmarks.contextual_passk import KS, PIPELINES

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

INGEST_COLUMNS = (
    "run",
    "seconds",
    "documents",
    "chunks written",
    "skipped",
    "embedded",
    "header calls",
)
SCIFACT_COLUMNS = (
    "seconds",
    "documents",
    "skipped_unchanged",
    "chunks_written",
    "removed_chunks",
    "embedded",
    "header_calls",
    "docs_per_second",
    "chunks_in_index",
)


def header_text(out: Mapping[str, Any]) -> str:
    """The command, the machine and the embedder, as rich markup."""
    m = out["machine"]
    return (
        f"[bold]command:[/bold] {out['command']}\n[bold]machine:[/bold] nproc={m['nproc']}, "
        f"{m['platform']}, python {m['python']}, {engine_line(m)}; "
        f"embedder {out['embedder']}"
    )


def ingest_rows(ingest: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    """The codebase ingest table (a first ingest skips nothing and embeds every chunk)."""
    return [
        [
            name,
            str(r["seconds"]),
            str(r["documents"]),
            str(r["chunks"]),
            str(r.get("skipped_unchanged", "-")),
            str(r.get("embedded", r["chunks"])),
            str(r.get("header_calls", "-")),
        ]
        for name, r in ingest.items()
    ]


def pass_at_k_rows(ours: Mapping[str, list[float]], anchors: Mapping[str, Any]) -> list[list[str]]:
    """One row per pipeline: our Pass@k ("not run" when it did not run), the cookbook's ("-"
    when it has no such row)."""
    rows = []
    for name, anchor in PIPELINES.items():
        mine = ours.get(name)
        ref = anchors.get(anchor) if anchor else None
        rows.append(
            [
                name,
                *([f"{v:.2f}" for v in mine] if mine else ["not run"] * 3),
                *([f"{v:.2f}" for v in ref] if ref else ["-"] * 3),
            ]
        )
    return rows


def scifact_rows(runs: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    return [[name, *(str(r[c]) for c in SCIFACT_COLUMNS)] for name, r in runs.items()]


def _ingest_table(cb: Mapping[str, Any]) -> Table:
    from rich.table import Table

    t = Table(
        title=f"ingest: anthropic_codebase ({cb['documents']} files, {cb['chunks']} chunks)",
        title_justify="left",
    )
    for c in INGEST_COLUMNS:
        t.add_column(c, justify="right" if c != "run" else "left")
    for row in ingest_rows(cb["ingest"]):
        t.add_row(*row)
    return t


def _pass_at_k_table(cb: Mapping[str, Any]) -> Table:
    from rich.table import Table

    t = Table(
        title=f"Pass@k on anthropic_codebase, {cb['queries']} queries (ours | cookbook)",
        title_justify="left",
    )
    t.add_column("pipeline")
    for k in KS:
        t.add_column(f"Pass@{k}", justify="right")
    for k in KS:
        t.add_column(f"cookbook @{k}", justify="right", style="dim")
    for row in pass_at_k_rows(cb["pass_at_k"], cb["anchors"]):
        t.add_row(*row)
    return t


def _scifact_table(runs: Mapping[str, Mapping[str, Any]]) -> Table:
    from rich.table import Table

    t = Table(title="re-ingest on SciFact (extractive headers)", title_justify="left")
    t.add_column("run")
    for c in SCIFACT_COLUMNS:
        t.add_column(c.replace("_", " "), justify="right")
    for row in scifact_rows(runs):
        t.add_row(*row)
    return t


def print_report(console: Console, out: dict[str, Any]) -> None:
    """The benchmark's record as prose and tables on ``console``."""
    console.print(header_text(out), highlight=False, soft_wrap=True)
    cb = out["codebase"]
    console.print(_ingest_table(cb))
    console.print(_pass_at_k_table(cb))
    console.print(
        f"fusion: {cb['fusion_path']}; search {cb['search_seconds']} s; "
        f"header of doc_1 chunk 2: {cb['header_example']!r}",
        highlight=False,
        soft_wrap=True,
    )
    if "scifact" in out:
        console.print(_scifact_table(out["scifact"]["runs"]))
