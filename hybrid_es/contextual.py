"""Context headers that situate a chunk in its whole document (contextual retrieval, seed 002).

The extractive contextualizer is the offline default: it builds the header only from the parent
document (title, heading path, document-level identifiers and dates), so it cannot introduce an
entity the document does not contain. Pure.
"""

from __future__ import annotations

from hybrid_es.chunking import Chunk
from hybrid_es.documents import Document
from hybrid_es.identifiers import extract_identifiers

EXTRACTIVE_PROMPT_VERSION = "extractive-v1"
MAX_HEADER_IDS = 8


def extractive_header(doc: Document, chunk: Chunk) -> str:
    """A short header: document title, section path, identifiers and validity of the document."""
    parts = []
    if doc.title:
        parts.append(f"Document: {doc.title}.")
    if chunk.heading_path:
        parts.append(f"Section: {' > '.join(chunk.heading_path)}.")
    ids: list[str] = []
    for v in (
        *doc.contract_ids,
        *doc.property_ids,
        *doc.room_codes,
        *doc.booking_ids,
        *extract_identifiers(f"{doc.title}\n{doc.body[:4000]}"),
    ):
        if v.lower() not in {i.lower() for i in ids}:
            ids.append(v)
    if ids:
        parts.append(f"Identifiers: {', '.join(ids[:MAX_HEADER_IDS])}.")
    if doc.valid_from or doc.valid_to:
        parts.append(f"Valid {doc.valid_from or '...'} to {doc.valid_to or 'open'}.")
    parts.append(f"Source: {doc.source_type}, version {doc.version}.")
    return " ".join(parts)
