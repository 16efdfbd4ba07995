"""``hybrid-es eval``: quality and latency of the pipelines on a BEIR-layout collection."""

from __future__ import annotations

import os
import platform
import sys
from functools import partial
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hybrid_es.cli_common import client, console, emit_json, err_console, settings


def eval_command(
    dataset: Annotated[
        Path, typer.Argument(help="A BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/).")
    ],
    split: Annotated[str, typer.Option(help="qrels split.")] = "test",
    pipelines: Annotated[
        str, typer.Option(help="Comma list of bm25,dense,hybrid,linear,hybrid+rerank.")
    ] = "bm25,dense,hybrid,linear",
    embedder: Annotated[str, typer.Option(help="minilm | e5 | a model path")] = "minilm",
    reranker: Annotated[
        str | None, typer.Option(help="CrossEncoder folder or name for hybrid+rerank.")
    ] = None,
    rerank_depth: Annotated[int, typer.Option(help="Candidates the cross-encoder scores.")] = 20,
    alpha: Annotated[float, typer.Option(help="Dense weight of the linear fusion.")] = 0.6,
    max_queries: Annotated[
        int | None, typer.Option(help="Only the first N judged queries.")
    ] = None,
    index: Annotated[
        str | None, typer.Option(help="Index name (default derived from the dataset).")
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="Write report.md, results.json and plots here.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Ingest (reusing unchanged documents), run the golden queries, print quality and latency."""
    import json

    from hybrid_es.beir import read_corpus, read_qrels, read_queries
    from hybrid_es.corpus_state import CorpusState
    from hybrid_es.embedder import make_embedder
    from hybrid_es.evaluation import PIPELINES, markdown_report, plot, run_pipeline, timed
    from hybrid_es.indexer import Ingestor
    from hybrid_es.reranker import CrossEncoderReranker
    from hybrid_es.searcher import HybridSearcher

    wanted = [p.strip() for p in pipelines.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in PIPELINES]
    if unknown:
        raise typer.BadParameter(f"unknown pipelines {unknown}; choose from {', '.join(PIPELINES)}")
    if "hybrid+rerank" in wanted and not reranker:
        raise typer.BadParameter("hybrid+rerank needs --reranker PATH (see `hybrid-es reranker`)")
    s = settings()
    es = client(s)
    name = dataset.resolve().name.lower().replace("_", "-")
    index = index or f"hybrid-es-chunks-eval-{name}-{embedder.replace('/', '-')}"
    state_index = f"{s.corpus_state_index}-eval"
    emb = make_embedder(embedder)
    qrels = read_qrels(dataset, split)
    if max_queries:
        qrels = dict(list(qrels.items())[:max_queries])
    queries = read_queries(dataset)
    docs = list(read_corpus(dataset, tenant="eval"))
    ing = Ingestor(es, emb, index=index, corpus_state=CorpusState(es, state_index))
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=as_json,
    ) as bar:
        task = bar.add_task("ingest", total=len(docs))
        rep, ingest_s = timed(lambda: ing.ingest(docs, progress=lambda n: bar.advance(task, n)))
        emb.embed_queries(["warm-up"])
        results = []
        for p in wanted:
            searcher = HybridSearcher(
                es,
                emb,
                index=index,
                corpus_state_index=state_index,
                url=s.redacted_url(),
                pipeline={"bm25": "bm25", "dense": "dense"}.get(p, "hybrid"),  # type: ignore[arg-type]
                fusion_method="linear" if p == "linear" else "rrf",
                alpha=alpha,
                reranker=CrossEncoderReranker(reranker)
                if p == "hybrid+rerank" and reranker
                else None,
            )
            task = bar.add_task(p, total=len(qrels))
            results.append(
                run_pipeline(
                    p,
                    searcher,
                    queries,
                    qrels,
                    rerank=p == "hybrid+rerank",
                    rerank_depth=rerank_depth,
                    progress=partial(bar.advance, task),
                )
            )
    command = "hybrid-es eval " + " ".join(sys.argv[2:])
    machine = (
        f"{os.cpu_count()} cores, {platform.platform()}, embedder {emb.model_id}, "
        f"ingest {ingest_s:.1f} s ({rep.chunks} chunks written, "
        f"{rep.skipped_unchanged} documents unchanged)"
    )
    out = {
        "dataset": str(dataset),
        "split": split,
        "command": command,
        "machine": machine,
        "results": [r.as_dict() for r in results],
    }
    if report:
        report.mkdir(parents=True, exist_ok=True)
        png = f"{name}.png"
        plot(results, str(report / png), title=f"{name} ({split})")
        (report / "report.md").write_text(
            markdown_report(name, results, command=command, machine=machine, plots=[png])
        )
        (report / "results.json").write_text(json.dumps(out, indent=2))
    if as_json:
        emit_json(out)
        return
    _print(name, results, machine)


def _print(name: str, results: list[Any], machine: str) -> None:
    from hybrid_es.evaluation import METRICS, STAGES

    t = Table(title=f"{name}: quality")
    t.add_column("pipeline")
    for m in (*METRICS, "fail@20"):
        t.add_column(m, justify="right")
    for r in results:
        t.add_row(r.name, *[f"{r.metrics.get(m, 0):.4f}" for m in METRICS], f"{r.failure_rate:.4f}")
    console.print(t)
    lt = Table(title="latency p50 / p95 ms")
    lt.add_column("pipeline")
    for st in STAGES:
        lt.add_column(st, justify="right")
    for r in results:
        lt.add_row(
            r.name,
            *[
                f"{r.latency_ms[st]['p50']:.1f} / {r.latency_ms[st]['p95']:.1f}"
                if st in r.latency_ms
                else "-"
                for st in STAGES
            ],
        )
    console.print(lt)
    console.print(f"[dim]{machine}[/dim]")
