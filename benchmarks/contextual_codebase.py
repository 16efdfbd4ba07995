"""Part 1 of the contextual-retrieval benchmark: the cookbook's codebase set, with and without
context headers.

The corpus's own chunks are used as they are, one tenant, two chunk indices built by
``Ingestor``: one without headers, one with the extractive header (then ingested again, which must
skip everything). Each query is embedded once; the dense runs send the same policy-filtered kNN
leaf the searcher sends, the hybrid runs go through ``HybridSearcher`` (BM25 + kNN, RRF), and,
with a reranker, the contextual hybrid's fused top 50 is reranked. The result is Pass@k per
pipeline beside the cookbook's numbers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from benchmarks.contextual_ingest import PRINCIPAL, TENANT, fresh
from benchmarks.contextual_ingest import ingest_codebase as ingest
from benchmarks.contextual_passk import (
    KS,
    PIPELINES,
    cookbook_anchors,
    pass_at_k_table,
)
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder, Vectors
from hybrid_es.encoders.reranker import CrossEncoderReranker
from hybrid_es.evaluation.cookbook import Codebase, load_codebase
from hybrid_es.identity import chunk_key
from hybrid_es.ingest.contextual import ExtractiveContextualizer, NoContextualizer
from hybrid_es.ingest.indexer import IngestReport, chunk_id
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.dialects import Dialect, dialect_for
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.searcher import HybridSearcher

if TYPE_CHECKING:
    from rich.console import Console


def index_names(prefix: str) -> tuple[str, str, str]:
    """The plain chunks index, the contextual one and their corpus-state index."""
    state = f"hybrid-es-corpus-state-{prefix.removeprefix('hybrid-es-chunks-')}"
    return f"{prefix}-plain", f"{prefix}-ctx", state


def header_sample_body() -> dict[str, Any]:
    """The request for doc_1's chunk 2 (its context header is shown as an example)."""
    return {
        "size": 1,
        "query": {"ids": {"values": [chunk_key(PRINCIPAL.tenant, chunk_id("doc_1", 1, 2))]}},
    }


def dense_request(
    dialect: Dialect, vector: Sequence[float], policy: dict[str, Any], params: RetrievalParams
) -> dict[str, Any]:
    """The searcher's kNN leaf as one search, sized to the largest k."""
    return {**dialect.dense_body(vector, policy, params), "size": max(KS)}


def dense_run(client: Engine, index: str, vectors: Vectors, now: datetime) -> list[list[str]]:
    """The chunk ids of each query's kNN top (policy-filtered, as the searcher sends it)."""
    params = RetrievalParams()
    policy = policy_filter(PRINCIPAL, RequestScope(), now)
    dialect = dialect_for(client.flavor)
    out = []
    for v in vectors:
        body = dense_request(dialect, cast(Sequence[float], v), policy, params)
        resp = client.search(index, body, what="dense search")
        out.append([h["_source"]["chunk_id"] for h in resp["hits"]["hits"]])
    return out


def hybrid_run(searcher: HybridSearcher, queries: list[str], rerank: bool) -> list[list[str]]:
    """The chunk ids of each query's top through the searcher."""
    return [
        [h.chunk_id for h in searcher.search(q, PRINCIPAL, top_k=max(KS), rerank=rerank).hits]
        for q in queries
    ]


def ingest_figures(rep: IngestReport) -> dict[str, Any]:
    return {"seconds": round(rep.seconds, 1), "documents": rep.documents, "chunks": rep.chunks}


def _ingest_all(
    client: Engine, embedder: Embedder, cb: Codebase, names: tuple[str, str, str], console: Console
) -> dict[str, Any]:
    """Both indices, then the contextual one again (everything skipped); each ingest's figures."""
    plain, ctx_index, state = names
    out: dict[str, Any] = {}
    for name, index, contextualizer in (
        ("no header", plain, NoContextualizer()),
        ("extractive header", ctx_index, ExtractiveContextualizer()),
    ):
        console.print(f"ingest {name} -> {index}", highlight=False)
        rep, emb, _ = ingest(client, embedder, cb, index, state, contextualizer)
        out[name] = {**ingest_figures(rep), "embed_seconds": round(emb.seconds, 1)}
    rep, emb, ctx = ingest(client, embedder, cb, ctx_index, state, ExtractiveContextualizer())
    out["extractive header, again"] = {
        **ingest_figures(rep),
        "skipped_unchanged": rep.skipped_unchanged,
        "embedded": emb.passages,
        "header_calls": ctx.documents,
    }
    return out


def header_example(client: Engine, index: str) -> Any:
    """The context header of doc_1's chunk 2 ("" when it is not there)."""
    sample = client.search(index, header_sample_body())
    hits = sample["hits"]["hits"]
    return hits[0]["_source"]["context_header"] if hits else ""


def _search_all(
    client: Engine,
    embedder: Embedder,
    texts: list[str],
    names: tuple[str, str, str],
    rerank_model: str | None,
    now: datetime,
) -> tuple[dict[str, list[list[str]]], str]:
    """Every pipeline's ranked chunk ids, and the fusion path of the contextual hybrid."""
    plain, ctx_index, state = names
    vectors = embedder.embed_queries(texts)
    runs: dict[str, list[list[str]]] = {}
    runs["dense only"] = dense_run(client, plain, vectors, now)
    runs["contextual dense"] = dense_run(client, ctx_index, vectors, now)
    url = client.url
    fusion = ""
    for name, index in (("hybrid, no context", plain), ("contextual hybrid", ctx_index)):
        searcher = HybridSearcher(client, embedder, index=index, corpus_state_index=state, url=url)
        runs[name] = hybrid_run(searcher, texts, rerank=False)
        fusion = f"{searcher.fusion_path()[0]}"
    if rerank_model:
        searcher = HybridSearcher(
            client,
            embedder,
            index=ctx_index,
            corpus_state_index=state,
            reranker=CrossEncoderReranker(rerank_model),
            url=url,
        )
        runs["contextual hybrid + rerank"] = hybrid_run(searcher, texts, rerank=True)
    return runs, fusion


def codebase_part(
    client: Engine,
    embedder: Embedder,
    console: Console,
    *,
    dataset: Path,
    queries: int | None,
    index_prefix: str,
    rerank_model: str | None,
    keep: bool,
) -> dict[str, Any]:
    """Part 1: ingest the codebase set both ways, run every pipeline, Pass@k beside the
    cookbook's."""
    cb = load_codebase(dataset, tenant=TENANT)
    if queries:
        cb.queries = cb.queries[:queries]
    names = index_names(index_prefix)
    fresh(client, *names)
    ingest_runs = _ingest_all(client, embedder, cb, names, console)
    example = header_example(client, names[1])
    texts = [q for q, _ in cb.queries]
    golden = [g for _, g in cb.queries]
    now = datetime.now(UTC)
    console.print(f"search: {len(texts)} queries x {len(PIPELINES)} pipelines", highlight=False)
    t = time.perf_counter()
    runs, fusion = _search_all(client, embedder, texts, names, rerank_model, now)
    search_seconds = time.perf_counter() - t
    table = pass_at_k_table(runs, golden)
    if not keep:
        fresh(client, *names)
    return {
        "queries": len(texts),
        "chunks": sum(len(c) for c in cb.chunks.values()),
        "documents": len(cb.docs),
        "ingest": ingest_runs,
        "pass_at_k": table,
        "search_seconds": round(search_seconds, 1),
        "fusion_path": fusion,
        "header_example": example,
        "anchors": cookbook_anchors(dataset.parent / "ANCHORS.md"),
    }
