"""``hybrid-es ingest``: load, chunk, contextualise, embed and index documents."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hybrid_es.cli_common import client, console, emit_json, err_console, settings


def ingest(
    path: Annotated[Path, typer.Argument(help="A JSONL file of documents.")],
    tenant: Annotated[str | None, typer.Option(help="Tenant for documents that name none.")] = None,
    embedder: Annotated[str | None, typer.Option(help="minilm | e5 | a model path")] = None,
    fail_fast: Annotated[bool, typer.Option(help="Stop at the first bad line.")] = False,
    dry_run: Annotated[bool, typer.Option(help="Validate and chunk only; write nothing.")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Chunk, contextualise, embed and index documents, skipping unchanged ones."""
    from hybrid_es.embedder import make_embedder
    from hybrid_es.indexer import Ingestor, build_chunk_records
    from hybrid_es.loaders import LoadReport, load_jsonl

    s = settings()
    t0 = time.perf_counter()
    load = LoadReport()
    docs = list(load_jsonl(path, report=load, tenant=tenant, fail_fast=fail_fast))
    for e in load.errors:
        err_console.print(f"[red]skipped[/red] {e}")
    if dry_run:
        from datetime import UTC, datetime

        n = sum(
            len(build_chunk_records(d, now=datetime.now(UTC), embedding_model="dry-run"))
            for d in docs
        )
        summary: dict[str, Any] = {
            "documents": len(docs),
            "chunks": n,
            "bad_lines": len(load.errors),
        }
    else:
        emb = make_embedder(embedder or s.embedder)
        ing = Ingestor(client(s), emb, index=s.chunks_index)
        with Progress(
            TextColumn("ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err_console,
            disable=as_json,
        ) as bar:
            task = bar.add_task("docs", total=len(docs))
            rep = ing.ingest(docs, progress=lambda n: bar.advance(task, n))
        summary = {
            "documents": rep.documents,
            "chunks": rep.chunks,
            "skipped_unchanged": rep.skipped_unchanged,
            "superseded": rep.superseded,
            "removed_chunks": rep.removed_chunks,
            "failed": len(rep.failed),
            "bad_lines": len(load.errors),
            "watermarks": rep.watermarks,
        }
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    if as_json:
        emit_json(summary)
    else:
        t = Table(title=f"ingest {path}")
        t.add_column("what")
        t.add_column("value", justify="right")
        for k, v in summary.items():
            t.add_row(k, str(v))
        console.print(t)
    if load.errors:
        raise typer.Exit(1)
