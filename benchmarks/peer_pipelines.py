"""The Haystack peer's query pipelines, built from stock Haystack components (sync ``Pipeline``).

Runs in the peer's venv, inside :mod:`~benchmarks.peer_worker`; Haystack is
imported where it is used.

- ``haystack hybrid``: ``SentenceTransformersTextEmbedder`` -> ``ElasticsearchEmbeddingRetriever``,
  and ``ElasticsearchBM25Retriever``, both joined by ``DocumentJoiner(join_mode=
  "reciprocal_rank_fusion")`` (k=61 over 0-based ranks, i.e. our k=60 over 1-based ranks).
- ``haystack hybrid+rerank``: the same, plus a second RRF joiner cut at ``rerank_depth`` feeding
  ``SentenceTransformersSimilarityRanker`` (the same cross-encoder folder as ours, truncating at
  the same ``rerank_max_length``). The ranking scored is the ranker's order of the fused top
  ``rerank_depth`` followed by the rest of the fused list, which is what ``hybrid-es`` does (so
  Recall@100 stays comparable).

What still differs from ours, by design of each product: Haystack runs the two retrievers one
after the other (each a ``_search``) where ours sends both legs in one ``_msearch``; its BM25 is a
``multi_match`` over the standard-analysed ``content`` (ours adds client-side stemmed terms and
``title^0.5``); its ranker scores the chunk's ``content`` (header + chunk) in fp32 and orders by
the cross-encoder alone, ours scores title + chunk in int8 and may blend with the fused score; and
the peer applies no policy filter.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

HYBRID = "haystack hybrid"
RERANK = "haystack hybrid+rerank"


@dataclass(frozen=True)
class PeerConfig:
    """How the peer's pipelines are built (the driver's options, sent to the worker)."""

    embedder_path: str
    top_k_each: int = 50
    num_candidates: int = 100
    fuzziness: str = "0"
    reranker: str | None = None
    rerank_depth: int = 20
    rerank_max_length: int = 256
    torch_threads: int | None = None
    """``torch.set_num_threads`` in the peer's process (None: torch's own choice, as stock)."""


def make_timer() -> Any:
    """A Haystack tracer, installed as Haystack's, that adds up each component's run time (ms)
    in ``.ms``; reset ``.ms`` before each ``Pipeline.run``. Both RRF joiners count as the join."""
    from haystack.tracing.tracer import NullSpan, Span, Tracer, enable_tracing

    class ComponentTimer(Tracer):
        def __init__(self) -> None:
            self.ms: dict[str, float] = {}

        @contextlib.contextmanager
        def trace(
            self,
            operation_name: str,
            tags: dict[str, Any] | None = None,
            parent_span: Span | None = None,
        ) -> Iterator[Span]:
            t = time.perf_counter()
            try:
                yield NullSpan()
            finally:
                if operation_name == "haystack.component.run":
                    name = str((tags or {}).get("haystack.component.name", "?"))
                    name = "joiner" if name == "head" else name
                    self.ms[name] = self.ms.get(name, 0.0) + (time.perf_counter() - t) * 1000

        def current_span(self) -> Span | None:
            return None

    timer = ComponentTimer()
    enable_tracing(timer)
    return timer


def build_pipeline(store: Any, cfg: PeerConfig, *, rerank: bool) -> Any:
    """The ``haystack hybrid`` pipeline, or with ``rerank`` the ``haystack hybrid+rerank`` one."""
    from haystack import Pipeline
    from haystack.components.joiners import DocumentJoiner
    from haystack.utils import ComponentDevice
    from haystack_integrations.components.embedders.sentence_transformers import (  # type: ignore[import-not-found,unused-ignore]
        SentenceTransformersTextEmbedder,
    )
    from haystack_integrations.components.retrievers.elasticsearch import (  # type: ignore[import-not-found,unused-ignore]
        ElasticsearchBM25Retriever,
        ElasticsearchEmbeddingRetriever,
    )

    cpu = ComponentDevice.from_str("cpu")
    pipe = Pipeline()
    pipe.add_component(
        "text_embedder",
        SentenceTransformersTextEmbedder(model=cfg.embedder_path, device=cpu, progress_bar=False),
    )
    pipe.add_component(
        "bm25",
        ElasticsearchBM25Retriever(
            document_store=store, top_k=cfg.top_k_each, fuzziness=cfg.fuzziness
        ),
    )
    pipe.add_component(
        "dense",
        ElasticsearchEmbeddingRetriever(
            document_store=store, top_k=cfg.top_k_each, num_candidates=cfg.num_candidates
        ),
    )
    pipe.add_component("joiner", DocumentJoiner(join_mode="reciprocal_rank_fusion"))
    pipe.connect("text_embedder.embedding", "dense.query_embedding")
    pipe.connect("bm25.documents", "joiner.documents")
    pipe.connect("dense.documents", "joiner.documents")
    if rerank:
        _add_ranker(pipe, cfg, cpu)
    return pipe


def _add_ranker(pipe: Any, cfg: PeerConfig, device: Any) -> None:
    from haystack.components.joiners import DocumentJoiner
    from haystack_integrations.components.rankers.sentence_transformers import (  # type: ignore[import-not-found,unused-ignore]
        SentenceTransformersSimilarityRanker,
    )

    if not cfg.reranker:
        raise ValueError("the rerank pipeline needs a reranker")
    pipe.add_component(
        "head", DocumentJoiner(join_mode="reciprocal_rank_fusion", top_k=cfg.rerank_depth)
    )
    pipe.add_component(
        "ranker",
        SentenceTransformersSimilarityRanker(
            model=cfg.reranker,
            device=device,
            top_k=cfg.rerank_depth,
            tokenizer_kwargs={"model_max_length": cfg.rerank_max_length},
        ),
    )
    pipe.connect("bm25.documents", "head.documents")
    pipe.connect("dense.documents", "head.documents")
    pipe.connect("head.documents", "ranker.documents")


def run_one(pipe: Any, query: str, *, rerank: bool) -> list[str]:
    """Ranked document ids for ``query`` (a document's best chunk stands for it)."""
    data: dict[str, Any] = {"text_embedder": {"text": query}, "bm25": {"query": query}}
    if rerank:
        data["ranker"] = {"query": query}
    out = pipe.run(data, include_outputs_from={"joiner"})
    fused = out["joiner"]["documents"]
    if rerank:
        head = out["ranker"]["documents"]
        seen = {d.id for d in head}
        ranked = head + [d for d in fused if d.id not in seen]
    else:
        ranked = fused
    return list(dict.fromkeys(str(d.meta.get("doc_id", d.id)) for d in ranked))
