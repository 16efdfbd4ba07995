"""LlamaIndex nodes as hybrid-es documents and back, for the vector store. Pure.

A node becomes one :class:`~hybrid_es.ingest.documents.Document` under a stable id
(:func:`stored_node_id`: never LlamaIndex's random one, so a pipeline run twice writes nothing new),
its LlamaIndex document id kept in the metadata under :data:`REF_DOC_KEY`; a stored chunk comes back
as a ``TextNode`` whose source node is that LlamaIndex document. What could not be written is named
by node id, as LlamaIndex knows it. ``llamaindex_store.py`` does the I/O; the module docstring there
says why nodes are documents.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
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
ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/hybrid-es/hybrid-es#llamaindex")
"""The uuid5 namespace of :func:`stored_node_id` (fixed: ids must not change between releases)."""
_RANDOM_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
"""A random (version 4) UUID: what LlamaIndex gives a node or document that is given no id."""


def stored_node_id(node: BaseNode) -> str:
    """The id a node is stored under. Pure.

    A node id that is not a random UUID4 was chosen by someone (``TextNode(id_="faq-12")``) and is
    kept. A random one (LlamaIndex's splitters draw a new UUID4 for every node on every run) is
    replaced by a UUID5 that is the same on every run for the same node: of its LlamaIndex
    document and its place in it (``start_char_idx``-``end_char_idx``, which a splitter sets; else
    its text) when its document id is itself stable, else of its text and metadata. So running a
    pipeline twice writes every node under the same id, and the second run finds them unchanged.
    A document given no id gets a random one from LlamaIndex too: its nodes are then keyed by
    their content, and a changed node is a new one (give documents ids, e.g. ``filename_as_id``,
    to replace changed nodes in place and delete by ``ref_doc_id``)."""
    if not _RANDOM_ID.fullmatch(node.node_id):
        return node.node_id
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    ref = node.ref_doc_id
    if ref is not None and not _RANDOM_ID.fullmatch(ref):
        # A TextNode's span in its document (a BaseNode of another kind has none).
        start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
        place = (
            f"chars {start}-{end}"
            if start is not None and end is not None
            else "text " + hashlib.sha256(text.encode("utf-8")).hexdigest()
        )
        key = json.dumps(["node of", ref, place], ensure_ascii=False)
    else:
        meta = {k: v for k, v in node.metadata.items() if k != REF_DOC_KEY}
        key = json.dumps(["node", text, meta], sort_keys=True, ensure_ascii=False, default=str)
    return str(uuid.uuid5(ID_NAMESPACE, key))


def node_document(
    node: BaseNode, principal: Principal, acl_users: Sequence[str], acl_groups: Sequence[str]
) -> Document:
    """The hybrid-es document for one LlamaIndex node, written for ``principal``. Pure.

    Id: :func:`stored_node_id`; body: its text (no metadata); title: its ``title`` metadata
    where that is text; metadata: its metadata with :data:`REF_DOC_KEY` set to its
    ``ref_doc_id`` where it has one; ACL: ``principal``'s user, ``acl_users`` and
    ``acl_groups``. Raises pydantic's ValidationError for a node that cannot be one (an id
    holding ``::``, an empty text, metadata that cannot be stored)."""
    metadata = dict(node.metadata)
    if node.ref_doc_id is not None:
        metadata[REF_DOC_KEY] = node.ref_doc_id
    title = metadata.get("title")
    return Document(
        id=stored_node_id(node),
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
