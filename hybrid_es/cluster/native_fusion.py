"""Whether the engine fuses a hybrid search natively, asked of the live cluster, never
inferred from a version alone.

One search of a pattern that matches no index, with the very request shape the searcher sends:
read-only, and open to a least-privileged reader. Elasticsearch is asked for its ``rrf``
retriever; OpenSearch for the ``hybrid`` query through the fusion's own search pipeline (which
also finds where its RRF processor reads the rank constant). The searcher and the capability
probe both ask here; ``fuses_per_shard`` says whether that native fusion ranks per shard.
"""

from __future__ import annotations

from typing import Any

from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import RankConstantAt, pipeline_definition
from hybrid_es.errors import EngineError

_PROBE_PATTERN = "hybrid-es-capability-probe-nonexistent*"


OPENSEARCH_MINIMUM = (2, 19)
"""The first OpenSearch with the ``score-ranker-processor`` (native RRF) that hybrid-es needs for
native fusion; older versions are served by the client-side fusion."""
NATIVE_FUSION_PLUGIN = "opensearch-neural-search"


def native_fusion_works(engine: Engine, method: str) -> tuple[bool, str]:
    """Whether the engine runs ``method`` (``rrf`` or ``linear``) fusion natively, and why not.

    Read-only, and open to a least-privileged reader: one search of a pattern that matches no
    index, with the very request shape the searcher sends.
    """
    if engine.flavor == "opensearch":
        return hybrid_works(engine, method)
    if method == "linear":
        return False, (
            "linear: Elasticsearch's linear retriever normalises min-max differently from "
            "hybrid-es (and OpenSearch); fused client-side"
        )
    return retriever_works(engine, method)


def fuses_per_shard(engine: Engine) -> bool:
    """Whether the engine's native hybrid fusion ranks within each shard: OpenSearch before 3.5
    (neural-search#1718). Elasticsearch's rrf retriever fuses the global legs."""
    if engine.flavor != "opensearch":
        return False
    return engine.version in ("", "unknown") or version_tuple(engine.version) < (3, 5)


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for p in version.split(".")[:3]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def hybrid_works(engine: Engine, method: str) -> tuple[bool, str]:
    """Run a ``hybrid`` query through the fusion's own pipeline (inline) on no index. For RRF it
    also finds where this neural-search reads the rank constant (``engine.rrf_rank_constant_at``):
    the 2.19 place first, because 3.x refuses it loudly while 2.19 would silently ignore the
    3.x place."""
    if engine.version not in ("", "unknown") and version_tuple(engine.version) < OPENSEARCH_MINIMUM:
        minimum = ".".join(map(str, OPENSEARCH_MINIMUM))
        return False, (
            f"{method}: OpenSearch {engine.version} is older than {minimum}, the minimum for "
            "native fusion (score-ranker-processor); fused client-side"
        )
    places: tuple[RankConstantAt, ...] = ("parameters", "combination")
    reason = ""
    for place in places if method == "rrf" else places[:1]:
        pipeline = pipeline_definition(method, rank_constant=60, alpha=0.5, rank_constant_at=place)
        body = {
            "size": 1,
            "query": {"hybrid": {"queries": [{"match_all": {}}, {"match_all": {}}]}},
            "search_pipeline": pipeline,
        }
        try:
            engine.search(
                _PROBE_PATTERN, body, allow_no_indices=True, ignore_unavailable=True, what="probe"
            )
        except EngineError as exc:
            reason = exc.message[:200]
            if "supported parameters are" in reason:
                continue  # 3.x: the rank constant belongs in the combination itself
            if "unknown query [hybrid]" in reason:
                return False, (
                    f"{method}: no hybrid query ({NATIVE_FUSION_PLUGIN} is missing); fused "
                    "client-side with the same semantics"
                )
            break
        if method == "rrf":
            engine.rrf_rank_constant_at = place
        return True, ""
    return False, f"{method}: native fusion probe failed ({reason}); fused client-side"


def retriever_works(engine: Engine, kind: str) -> tuple[bool, str]:
    leaf: dict[str, Any] = {"standard": {"query": {"match_all": {}}}}
    if kind == "rrf":
        body: dict[str, Any] = {"rrf": {"retrievers": [leaf, leaf], "rank_window_size": 10}}
    else:
        retrievers = [{"retriever": leaf, "weight": 1.0}, {"retriever": leaf, "weight": 1.0}]
        body = {"linear": {"retrievers": retrievers, "rank_window_size": 10}}
    try:
        engine.search(
            _PROBE_PATTERN,
            {"retriever": body, "size": 1},
            allow_no_indices=True,
            ignore_unavailable=True,
            what="capability probe",
        )
        return True, ""
    except EngineError as exc:
        reason = exc.message[:200]
        if "unknown retriever" in reason or "does not support this retriever" in reason:
            return False, f"{kind}: the cluster has no {kind} retriever (no rank-rrf module)"
        if exc.status == 403 or "licen" in reason.lower():
            return False, f"{kind}: refused by the licence ({reason})"
        return False, f"{kind}: probe failed: {reason}"
