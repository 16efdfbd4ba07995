"""A LlamaIndex retriever over :class:`~hybrid_es.HybridSearcher`.

LlamaIndex's ``retrieve`` takes only the query, so the principal is bound per request: build the
retriever with the caller's principal, or derive one from a shared retriever with
:meth:`HybridEsRetriever.for_principal` (cheap: the searcher is shared)::

    shared = HybridEsRetriever(searcher, top_k=5)            # holds no principal: refuses to search
    nodes = shared.retrieve_for(principal, "KYO-H12 April rate")
    engine = RetrieverQueryEngine.from_args(shared.for_principal(principal), llm=llm)

A retriever without a principal refuses to search (PolicyViolationError); the query text (or a
``QueryBundle``'s) is never read for it. Each ``NodeWithScore`` holds a ``TextNode`` whose id is
the chunk id, whose source node is the document, and whose metadata is the document's own (under
the user's names) with the hit's provenance under ``hybrid_es``; only the title reaches an LLM
prompt or an embedding.
"""

from __future__ import annotations

import asyncio

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

from hybrid_es.adapters import provenance
from hybrid_es.errors import BadQueryError
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.searcher import MAX_TOP_K, HybridSearcher

WHERE = "HybridEsRetriever(principal=...) or .for_principal(principal)"
PROMPT_KEYS = ("title",)
"""The only metadata key LlamaIndex may put into the text it sends to an LLM or an embedder:
scores and ids are for the application, and the document's own metadata is untrusted data that
the application cites, not text for the model to follow."""


class HybridEsRetriever(BaseRetriever):
    """Permission-safe hybrid retrieval as a LlamaIndex ``BaseRetriever``.

    ``principal`` is the caller this retriever searches for (None: it refuses to search until
    given one with :meth:`for_principal` or :meth:`retrieve_for`); ``scope`` the request scope
    (None: the question is about now); ``top_k`` the number of nodes; ``rerank`` whether the
    searcher's cross-encoder reorders the fused head.
    """

    def __init__(
        self,
        searcher: HybridSearcher,
        principal: Principal | None = None,
        *,
        scope: RequestScope | None = None,
        top_k: int = 10,
        rerank: bool = True,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if not 1 <= top_k <= MAX_TOP_K:
            raise BadQueryError(f"top_k must be 1..{MAX_TOP_K}, got {top_k}")
        super().__init__(callback_manager=callback_manager)
        self.searcher = searcher
        self.principal = principal
        self.scope = scope
        self.top_k = top_k
        self.rerank = rerank

    def for_principal(
        self, principal: Principal, scope: RequestScope | None = None
    ) -> HybridEsRetriever:
        """A retriever for ``principal`` (and ``scope``, else this one's) sharing this one's
        searcher, settings and callback manager: one per request."""
        return HybridEsRetriever(
            self.searcher,
            provenance.require_principal(principal, "for_principal(principal)"),
            scope=scope or self.scope,
            top_k=self.top_k,
            rerank=self.rerank,
            callback_manager=self.callback_manager,
        )

    def retrieve_for(
        self, principal: Principal, query: QueryType, scope: RequestScope | None = None
    ) -> list[NodeWithScore]:
        """``retrieve(query)`` as ``principal``, in one call."""
        return self.for_principal(principal, scope).retrieve(query)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        caller, response = provenance.search(
            self.searcher,
            query_bundle.query_str,
            self.principal,
            self.scope,
            top_k=self.top_k,
            rerank=self.rerank,
            where=WHERE,
        )
        nodes = []
        for hit in response.hits:
            meta = provenance.metadata(hit, response, caller)
            hidden = [k for k in meta if k not in PROMPT_KEYS]
            node = TextNode(
                id_=hit.chunk_id,
                text=hit.text,
                metadata=meta,
                excluded_llm_metadata_keys=hidden,
                excluded_embed_metadata_keys=hidden,
                relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.doc_id)},
            )
            nodes.append(NodeWithScore(node=node, score=provenance.score(hit)))
        return nodes

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # The searcher is synchronous: run it in a thread rather than block the event loop.
        return await asyncio.to_thread(self._retrieve, query_bundle)
