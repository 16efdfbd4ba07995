"""``hybrid-es ingest``: load, chunk, contextualise, embed and index documents.

Exit status: 0 when everything was read and written; 1 when some input was rejected or some
write failed (each listed with its reason; the rest was written, and a rerun retries only what
is missing or changed); 2 for an error that stopped the run (see ``hybrid_es.cli.main.main``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from hybrid_es.cli.common import (
    User,
    bad,
    client,
    console,
    emit_json,
    err_console,
    make_principal,
    settings,
)

if TYPE_CHECKING:
    from hybrid_es.ingest.contextual import Contextualizer


class RateColumn(ProgressColumn):
    """Throughput in documents per second (rich's moving estimate)."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None and task.elapsed:  # one sample so far: rich has no estimate yet
            speed = task.completed / task.elapsed
        return Text("- docs/s" if speed is None else f"{speed:,.1f} docs/s", style="cyan")


def _contextualizer(name: str, llm_model: str) -> Contextualizer:
    from hybrid_es.ingest.contextual import ExtractiveContextualizer, NoContextualizer

    if name == "extractive":
        return ExtractiveContextualizer()
    if name == "none":
        return NoContextualizer()
    if name == "anthropic":
        from hybrid_es.ingest.anthropic_context import AnthropicContextualizer

        return AnthropicContextualizer(model=llm_model)
    raise typer.BadParameter(
        f"--contextualizer must be extractive, anthropic or none, not {name!r}"
    )


def ingest(
    path: Annotated[
        Path, typer.Argument(help="A JSONL file, a BEIR folder, or a folder of .txt/.md files.")
    ],
    tenant: Annotated[
        str,
        typer.Option(
            help="The caller's tenant: every document is written for it; a document that names "
            "another tenant is refused."
        ),
    ],
    user: User = "cli",
    format: Annotated[str, typer.Option("--format", help="auto | jsonl | beir | folder")] = "auto",
    contextualizer: Annotated[
        str, typer.Option(help="extractive (offline) | anthropic (LLM) | none")
    ] = "extractive",
    llm_model: Annotated[
        str, typer.Option(help="Claude model for --contextualizer anthropic.")
    ] = "claude-haiku-4-5",
    embedder: Annotated[str | None, typer.Option(help="minilm | e5 | a model path")] = None,
    chunk_size: Annotated[int, typer.Option(help="Tokens per chunk (model tokenizer).")] = 200,
    overlap: Annotated[int, typer.Option(help="Tokens repeated from the previous chunk.")] = 40,
    batch_size: Annotated[int, typer.Option(help="Documents embedded and written at once.")] = 64,
    ext: Annotated[
        list[str] | None, typer.Option(help="Also read files with this suffix (folder), e.g. .py")
    ] = None,
    field_map: Annotated[
        list[str] | None,
        typer.Option("--map", help="Rename a field before validation: SOURCE=TARGET (doc_id=id)."),
    ] = None,
    map_file: Annotated[
        Path | None, typer.Option(help='A JSON file of {"SOURCE": "TARGET"} renames.')
    ] = None,
    version_from_label: Annotated[
        bool,
        typer.Option(help="Order versions by the last number in version_label (contract-v4)."),
    ] = False,
    default_acl: Annotated[
        str | None,
        typer.Option(
            help="ACL of documents that name none: none (nobody; the default) | everyone "
            "(every user of the tenant). Default: HYBRID_ES_DEFAULT_ACL."
        ),
    ] = None,
    fail_fast: Annotated[bool, typer.Option(help="Stop at the first bad input.")] = False,
    dry_run: Annotated[
        bool, typer.Option(help="Validate and chunk only: no cluster, no model call.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Chunk, contextualise, embed and index documents, skipping unchanged ones."""
    from hybrid_es.ingest.chunking import chunk_text, counter_for
    from hybrid_es.cluster.corpus_state import CorpusState
    from hybrid_es.retrieval.embedder import make_embedder
    from hybrid_es.ingest.indexer import DEFAULT_ACLS, Ingestor
    from hybrid_es.ingest.loaders import (
        TEXT_SUFFIXES,
        LoadOptions,
        LoadReport,
        load_documents,
        read_field_map,
    )

    if format not in ("auto", "jsonl", "beir", "folder"):
        raise typer.BadParameter(f"--format must be auto, jsonl, beir or folder, not {format!r}")
    if chunk_size < 16 or not 0 <= overlap < chunk_size // 2:
        raise typer.BadParameter(
            "need --chunk-size >= 16 and 0 <= --overlap < chunk size / 2, "
            f"got {chunk_size}/{overlap}"
        )
    if not 1 <= batch_size <= 10_000:
        raise typer.BadParameter("--batch-size must be 1..10000")
    ctx = _contextualizer(contextualizer, llm_model)
    s = settings()
    principal = make_principal(tenant, user)
    acl_name = default_acl or s.default_acl
    if acl_name not in DEFAULT_ACLS:
        raise bad("--default-acl", f"must be none or everyone, not {acl_name!r}")
    try:
        fmap = read_field_map(field_map or (), map_file)
    except ValueError as exc:
        raise bad("--map" if field_map else "--map-file", str(exc)) from None
    options = LoadOptions(tenant=tenant, field_map=fmap, version_from_label=version_from_label)
    t0 = time.perf_counter()
    load = LoadReport()
    suffixes = (*TEXT_SUFFIXES, *(e if e.startswith(".") else f".{e}" for e in ext or ()))
    docs = list(
        load_documents(
            path,
            report=load,
            options=options,
            format=format,  # type: ignore[arg-type]
            fail_fast=fail_fast,
            suffixes=suffixes,
        )
    )
    for e in load.errors:
        err_console.print(Text.assemble(("rejected", "red"), f" {e}"), highlight=False)
    emb = make_embedder(embedder or s.embedder)
    summary: dict[str, Any]
    if dry_run:
        count = counter_for(emb)
        n = sum(
            len(chunk_text(d.body, size=chunk_size, overlap=overlap, count=count)) for d in docs
        )
        summary = {"documents": len(docs), "chunks": n, "rejected_input": len(load.errors)}
        failed: list[dict[str, Any]] = []
    else:
        ing = Ingestor(
            client(s),
            emb,
            layout=s.layout(),
            corpus_state=CorpusState(client(s), s.corpus_state_index),
            default_acl=DEFAULT_ACLS[acl_name],
            contextualizer=ctx,
            chunk_size=chunk_size,
            overlap=overlap,
            batch_size=batch_size,
        )
        with Progress(
            TextColumn("ingest"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err_console,
            disable=as_json,
        ) as bar:
            task = bar.add_task("docs", total=len(docs))
            rep = ing.ingest(
                docs, principal, progress=lambda k: bar.advance(task, k), raise_on_error=False
            )
        failed = rep.failed + rep.failed_documents
        summary = {
            "documents": rep.documents,
            "chunks": rep.chunks,
            "skipped_unchanged": rep.skipped_unchanged,
            "failed": len(failed),
            "rejected_input": len(load.errors),
            "superseded": rep.superseded,
            "default_acl_applied": f"{rep.default_acl} (HYBRID_ES_DEFAULT_ACL={acl_name})",
            "removed_chunks": rep.removed_chunks,
            "embedded": rep.embedded,
            "contextualizer": ctx.prompt_version,
            "llm_calls": rep.context.calls,
            "guardrail_rejections": rep.context.guardrail_rejections,
            "cost_usd": rep.context.cost_usd if rep.context.calls else 0.0,
            "watermarks": rep.watermarks,
            "docs_per_second": round(rep.documents / rep.seconds, 1) if rep.seconds else None,
        }
        if rep.context.calls:
            summary["llm_usage"] = rep.context.summary()
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    if as_json:
        emit_json(
            {
                **summary,
                "rejected": [str(e) for e in load.errors],
                "failures": failed,
                **({"ignored_files": load.ignored_files} if load.ignored_files else {}),
            }
        )
    else:
        for f in failed:
            what = f"{f['op']} {f['id']} (HTTP {f['status']})" if "op" in f else f["doc_id"]
            err_console.print(Text.assemble(("failed", "red"), f" {what}: {f['reason']}"))
        t = Table(title=f"ingest {path} for {tenant}" + (" (dry run)" if dry_run else ""))
        t.add_column("what")
        t.add_column("value", justify="right")
        for k, v in summary.items():
            t.add_row(k, Text(str(v)))
        console.print(t)
    if load.errors or failed:
        # SystemExit, not typer.Exit: cli.main runs the app with standalone_mode=False, where
        # click turns typer.Exit into a return value that main does not pass on.
        raise SystemExit(1)
