"""A Haystack ``@component`` retriever over :class:`~hybrid_es.HybridSearcher`.

The caller's principal is a mandatory input of ``run``, so a pipeline passes it per run::

    pipeline.add_component("retriever", HybridEsRetriever(searcher, top_k=5))
    pipeline.run({"retriever": {"query": question, "principal": principal}})

A run without one is refused (by the pipeline as a missing input, or by the component:
PolicyViolationError); the query text is never read for it. The output ``documents`` are Haystack
:class:`~haystack.Document` objects with the chunk text, ``score`` (rerank score, else fused) and
the document's own metadata (under the
names the user gave) and the hit's provenance under ``meta["hybrid_es"]``.
"""

# No ``from __future__ import annotations``: Haystack builds the component's input sockets from
# run()'s annotations, which stay real types here rather than strings to resolve.

from typing import Any

from haystack import Document, component

from hybrid_es.adapters import provenance
from hybrid_es.errors import BadQueryError
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.searcher import MAX_TOP_K, HybridSearcher

WHERE = "HybridEsRetriever.run(query, principal)"


@component
class HybridEsRetriever:
    """Permission-safe hybrid retrieval as a Haystack component.

    ``searcher`` runs the search; ``scope`` is the default request scope and ``top_k`` the
    default number of documents (both may be given per run), ``rerank`` whether the searcher's
    cross-encoder reorders the fused head. The component holds no principal: ``run`` takes one.
    """

    def __init__(
        self,
        searcher: HybridSearcher,
        *,
        scope: RequestScope | None = None,
        top_k: int = 10,
        rerank: bool = True,
    ) -> None:
        if not 1 <= top_k <= MAX_TOP_K:
            raise BadQueryError(f"top_k must be 1..{MAX_TOP_K}, got {top_k}")
        self.searcher = searcher
        self.scope = scope
        self.top_k = top_k
        self.rerank = rerank

    def warm_up(self) -> None:
        """Load the searcher's models (Haystack calls this before a pipeline's first run), so
        that the first query does not pay for loading them."""
        self.searcher.warm_up(rerank=self.rerank)

    @component.output_types(documents=list[Document])
    def run(
        self,
        query: str,
        principal: Principal,
        scope: RequestScope | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """Search as ``principal``; returns ``{"documents": [...]}`` in rank order."""
        caller, response = provenance.search(
            self.searcher,
            query,
            principal,
            scope or self.scope,
            top_k=self.top_k if top_k is None else top_k,
            rerank=self.rerank,
            where=WHERE,
        )
        documents = [
            Document(
                id=hit.chunk_id,
                content=hit.text,
                score=provenance.score(hit),
                meta=provenance.metadata(hit, response, caller),
            )
            for hit in response.hits
        ]
        return {"documents": documents}
