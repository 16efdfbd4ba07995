"""A LangChain retriever (``langchain-core`` only) over :class:`~hybrid_es.HybridSearcher`.

The caller's principal goes in on every call, as a keyword of ``invoke``, which LangChain passes
on to the retriever::

    retriever = HybridEsRetriever(searcher=searcher, top_k=5)
    docs = retriever.invoke("KYO-H12 April rate", principal=principal)
    chain = retriever.bind(principal=principal) | format_docs  # one request's chain

A call without one is refused (PolicyViolationError); the query text is never read for it. Each
:class:`~langchain_core.documents.Document` carries the chunk text, the document's own metadata
under the names the user gave, and the hit's provenance under ``metadata["hybrid_es"]`` (see
``hybrid_es.adapters.provenance.metadata``).
"""

from __future__ import annotations

import asyncio

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from hybrid_es.adapters import provenance
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.searcher import MAX_TOP_K, HybridSearcher

WHERE = "HybridEsRetriever.invoke(query, principal=...)"


class HybridEsRetriever(BaseRetriever):
    """Permission-safe hybrid retrieval as a LangChain ``BaseRetriever``.

    ``searcher`` runs the search; ``scope`` is the default request scope (per call:
    ``scope=``), ``top_k`` the default number of documents (per call: ``top_k=``), ``rerank``
    whether the searcher's cross-encoder reorders the fused head. There is no principal field:
    every call passes ``principal=`` (``invoke``, ``ainvoke``, ``batch`` or ``bind``).
    """

    # extra="forbid": a principal given to the constructor is an error, not silently dropped.
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    searcher: HybridSearcher
    scope: RequestScope | None = None
    top_k: int = Field(default=10, ge=1, le=MAX_TOP_K)
    rerank: bool = True

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        principal: Principal | None = None,
        scope: RequestScope | None = None,
        top_k: int | None = None,
    ) -> list[Document]:
        caller, response = provenance.search(
            self.searcher,
            query,
            principal,
            scope or self.scope,
            top_k=self.top_k if top_k is None else top_k,
            rerank=self.rerank,
            where=WHERE,
        )
        return [
            Document(
                id=hit.chunk_id,
                page_content=hit.text,
                metadata=provenance.metadata(hit, response, caller),
            )
            for hit in response.hits
        ]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        principal: Principal | None = None,
        scope: RequestScope | None = None,
        top_k: int | None = None,
    ) -> list[Document]:
        # The searcher is synchronous: run it in a thread rather than block the event loop.
        # (LangChain's default would drop the principal: it passes no keywords on.)
        return await asyncio.to_thread(
            self._get_relevant_documents,
            query,
            run_manager=run_manager.get_sync(),
            principal=principal,
            scope=scope,
            top_k=top_k,
        )
