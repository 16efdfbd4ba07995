"""The pure stages of a search and the values they pass: authorize -> rerank -> assemble.

``searcher.HybridSearcher`` does the I/O stages (prepare, retrieve); these take its typed
results and never touch the network. Each stage has typed input and output, so a second
reranker changes :func:`rerank_stage` only, and an engine dialect changes none of them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hybrid_es.encoders.embedder import ensure_loaded
from hybrid_es.encoders.reranker import Reranker, rerank_passage
from hybrid_es.errors import PolicyViolationError
from hybrid_es.hashing import keyed_digest
from hybrid_es.models import (
    AuthorizationDecision,
    FusionPath,
    Hit,
    Principal,
    RequestScope,
    SearchResponse,
)
from hybrid_es.retrieval import fusion as fusion_mod
from hybrid_es.retrieval.policy import authorizer

log = logging.getLogger(__name__)

REFUSED_ANSWER = "a retrieved record failed the policy re-check; refusing to answer (fail closed)"
"""What a caller and a trace learn when the cluster-side filter and the Python rules disagree:
nothing about the record. The detail goes to this module's DEBUG log only."""


@dataclass
class Candidate:
    """One fused candidate, before authorization: its stored key, tenant-local chunk id,
    ``_source`` and provenance so far."""

    key: str
    chunk_id: str
    index: str
    source: dict[str, Any]
    fused: float
    sparse_rank: int | None = None
    dense_rank: int | None = None
    sparse_score: float | None = None
    dense_score: float | None = None


@dataclass(frozen=True)
class Prepared:
    """A validated search: the caller, what is asked and where it runs (the prepare stage)."""

    text: str
    principal: Principal
    scope: RequestScope
    now: datetime
    top_k: int
    rerank: bool
    rerank_depth: int
    index: str
    policy: dict[str, Any]
    trace_id: str = ""
    """The search's trace id: sent as ``X-Opaque-Id`` with its requests, kept in its trace."""


@dataclass
class Retrieved:
    """The retrieve stage's output: fused candidates, the path that ran, what each leg returned,
    a keyed digest of the bodies sent and the legs that read only the start of the query."""

    path: FusionPath
    reason: str
    candidates: list[Candidate]
    legs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    digest: str = ""
    truncated: tuple[str, ...] = ()
    dense_weight: float | None = None
    """The dense leg's weight in linear fusion for this query (None: RRF or one leg)."""
    embedder: str | None = None
    """The model that embedded the query (None: no dense leg ran)."""


@dataclass(frozen=True)
class Authorized:
    """The candidates with their authorization decisions (every one allowed)."""

    candidates: list[Candidate]
    decisions: dict[str, AuthorizationDecision]


@dataclass(frozen=True)
class Reranked:
    """The final order, the reranker's scores and inputs, and what the stage did."""

    candidates: list[Candidate]
    scores: dict[str, float]
    inputs: tuple[str, ...]
    reranked: bool
    note: str


def authorize_stage(req: Prepared, candidates: list[Candidate]) -> Authorized:
    """Defence in depth: the same rules, evaluated on what came back, before any further use.

    Raises PolicyViolationError naming no record when one fails (the cluster-side filter and
    the rules disagree): the caller, the error hook and a trace learn nothing about it.
    """
    decisions: dict[str, AuthorizationDecision] = {}
    decide = authorizer(req.principal, req.scope, req.now)
    for c in candidates:
        d = decide(c.source)
        if not d.allowed or c.source.get("tenant") != req.principal.tenant:
            log.debug("policy re-check failed for %s: %s", c.key, d.summary())
            raise PolicyViolationError(
                REFUSED_ANSWER,
                hint="the cluster-side filter and the policy rules disagree: report this",
            )
        decisions[c.key] = d
    return Authorized(candidates, decisions)


