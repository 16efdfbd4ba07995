"""The fused candidates of one search, from what its legs returned. Pure.

Client-side fusion (RRF or min-max linear, ``retrieval.fusion``) over the two legs' hits, or the
cluster's own fused order (the native ``rrf``/``linear`` retriever, OpenSearch's ``hybrid``
query) with each candidate's per-leg ranks and scores taken from the legs, so that both paths
give the same candidates with the same provenance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hybrid_es.identity import local_chunk_id
from hybrid_es.models import FusionPath
from hybrid_es.retrieval import fusion as fusion_mod
from hybrid_es.retrieval.stages import Candidate


def fuse_legs(
    path: FusionPath,
    sparse_hits: list[dict[str, Any]],
    dense_hits: list[dict[str, Any]],
    native: dict[str, Any] | None,
    *,
    alpha: fusion_mod.Alpha,
    rank_constant: int,
    window: int,
) -> tuple[list[Candidate], float | None]:
    """The fused candidates: client-side RRF or linear fusion over the legs, or the cluster's
    own fused order (``native``) with each candidate's per-leg ranks taken from the legs; and
    the dense weight linear fusion used (``fusion.dense_weight``, read once; None for RRF)."""
    w = window
    by_id: dict[str, dict[str, Any]] = {}
    for h in [*sparse_hits, *dense_hits, *((native or {}).get("hits", {}).get("hits", []))]:
        by_id.setdefault(h["_id"], h)
    sparse_scores = lucene_scores(sparse_hits)
    dense_scores = lucene_scores(dense_hits)
    weight = None
    if path in ("client-linear", "native-linear"):
        weight = fusion_mod.dense_weight(alpha, sparse_scores, dense_scores)
        fused = fusion_mod.hybrid_linear(sparse_scores, dense_scores, weight)
    else:
        # One leg alone is its own ranking: RRF over a single list preserves its order.
        fused = fusion_mod.rrf(
            [[h["_id"] for h in sparse_hits], [h["_id"] for h in dense_hits]],
            k=rank_constant,
        )
    if native is not None:
        # The cluster's order and scores are authoritative; ties are ordered by id, as the
        # client-side path orders them, so both paths give the same sequence. Each hit's
        # per-leg ranks come from the legs themselves.
        scored = sorted(
            ((float(h["_score"]), h["_id"]) for h in native["hits"]["hits"]),
            key=lambda x: (-x[0], x[1]),
        )
        ranks = {f.doc_id: f.ranks for f in fused}
        pairs = [(doc, score, ranks.get(doc, (None, None))) for score, doc in scored]
    else:
        pairs = [(f.doc_id, f.score, f.ranks) for f in fused[:w]]
    candidates = [
        Candidate(
            key=doc,
            chunk_id=local_id(by_id[doc]),
            index=by_id[doc]["_index"],
            source=by_id[doc].get("_source", {}),
            fused=score,
            sparse_rank=r[0],
            dense_rank=r[1],
            sparse_score=sparse_scores.get(doc),
            dense_score=dense_scores.get(doc),
        )
        for doc, score, r in pairs
    ]
    return candidates, weight


def lucene_score(hit: dict[str, Any]) -> float:
    """A hit's score as the engine computed it. Lucene scores are float32, and JSON carries the
    shortest decimal that reads back as that float32; read as a double it is off by up to half a
    float32 step, which min-max scaling over a narrow range (kNN scores 0.826..0.843) magnifies
    past 1e-6. Rounding back to float32 recovers the engine's exact value."""
    return float(np.float32(hit["_score"]))


def lucene_scores(hits: list[dict[str, Any]]) -> dict[str, float]:
    """Each hit's :func:`lucene_score` by id, the leg's scores rounded to float32 in one numpy
    call rather than one per hit (the same values)."""
    scores = np.asarray([h["_score"] for h in hits], dtype=np.float32).tolist()
    return {h["_id"]: s for h, s in zip(hits, scores, strict=True)}


def local_id(hit: dict[str, Any]) -> str:
    """A returned chunk's tenant-local id (the stored ``chunk_id``, else from its key)."""
    return str(hit.get("_source", {}).get("chunk_id") or local_chunk_id(hit["_id"]))
