"""Chunk records and the skip/write decision of ingestion. Pure: no client, no model, no clock.

:func:`build_chunk_records` gives the stored form of a document's chunks (seed 002's three text
fields and the folded copies BM25 matches on, the ids, the three hashing markers and the policy
fields); :func:`plan_document` decides, from what is stored, whether a document is skipped,
written (with which deletes and supersede updates) or refused. ``hybrid_es.ingest.indexer`` does
the I/O around them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from hybrid_es.identity import audit_chunk_id, audit_doc_id, chunk_id
from hybrid_es.ingest.chunking import Chunk, chunk_document
from hybrid_es.ingest.contextual import ContextUsage, ExtractiveContextualizer, Header, made_by
from hybrid_es.ingest.documents import Document
from hybrid_es.text.analysis import ANALYSIS_VERSION, client_terms, code_terms
from hybrid_es.text.folding import fold_for_matching
from hybrid_es.text.identifiers import extract_identifiers


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def search_payload(header: str, text: str) -> str:
    """What is embedded and indexed for BM25: the header, then the chunk (seed 002's c')."""
    return f"{header}\n{text}" if header else text


def build_chunk_records(
    doc: Document,
    *,
    now: datetime,
    embedding_model: str,
    chunks: Sequence[Chunk] | None = None,
    headers: Sequence[Header] | None = None,
    size: int = 200,
    overlap: int = 40,
    superseded_by: str | None = None,
    meta_filter: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The chunk documents for ``doc``, without vectors. Pure.

    ``chunks`` default to :func:`chunk_document` (estimated token counts); ``headers``
    to the extractive ones. ``superseded_by`` marks a version older than one already stored.
    ``meta_filter``: the document's values of the declared filterable fields
    (``metadata_fields.filter_values``), written to every chunk's ``meta_filter`` when any.
    """
    chunks = list(chunks) if chunks is not None else chunk_document(doc, size=size, overlap=overlap)
    if headers is None:
        headers = ExtractiveContextualizer().headers(doc, chunks, ContextUsage())
    if len(headers) != len(chunks):
        raise ValueError(f"{len(headers)} headers for {len(chunks)} chunks of {doc.id}")
    doc_hash = doc.content_hash()
    doc_ids = [*doc.contract_ids, *doc.room_codes, *doc.booking_ids, *doc.property_ids]
    # What BM25 matches on is folded (Traditional Chinese as Simplified, full width as ASCII:
    # text.folding); what is stored and shown keeps the text as written.
    title_folded = fold_for_matching(doc.title)
    records = []
    for ch, header in zip(chunks, headers, strict=True):
        payload = search_payload(header.text, ch.text)
        folded = fold_for_matching(payload)
        ids: dict[str, str] = {}
        for v in (*doc_ids, *extract_identifiers(ch.text), *extract_identifiers(header.text)):
            ids.setdefault(v.lower(), v)
        rec: dict[str, Any] = {
            "chunk_id": chunk_id(doc.id, doc.version, ch.number),
            "doc_id": doc.id,
            "chunk_no": ch.number,
            "title": doc.title,
            "heading_path": " > ".join(ch.heading_path),
            "context_header": header.text,
            "raw_chunk_text": ch.text,
            "search_payload": payload,
            "search_folded": folded,
            "title_folded": title_folded,
            "search_terms": client_terms(folded),
            "code_terms": code_terms(folded),
            "analysis_version": ANALYSIS_VERSION,
            "ids": sorted(ids.values(), key=str.lower),
            "doc_hash": doc_hash,
            "chunk_hash": text_hash(ch.text),
            "header_prompt_version": header.prompt_version,
            "embedding_model": embedding_model,
            "ingested_at": now.isoformat(),
            "metadata": doc.metadata,
            **doc.policy_fields(),
        }
        if meta_filter:
            rec["meta_filter"] = dict(meta_filter)
        if superseded_by and not doc.superseded_by:
            rec["superseded_by"] = superseded_by
        records.append(rec)
    return records


