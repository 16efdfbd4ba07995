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

**Filters.** ``filter=`` narrows a search by the document's declared metadata fields, in
LangChain's own filter language (Chroma's, which hybrid-es speaks natively: the grammar of
:mod:`hybrid_es.retrieval.filters`), as a default on the retriever and per call::

    retriever = HybridEsRetriever(searcher=searcher, filter={"team": "ops"})
    retriever.invoke(query, principal=principal, filter={"year": {"$gte": 2024}})  # replaces it
    retriever.invoke(query, principal=principal, filter={})                        # no filter

A field is ``value`` (equality) or ``{"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte" | "$in" |
"$nin": value}``, combined with ``$and``, ``$or`` and ``$not``; the fields are the ones the
deployment declares filterable (``HYBRID_ES_FILTERABLE_FIELDS``, given to the searcher). A
filter only narrows what the principal may see: it is ANDed with the policy in every leg, and one
that is malformed or names anything else (a policy field such as ``tenant`` or ``acl_groups``, an
undeclared field, raw Elasticsearch query JSON) raises FilterError before any request is sent.
A per-call filter replaces the retriever's default, as LangChain's ``search_kwargs`` do.

The write side (``add_documents``, ``delete``, ``get_by_ids``) is
:class:`hybrid_es.adapters.langchain_store.HybridEsVectorStore`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, model_validator

from hybrid_es.adapters import provenance
from hybrid_es.models import Principal, RequestScope, SearchResponse
from hybrid_es.retrieval.filters import translate_filter
from hybrid_es.retrieval.searcher import MAX_TOP_K, HybridSearcher

WHERE = "HybridEsRetriever.invoke(query, principal=...)"


class HybridEsRetriever(BaseRetriever):
    """Permission-safe hybrid retrieval as a LangChain ``BaseRetriever``.

    ``searcher`` runs the search; ``scope`` is the default request scope (per call:
    ``scope=``), ``top_k`` the default number of documents (per call: ``top_k=``), ``filter``
    the default metadata filter (per call: ``filter=``, which replaces it; the grammar is in the
    module docstring and :mod:`hybrid_es.retrieval.filters`), ``rerank`` whether the searcher's
    cross-encoder reorders the fused head. There is no principal field: every call passes
    ``principal=`` (``invoke``, ``ainvoke``, ``batch`` or ``bind``). A bad filter raises
    FilterError (a BadQueryError) before any request.
    """

    # extra="forbid": a principal given to the constructor is an error, not silently dropped.
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    searcher: HybridSearcher
    scope: RequestScope | None = None
    top_k: int = Field(default=10, ge=1, le=MAX_TOP_K)
    rerank: bool = True
    # Any: whatever is given is checked by the filter grammar (FilterError), not by pydantic.
    filter: Any = None
    # An AsyncHybridSearcher over the same searcher: ainvoke/abatch await it on the event loop
    # (None: they run the blocking search in a worker thread).
    async_searcher: Any = None

    @model_validator(mode="after")
    def _filter_ok(self) -> HybridEsRetriever:
        # A default filter the searcher would refuse is refused here, when the retriever is
        # built, rather than on its first call.
        translate_filter(self.filter, self.searcher.filterable_fields)
        return self

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        principal: Principal | None = None,
        scope: RequestScope | None = None,
        top_k: int | None = None,
        filter: Mapping[str, Any] | None = None,  # LangChain's own keyword
    ) -> list[Document]:
        ask = self._ask(query, principal, scope, top_k, filter)
        return _documents(*provenance.search(self.searcher, **ask))

    def _ask(
        self,
        query: str,
        principal: Principal | None,
        scope: RequestScope | None,
        top_k: int | None,
        filter: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """One call's search, the retriever's defaults filled in (``provenance.search``)."""
        return {
            "query": query,
            "principal": principal,
            "scope": scope or self.scope,
            "top_k": self.top_k if top_k is None else top_k,
            "rerank": self.rerank,
            "where": WHERE,
            "filters": self.filter if filter is None else filter,
        }

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        principal: Principal | None = None,
        scope: RequestScope | None = None,
        top_k: int | None = None,
        filter: Mapping[str, Any] | None = None,  # LangChain's own keyword
    ) -> list[Document]:
        # LangChain's default would drop the principal (it passes no keywords on).
        if self.async_searcher is not None:
            ask = self._ask(query, principal, scope, top_k, filter)
            return _documents(*await provenance.asearch(self.async_searcher, **ask))
        # Without one, the blocking search runs in a thread rather than block the event loop.
        return await asyncio.to_thread(
            self._get_relevant_documents,
            query,
            run_manager=run_manager.get_sync(),
            principal=principal,
            scope=scope,
            top_k=top_k,
            filter=filter,
        )


def _documents(caller: Principal, response: SearchResponse) -> list[Document]:
    return [
        Document(
            id=hit.chunk_id,
            page_content=hit.text,
            metadata=provenance.metadata(hit, response, caller),
        )
        for hit in response.hits
    ]