def rerank_stage(
    req: Prepared,
    authorized: Authorized,
    reranker: Reranker | None,
    timings: dict[str, float],
) -> Reranked:
    """The cross-encoder over the fused head (``rerank_depth``); the rest of the fused list
    follows the reranked head. Says in ``note`` why it did not rerank, when it did not."""
    candidates = authorized.candidates
    if not req.rerank:
        return Reranked(candidates, {}, (), False, "reranking disabled for this query")
    if reranker is None:
        return Reranked(
            candidates, {}, (), False, "no reranker configured (set HYBRID_ES_RERANKER_MODEL)"
        )
    covered, script = reranker.covers(req.text)
    if not covered:
        trained = ", ".join(sorted(reranker.scripts or ()))
        note = (
            f"not reranked: the query is in {script} script, outside what "
            f"{reranker.model_name} was trained on ({trained})"
        )
        return Reranked(candidates, {}, (), False, note)
    pool, tail = candidates[: req.rerank_depth], candidates[req.rerank_depth :]
    loaded = ensure_loaded(reranker)  # a first load is no reranking time
    if loaded:
        timings["model_load"] = round(timings.get("model_load", 0.0) + loaded, 3)
    t = time.perf_counter()
    scores = reranker.score(req.text, [rerank_passage(c.source) for c in pool])
    timings["rerank"] = ms_since(t)
    by_key = {c.key: s for c, s in zip(pool, scores, strict=True)}
    # The first stage's standing as a score that falls with rank (fused scores of the linear
    # and RRF paths are on different scales; ranks are comparable).
    standing = {c.key: -float(i) for i, c in enumerate(pool)}
    by_id = {c.key: c for c in pool}
    w = reranker.weight
    ordered = [by_id[k] for k in fusion_mod.blend(standing, by_key, w)] + tail
    note = f"cross-encoder {reranker.model_name} over the fused top {len(pool)}" + (
        f", blended with the fused order (weight {w:g})" if w < 1.0 else ""
    )
    return Reranked(ordered, by_key, tuple(c.chunk_id for c in pool), True, note)


def assemble(
    req: Prepared,
    retrieved: Retrieved,
    authorized: Authorized,
    reranked: Reranked,
    timings: dict[str, float],
    hash_key: bytes,
) -> SearchResponse:
    """The response: the top ``top_k`` hits with provenance, the legs and the audit fields."""
    hits = tuple(
        Hit(
            chunk_id=c.chunk_id,
            doc_id=str(c.source.get("doc_id", "")),
            index=c.index,
            source_version=int(c.source.get("version", 0) or 0),
            title=str(c.source.get("title", "")),
            text=str(c.source.get("raw_chunk_text", "")),
            sparse_rank=c.sparse_rank,
            dense_rank=c.dense_rank,
            sparse_score=c.sparse_score,
            dense_score=c.dense_score,
            fused_score=c.fused,
            rerank_score=reranked.scores.get(c.key),
            final_rank=i,
            fusion_path=retrieved.path,
            authorization=authorized.decisions[c.key],
            source=c.source,
        )
        for i, c in enumerate(reranked.candidates[: req.top_k], start=1)
    )
    return SearchResponse(
        query_hash=keyed_digest(hash_key, req.text),
        fusion_path=retrieved.path,
        fusion_reason=retrieved.reason,
        reranked=reranked.reranked,
        rerank_note=reranked.note,
        hits=hits,
        candidates=len(authorized.decisions),
        timings_ms=timings,
        reranker_inputs=reranked.inputs,
        legs=retrieved.legs,
        request_digest=retrieved.digest,
        trace_id=req.trace_id,
        truncated=retrieved.truncated,
        dense_weight=retrieved.dense_weight,
        embedder=retrieved.embedder,
    )


def ms_since(t0: float) -> float:
    """Milliseconds since ``t0`` (a ``time.perf_counter()``), rounded to microseconds."""
    return round((time.perf_counter() - t0) * 1000.0, 3)
