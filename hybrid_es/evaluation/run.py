"""Evaluating a dataset end to end: what ``hybrid-es eval`` runs, as one library call.

Reads a BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/``) or the cookbook's
layout (Pass@k over its golden chunks), ingests it for the evaluation tenant (reusing unchanged
documents), runs each pipeline over the judged queries and returns the results with the
machine and command they were measured on; ``write_report`` adds Markdown, JSON and a plot.
"""

from __future__ import annotations

import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import MINILM_INT8_ID, Embedder
from hybrid_es.encoders.embedder_choice import SAMPLE, Embedders
from hybrid_es.encoders.reranker import CrossEncoderReranker
from hybrid_es.errors import ConfigurationError
from hybrid_es.evaluation.collection import (
    EVAL_TENANT,
    Collection,
    collection_name,
    default_index,
    ingest_collection,
)
from hybrid_es.evaluation.cookbook import is_cookbook, load_codebase
from hybrid_es.evaluation.progress import NoProgress, Progress
from hybrid_es.evaluation.runner import (
    METRICS,
    PASS_AT_K,
    PIPELINES,
    PipelineResult,
    markdown_report,
    plot,
    run_pipeline,
)
from hybrid_es.ingest.beir import read_corpus, read_qrels, read_queries
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Chunker
from hybrid_es.retrieval.fusion import DEFAULT_ALPHA, Alpha
from hybrid_es.retrieval.queries import MAX_QUERY_CHARS, MAX_QUERY_TERMS, RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher


@dataclass(frozen=True)
class EvalRequest:
    """What to evaluate and how (the CLI's options, validated on construction)."""

    dataset: Path
    pipelines: tuple[str, ...] = ("bm25", "dense", "hybrid", "linear")
    split: str = "test"
    reranker: CrossEncoderReranker | None = None
    rerank_depth: int = 20
    alpha: Alpha = DEFAULT_ALPHA
    max_queries: int | None = None
    index: str | None = None
    state_index: str = "hybrid-es-corpus-state-eval"
    embedder_name: str = "auto"
    client_terms: bool = True
    """Query the client-side analysed terms beside the engine's own analysis (see
    ``text.analysis``)."""
    max_query_chars: int = MAX_QUERY_CHARS
    """Longer queries are refused, and recorded as failed (``HYBRID_ES_MAX_QUERY_CHARS``)."""
    max_query_terms: int = MAX_QUERY_TERMS
    """Terms of a query the BM25 leg reads (``HYBRID_ES_MAX_QUERY_TERMS``)."""

    def __post_init__(self) -> None:
        unknown = [p for p in self.pipelines if p not in PIPELINES]
        if unknown:
            raise ConfigurationError(
                f"unknown pipelines {unknown}; choose from {', '.join(PIPELINES)}"
            )
        reranking = [p for p in self.pipelines if p.endswith("+rerank")]
        if reranking and self.reranker is None:
            raise ConfigurationError(
                f"{reranking[0]} needs a reranker (see `hybrid-es reranker train`)"
            )


@dataclass
class EvalRun:
    """The results of one evaluation, and what they were measured on."""

    dataset: str
    split: str
    results: list[PipelineResult]
    machine: str
    ingest_context_usage: dict[str, Any] = field(default_factory=dict)
    command: str = ""
    documents: int = 0
    """Documents of the collection (the ingest's denominator)."""
    embedder: str = ""
    """The model that embedded the collection (``auto``: the one its scripts chose), and why."""

    def cost(self) -> dict[str, Any]:
        """Cost per query as the brief means it: the model compute each pipeline spends per
        query (query embedding and reranking, ms), and money. At query time every model runs
        locally, so money per query is $0; the ingest's money is what the contextualizer's
        LLM calls cost at their model's list price (``anthropic_context.PRICES``; None where the
        price is unknown), per run and per 1,000 documents. The extractive default makes no
        call and costs $0."""
        spent = self.ingest_context_usage.get("cost_usd", 0.0)
        calls = int(self.ingest_context_usage.get("calls", 0) or 0)
        return {
            "model_ms_per_query": {r.name: r.model_ms_per_query for r in self.results},
            "money_per_query_usd": 0.0,
            "money_per_query_note": "every query-time model runs locally (no hosted model)",
            "ingest_llm_calls": calls,
            "ingest_money_usd": spent,
            "ingest_money_per_1000_documents_usd": (
                None
                if spent is None
                else round(spent * 1000 / self.documents, 6)
                if self.documents
                else 0.0
            ),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "split": self.split,
            "command": self.command,
            "machine": self.machine,
            "embedder": self.embedder,
            "results": [r.as_dict() for r in self.results],
            "ingest_context_usage": self.ingest_context_usage,
            "cost": self.cost(),
        }


