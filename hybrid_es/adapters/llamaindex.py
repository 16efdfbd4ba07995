"""A LlamaIndex retriever over :class:`~hybrid_es.HybridSearcher`.

LlamaIndex's ``retrieve`` takes only the query, so the principal is bound per request: build the
retriever with the caller's principal, or derive one from a shared retriever with
:meth:`HybridEsRetriever.for_principal` (cheap: the searcher is shared)::

    shared = HybridEsRetriever(searcher, top_k=5)            # holds no principal: refuses to search
    nodes = shared.retrieve_for(principal, "KYO-H12 April rate")
    engine = RetrieverQueryEngine.from_args(shared.for_principal(principal), llm=llm)

A retriever without a principal refuses to search (PolicyViolationError); the query text (or a
``QueryBundle``'s) is never read for it. ``filters`` narrows the search in LlamaIndex's own
language, a ``MetadataFilters`` (``hybrid_es.adapters.llamaindex_filters`` translates it; a
filter only ever narrows what the principal may read): given to the constructor it holds for
every search, and ``for_principal`` / ``retrieve_for`` take one per request instead::

    team = MetadataFilters(filters=[MetadataFilter(key="team", value="contracts")])
    nodes = shared.retrieve_for(principal, "KYO-H12 April rate", filters=team)

A filter that cannot be translated, or names a key that is not declared filterable (a policy
field never is), raises LlamaIndexFilterError (a FilterError) when the retriever is built.

Each ``NodeWithScore`` holds a ``TextNode`` whose id is the chunk id, whose source node is the
document, and whose metadata is the document's own (under the user's names) with the hit's
provenance under ``hybrid_es``; only the title reaches an LLM prompt or an embedding.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    QueryType,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import MetadataFilters

from hybrid_es.adapters import provenance
from hybrid_es.adapters.llamaindex_filters import check_llamaindex_filters
from hybrid_es.errors import BadQueryError
from hybrid_es.models import Principal, Record, RequestScope, SearchResponse
from hybrid_es.retrieval.async_searcher import AsyncHybridSearcher
from hybrid_es.retrieval.searcher import MAX_TOP_K, HybridSearcher

WHERE = "HybridEsRetriever(principal=...) or .for_principal(principal)"
PROMPT_KEYS = ("title",)
"""The only metadata key LlamaIndex may put into the text it sends to an LLM or an embedder:
scores and ids are for the application, and the document's own metadata is untrusted data that
the application cites, not text for the model to follow."""


def chunk_node(chunk_id: str, text: str, metadata: dict[str, Any], source: str) -> TextNode:
    """The LlamaIndex node for one stored chunk: its id the chunk id, its source node
    ``source``; only the title (:data:`PROMPT_KEYS`) reaches an LLM prompt or an embedding.
    Pure (the vector store builds its nodes with it too)."""
    hidden = [k for k in metadata if k not in PROMPT_KEYS]
    return TextNode(
        id_=chunk_id,
        text=text,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=hidden,
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=source)},
    )


def record_metadata(record: Record, principal: Principal) -> dict[str, Any]:
    """A listed chunk's metadata (``HybridSearcher.records``): the document's own, its title,
    and under ``hybrid_es`` the ids, tenant, index and version (a listing has no scores)."""
    meta: dict[str, Any] = {k: v for k, v in record.metadata.items() if k != provenance.NAMESPACE}
    if record.title and "title" not in meta:
        meta["title"] = record.title
    meta[provenance.NAMESPACE] = {
        "chunk_id": record.chunk_id,
        "doc_id": record.doc_id,
        "tenant": str(record.source.get("tenant", principal.tenant)),
        "index": record.index,
        "source_version": record.source_version,
    }
    return meta


class HybridEsRetriever(BaseRetriever):
    """Permission-safe hybrid retrieval as a LlamaIndex ``BaseRetriever``.

    ``principal`` is the caller this retriever searches for (None: it refuses to search until
    given one with :meth:`for_principal` or :meth:`retrieve_for`); ``scope`` the request scope
    (None: the question is about now); ``top_k`` the number of nodes; ``rerank`` whether the
    searcher's cross-encoder reorders the fused head; ``filters`` a ``MetadataFilters`` that
    narrows every search (checked here against the searcher's declared fields:
    LlamaIndexFilterError).
    """

    def __init__(
        self,
        searcher: HybridSearcher,
        principal: Principal | None = None,
        *,
        scope: RequestScope | None = None,
        top_k: int = 10,
        rerank: bool = True,
        filters: MetadataFilters | None = None,
        callback_manager: CallbackManager | None = None,
        async_searcher: AsyncHybridSearcher | None = None,
    ) -> None:
        if not 1 <= top_k <= MAX_TOP_K:
            raise BadQueryError(f"top_k must be 1..{MAX_TOP_K}, got {top_k}")
        self._neutral = check_llamaindex_filters(filters, searcher.filterable_fields)
        super().__init__(callback_manager=callback_manager)
        self.searcher = searcher
        self.principal = principal
        self.scope = scope
        self.top_k = top_k
        self.rerank = rerank
        self.filters = filters
        self.async_searcher = async_searcher

    def for_principal(
        self,
        principal: Principal,
        scope: RequestScope | None = None,
        *,
        filters: MetadataFilters | None = None,
    ) -> HybridEsRetriever:
        """A retriever for ``principal`` (and ``scope`` and ``filters``, else this one's)
        sharing this one's searcher, settings and callback manager: one per request."""
        return HybridEsRetriever(
            self.searcher,
            provenance.require_principal(principal, "for_principal(principal)"),
            scope=scope or self.scope,
            top_k=self.top_k,
            rerank=self.rerank,
            filters=self.filters if filters is None else filters,
            callback_manager=self.callback_manager,
            async_searcher=self.async_searcher,
        )

    def retrieve_for(
        self,
        principal: Principal,
        query: QueryType,
        scope: RequestScope | None = None,
        *,
        filters: MetadataFilters | None = None,
    ) -> list[NodeWithScore]:
        """``retrieve(query)`` as ``principal`` (narrowed by ``filters``, else this one's), in
        one call."""
        return self.for_principal(principal, scope, filters=filters).retrieve(query)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return _nodes(*provenance.search(self.searcher, **self._ask(query_bundle)))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        if self.async_searcher is None:  # the blocking search, in a thread off the event loop
            return await asyncio.to_thread(self._retrieve, query_bundle)
        return _nodes(*await provenance.asearch(self.async_searcher, **self._ask(query_bundle)))

    def _ask(self, query_bundle: QueryBundle) -> dict[str, Any]:
        """The search of one retrieve, as this retriever's principal, scope and filters."""
        return {
            "query": query_bundle.query_str,
            "principal": self.principal,
            "scope": self.scope,
            "top_k": self.top_k,
            "rerank": self.rerank,
            "where": WHERE,
            "filters": self._neutral,
        }


def _nodes(caller: Principal, response: SearchResponse) -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=chunk_node(
                hit.chunk_id, hit.text, provenance.metadata(hit, response, caller), hit.doc_id
            ),
            score=provenance.score(hit),
        )
        for hit in response.hits
    ]
