"""A LlamaIndex vector store over hybrid-es: LlamaIndex writes, reads and deletes through the
:class:`~hybrid_es.ingest.indexer.Ingestor` and the :class:`~hybrid_es.HybridSearcher`.

:class:`HybridEsVectorStore` is bound to one caller (a :class:`~hybrid_es.models.Principal`)
when it is built: every write goes to that caller's tenant, every query and listing sees what
that caller may read, under the same policy filter as any search. It serves
``VectorStoreIndex.from_vector_store`` and an ``IngestionPipeline``::

    store = HybridEsVectorStore.from_settings(principal, acl_groups=("travel-agents",))
    index = VectorStoreIndex.from_vector_store(store, embed_model=StoreEmbedding())
    index.insert(Document(text="...", metadata={"team": "ops", "path": "ops/rates.md"}))
    team = MetadataFilters(filters=[MetadataFilter(key="team", value="ops")])
    nodes = index.as_retriever(similarity_top_k=5, filters=team).retrieve("April rate")

**Nodes are documents.** LlamaIndex's splitter has already cut its documents into nodes; each
node becomes one hybrid-es :class:`~hybrid_es.ingest.documents.Document`: id the node id, body
its text, metadata its metadata plus ``ref_doc_id`` (its LlamaIndex document, where it has one).
The Ingestor still chunks that body at its own size (a node over the embedder's window is split
rather than embedded cut short; one that fits stays one chunk), so a query returns *chunks*:
node id ``<node id>::v<version>::c<number>``, the node id in ``metadata["hybrid_es"]["doc_id"]``,
the LlamaIndex document as source node (``node.ref_doc_id``). A node is stored under a stable id
(``llamaindex_nodes.stored_node_id``: its own unless LlamaIndex drew a random one, then derived
from its document and place), which ``add`` returns; so the same ``IngestionPipeline`` run twice
writes nothing the second time, a changed node replaces its earlier text (kept as an audit copy)
and an unchanged one is skipped.
``delete(ref_doc_id)`` and a query's ``doc_ids`` find nodes by ``ref_doc_id``, so it must be
declared filterable as a keyword (``HYBRID_ES_FILTERABLE_FIELDS=...,ref_doc_id:keyword``, then
``hybrid-es bootstrap``): checked when the store is built, and in the index's mapping before the
first write. ``get_nodes`` and ``delete_nodes`` take node ids and chunk ids alike (deleting a
chunk id deletes its node).

**Access.** A node's ACL is the store's ``acl_users`` and ``acl_groups`` and always the store's
own user (it reads back what it writes). A node of another tenant, or one the principal may not
read, is listed, fetched and deleted exactly as one that does not exist: nothing, no error.
Writes follow the tenant's write authority (``ingest.authority``): a member adds new nodes and
replaces only nodes it may read, without widening their ACL; the writer role writes any.
``clear()`` is refused: the index holds every writer's documents of the tenant, and the store
cannot tell which are its own.

**Embeddings.** The store embeds chunks and queries with its searcher's model (the index's), so
LlamaIndex's ``embed_model`` is never used: ``is_embedding_query`` is False (the query's text is
sent, no vector) and vectors LlamaIndex computes for written nodes are ignored.
:class:`StoreEmbedding` is the zero-cost ``embed_model`` to give it (an ``IngestionPipeline``
writes only nodes that carry an embedding: put it last). A query with a ``query_embedding`` and
no ``query_str`` is refused: another model's vector cannot be compared with the index's, and
the BM25 leg needs the text.

**Filters** are LlamaIndex's ``MetadataFilters`` (``adapters.llamaindex_filters``), checked
against the declared fields before any request and placed inside the policy filter: they only
narrow. **Failures**: every node that can be written is; then one BulkIndexError lists each that
was not (``failed``: ``node_id``, ``reason``: an id holding ``::``, an empty text, metadata that
cannot be stored, a value of the wrong type in a declared field, a failed bulk item). Fix and
``add`` again (unchanged nodes are skipped). The async methods run the synchronous ones in a
thread, for now.

The pure parts live beside it: ``llamaindex_nodes`` (nodes as documents and back) and
``llamaindex_checks`` (what the store refuses, before any request).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)
from pydantic import ValidationError

from hybrid_es.adapters import provenance
from hybrid_es.adapters.llamaindex import record_metadata
from hybrid_es.adapters.llamaindex_checks import check_pair, check_query, check_ref_doc_mapped
from hybrid_es.adapters.llamaindex_filters import check_llamaindex_filters
from hybrid_es.adapters.llamaindex_nodes import (
    REF_DOC_KEY,
    narrowing,
    node_document,
    result_node,
    stored_node_id,
    write_failures,
)
from hybrid_es.cluster.engine import Engine
from hybrid_es.deployment import HybridEs
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.errors import BadQueryError, BulkIndexError, PolicyViolationError
from hybrid_es.identity import SEPARATOR
from hybrid_es.ingest.documents import Document, validation_summary
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, Record, RequestScope
from hybrid_es.retrieval.records import MAX_IDS, MAX_RECORDS
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

WHERE = "HybridEsVectorStore(searcher, ingestor, principal)"


class StoreEmbedding(MockEmbedding):
    """The ``embed_model`` for a :class:`HybridEsVectorStore`'s index or pipeline: it computes
    nothing (a one-number placeholder), because the store embeds with its own model."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(embed_dim=1, **kwargs)


