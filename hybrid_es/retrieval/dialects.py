"""The request bodies that differ between the engines: the kNN query shape, the native fusion, and
the policy check that walks them. Pure: values in, ``dict`` bodies out.

Both engines get the same sparse query (``queries.sparse_query``, the policy in ``bool.filter``)
and the same filter inside the kNN search, so the two fusion paths, and the two engines, score
exactly the same candidates.

- **Elasticsearch**: each leg is a retriever (``standard``, ``knn``) in a search body; native
  fusion is the ``rrf`` retriever over the two (``queries``).
- **OpenSearch**: each leg is a query (``bool``, and ``knn`` with the lucene engine's efficient
  filter); native fusion is the ``hybrid`` query over the two, fused by the search pipeline that
  bootstrap installs (``score-ranker-processor`` for RRF, ``normalization-processor`` for
  min-max linear). OpenSearch 2.19 rejects a filter on the ``hybrid`` query itself, so the policy
  sits inside each sub-query. The pipeline travels inline in the body (a temporary pipeline, from
  the same file): ``_msearch`` refuses ``search_pipeline`` in its URL and headers, the request's
  own rank constant and weights apply, and a pipeline edited in the cluster cannot change what a
  search fuses with.

The OpenSearch bodies are dicts: ``elasticsearch.dsl`` has no class for the ``hybrid`` query, and
its ``Knn`` is Elasticsearch's kNN query (``field`` and ``query_vector`` keys), not OpenSearch's
(keyed by the field, with ``vector`` and ``method_parameters``). Only the sparse query's scoring
clauses come from the DSL, as on Elasticsearch (``queries``): they read the same on both engines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from hybrid_es.cluster.templates import RankConstantAt, pipeline_definition
from hybrid_es.errors import CapabilityMissingError, PolicyViolationError
from hybrid_es.retrieval.queries import (
    RetrievalParams,
    assert_policy,
    check_knn,
    check_query,
    check_sort,
    knn_retriever,
    rrf_retriever,
    search_body,
    sparse_query,
    standard_retriever,
)

NativeMethod = Literal["rrf", "linear"]


class Dialect(Protocol):
    flavor: str

    def sparse_body(
        self, text: str, policy: dict[str, Any], params: RetrievalParams
    ) -> dict[str, Any]: ...

    def dense_body(
        self, vector: Sequence[float], policy: dict[str, Any], params: RetrievalParams
    ) -> dict[str, Any]: ...

    def native(
        self,
        text: str,
        vector: Sequence[float],
        policy: dict[str, Any],
        params: RetrievalParams,
        method: NativeMethod,
        alpha: float,
        rank_constant_at: RankConstantAt = "parameters",
    ) -> dict[str, Any]: ...

    def assert_policy(self, body: dict[str, Any], policy: dict[str, Any]) -> int: ...


class ElasticsearchDialect:
    flavor = "elasticsearch"

    def sparse_body(
        self, text: str, policy: dict[str, Any], params: RetrievalParams
    ) -> dict[str, Any]:
        leaf = standard_retriever(text, policy, **_sparse_options(params))
        return search_body(leaf, params.window)

    def dense_body(
        self, vector: Sequence[float], policy: dict[str, Any], params: RetrievalParams
    ) -> dict[str, Any]:
        return search_body(knn_retriever(vector, policy, params), params.window)

    def native(
        self,
        text: str,
        vector: Sequence[float],
        policy: dict[str, Any],
        params: RetrievalParams,
        method: NativeMethod,
        alpha: float,
        rank_constant_at: RankConstantAt = "parameters",
    ) -> dict[str, Any]:
        if method != "rrf":
            raise CapabilityMissingError(
                "native min-max linear fusion runs on OpenSearch only (Elasticsearch's linear "
                "retriever normalises differently)",
                hint="use fusion='auto' or 'client' for linear fusion on Elasticsearch",
            )
        leaves = [
            standard_retriever(text, policy, **_sparse_options(params)),
            knn_retriever(vector, policy, params),
        ]
        return search_body(rrf_retriever(leaves, params), params.window)

    def assert_policy(self, body: dict[str, Any], policy: dict[str, Any]) -> int:
        return assert_policy(body, policy)


def _sparse_options(params: RetrievalParams) -> dict[str, Any]:
    """The sparse leg's options from the retrieval knobs (the same on both engines)."""
    return {"with_client_terms": params.client_terms, "max_terms": params.max_query_terms}


def knn_query(
    vector: Sequence[float], policy: dict[str, Any], params: RetrievalParams
) -> dict[str, Any]:
    """OpenSearch's kNN query with the lucene engine's efficient filter: the filter is applied
    during the graph search, so ``k`` neighbours all pass it. ``ef_search`` is Elasticsearch's
    ``num_candidates`` (how widely the graph is explored); the search's ``size`` keeps the
    window."""
    return {
        "knn": {
            params.vector_field: {
                "vector": [float(x) for x in vector],
                "k": params.window,
                "method_parameters": {"ef_search": params.num_candidates},
                "filter": policy,
            }
        }
    }


def _body(query: dict[str, Any], size: int, *, count: bool = False) -> dict[str, Any]:
    """A leg (or the fused search): ids and scores only, as ``queries.search_body``; hits are
    not counted (``track_total_hits`` off) unless ``count``."""
    body: dict[str, Any] = {"query": query, "size": size, "_source": False}
    if not count:
        body["track_total_hits"] = False
    return body


