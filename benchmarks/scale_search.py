"""Searching a growth-benchmark index: latency of each path and kNN recall against the exact top.

One ``HybridSearcher`` per measured path (BM25 alone, the fused hybrid, and the kNN leg at each
``num_candidates``), every query vector already in its cache, so what is timed is the cluster's
part of a search. The paths take turns on each query, so a burst of load on a shared machine falls
on all of them alike. A second measurement sends the searcher's own kNN body with
``rescore_vector.oversample`` set per request, to see what rescoring buys a quantised index.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.scale_corpus import GROUP
from benchmarks.scale_options import CORPUS_STATE
from benchmarks.scale_stats import (
    chunk_number,
    latency_stats,
    mean4,
    recall_at_10,
)
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.dialects import Dialect
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import RetrievalParams
from hybrid_es.retrieval.query_vectors import QueryVectorCache
from hybrid_es.retrieval.searcher import HybridSearcher

WARM_UP = 5
"""Queries each path (or oversample setting) runs first, untimed."""


def principal(t: int) -> Principal:
    """The benchmark's reader in tenant ``t<t>``."""
    return Principal(tenant=f"t{t}", user_id="bench-reader", groups=(GROUP,))


def _searcher(
    engine: Engine, embedder: Embedder, index: str, pipeline: Any, **kwargs: Any
) -> HybridSearcher:
    return HybridSearcher(
        engine,
        embedder,
        index=index,
        pipeline=pipeline,
        fusion="client",
        corpus_state_index=CORPUS_STATE,
        **kwargs,
    )


def searchers(
    engine: Engine,
    embedder: Embedder,
    index: str,
    texts: list[str],
    qvecs: NDArray[np.float32],
    qtenants: NDArray[np.int64],
    ncs: Sequence[int],
    window: int,
) -> dict[str, HybridSearcher]:
    """One searcher per measured path, each with every query vector already in its cache."""
    out = {
        "bm25": _searcher(engine, embedder, index, "bm25"),
        "hybrid": _searcher(
            engine, embedder, index, "hybrid", params=RetrievalParams(window=window)
        ),
    }
    for nc in ncs:
        params = RetrievalParams(window=min(window, nc), num_candidates=nc)
        out[f"knn@{nc}"] = _searcher(engine, embedder, index, "dense", params=params)
    for s in out.values():
        for text, vec, t in zip(texts, qvecs, qtenants, strict=True):
            s.query_cache.put(
                QueryVectorCache.key(f"t{t}", embedder.model_id, text), [float(x) for x in vec]
            )
    return out


def measure_search(
    ss: dict[str, HybridSearcher],
    texts: list[str],
    qtenants: NDArray[np.int64],
    exact: NDArray[np.int64],
) -> dict[str, Any]:
    """p50/p95 of each path's total and retrieval ms, its largest embed ms (0 when cached), and
    recall@10 of each kNN path."""
    scope = RequestScope()
    for s in ss.values():  # warm-up, untimed: mapping check, corpus state, first queries
        for text, t in list(zip(texts, qtenants, strict=True))[:WARM_UP]:
            s.search(text, principal(int(t)), scope, top_k=10, rerank=False)
    total: dict[str, list[float]] = {n: [] for n in ss}
    retrieval: dict[str, list[float]] = {n: [] for n in ss}
    embeds: dict[str, list[float]] = {n: [] for n in ss}
    recalls: dict[str, list[float]] = {n: [] for n in ss if n.startswith("knn@")}
    # the paths take turns on each query, so a burst of load on this shared machine falls on
    # all of them alike
    for qn, (text, t) in enumerate(zip(texts, qtenants, strict=True)):
        for name, s in ss.items():
            resp = s.search(text, principal(int(t)), scope, top_k=10, rerank=False)
            total[name].append(resp.timings_ms["total"])
            retrieval[name].append(resp.timings_ms["retrieval"])
            embeds[name].append(resp.timings_ms.get("embed", 0.0))
            if name in recalls:
                got = [chunk_number(h.chunk_id) for h in resp.hits[:10]]
                recalls[name].append(recall_at_10(got, exact[qn]))
    out: dict[str, Any] = {"latency_ms": {}, "retrieval_ms": {}, "recall@10": {}, "embed_ms": {}}
    for name in ss:
        out["latency_ms"][name] = latency_stats(total[name])
        out["retrieval_ms"][name] = latency_stats(retrieval[name])
        out["embed_ms"][name] = round(max(embeds[name]), 3)
        if name in recalls:
            out["recall@10"][name.removeprefix("knn@")] = mean4(recalls[name])
    return out


def oversample_body(
    dialect: Dialect,
    vector: Sequence[float],
    policy: dict[str, Any],
    params: RetrievalParams,
    oversample: float,
) -> dict[str, Any]:
    """The kNN leg's body as the searcher builds it (``dialect.dense_body``), with
    ``rescore_vector.oversample`` set (0: no rescoring) and only ``chunk_id`` returned."""
    body = dialect.dense_body(vector, policy, params)
    body["retriever"]["knn"]["rescore_vector"] = {"oversample": oversample}
    body["_source"] = ["chunk_id"]
    return body


def measure_oversample(
    engine: Engine,
    index: str,
    qvecs: NDArray[np.float32],
    qtenants: NDArray[np.int64],
    exact: NDArray[np.int64],
    oversamples: Sequence[float],
    num_candidates: int,
    window: int,
) -> dict[str, Any]:
    """The kNN leg's body as the searcher builds it (``dialect.dense_body``, the policy filter
    in it) with ``rescore_vector.oversample`` set per request (0: no rescoring; the mapping's
    default otherwise applies): recall@10 and the round trip per setting."""
    door = ChunksDoor(engine)  # every body checked for the policy filter, as the searcher's
    dialect = door.dialect
    params = RetrievalParams(window=window, num_candidates=num_candidates)
    now = datetime.now(UTC)
    times: dict[float, list[float]] = {o: [] for o in oversamples}
    recalls: dict[float, list[float]] = {o: [] for o in oversamples}
    for qn, (vec, t) in enumerate(zip(qvecs, qtenants, strict=True)):
        policy = policy_filter(principal(int(t)), RequestScope(), now)
        for o in oversamples:  # the settings take turns on each query
            body = oversample_body(dialect, [float(x) for x in vec], policy, params, o)
            t0 = time.perf_counter()
            resp = door.search(index, body, policy, what="searching (oversample)")
            if qn >= WARM_UP:  # the first five warm up
                times[o].append((time.perf_counter() - t0) * 1000)
            got = [chunk_number(h["_source"]["chunk_id"]) for h in resp["hits"]["hits"][:10]]
            recalls[o].append(recall_at_10(got, exact[qn]))
    return {
        f"{o:g}": {"recall@10": mean4(recalls[o]), "ms": latency_stats(times[o])}
        for o in oversamples
    }
