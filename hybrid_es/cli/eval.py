"""``hybrid-es eval``: quality and latency of the pipelines on a BEIR-layout collection."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from hybrid_es.cli.common import (
    Json,
    RichProgress,
    client,
    console,
    emit_json,
    safe,
    settings,
    title,
)
from hybrid_es.retrieval.fusion import DEFAULT_ALPHA, parse_alpha

MAX_FAILURES_SHOWN = 10


# Long only for its typer options: the body parses them, calls evaluation.run.evaluate_dataset
# once and prints the result.
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
        typer.Option(
            help="Comma list of: bm25, dense, hybrid, linear, hybrid+rerank, linear+rerank."
        ),
    ] = "bm25,dense,hybrid,linear",
    embedder: Annotated[
        str,
        typer.Option(
            help="auto (chosen from the corpus's scripts, as an ingest chooses) | minilm | e5 "
            "| a model path"
        ),
    ] = "auto",
    reranker: Annotated[
        str | None, typer.Option(help="CrossEncoder folder or name for hybrid+rerank.")
    ] = None,
    rerank_depth: Annotated[int, typer.Option(help="Candidates the cross-encoder scores.")] = 20,
    precision: Annotated[
        str | None,
        typer.Option(
            help="Cross-encoder precision: onnx-int8 | onnx | int8 | fp32 | bf16 (default: "
            "onnx-int8 for a local folder, int8 on torch for a hub name)."
        ),
    ] = None,
    rerank_max_length: Annotated[
        int | None, typer.Option(help="Cross-encoder tokens per pair (default: the model's).")
    ] = None,
    alpha: Annotated[
        str,
        typer.Option(
            help="Dense weight of the linear fusion: 'spread' (chosen per query, the default) "
            "or a number in [0, 1].",
        ),
    ] = str(DEFAULT_ALPHA),
    max_queries: Annotated[
        int | None, typer.Option(help="Only the first N judged queries.")
    ] = None,
    index: Annotated[
        str | None, typer.Option(help="Index name (default derived from the dataset).")
    ] = None,
    report: Annotated[
        Path | None, typer.Option(help="Write report.md, results.json and plots here.")
    ] = None,
    client_terms: Annotated[
        bool,
        typer.Option(
            help="Also match the client-side analysed terms (English stems, CJK bigrams)."
        ),
    ] = True,
    as_json: Json = False,
) -> None:
    """Ingest (reusing unchanged documents), run the golden queries, print quality and latency."""
    from hybrid_es.encoders.embedder_choice import make_embedders
    from hybrid_es.encoders.reranker import PRECISIONS, CrossEncoderReranker
    from hybrid_es.errors import ConfigurationError
    from hybrid_es.evaluation.run import EvalRequest, evaluate_dataset, write_report

    if precision is not None and precision not in PRECISIONS:
        raise typer.BadParameter(f"--precision must be one of {', '.join(PRECISIONS)}")
    s = settings()
    try:
        weight = parse_alpha(alpha)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--alpha") from None
    try:
        req = EvalRequest(
            dataset=dataset,
            pipelines=tuple(p.strip() for p in pipelines.split(",") if p.strip()),
            split=split,
            reranker=CrossEncoderReranker(
                reranker,
                precision=precision,
                max_length=rerank_max_length,
                threads=s.reranker_threads,
            )
            if reranker
            else None,
            rerank_depth=rerank_depth,
            alpha=weight,
            max_queries=max_queries,
            index=index,
            state_index=f"{s.corpus_state_index}-eval",
            embedder_name=embedder,
            client_terms=client_terms,
            max_query_chars=s.max_query_chars,
            max_query_terms=s.max_query_terms,
        )
    except ConfigurationError as exc:
        raise typer.BadParameter(exc.message) from None
    with RichProgress(disable=as_json) as progress:
        run = evaluate_dataset(
            client(s),
            make_embedders(embedder, query_threads=s.embed_threads, runtime=s.embed_runtime),
            req,
            url=s.redacted_url(),
            command="hybrid-es eval " + " ".join(sys.argv[2:]),
            progress=progress,
        )
    if report:
        write_report(run, report)
    if as_json:
        emit_json(run.as_dict())
        return
    _print(run.dataset, run.results, run.machine)
    cost = run.cost()
    money = cost["ingest_money_per_1000_documents_usd"]
    console.print(
        f"[dim]embedder {run.embedder}; money per query $0 (local models); ingest "
        f"{cost['ingest_llm_calls']} LLM calls, "
        + ("unknown price" if money is None else f"${money:.4f} per 1,000 documents")
        + "[/dim]"
    )


def _print(name: str, results: list[Any], machine: str) -> None:
    from hybrid_es.evaluation.runner import METRICS, STAGES

    names = list(results[0].metrics) if results else list(METRICS)

    t = Table(title=title(f"{name}: quality"))
    t.add_column("pipeline")
    for m in (*names, "fail@20", "failed"):
        t.add_column(m, justify="right")
    for r in results:
        t.add_row(
            r.name,
            *[f"{r.metrics.get(m, 0):.4f}" for m in names],
            f"{r.failure_rate:.4f}",
            str(r.failed),
        )
    console.print(t)
    for r in results:
        for f in r.failures[:MAX_FAILURES_SHOWN]:
            # The query id and message come from the dataset and the cluster: through safe().
            console.print(
                Text.assemble(
                    safe(f"{r.name}: query {f.query_id} failed", style="yellow"),
                    safe(f" ({f.error}: {f.message}); scored as an empty ranking"),
                )
            )
        if r.failed > MAX_FAILURES_SHOWN:
            console.print(f"{r.name}: {r.failed - MAX_FAILURES_SHOWN} more failed (see --json)")
    lt = Table(title="latency p50 / p95 ms")
    lt.add_column("pipeline")
    for st in STAGES:
        lt.add_column(st, justify="right")
    lt.add_column("model ms / query", justify="right")
    for r in results:
        lt.add_row(
            r.name,
            *[
                f"{r.latency_ms[st]['p50']:.1f} / {r.latency_ms[st]['p95']:.1f}"
                if st in r.latency_ms
                else "-"
                for st in STAGES
            ],
            f"{r.model_ms_per_query:.1f}",
        )
    console.print(lt)
    console.print(f"[dim]{machine}[/dim]")
