"""What the LlamaIndex vector store refuses, and why, checked before any request it would spoil.

A searcher and an ingestor that would not read what the other writes (another index, another
model), a deployment or an index that does not declare and map ``ref_doc_id`` as a keyword (the
store finds a LlamaIndex document's nodes by it), and a query it cannot serve (no text, a
non-hybrid mode, ``node_ids``). Each raises with what to do; the mapping check is pure over the
mapping the store reads.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

from hybrid_es.adapters.llamaindex_nodes import REF_DOC_FIELD
from hybrid_es.errors import BadQueryError, ConfigurationError
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.metadata_fields import ENV_NAME, fields_from_mapping
from hybrid_es.models import Principal
from hybrid_es.retrieval.searcher import HybridSearcher

HYBRID_MODES = (VectorStoreQueryMode.DEFAULT, VectorStoreQueryMode.HYBRID)
"""The query modes served: both run the searcher's hybrid search."""


def check_pair(searcher: HybridSearcher, ingestor: Ingestor, principal: Principal) -> None:
    """Refuse a searcher and an ingestor that would not read what the other writes, and a
    searcher that does not declare :data:`REF_DOC_FIELD` filterable."""
    reads, writes = searcher.index_for(principal), ingestor.index_for(principal)
    if reads != writes:
        raise ConfigurationError(
            f"the searcher reads {reads} but the ingestor writes {writes} for tenant "
            f"{principal.tenant!r}",
            hint="build both from the same settings (HybridEsVectorStore.from_settings)",
        )
    if searcher.embedder.model_id != ingestor.embedder.model_id:
        raise ConfigurationError(
            f"the searcher embeds with {searcher.embedder.model_id} but the ingestor with "
            f"{ingestor.embedder.model_id}",
            hint="give both the same embedder",
        )
    if REF_DOC_FIELD not in searcher.filterable_fields:
        raise ConfigurationError(
            f"a HybridEsVectorStore needs {REF_DOC_FIELD} declared filterable: it finds a "
            "LlamaIndex document's nodes by it (delete(ref_doc_id), a query's doc_ids)",
            hint=f"add {REF_DOC_FIELD} to {ENV_NAME} (and the searcher's filterable_fields), "
            "then run `hybrid-es bootstrap --force`",
        )


def check_ref_doc_mapped(mappings: dict[str, Any]) -> None:
    """Refuse indices (``GET <index>/_mapping``'s answer, by index name) that do not map
    :data:`REF_DOC_FIELD` as a keyword: nodes written there could not be found by
    ``delete(ref_doc_id)``. Pure."""
    for name, mapping in mappings.items():
        fields = fields_from_mapping(mapping.get("properties", {}).get("meta_filter"), index=name)
        if REF_DOC_FIELD not in fields:
            raise ConfigurationError(
                f"index {name} does not map {REF_DOC_FIELD}: nodes written there could not "
                "be deleted by ref_doc_id; nothing was written",
                hint=f"add {REF_DOC_FIELD} to {ENV_NAME} and run `hybrid-es bootstrap "
                "--force` (an existing index gets the field added)",
            )


def check_query(query: VectorStoreQuery) -> str:
    """The text of a query the store can serve. Raises BadQueryError for one without text (a
    bare ``query_embedding`` of another model cannot be searched), a mode other than default or
    hybrid, or ``node_ids``. Pure."""
    if not query.query_str or not query.query_str.strip():
        raise BadQueryError(
            "a HybridEsVectorStore query needs query_str: the store embeds the text with "
            "its own model and searches it with BM25 too, so a bare query_embedding "
            "cannot be searched",
            hint="query through VectorStoreIndex / as_retriever, which sends the text",
        )
    if query.mode not in HYBRID_MODES:
        raise BadQueryError(
            f"query mode {query.mode.value!r} is not served: the store always runs the "
            "hybrid search (modes default and hybrid)"
        )
    if query.node_ids:
        raise BadQueryError(
            "a query cannot be limited to node_ids",
            hint="narrow with filters or doc_ids, or read nodes by id with get_nodes",
        )
    return query.query_str