# Stays whole: read the judgements, ingest, then one run per pipeline; the machine line records
# what the runs were measured on.
def evaluate_dataset(
    es: Engine | Any,
    embedder: Embedder | Embedders,
    req: EvalRequest,
    *,
    url: str = "",
    command: str = "",
    progress: Progress | None = None,
) -> EvalRun:
    """Ingest ``req.dataset`` (unchanged documents are skipped) and run every pipeline over its
    judged queries (``es``: an engine, or a client it wraps). ``embedder``: one, or a set whose
    ``auto`` chooses from the corpus's first documents as an ingest would (the index is named
    after the chosen model). Raises IngestError for a dataset that cannot be read."""
    progress = progress or NoProgress()
    judged = read_judged(req)
    docs = judged.docs
    name, why = req.embedder_name, "given"
    if isinstance(embedder, Embedders):
        if embedder.auto:
            docs = docs if docs is not None else list(read_corpus(req.dataset, tenant=EVAL_TENANT))
            choice = embedder.for_documents(f"{d.title}\n{d.body}" for d in docs[:SAMPLE])
            embedder, name, why = choice.embedder, choice.name, choice.reason
        else:
            embedder = embedder.default
    col = ingest_collection(
        es,
        embedder,
        req.dataset,
        # int8 MiniLM writes its own vectors (its own model id): its own index beside float32's.
        index=req.index or default_index(req.dataset, name + _variant_suffix(embedder)),
        state_index=req.state_index,
        url=url,
        progress=progress,
        docs=docs,
        chunker=judged.chunker,
    )
    embedder.embed_queries(["warm-up"])
    reranking = {p for p in req.pipelines if p.endswith("+rerank")}
    if req.reranker is not None and reranking:
        req.reranker.load()
        req.reranker.score("warm-up", ["warm-up"])
    results = [
        run_pipeline(
            p,
            pipeline_searcher(col, req, p, rerank=p in reranking),
            judged.queries,
            judged.qrels,
            rerank=p in reranking,
            rerank_depth=req.rerank_depth,
            progress=progress.stage(p, len(judged.qrels)).advance,
            unit=judged.unit,  # type: ignore[arg-type]
            metrics=judged.metrics,
        )
        for p in req.pipelines
    ]
    return EvalRun(
        collection_name(req.dataset),
        judged.split,
        results,
        machine_line(col, embedder, req.reranker),
        col.report.context.summary(),
        command,
        documents=col.documents,
        embedder=f"{embedder.model_id} ({why})",
    )


@dataclass(frozen=True)
class Judged:
    """A collection's judged queries, and how it is ingested and scored: a BEIR folder is judged
    by document (nDCG@k and friends), the cookbook's set by its own golden chunks (Pass@k)."""

    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    split: str
    unit: str = "doc"
    metrics: tuple[str, ...] = METRICS
    docs: list[Document] | None = None
    chunker: Chunker | None = None


def _variant_suffix(embedder: Embedder) -> str:
    """The evaluation index of an int8 MiniLM is its own (its vectors are another space); named
    after the build, so an index of an earlier int8 build is not reused."""
    return "-" + MINILM_INT8_ID.rsplit("@", 1)[1] if embedder.model_id == MINILM_INT8_ID else ""


def read_judged(req: EvalRequest) -> Judged:
    """The judged queries of ``req.dataset`` (the first ``req.max_queries`` when set)."""
    if is_cookbook(req.dataset):  # Pass@k over golden chunks, the corpus's own chunks ingested
        cb = load_codebase(req.dataset, tenant=EVAL_TENANT)
        queries, qrels = cb.as_judged()
        extra: dict[str, Any] = {
            "split": "all questions",
            "unit": "chunk",
            "metrics": PASS_AT_K,
            "docs": cb.docs,
            "chunker": lambda d: cb.chunks[d.id],
        }
    else:
        qrels = read_qrels(req.dataset, req.split)
        queries = read_queries(req.dataset)
        extra = {"split": req.split}
    if req.max_queries:
        qrels = dict(list(qrels.items())[: req.max_queries])
    return Judged(queries, qrels, **extra)


def pipeline_searcher(
    col: Collection, req: EvalRequest, pipeline: str, *, rerank: bool
) -> HybridSearcher:
    """The searcher one evaluated pipeline runs: ``bm25`` and ``dense`` a single leg, the others
    both legs fused by RRF or (``linear*``) min-max linear, ``+rerank`` with the reranker."""
    return col.searcher(
        pipeline={"bm25": "bm25", "dense": "dense"}.get(pipeline, "hybrid"),
        fusion_method="linear" if pipeline.startswith("linear") else "rrf",
        alpha=req.alpha,
        reranker=req.reranker if rerank else None,
        params=RetrievalParams(
            client_terms=req.client_terms,
            max_query_chars=req.max_query_chars,
            max_query_terms=req.max_query_terms,
        ),
    )


def machine_line(col: Collection, embedder: Embedder, ce: Any) -> str:
    """Where the run happened: cores, platform, models, what the ingest did and cost."""
    rep = col.report
    return (
        f"{os.cpu_count()} cores, {platform.platform()}, embedder {embedder.model_id}, "
        f"ingest {col.ingest_s:.1f} s ({rep.chunks} chunks written, "
        f"{rep.skipped_unchanged} documents unchanged; context headers: "
        f"{rep.context.calls} LLM calls, cost {_usd(rep.context.cost_usd)} this run)"
        + (f", reranker {ce.model_name} ({ce.precision}, weight {ce.weight:g})" if ce else "")
    )


def write_report(run: EvalRun, folder: Path) -> None:
    """``report.md``, ``results.json``, ``runs.json`` (each pipeline's ranking per query, for
    paired tests between two reports: ``scripts/paired_reports.py``) and a PNG of quality and
    p95 latency, into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    png = f"{run.dataset}.png"
    plot(run.results, str(folder / png), title=f"{run.dataset} ({run.split})")
    (folder / "report.md").write_text(
        markdown_report(
            run.dataset, run.results, command=run.command, machine=run.machine, plots=[png]
        )
    )
    (folder / "results.json").write_text(json.dumps(run.as_dict(), indent=2))
    runs = {r.name: r.run for r in run.results}
    (folder / "runs.json").write_text(json.dumps({"split": run.split, "runs": runs}))


def _usd(cost: float | None) -> str:
    return "unknown (no price for the model)" if cost is None else f"${cost:.4f}"
