"""The second peer: OpenSearch's own ``hybrid`` query, fused inside the engine (issue 40).

What a user of OpenSearch's documentation would build over the very same chunks index: one
``_search`` with a ``hybrid`` query of two sub-queries, and a search pipeline whose
``normalization-processor`` min-max normalises each sub-query's scores and combines them by a
weighted arithmetic mean, with the weights the hybrid search tutorial uses, [0.3, 0.7] for
(lexical, neural) (:data:`DOCS_PAGE`, "Step 3: Configure a search pipeline").

- **The lexical sub-query** is hybrid-es's own sparse query (``queries.sparse_query``: the
  ``most_fields`` ``multi_match`` over the folded payload and title, the client-side terms), so
  both systems match the same text on the same fields.
- **The neural sub-query** is a ``knn`` on the same ``embedding`` field, ``k`` and ``ef_search``
  as our dense leg (``dialects.knn_query``), with a query vector made client-side by the same
  embedder object ours uses. The tutorial's ``neural`` query would embed the text inside the
  engine through an ml-commons model; this node has no ml-commons and no model, so the peer pays
  its query embedding in Python, as ours does, and its time is counted.
- **The filter** is the evaluation principal's tenant filter (``door.tenant_policy``) inside both
  sub-queries (OpenSearch 2.19 refuses a filter on the ``hybrid`` query itself). The run checks
  that it admits exactly the records ours' full policy admits (:meth:`NativePeer.records_seen`).
- **The pipeline** is installed under a name of the benchmark's own and deleted afterwards
  (use :class:`NativePeer` as a context manager); the search names it in its URL
  (``?search_pipeline=``), as the tutorial does.

Each body passes the chunks door (``retrieval.door``): its policy check walks both sub-queries
before anything is sent. The builders are pure; :class:`NativePeer` does the I/O.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from benchmarks.interleave import Answer
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.retrieval.dialects import knn_query
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.queries import (
    SOURCE_EXCLUDES,
    RetrievalParams,
    clean_query,
    sparse_query,
)

DOCS_PAGE = "https://docs.opensearch.org/latest/vector-search/ai-search/hybrid-search/index/"
"""OpenSearch's hybrid search page (source: opensearch-project/documentation-website,
``_vector-search/ai-search/hybrid-search/index.md``): its step 3 creates ``nlp-search-pipeline``
with ``min_max`` and ``arithmetic_mean`` at weights ``[0.3, 0.7]``, the match query first and the
neural query second."""
RECOMMENDED_WEIGHTS = (0.3, 0.7)
"""(lexical, neural): the weights of the tutorial's pipeline, in sub-query order."""
SYSTEM = "opensearch hybrid"


def pipeline_body(weights: Sequence[float] = RECOMMENDED_WEIGHTS) -> dict[str, Any]:
    """The search pipeline: min-max normalisation, weighted arithmetic mean (one weight per
    sub-query, in order). ValueError unless two non-negative weights summing to 1 (the
    processor's own rule)."""
    w = [float(x) for x in weights]
    if len(w) != 2 or min(w) < 0 or abs(sum(w) - 1.0) > 1e-6:
        raise ValueError(f"need two non-negative weights summing to 1, got {list(weights)}")
    return {
        "description": "hybrid-es benchmark: OpenSearch's native hybrid (issue 40)",
        "phase_results_processors": [
            {
                "normalization-processor": {
                    "normalization": {"technique": "min_max"},
                    "combination": {"technique": "arithmetic_mean", "parameters": {"weights": w}},
                }
            }
        ],
    }


