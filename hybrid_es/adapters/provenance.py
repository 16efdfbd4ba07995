"""What every adapter shares, without importing any framework: the principal check and the
provenance metadata that each framework's document carries.

An adapter's only way to search is :func:`search`: the caller's principal (checked here) and a
:class:`RequestScope` go to :meth:`HybridSearcher.search`, which builds the policy filter into every
leg. Nothing in the query text is read for who is asking.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hybrid_es.errors import PolicyViolationError
from hybrid_es.models import Hit, Principal, RequestScope, SearchResponse
from hybrid_es.retrieval.searcher import HybridSearcher

if TYPE_CHECKING:
    from hybrid_es.retrieval.async_searcher import AsyncHybridSearcher

NAMESPACE = "hybrid_es"
"""The one metadata key that holds the hit's provenance; every other key is the document's own."""
PROVENANCE_KEYS = (
    "chunk_id",
    "doc_id",
    "tenant",
    "index",
    "source_version",
    "sparse_rank",
    "dense_rank",
    "sparse_score",
    "dense_score",
    "fused_score",
    "rerank_score",
    "score",
    "final_rank",
    "fusion_path",
    "authorization_allowed",
    "authorization",
    "policy_version",
    "query_hash",
)
"""The keys of ``metadata[NAMESPACE]`` on every adapter's document."""

DESCRIPTIVE_KEYS = ("title", "source_type", "valid_from", "valid_to")
"""The record's own fields an adapter's document carries at the top level beside the user's
metadata (where the record has them and the user's metadata has no key of the same name)."""


def require_principal(principal: object, where: str) -> Principal:
    """``principal`` if it is a :class:`Principal`; otherwise PolicyViolationError saying how to
    pass one. ``where`` names the call in the message (``invoke(query, principal=...)``)."""
    if isinstance(principal, Principal):
        return principal
    got = "none was given" if principal is None else f"got {type(principal).__name__}"
    raise PolicyViolationError(
        f"no principal: {where} needs the caller's hybrid_es.Principal ({got})",
        hint="pass the Principal built from your authenticated context on every call; the "
        "retriever never searches without one and never reads one from the query",
    )


def search(
    searcher: HybridSearcher,
    query: str,
    principal: object,
    scope: RequestScope | None,
    *,
    top_k: int,
    rerank: bool,
    where: str,
    filters: Mapping[str, Any] | None = None,
) -> tuple[Principal, SearchResponse]:
    """One :meth:`HybridSearcher.search` for a checked principal (``scope`` None: the question
    is about now), narrowed by ``filters`` in the neutral grammar of
    :mod:`hybrid_es.retrieval.filters` (each adapter translates its framework's language into
    it). Returns the principal and the response; raises what the searcher raises."""
    caller = require_principal(principal, where)
    response = searcher.search(
        query, caller, scope or RequestScope(), top_k=top_k, rerank=rerank, filters=filters
    )
    return caller, response


async def asearch(
    searcher: AsyncHybridSearcher,
    query: str,
    principal: object,
    scope: RequestScope | None,
    *,
    top_k: int,
    rerank: bool,
    where: str,
    filters: Mapping[str, Any] | None = None,
) -> tuple[Principal, SearchResponse]:
    """:func:`search` on an :class:`~hybrid_es.retrieval.async_searcher.AsyncHybridSearcher`
    (the adapters' async paths when they are given one)."""
    caller = require_principal(principal, where)
    response = await searcher.search(
        query, caller, scope or RequestScope(), top_k=top_k, rerank=rerank, filters=filters
    )
    return caller, response


def metadata(hit: Hit, response: SearchResponse, principal: Principal) -> dict[str, Any]:
    """A framework document's metadata for one hit, JSON-ready.

    The document's own metadata first, under the names the user gave at ingest (a file's
    ``path``, a URL, front matter, a custom ``team``); then the record's ``title``,
    ``source_type``, ``valid_from`` and ``valid_to`` where the user's metadata has no key of that
    name; and under :data:`NAMESPACE` the provenance (:data:`PROVENANCE_KEYS`): ids, tenant,
    source version, each leg's rank and score, the fused and rerank scores, ``score`` (rerank
    score where the hit was reranked, else the fused score), the authorization decision and the
    query's hash. The user's metadata is the document's data, as untrusted as its text: who asked
    and what was decided is only ever read from ``metadata["hybrid_es"]``, which no document can
    set (a stored key of that name is dropped here)."""
    meta: dict[str, Any] = {
        k: v for k, v in (hit.source.get("metadata") or {}).items() if k != NAMESPACE
    }
    own = {"title": hit.title, **{k: hit.source.get(k) for k in DESCRIPTIVE_KEYS[1:]}}
    for key, value in own.items():
        if value is not None and key not in meta:
            meta[key] = value
    meta[NAMESPACE] = {
        "chunk_id": hit.chunk_id,
        "doc_id": hit.doc_id,
        "tenant": str(hit.source.get("tenant", principal.tenant)),
        "index": hit.index,
        "source_version": hit.source_version,
        "sparse_rank": hit.sparse_rank,
        "dense_rank": hit.dense_rank,
        "sparse_score": hit.sparse_score,
        "dense_score": hit.dense_score,
        "fused_score": hit.fused_score,
        "rerank_score": hit.rerank_score,
        "score": score(hit),
        "final_rank": hit.final_rank,
        "fusion_path": hit.fusion_path,
        "authorization_allowed": hit.authorization.allowed,
        "authorization": hit.authorization.summary(),
        "policy_version": hit.authorization.policy_version,
        "query_hash": response.query_hash,
    }
    return meta


def score(hit: Hit) -> float:
    """The score a framework ranks by: the rerank score where there is one, else the fused."""
    return hit.rerank_score if hit.rerank_score is not None else hit.fused_score
