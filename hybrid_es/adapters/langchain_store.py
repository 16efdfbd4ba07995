"""A LangChain ``VectorStore`` over hybrid-es: LangChain's write path goes into the
:class:`~hybrid_es.ingest.indexer.Ingestor`, its search into the hybrid search, for one principal.

**One principal per store.** LangChain's ``VectorStore`` API takes no caller on its calls
(``add_documents``, ``similarity_search``, the ``VectorStoreRetriever`` that ``as_retriever``
builds), so a store is bound to one :class:`~hybrid_es.models.Principal` when it is built: it
writes that principal's tenant only and reads what that principal may read, under the same policy
filter as every search. Build one per request (or per service identity that may ingest); it is
cheap (it holds the searcher and the ingestor, which hold the models). For retrieval that takes
the principal per call, use :class:`hybrid_es.adapters.langchain.HybridEsRetriever`.

**Ids are the LangChain document's.** ``add_documents`` stores each LangChain document as one
hybrid-es document whose id is the given id (``ids=``, else ``Document.id``, else a stable id
derived from the text and metadata: :func:`stable_id`, so adding the same document twice writes
it once). Ids are the tenant's: another tenant's store that writes, reads or deletes the same id
touches its own document, and another tenant's document looks exactly like one that does not
exist. Adding an id again replaces that document (unchanged content is skipped); ``delete`` marks
its chunks deleted (kept for audit, never found again). A long text is split into chunks: search
and ``get_by_ids`` return one LangChain document per chunk, each with the document's id.

**What a document carries.** ``page_content`` is the chunk's text as written and ``metadata`` the
metadata given at write, unchanged (a key ``hybrid_es`` is dropped at write: that name holds
provenance). With ``provenance=True`` (the default) ``metadata["hybrid_es"]`` holds the hit's
provenance (``hybrid_es.adapters.provenance``: ids, tenant, ranks, scores, the authorization
decision); ``get_by_ids`` is no search, so there it holds the ids, tenant, index and version only.
``provenance=False`` returns the written metadata exactly (LangChain's round trip, which its
standard tests compare). The title and ACL are no metadata: ``titles=``, ``acl_users=`` and
``acl_groups=`` on ``add_documents``/``add_texts``, or the store's ``acl_users``/``acl_groups``;
a document with neither gets the Ingestor's ``default_acl`` (nobody, unless configured).

**Failures are raised, never dropped.** A document that cannot be written (empty text, a bad
id, metadata that cannot be stored, a filterable field of the wrong type) or a chunk write that
fails raises BulkIndexError after the rest was written, listing each with its reason
(``.failed``).

**Search** is the hybrid search (BM25 + kNN, fused, reranked where the searcher has a reranker),
``filter=`` in LangChain's filter language, which is hybrid-es's neutral grammar
(:mod:`hybrid_es.retrieval.filters`; a bad filter raises FilterError before any request).
``similarity_search_with_score`` gives the rerank score where there is one, else the fused one:
not a relevance in [0, 1], so ``similarity_search_with_relevance_scores`` (and the
``similarity_score_threshold`` retriever) is refused. ``embeddings`` is the searcher's embedder
as LangChain ``Embeddings`` (the model the index's vectors come from), so LangChain code that
embeds for this store embeds as it does; a different model cannot be given (``from_texts``).

The ``a``-methods run the synchronous ones in a thread (``asyncio.to_thread``).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.documents import Document as LcDocument
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore
from pydantic import ValidationError

from hybrid_es.adapters import provenance as prov
from hybrid_es.deployment import HybridEs
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.errors import (
    BadQueryError,
    BulkIndexError,
    ConfigurationError,
    IngestError,
    UnknownTenantError,
)
from hybrid_es.ingest.documents import Document, validation_summary
from hybrid_es.ingest.indexer import Ingestor, IngestReport
from hybrid_es.models import Hit, Principal, Record, RequestScope, SearchResponse
from hybrid_es.retrieval.records import MAX_RECORDS
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

__all__ = ["HybridEsEmbeddings", "HybridEsVectorStore", "stable_id"]

WHERE = "HybridEsVectorStore(searcher, ingestor, principal)"
ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/hybrid-es/hybrid-es#langchain")
"""The uuid5 namespace of :func:`stable_id` (fixed: the ids must not change between releases)."""
Acl = tuple[tuple[str, ...], tuple[str, ...]]
"""A written document's ACL: its users and its groups."""
RECORD_KEYS = ("chunk_id", "doc_id", "tenant", "index", "source_version")
"""``metadata["hybrid_es"]`` of a document read by id (no search: no ranks or scores)."""


def stable_id(text: str, metadata: dict[str, Any]) -> str:
    """The id of a document given without one: a UUID (version 5) of its text and metadata, so
    the same document added again gets the same id (and is written once). Pure."""
    canon = json.dumps([text, metadata], sort_keys=True, ensure_ascii=False, default=str)
    return str(uuid.uuid5(ID_NAMESPACE, canon))