def hybrid_body(
    text: str,
    vector: Sequence[float],
    policy: dict[str, Any],
    params: RetrievalParams,
    *,
    size: int = 10,
    pagination_depth: int | None = None,
) -> dict[str, Any]:
    """One ``hybrid`` search for ``size`` hits: our sparse query and the kNN query on the same
    vector, each with ``policy`` in its filter, the records returned without their vectors (as
    the tutorial's ``_source.exclude`` does, and as ours reads its head). ``pagination_depth``:
    results kept per sub-query and shard before fusion (None: the engine's default, ``from +
    size``). The hit count is left at the engine's default, as in the tutorial."""
    hybrid: dict[str, Any] = {
        "queries": [
            sparse_query(
                text,
                policy,
                with_client_terms=params.client_terms,
                max_terms=params.max_query_terms,
            ),
            knn_query(vector, policy, params),
        ]
    }
    if pagination_depth is not None:
        hybrid["pagination_depth"] = pagination_depth
    return {
        "query": {"hybrid": hybrid},
        "size": size,
        "_source": {"excludes": list(SOURCE_EXCLUDES)},
    }


def ranked_docs(resp: dict[str, Any]) -> tuple[str, ...]:
    """The documents of a response's chunk hits, in order, each once (its best chunk stands for
    it, as ours' ranking is read)."""
    docs = (str(h.get("_source", {}).get("doc_id", "")) for h in resp["hits"]["hits"])
    return tuple(dict.fromkeys(d for d in docs if d))


@dataclass
class NativePeer:
    """The native hybrid over ``index``: ``engine`` (its own connection), the ``embedder``
    ours uses, the pipeline installed as ``pipeline`` while the context is open."""

    engine: Engine
    embedder: Embedder
    index: str
    pipeline: str
    policy: dict[str, Any]
    params: RetrievalParams = field(default_factory=RetrievalParams)
    size: int = 10
    pagination_depth: int | None = None
    weights: tuple[float, float] = RECOMMENDED_WEIGHTS
    door: ChunksDoor = field(init=False)

    def __post_init__(self) -> None:
        self.door = ChunksDoor(self.engine)

    # -- the pipeline ---------------------------------------------------------------------

    def install(self) -> dict[str, Any]:
        """Install the pipeline under :attr:`pipeline`; the body as the cluster reads it back."""
        self.engine.put_search_pipeline(self.pipeline, pipeline_body(self.weights))
        installed = self.engine.get_search_pipeline(self.pipeline)
        if installed is None:
            raise RuntimeError(f"search pipeline {self.pipeline} did not install")
        return installed

    def remove(self) -> None:
        """Delete the pipeline (nothing when it is gone already)."""
        if self.engine.get_search_pipeline(self.pipeline) is not None:
            self.engine.request(
                "DELETE", f"/_search/pipeline/{self.pipeline}", what="deleting a search pipeline"
            )

    def __enter__(self) -> NativePeer:
        self.install()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.remove()

    # -- a query --------------------------------------------------------------------------

    def query(self, text: str) -> Answer:
        """Embed ``text`` and run the hybrid search through the pipeline, timed around both;
        its documents and stages: ``embed`` and ``search`` (the round trip) as the client
        measured them, ``took`` as the engine reports it."""
        t0 = time.perf_counter()
        cleaned = clean_query(text, self.params.max_query_chars)
        vector = [float(x) for x in self.embedder.embed_queries([cleaned])[0]]
        t1 = time.perf_counter()
        body = hybrid_body(
            cleaned,
            vector,
            self.policy,
            self.params,
            size=self.size,
            pagination_depth=self.pagination_depth,
        )
        resp = self.door.search(
            self.index,
            body,
            self.policy,
            what="native hybrid search",
            search_pipeline=self.pipeline,
        )
        t2 = time.perf_counter()
        ranked = ranked_docs(resp)
        ms = (time.perf_counter() - t0) * 1000
        stages = {
            "embed": (t1 - t0) * 1000,
            "search": (t2 - t1) * 1000,
            "took": float(resp.get("took", 0.0)),
        }
        return Answer(ms, ranked, stages)

    def records_seen(self, policy: dict[str, Any]) -> dict[str, int]:
        """How many records the peer's filter admits, and how many ``policy`` (ours' full
        filter) admits: equal when both systems search the same records."""
        return {
            "peer_filter": self.door.count(
                self.index, {"bool": {"filter": [self.policy]}}, self.policy
            ),
            "ours_policy": self.door.count(self.index, {"bool": {"filter": [policy]}}, policy),
        }
