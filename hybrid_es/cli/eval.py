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

from hybrid_es.cli.common import client, console, emit_json, err_console, settings


def eval_command(
    dataset: Annotated[
        Path,
        typer.Argument(
            help="A BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/), or the cookbook's "
            "(codebase_chunks.json, evaluation_set.jsonl: Pass@k = chunk-level recall@k)."
        ),
    ],
    split: Annotated[str, typer.Option(help="qrels split.")] = "test",
    pipelines: Annotated[
        str,
        typer.Option(help="Comma list of bm25,dense,hybrid,linear,hybrid+rerank,linear+rerank."),
    ] = "bm25,dense,hybrid,linear",
    embedder: Annotated[str, typer.Option(help="minilm | e5 | a model path")] = "minilm",
    reranker: Annotated[
        str | None, typer.Option(help="CrossEncoder folder or name for hybrid+rerank.")
    ] = None,
    rerank_depth: Annotated[int, typer.Option(help="Candidates the cross-encoder scores.")] = 20,
    precision: Annotated[
        str, typer.Option(help="Cross-encoder precision: fp32 | bf16 | int8.")
    ] = "int8",
    rerank_max_length: Annotated[
        int | None, typer.Option(help="Cross-encoder tokens per pair (default: the model's).")
    ] = None,
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

    from hybrid_es.ingest.beir import read_qrels, read_queries
    from hybrid_es.evaluation.collection import EVAL_TENANT, collection_name, default_index, ingest_collection
    from hybrid_es.evaluation.cookbook import is_cookbook, load_codebase
    from hybrid_es.retrieval.embedder import make_embedder
    from hybrid_es.evaluation.runner import (
        METRICS,
        PASS_AT_K,
        PIPELINES,
        markdown_report,
        plot,
        run_pipeline,
    )
    from hybrid_es.retrieval.reranker import PRECISIONS, CrossEncoderReranker

    wanted = [p.strip() for p in pipelines.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in PIPELINES]
    if unknown:
        raise typer.BadParameter(f"unknown pipelines {unknown}; choose from {', '.join(PIPELINES)}")
    reranking = [p for p in wanted if p.endswith("+rerank")]
    if reranking and not reranker:
        raise typer.BadParameter(
            f"{reranking[0]} needs --reranker PATH (see `hybrid-es reranker train`)"
        )
    s = settings()
    es = client(s)
    name = collection_name(dataset)
    emb = make_embedder(embedder)
    docs, chunker, unit, metrics = None, None, "doc", METRICS
    if is_cookbook(dataset):  # Pass@k over golden chunks, the corpus's own chunks ingested
        cb = load_codebase(dataset, tenant=EVAL_TENANT)
        queries, qrels = cb.as_judged()
        docs, chunker, unit, metrics = cb.docs, (lambda d: cb.chunks[d.id]), "chunk", PASS_AT_K
        split = "all questions"
    else:
        qrels = read_qrels(dataset, split)
        queries = read_queries(dataset)
    if max_queries:
        qrels = dict(list(qrels.items())[:max_queries])
    if precision not in PRECISIONS:
        raise typer.BadParameter(f"--precision must be one of {', '.join(PRECISIONS)}")
    ce = (
        CrossEncoderReranker(reranker, precision=precision, max_length=rerank_max_length)
        if reranker
        else None
    )
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err_console,
        disable=as_json,
    ) as bar:
        task = bar.add_task("ingest", total=None)
        col = ingest_collection(
            es,
            emb,
            dataset,
            index=index or default_index(dataset, embedder),
            state_index=f"{s.corpus_state_index}-eval",
            url=s.redacted_url(),
            on_total=lambda n: bar.update(task, total=n),
            progress=lambda n: bar.advance(task, n),
            docs=docs,
            chunker=chunker,
        )
        emb.embed_queries(["warm-up"])
        if ce is not None and reranking:
            ce.load()
            ce.score("warm-up", ["warm-up"])
        results = []
        for p in wanted:
            searcher = col.searcher(
                pipeline={"bm25": "bm25", "dense": "dense"}.get(p, "hybrid"),
                fusion_method="linear" if p.startswith("linear") else "rrf",
                alpha=alpha,
                reranker=ce if p in reranking else None,
            )
            task = bar.add_task(p, total=len(qrels))
            results.append(
                run_pipeline(
                    p,
                    searcher,
                    queries,
                    qrels,
                    rerank=p in reranking,
                    rerank_depth=rerank_depth,
                    progress=partial(bar.advance, task),
                    unit=unit,  # type: ignore[arg-type]
                    metrics=metrics,
                )
            )
    rep, ingest_s = col.report, col.ingest_s
    command = "hybrid-es eval " + " ".join(sys.argv[2:])
    machine = (
        f"{os.cpu_count()} cores, {platform.platform()}, embedder {emb.model_id}, "
        f"ingest {ingest_s:.1f} s ({rep.chunks} chunks written, "
        f"{rep.skipped_unchanged} documents unchanged; context headers: "
        f"{rep.context.calls} LLM calls, cost {_usd(rep.context.cost_usd)} this run)"
        + (f", reranker {ce.model_name} ({ce.precision}, weight {ce.weight:g})" if ce else "")
    )
    out = {
        "dataset": str(dataset),
        "split": split,
        "command": command,
        "machine": machine,
        "results": [r.as_dict() for r in results],
        "ingest_context_usage": rep.context.summary(),
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


def _usd(cost: float | None) -> str:
    return "unknown (no price for the model)" if cost is None else f"${cost:.4f}"


def _print(name: str, results: list[Any], machine: str) -> None:
    from hybrid_es.evaluation.runner import METRICS, STAGES

    names = list(results[0].metrics) if results else list(METRICS)

    t = Table(title=f"{name}: quality")
    t.add_column("pipeline")
    for m in (*names, "fail@20"):
        t.add_column(m, justify="right")
    for r in results:
        t.add_row(r.name, *[f"{r.metrics.get(m, 0):.4f}" for m in names], f"{r.failure_rate:.4f}")
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