class HybridEsEmbeddings(Embeddings):
    """A hybrid-es :class:`~hybrid_es.encoders.embedder.Embedder` as LangChain ``Embeddings``:
    documents as passages, queries as queries (models such as E5 embed them differently)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in self.embedder.embed_passages(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self.embedder.embed_queries([text])[0]]


class HybridEsVectorStore(VectorStore):
    """Permission-safe hybrid search and writes as a LangChain ``VectorStore`` (module docstring).

    ``searcher`` reads and ``ingestor`` writes the same deployment (same embedding model, same
    chunks index for ``principal``: ConfigurationError otherwise); ``principal`` is the caller
    every operation runs as (PolicyViolationError if it is not a Principal). ``scope``,
    ``rerank`` and ``k`` (LangChain's ``k``) shape searches; ``acl_users``/``acl_groups`` are the
    ACL of written documents that are given none per call (None for both: the Ingestor's
    ``default_acl``); ``provenance`` adds ``metadata["hybrid_es"]`` to what is read.
    """

    def __init__(
        self,
        searcher: HybridSearcher,
        ingestor: Ingestor,
        principal: Principal,
        *,
        scope: RequestScope | None = None,
        rerank: bool = True,
        acl_users: Sequence[str] | None = None,
        acl_groups: Sequence[str] | None = None,
        provenance: bool = True,
    ) -> None:
        self.principal = prov.require_principal(principal, WHERE)
        if searcher.embedder.model_id != ingestor.embedder.model_id:
            raise ConfigurationError(
                f"the searcher embeds with {searcher.embedder.model_id} and the ingestor with "
                f"{ingestor.embedder.model_id}: the store would write vectors it cannot search",
                hint="give both the same embedder (the chunks index's model)",
            )
        read, write = searcher.index_for(principal), ingestor.index_for(principal)
        if read != write:
            raise ConfigurationError(
                f"the searcher reads {read} and the ingestor writes {write} for tenant "
                f"{principal.tenant}: the store would not find what it writes",
                hint="build both from the same Settings (layout) or the same index",
            )
        self.searcher = searcher
        self.ingestor = ingestor
        self.scope = scope
        self.rerank = rerank
        self.acl_users = None if acl_users is None else tuple(acl_users)
        self.acl_groups = None if acl_groups is None else tuple(acl_groups)
        self.provenance = provenance

    @classmethod
    def from_settings(
        cls, principal: Principal, settings: Settings | HybridEs | None = None, **options: Any
    ) -> HybridEsVectorStore:
        """A store for ``principal`` over a deployment (:class:`~hybrid_es.HybridEs`, the front
        door): one given, or the one ``settings`` name (default: the ``HYBRID_ES_*``
        environment). ``options``: the constructor's (``scope``, ``rerank``, ``acl_users``,
        ``acl_groups``, ``provenance``)."""
        hes = settings if isinstance(settings, HybridEs) else HybridEs(settings)
        return cls(hes.searcher, hes.ingestor, principal, **options)

    @property
    def embeddings(self) -> Embeddings:
        """The searcher's embedder as LangChain ``Embeddings`` (the index's model)."""
        return HybridEsEmbeddings(self.searcher.embedder)

    # -- writes -------------------------------------------------------------------------------

    def add_documents(self, documents: list[LcDocument], **kwargs: Any) -> list[str]:
        """Write ``documents`` for the store's principal; returns their ids, in order.

        Keywords: ``ids`` (else each ``Document.id``, else :func:`stable_id`), ``titles`` (one
        per document), ``acl_users`` and ``acl_groups`` (for every document of the call; else the
        store's). Raises BulkIndexError after the rest was written, listing each document that
        could not be written (one that cannot be a hybrid-es document: empty text, a bad id,
        metadata that cannot be stored; or one the ingest refused) and each failed chunk write
        with its reason; TypeError for any other keyword."""
        ids, titles, acl = _write_options(len(documents), kwargs)
        written = [
            self._document(doc, ids[i] if ids else None, titles[i] if titles else "", acl)
            for i, doc in enumerate(documents)
        ]
        docs = [w for w in written if isinstance(w, Document)]
        report = (
            self.ingestor.ingest(docs, self.principal, raise_on_error=False)
            if docs
            else IngestReport()
        )
        # A document that cannot be a hybrid-es document is refused as the ingest refuses one:
        # listed with its reason, after the rest was written.
        report.failed_documents[:0] = [w for w in written if isinstance(w, dict)]
        _raise_failures(report, len(documents))
        return [d.id for d in docs]

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """:meth:`add_documents` for texts with their metadata (same keywords and errors)."""
        texts = list(texts)
        if metadatas is not None and len(metadatas) != len(texts):
            raise IngestError(f"{len(metadatas)} metadatas for {len(texts)} texts")
        metas = metadatas if metadatas is not None else [{} for _ in texts]
        docs = [LcDocument(page_content=t, metadata=m) for t, m in zip(texts, metas, strict=True)]
        return self.add_documents(docs, ids=ids, **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete the store principal's documents ``ids`` (their chunks are marked deleted and
        never found again). An id that names no document of the tenant, or another tenant's, is
        no error and changes nothing. Returns True. ``ids`` None (LangChain's "delete all") is
        refused: BadQueryError."""
        _no_other_keywords(kwargs, "delete")
        if ids is None:
            raise BadQueryError(
                "delete() needs the ids to delete",
                hint="a store never deletes a whole tenant; list the ids (get_by_ids, search)",
            )
        for doc_id in dict.fromkeys(ids):
            self.ingestor.delete_document(self.principal, doc_id)
        return True

    def _document(
        self, doc: LcDocument, given: str | None, title: str, acl: Acl | None
    ) -> Document | dict[str, Any]:
        """The hybrid-es document for ``doc``, or why it cannot be one (as the ingest reports a
        refused document: ``doc_id``, ``tenant``, ``reason``)."""
        meta = {k: v for k, v in doc.metadata.items() if k != prov.NAMESPACE}
        doc_id = given or doc.id or stable_id(doc.page_content, meta)
        if acl is None and (self.acl_users is not None or self.acl_groups is not None):
            acl = (self.acl_users or (), self.acl_groups or ())
        try:
            return Document(
                id=doc_id,
                tenant=self.principal.tenant,
                title=title,
                body=doc.page_content,
                metadata=meta,
                acl_users=None if acl is None else acl[0],
                acl_groups=None if acl is None else acl[1],
            )
        except ValidationError as exc:
            return {
                "doc_id": doc_id,
                "tenant": self.principal.tenant,
                "reason": validation_summary(exc),
            }

    # -- reads --------------------------------------------------------------------------------

    def get_by_ids(self, ids: Sequence[str], /) -> list[LcDocument]:
        """The chunks of the documents ``ids`` that the principal may read now, in the order of
        ``ids`` (then chunk order); an id with no such document is left out (another tenant's
        too). Raises BadQueryError for more than 1,000 ids."""
        if not ids:
            return []
        records = self.searcher.records(
            self.principal, doc_ids=list(ids), scope=self.scope, limit=MAX_RECORDS
        )
        order = {doc_id: i for i, doc_id in enumerate(dict.fromkeys(ids))}
        records.sort(key=lambda r: (order.get(r.doc_id, len(order)), r.chunk_no))
        return [self._from_record(r) for r in records]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[LcDocument]:
        """The ``k`` best chunks for ``query`` (hybrid search). Keywords: ``filter`` (the
        neutral grammar), ``scope``, ``rerank``. Raises FilterError for a bad filter and
        BadQueryError for a bad query or ``k`` (1-100), before any request."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[LcDocument, float]]:
        """:meth:`similarity_search` with each chunk's score: the rerank score where the head
        was reranked, else the fused score (higher is better; not a relevance in [0, 1])."""
        filters = kwargs.pop("filter", None)
        scope = kwargs.pop("scope", None) or self.scope
        rerank = kwargs.pop("rerank", None)
        _no_other_keywords(kwargs, "similarity_search")
        try:
            caller, response = prov.search(
                self.searcher,
                query,
                self.principal,
                scope,
                top_k=k,
                rerank=self.rerank if rerank is None else bool(rerank),
                where=WHERE,
                filters=filters,
            )
        except UnknownTenantError:
            # A tenant that has written nothing yet: an empty store (the query and filter were
            # checked before the searcher looked).
            return []
        return [(self._from_hit(hit, response, caller), prov.score(hit)) for hit in response.hits]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        raise BadQueryError(
            "hybrid scores (fused ranks, cross-encoder logits) are no relevance in [0, 1]",
            hint="use similarity_search with k (or the similarity retriever); scores are in "
            "similarity_search_with_score",
        )

    def _from_hit(self, hit: Hit, response: SearchResponse, caller: Principal) -> LcDocument:
        meta = _own(hit.source.get("metadata"))
        if self.provenance:
            meta[prov.NAMESPACE] = prov.metadata(hit, response, caller)[prov.NAMESPACE]
        return LcDocument(id=hit.doc_id, page_content=hit.text, metadata=meta)

    def _from_record(self, record: Record) -> LcDocument:
        meta = _own(record.metadata)
        if self.provenance:
            tenant = str(record.source.get("tenant", self.principal.tenant))
            values = (record.chunk_id, record.doc_id, tenant, record.index, record.source_version)
            meta[prov.NAMESPACE] = dict(zip(RECORD_KEYS, values, strict=True))
        return LcDocument(id=record.doc_id, page_content=record.text, metadata=meta)

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> HybridEsVectorStore:
        """A store built from ``searcher=``, ``ingestor=``, ``principal=`` (and the other
        constructor keywords), with ``texts`` written. ``embedding`` must be None (or the
        store's own): the vectors are the searcher's model's, the one the index holds."""
        store = cls._from_keywords(embedding, kwargs)
        store.add_texts(texts, metadatas, ids=ids, **kwargs)
        return store

    @classmethod
    def from_documents(
        cls, documents: list[LcDocument], embedding: Embeddings | None = None, **kwargs: Any
    ) -> HybridEsVectorStore:
        """:meth:`from_texts` for LangChain documents."""
        store = cls._from_keywords(embedding, kwargs)
        store.add_documents(documents, **kwargs)
        return store

    @classmethod
    def _from_keywords(
        cls, embedding: Embeddings | None, kwargs: dict[str, Any]
    ) -> HybridEsVectorStore:
        """The store the constructor keywords in ``kwargs`` describe (removed from it)."""
        names = ("searcher", "ingestor", "principal")
        missing = [n for n in names if n not in kwargs]
        if missing:
            raise ConfigurationError(
                f"HybridEsVectorStore.from_texts/from_documents need {', '.join(missing)}=",
                hint="pass searcher=, ingestor= and principal= (the caller the store acts for)",
            )
        options = ("scope", "rerank", "acl_users", "acl_groups", "provenance")
        store = cls(
            *(kwargs.pop(n) for n in names),
            **{n: kwargs.pop(n) for n in options if n in kwargs},
        )
        own = isinstance(embedding, HybridEsEmbeddings) and (
            embedding.embedder is store.searcher.embedder
        )
        if embedding is not None and not own:
            raise ConfigurationError(
                f"HybridEsVectorStore embeds with the searcher's model "
                f"({store.searcher.embedder.model_id}), not {type(embedding).__name__}",
                hint="pass embedding=None: the index's vectors come from one model",
            )
        return store

    # -- async (the searcher and ingestor are synchronous: run them in a thread) ---------------

    async def aadd_documents(self, documents: list[LcDocument], **kwargs: Any) -> list[str]:
        return await asyncio.to_thread(self.add_documents, documents, **kwargs)

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        return await asyncio.to_thread(self.add_texts, texts, metadatas, ids=ids, **kwargs)

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        return await asyncio.to_thread(self.delete, ids, **kwargs)

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[LcDocument]:
        return await asyncio.to_thread(self.get_by_ids, ids)

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[LcDocument]:
        return await asyncio.to_thread(self.similarity_search, query, k, **kwargs)

    async def asimilarity_search_with_score(
        self, *args: Any, **kwargs: Any
    ) -> list[tuple[LcDocument, float]]:
        return await asyncio.to_thread(self.similarity_search_with_score, *args, **kwargs)


def _own(metadata: Any) -> dict[str, Any]:
    """The document's own metadata (the provenance key, which no document may set, dropped)."""
    return {k: v for k, v in (metadata or {}).items() if k != prov.NAMESPACE}


def _write_options(
    n: int, kwargs: dict[str, Any]
) -> tuple[list[str] | None, list[str] | None, Acl | None]:
    """The ids, titles and ACL of one write (``kwargs`` of add_documents), checked."""
    ids = kwargs.pop("ids", None)
    titles = kwargs.pop("titles", None)
    users, groups = kwargs.pop("acl_users", None), kwargs.pop("acl_groups", None)
    _no_other_keywords(kwargs, "add_documents")
    for name, values in (("ids", ids), ("titles", titles)):
        if values is not None and len(values) != n:
            raise IngestError(f"{len(values)} {name} for {n} documents; give one per document")
    acl = None if users is None and groups is None else (tuple(users or ()), tuple(groups or ()))
    return (None if ids is None else list(ids)), titles, acl


def _no_other_keywords(kwargs: dict[str, Any], where: str) -> None:
    if kwargs:
        raise TypeError(f"{where}() got unexpected keyword(s): {', '.join(sorted(kwargs))}")


def _raise_failures(report: IngestReport, total: int) -> None:
    """BulkIndexError for what the ingest did not write (documents and chunk writes), if any."""
    if report.ok:
        return
    docs = [str(f.get("doc_id")) for f in report.failed_documents]
    chunks = [str(f.get("id")) for f in report.failed]
    what = [
        *([f"{len(docs)} of {total} documents were not written ({', '.join(docs)})"] * bool(docs)),
        *([f"{len(chunks)} chunk writes failed ({', '.join(chunks)})"] * bool(chunks)),
    ]
    raise BulkIndexError(
        f"{'; '.join(what)}; the rest was written",
        failed=[*report.failed_documents, *report.failed],
    )