class HybridEsVectorStore(BasePydanticVectorStore):
    """Permission-safe hybrid storage and retrieval as a LlamaIndex vector store.

    ``searcher`` reads and ``ingestor`` writes the same chunks index for ``principal``, the one
    caller every operation runs as. ``acl_users`` / ``acl_groups``: who else may read the nodes
    it writes (the principal's own user always may). ``scope``: the request scope of its
    queries (None: now); ``rerank``: whether the searcher's cross-encoder reorders the head.
    Raises PolicyViolationError without a principal, ConfigurationError when the searcher and
    ingestor differ in index or model, or the searcher does not declare ``ref_doc_id:keyword``.
    """

    stores_text: bool = True
    is_embedding_query: bool = False
    flat_metadata: bool = False

    _searcher: HybridSearcher = PrivateAttr()
    _ingestor: Ingestor = PrivateAttr()
    _principal: Principal = PrivateAttr()
    _acl_users: tuple[str, ...] = PrivateAttr()
    _acl_groups: tuple[str, ...] = PrivateAttr()
    _scope: RequestScope | None = PrivateAttr()
    _rerank: bool = PrivateAttr()
    _mapped: set[str] = PrivateAttr(default_factory=set)

    def __init__(
        self,
        searcher: HybridSearcher,
        ingestor: Ingestor,
        principal: Principal,
        *,
        acl_users: Sequence[str] = (),
        acl_groups: Sequence[str] = (),
        scope: RequestScope | None = None,
        rerank: bool = True,
    ) -> None:
        super().__init__(stores_text=True)
        self._principal = provenance.require_principal(principal, WHERE)
        check_pair(searcher, ingestor, self._principal)
        self._searcher, self._ingestor = searcher, ingestor
        self._acl_users, self._acl_groups = tuple(acl_users), tuple(acl_groups)
        self._scope, self._rerank = scope, rerank
        self._mapped = set()

    @classmethod
    def from_settings(
        cls,
        principal: Principal,
        settings: Settings | HybridEs | None = None,
        *,
        embedder: Embedder | Embedders | None = None,
        acl_users: Sequence[str] = (),
        acl_groups: Sequence[str] = (),
        scope: RequestScope | None = None,
        rerank: bool = True,
    ) -> HybridEsVectorStore:
        """A store for ``principal`` over a deployment (:class:`~hybrid_es.HybridEs`, the front
        door): one given, or the one ``settings`` name (default: the ``HYBRID_ES_*``
        environment), with ``embedder`` (default ``HYBRID_ES_EMBEDDER``). Its searcher and
        ingestor are the deployment's: its indices, filterable fields, reranker and traces."""
        hes = settings if isinstance(settings, HybridEs) else HybridEs(settings, embedder=embedder)
        return cls(
            hes.searcher,
            hes.ingestor,
            principal,
            acl_users=acl_users,
            acl_groups=acl_groups,
            scope=scope,
            rerank=rerank,
        )

    @classmethod
    def class_name(cls) -> str:
        return "HybridEsVectorStore"

    @property
    def client(self) -> Engine:
        """The engine the store reads and writes through."""
        return self._searcher.client

    @property
    def principal(self) -> Principal:
        """The caller every operation of this store runs as."""
        return self._principal

    # -- writes --------------------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Write ``nodes`` (one document each, module docstring); returns the ids they are
        stored under (``llamaindex_nodes.stored_node_id``), in order.

        Every node that can be written is; then BulkIndexError lists each one that was not
        (``failed``: ``node_id``, ``reason``), if any. ModelError / ConfigurationError (a model
        or mapping that does not fit the index) are raised before any write."""
        self._check_mapped()
        docs: list[Document] = []
        failed: list[dict[str, Any]] = []
        for node in nodes:
            try:
                docs.append(node_document(node, self._principal, self._acl_users, self._acl_groups))
            except ValidationError as exc:
                failed.append({"node_id": stored_node_id(node), "reason": validation_summary(exc)})
        if docs:
            report = self._ingestor.ingest(docs, self._principal, raise_on_error=False)
            failed += write_failures(report)
        if failed:
            raise BulkIndexError(
                f"{len({f['node_id'] for f in failed})} of {len(nodes)} nodes were not (fully) "
                "written; the others were",
                failed=failed,
            )
        return [stored_node_id(node) for node in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of the LlamaIndex document ``ref_doc_id`` that this store's
        principal may read (marked deleted, kept for audit, gone from every search). Another
        tenant's document, or a missing one, deletes nothing, silently alike."""
        neutral = {REF_DOC_KEY: ref_doc_id}
        self._delete_docs(r.doc_id for r in self._records(neutral, None, None))

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete the nodes ``node_ids`` names (node or chunk ids) that match ``filters``, among
        those this store's principal may read; neither given: refused (use ``delete``)."""
        if not node_ids and filters is None:
            raise BadQueryError(
                "delete_nodes needs node_ids or filters",
                hint="clear() is refused; delete one LlamaIndex document with delete(ref_doc_id)",
            )
        neutral = check_llamaindex_filters(filters, self._searcher.filterable_fields)
        self._delete_docs(r.doc_id for r in self._listed(node_ids, neutral))

    def clear(self) -> None:
        """Refused: see the module docstring."""
        raise PolicyViolationError(
            f"clear() is refused: the chunks index holds every writer's documents of tenant "
            f"{self._principal.tenant!r}, and this store cannot tell which are its own to drop",
            hint="delete each LlamaIndex document with delete(ref_doc_id), or nodes with "
            "delete_nodes(node_ids)",
        )

    def _delete_docs(self, doc_ids: Any) -> None:
        for doc_id in dict.fromkeys(doc_ids):
            self._ingestor.delete_document(self._principal, doc_id)

    def _check_mapped(self) -> None:
        """Refuse, before the first write or delete, an index that does not map ``ref_doc_id``
        as a keyword: nodes written there could not be found by ``delete(ref_doc_id)``."""
        index = self._ingestor.index_for(self._principal)
        if index in self._mapped:
            return
        self._ingestor.check_model(index)
        check_ref_doc_mapped(self.client.get_mapping(index))
        self._mapped.add(index)

    # -- reads ---------------------------------------------------------------------------------

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The hybrid search for ``query.query_str`` as this store's principal, narrowed by
        ``query.filters`` and ``query.doc_ids``, ``query.similarity_top_k`` chunks; the
        similarities are the searcher's scores (rerank, else fused). Raises BadQueryError for
        a query without text, a mode other than default or hybrid, or ``node_ids``;
        LlamaIndexFilterError for a filter that cannot be applied (before any request)."""
        text = check_query(query)
        neutral = narrowing(
            check_llamaindex_filters(query.filters, self._searcher.filterable_fields),
            query.doc_ids,
        )
        caller, response = provenance.search(
            self._searcher,
            text,
            self._principal,
            self._scope,
            top_k=query.similarity_top_k,
            rerank=self._rerank,
            where=WHERE,
            filters=neutral,
        )
        nodes = [
            result_node(h.chunk_id, h.doc_id, h.text, provenance.metadata(h, response, caller))
            for h in response.hits
        ]
        return VectorStoreQueryResult(
            nodes=nodes,
            similarities=[provenance.score(h) for h in response.hits],
            ids=[h.chunk_id for h in response.hits],
        )

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The stored chunks of the nodes ``node_ids`` names (node ids or chunk ids; None:
        every node) that match ``filters``, as this store's principal may read them now, in
        node id and chunk order; a node it may not read is left out as a missing one is.
        Raises BadQueryError above 10,000 chunks (narrow the listing)."""
        neutral = check_llamaindex_filters(filters, self._searcher.filterable_fields)
        return [
            result_node(r.chunk_id, r.doc_id, r.text, record_metadata(r, self._principal))
            for r in self._listed(node_ids, neutral)
        ]

    def _listed(self, node_ids: list[str] | None, neutral: dict[str, Any] | None) -> list[Record]:
        """The records of ``node_ids`` (node or chunk ids; None: all) matching ``neutral``."""
        if node_ids is None:
            return self._records(neutral, None, None)
        chunks = [i for i in node_ids if SEPARATOR in i]
        nodes = [i for i in node_ids if SEPARATOR not in i]
        out: dict[str, Record] = {}
        for at in range(0, len(nodes), MAX_IDS):
            out.update((r.chunk_id, r) for r in self._records(neutral, nodes[at : at + MAX_IDS]))
        for at in range(0, len(chunks), MAX_IDS):
            part = chunks[at : at + MAX_IDS]
            out.update((r.chunk_id, r) for r in self._records(neutral, None, part))
        return sorted(out.values(), key=lambda r: (r.doc_id, r.chunk_no))

    def _records(
        self,
        neutral: dict[str, Any] | None,
        doc_ids: list[str] | None,
        chunk_ids: list[str] | None = None,
    ) -> list[Record]:
        return self._searcher.records(
            self._principal,
            filters=neutral,
            scope=self._scope,
            doc_ids=doc_ids,
            chunk_ids=chunk_ids,
            limit=MAX_RECORDS,
        )

    # -- async: the synchronous methods in a thread, for now ------------------------------------

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    async def aadd(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """``add`` in a thread (LlamaIndex calls it ``async_add``)."""
        return await self.async_add(nodes, **kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        return await asyncio.to_thread(self.query, query, **kwargs)

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        return await asyncio.to_thread(self.get_nodes, node_ids, filters)
