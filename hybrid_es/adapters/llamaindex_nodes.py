"""LlamaIndex nodes as hybrid-es documents and back, for the vector store. Pure.

A node becomes one :class:`~hybrid_es.ingest.documents.Document` (its LlamaIndex document id
kept in the metadata under :data:`REF_DOC_KEY`); a stored chunk comes back as a ``TextNode``
whose source node is that LlamaIndex document. What could not be written is named by node id,
as LlamaIndex knows it. ``llamaindex_store.py`` does the I/O; the module docstring there says
why nodes are documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.schema import BaseNode, MetadataMode, TextNode

from hybrid_es.adapters.llamaindex import chunk_node
from hybrid_es.identity import SEPARATOR
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import IngestReport
from hybrid_es.metadata_fields import FilterableField
from hybrid_es.models import Principal

REF_DOC_KEY = "ref_doc_id"
"""The metadata key that holds a node's LlamaIndex document id (LlamaIndex's own name for it)."""
REF_DOC_FIELD = FilterableField(REF_DOC_KEY, "keyword")
"""The filterable field the store needs declared, to find a document's nodes."""


def node_document(
    node: BaseNode, principal: Principal, acl_users: Sequence[str], acl_groups: Sequence[str]
) -> Document:
    """The hybrid-es document for one LlamaIndex node, written for ``principal``. Pure.

    Id: the node id; body: its text (no metadata); title: its ``title`` metadata where that is
    text; metadata: its metadata with :data:`REF_DOC_KEY` set to its ``ref_doc_id`` where it has
    one; ACL: ``principal``'s user, ``acl_users`` and ``acl_groups``. Raises pydantic's
    ValidationError for a node that cannot be one (an id holding ``::``, an empty text,
    metadata that cannot be stored)."""
    metadata = dict(node.metadata)
    if node.ref_doc_id is not None:
        metadata[REF_DOC_KEY] = node.ref_doc_id
    title = metadata.get("title")
    return Document(
        id=node.node_id,
        tenant=principal.tenant,
        title=title if isinstance(title, str) else "",
        body=node.get_content(metadata_mode=MetadataMode.NONE),
        acl_users=tuple(dict.fromkeys((principal.user_id, *acl_users))),
        acl_groups=tuple(acl_groups),
        metadata=metadata,
    )


def result_node(chunk_id: str, doc_id: str, text: str, metadata: dict[str, Any]) -> TextNode:
    """The node for one stored chunk of node ``doc_id``: its source node is the LlamaIndex
    document (``metadata["ref_doc_id"]``), else the node it came from. Pure."""
    source = metadata.get(REF_DOC_KEY)
    return chunk_node(chunk_id, text, metadata, source if isinstance(source, str) else doc_id)


def write_failures(report: IngestReport) -> list[dict[str, Any]]:
    """What an ingest of nodes did not write, by node id (``node_id``, ``reason``; a failed
    bulk item also names its ``chunk_id``), for the store's BulkIndexError. Pure."""
    failed = [{"node_id": d["doc_id"], "reason": d["reason"]} for d in report.failed_documents]
    failed += [
        {
            "node_id": str(item["id"]).split(SEPARATOR, 1)[0],
            "chunk_id": item["id"],
            "reason": f"{item['op']} failed ({item['status']}): {item['reason']}",
        }
        for item in report.failed
    ]
    return failed


def narrowing(neutral: dict[str, Any] | None, doc_ids: list[str] | None) -> dict[str, Any] | None:
    """A query's neutral filter narrowed further to the nodes of the LlamaIndex documents
    ``doc_ids`` (by :data:`REF_DOC_KEY`); either may be absent. Pure."""
    if not doc_ids:
        return neutral
    by_doc = {REF_DOC_KEY: {"$in": list(doc_ids)}}
    return by_doc if neutral is None else {"$and": [neutral, by_doc]}