class OpenSearchDialect:
    flavor = "opensearch"

    def sparse_body(
        self, text: str, policy: dict[str, Any], params: RetrievalParams
    ) -> dict[str, Any]:
        query = sparse_query(text, policy, **_sparse_options(params))
        return _body(query, params.window)

    def dense_body(
        self, vector: Sequence[float], policy: dict[str, Any], params: RetrievalParams
    ) -> dict[str, Any]:
        return _body(knn_query(vector, policy, params), params.window)

    def native(
        self,
        text: str,
        vector: Sequence[float],
        policy: dict[str, Any],
        params: RetrievalParams,
        method: NativeMethod,
        alpha: float,
        rank_constant_at: RankConstantAt = "parameters",
    ) -> dict[str, Any]:
        hybrid = {
            "hybrid": {
                "queries": [
                    sparse_query(text, policy, **_sparse_options(params)),
                    knn_query(vector, policy, params),
                ]
            }
        }
        # The hybrid query keeps the engine's hit count: neural-search computes its total from
        # the sub-queries' own counts (neural-search#756, #1346), and its collector is the one
        # place a change to counting has broken before (#497).
        body = _body(hybrid, params.window, count=True)
        body["search_pipeline"] = pipeline_definition(
            method,
            rank_constant=params.rank_constant,
            alpha=alpha,
            rank_constant_at=rank_constant_at,
        )
        return body

    def assert_policy(self, body: dict[str, Any], policy: dict[str, Any]) -> int:
        return assert_policy_opensearch(body, policy)


_ALLOWED_TOP_OS = {
    "query",
    "size",
    "_source",
    "timeout",
    "track_total_hits",
    "suggest",
    "search_pipeline",
    "sort",
    "search_after",
}
_FUSION_PROCESSORS = {"score-ranker-processor", "normalization-processor"}


def assert_policy_opensearch(body: dict[str, Any], policy: dict[str, Any]) -> int:
    """Refuse an OpenSearch body in which any scoring query lacks ``policy``; the number of
    leaves checked. The query is a ``bool`` with the policy in its filter, a ``knn`` whose filter
    is the policy, or a ``hybrid`` of those; anything else, and unknown top-level keys, are
    refused (they could score records outside the filter). A ``suggest`` section is allowed: it
    only ever names a keyword field (see ``dls_suggest``) and scores nothing."""
    unknown = set(body) - _ALLOWED_TOP_OS
    if unknown:
        raise PolicyViolationError(f"request body has unexpected top-level keys {sorted(unknown)}")
    check_sort(body.get("sort"))
    if "search_pipeline" in body:
        _check_pipeline(body["search_pipeline"])
    query = body.get("query")
    if not isinstance(query, dict) or len(query) != 1:
        raise PolicyViolationError("request body has no single query to check")
    if "hybrid" in query:
        subs = query["hybrid"].get("queries") if isinstance(query["hybrid"], dict) else None
        if not subs or set(query["hybrid"]) - {"queries", "pagination_depth"}:
            raise PolicyViolationError("a hybrid query needs its sub-queries, and nothing else")
        return sum(_check_leaf(q, policy) for q in subs)
    return _check_leaf(query, policy)


def _check_pipeline(pipeline: Any) -> None:
    """Only fusion processors over the results: a request processor could rewrite the query
    (and drop its filter) after this check."""
    if not isinstance(pipeline, dict) or set(pipeline) != {"phase_results_processors"}:
        raise PolicyViolationError("a search pipeline may hold only phase_results_processors")
    for proc in pipeline["phase_results_processors"]:
        if not isinstance(proc, dict) or not set(proc) <= _FUSION_PROCESSORS:
            raise PolicyViolationError(f"search pipeline processor not allowed: {str(proc)[:80]}")


def _check_leaf(query: Any, policy: dict[str, Any]) -> int:
    if not isinstance(query, dict) or len(query) != 1:
        raise PolicyViolationError(f"malformed query {str(query)[:80]}")
    ((kind, spec),) = query.items()
    if kind == "bool":
        check_query(query, policy)
        return 1
    if kind == "knn" and isinstance(spec, dict) and len(spec) == 1:
        (inner,) = spec.values()
        check_knn(inner, policy)
        return 1
    raise PolicyViolationError(f"query type {kind!r} is not allowed (cannot verify its filter)")


def dls_suggest() -> dict[str, Any]:
    """The suggest section that lets a ``hybrid`` query run for a document-level-security user on
    OpenSearch 2.19 (neural-search#1303: the security plugin otherwise wraps the hybrid query,
    which then refuses to run). A term suggester on the tenant keyword: it scores nothing, and
    document-level security still filters every hit, count and leg (tests prove both)."""
    return {"hybrid-es-dls": {"text": "x", "term": {"field": "tenant"}}}


_DLS_REFUSALS = (
    "must be a top level query",  # 2.19: the security plugin wrapped the hybrid query
    "cannot be cast to class org.opensearch.neuralsearch.query.HybridQuery",  # 3.x, one DLS role
)


def is_hybrid_dls_refusal(message: str) -> bool:
    """Whether an error is OpenSearch refusing a ``hybrid`` query for a document-level-security
    user (neural-search#1303; 2.19 answers 400, 3.6 a ClassCastException with HTTP 500)."""
    return any(r in message for r in _DLS_REFUSALS)


def dialect_for(flavor: str) -> Dialect:
    return OpenSearchDialect() if flavor == "opensearch" else ElasticsearchDialect()