def audit_copy(source: Mapping[str, Any], replaced_by: str) -> dict[str, Any]:
    """The audit copy of a stored chunk that a write replaces (its ``_source`` as stored): the
    same record under the audit ids (``identity.audit_chunk_id``), marked deleted (so no search,
    listing or count ever shows it) and superseded by ``replaced_by``, the chunk id of the
    text that replaces it; without its vector, which nothing searches. Pure."""
    doc_hash = str(source.get("doc_hash") or "")
    copy = {k: v for k, v in source.items() if k != "embedding"}
    copy["doc_id"] = audit_doc_id(str(source["doc_id"]), doc_hash)
    copy["chunk_id"] = audit_chunk_id(str(source["chunk_id"]), doc_hash)
    copy["deleted"] = True
    copy["superseded_by"] = replaced_by
    return copy


@dataclass(frozen=True)
class DocumentPlan:
    """What an ingest does with one document, decided from what is stored. See plan_document."""

    action: Literal["skip", "write"]
    reason: str
    change: str = ""
    """The watermark change it makes: ingest, correction, supersede, backfill or delete."""
    deletes: tuple[str, ...] = ()
    supersede: tuple[tuple[str, dict[str, Any]], ...] = ()
    superseded_by: str | None = None
    replaced: tuple[str, ...] = ()
    """Stored chunks of the same version whose document text or policy fields this write
    changes: each is kept as an audit copy (:func:`audit_copy`) before it is overwritten or
    removed."""


def plan_document(
    doc: Document,
    chunks: Sequence[Chunk],
    stored: Sequence[dict[str, Any]],
    *,
    prompt_version: str,
    embedding_model: str,
    meta_filter: Mapping[str, Any] | None = None,
) -> DocumentPlan:
    """Skip or write ``doc``, given its ``chunks`` and the ``stored`` chunks (any version) of the
    same tenant with the same document id. Pure.

    Skipped only when the stored chunks of this version are exactly the expected ids, each with
    the document's hash, its own text's hash, a header from ``prompt_version`` and vectors from
    ``embedding_model``, the filterable values ``meta_filter`` (so a field declared, removed or
    retyped since the chunks were written rewrites them, the document unchanged), and no older
    version is left un-superseded. Another tenant's document
    with the same id is another document (its chunks are keyed by its tenant), so it never takes
    part here: raises ValueError if ``stored`` holds one, which would be a caller's bug.
    """
    if any(c.get("tenant") != doc.tenant for c in stored):
        raise ValueError("plan_document was given chunks of another tenant")
    same = [c for c in stored if c.get("version") == doc.version]
    older = [c for c in stored if int(c.get("version") or 0) < doc.version]
    newer = sorted(
        {int(c.get("version") or 0) for c in stored if int(c.get("version") or 0) > doc.version}
    )
    expected = {chunk_id(doc.id, doc.version, c.number): text_hash(c.text) for c in chunks}
    doc_hash = doc.content_hash()
    stale = [c for c in older if not c.get("superseded_by")]
    if same and not stale and {c["chunk_id"] for c in same} == set(expected):
        unchanged = all(
            c.get("doc_hash") == doc_hash
            and c.get("chunk_hash") == expected[c["chunk_id"]]
            and made_by(c.get("header_prompt_version"), prompt_version)
            and c.get("embedding_model") == embedding_model
            and c.get("analysis_version") == ANALYSIS_VERSION
            and (c.get("meta_filter") or {}) == dict(meta_filter or {})
            and bool(c.get("deleted")) == doc.deleted  # a deleted document written again
            for c in same
        )
        if unchanged:
            return DocumentPlan("skip", "unchanged")
    deletes = tuple(sorted(c["chunk_id"] for c in same if c["chunk_id"] not in expected))
    updates: list[tuple[str, dict[str, Any]]] = []
    for c in stale:  # older versions are superseded, not overwritten
        upd: dict[str, Any] = {"superseded_by": chunk_id(doc.id, doc.version, 0)}
        if not c.get("valid_to") and doc.valid_from:
            upd["valid_to"] = str(doc.valid_from)
        updates.append((c["chunk_id"], upd))
    if doc.deleted:
        change = "delete"
    elif same:
        change = "correction"
    elif newer:
        change = "backfill"
    else:
        change = "supersede" if older else "ingest"
    return DocumentPlan(
        "write",
        "changed" if same else "new",
        change=change,
        deletes=deletes,
        supersede=tuple(updates),
        superseded_by=chunk_id(doc.id, newer[-1], 0) if newer else None,
        replaced=tuple(sorted(c["chunk_id"] for c in same if c.get("doc_hash") != doc_hash)),
    )
