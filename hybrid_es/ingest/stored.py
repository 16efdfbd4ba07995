"""What a tenant has already stored of the documents an ingest batch is about to write: the
fields the skip/write plan (``ingest.plan``) compares, read through the chunks door under the
tenant, every version included."""

from __future__ import annotations

from typing import Any

from hybrid_es.cluster.retries import on_connection_failure, while_shards_start
from hybrid_es.retrieval.door import ChunksDoor, tenant_body, tenant_policy

STORED_FIELDS = (
    "doc_id",
    "version",
    "doc_hash",
    "chunk_hash",
    "chunk_id",
    "header_prompt_version",
    "analysis_version",
    "embedding_model",
    "superseded_by",
    "valid_to",
    "tenant",
    "meta_filter",
    "deleted",
    "acl_users",
    "acl_groups",
)
"""The fields of a stored chunk that ``plan_document`` and the write authority read."""


@on_connection_failure
@while_shards_start
def stored_chunks(
    door: ChunksDoor, index: str, tenant: str, doc_ids: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """Per document id, the tenant's chunks already indexed for it (any version)."""
    out: dict[str, list[dict[str, Any]]] = {}
    if not doc_ids:
        return out
    body = tenant_body(tenant, {"terms": {"doc_id": doc_ids}}, _source=list(STORED_FIELDS))
    for hit in door.scan(index, body, tenant_policy(tenant)):
        out.setdefault(hit["_source"]["doc_id"], []).append(hit["_source"])
    return out
