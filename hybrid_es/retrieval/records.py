"""Listing a caller's records without a query: what the framework stores read (Haystack's
``filter_documents`` and ``count_documents``, LangChain's ``get_by_ids``, LlamaIndex's
``get_nodes``).

The same policy filter as a search (``policy.policy_filter``, the caller's metadata filter inside
it) is the body's whole query, sent through the chunks door, so a listing can show nothing a
search could not: another tenant's record, a deleted, embargoed, superseded or restricted one
look exactly as a record that does not exist. Nothing is scored; the embedding is never read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hybrid_es.errors import BadQueryError, EngineError
from hybrid_es.models import Record
from hybrid_es.retrieval.door import ChunksDoor

MAX_RECORDS = 10_000
"""The most records one listing returns (:func:`read`'s ``limit`` may not exceed it)."""
MAX_IDS = 1_000
"""The most ids one listing may name."""


def listing_body(
    policy: dict[str, Any],
    *,
    doc_ids: Sequence[str] | None = None,
    chunk_ids: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The body of a listing: ``policy`` (which already holds the tenant, the rules and the
    caller's filter) and, when given, the document or chunk ids, in one ``bool.filter``. Pure."""
    clauses: list[dict[str, Any]] = [policy]
    for field, ids in (("doc_id", doc_ids), ("chunk_id", chunk_ids)):
        if ids is None:
            continue
        ids = list(dict.fromkeys(ids))
        if len(ids) > MAX_IDS:
            raise BadQueryError(f"at most {MAX_IDS} {field}s in one listing, got {len(ids)}")
        clauses.append({"terms": {field: ids}})
    return {"query": {"bool": {"filter": clauses}}, "_source": {"excludes": ["embedding"]}}


def read(
    door: ChunksDoor, index: str, policy: dict[str, Any], body: dict[str, Any], limit: int
) -> list[Record]:
    """The records ``body`` lists in ``index`` (through ``door``, checked for ``policy``), ordered
    by document id and chunk number. An index that does not exist lists nothing. More than
    ``limit`` matching records is an error (BadQueryError), never a silent cut."""
    if not 1 <= limit <= MAX_RECORDS:
        raise BadQueryError(f"limit must be 1..{MAX_RECORDS}, got {limit}")
    hits: list[dict[str, Any]] = []
    try:
        for hit in door.scan(index, body, policy):
            hits.append(hit)
            if len(hits) > limit:
                raise BadQueryError(
                    f"more than {limit} records match",
                    hint="narrow the listing with a filter or ids, or raise the limit "
                    f"(at most {MAX_RECORDS})",
                )
    except EngineError as exc:
        if exc.status == 404:
            return []
        raise
    records = [as_record(h) for h in hits]
    return sorted(records, key=lambda r: (r.doc_id, r.chunk_no, r.chunk_id))


def count(door: ChunksDoor, index: str, policy: dict[str, Any], body: dict[str, Any]) -> int:
    """How many records ``body`` lists (0 for an index that does not exist)."""
    try:
        return door.count(index, body["query"], policy)
    except EngineError as exc:
        if exc.status == 404:
            return 0
        raise


def as_record(hit: dict[str, Any]) -> Record:
    src = dict(hit.get("_source") or {})
    return Record(
        chunk_id=str(src.get("chunk_id", "")),
        doc_id=str(src.get("doc_id", "")),
        chunk_no=int(src.get("chunk_no") or 0),
        index=str(hit.get("_index", "")),
        source_version=int(src.get("version") or 0),
        title=str(src.get("title") or ""),
        text=str(src.get("raw_chunk_text") or ""),
        metadata=dict(src.get("metadata") or {}),
        source=src,
    )
