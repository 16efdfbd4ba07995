"""Ingestion: documents -> chunks with context headers -> embeddings -> bulk index.

Chunk ids are deterministic (document, version, chunk number), so a retried or re-run ingest can
never duplicate a chunk. Unchanged documents (same SHA-256) are skipped before any embedding. A new
version supersedes the old one (validity closed, ``superseded_by`` set) instead of overwriting it.
Every failed bulk item is reported with its reason.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from elasticsearch import Elasticsearch, helpers

from hybrid_es.chunking import chunk_text
from hybrid_es.contextual import EXTRACTIVE_PROMPT_VERSION, extractive_header
from hybrid_es.corpus_state import CorpusState
from hybrid_es.documents import Document
from hybrid_es.embedder import Embedder
from hybrid_es.errors import BulkIndexError, ModelError, translate_es_error
from hybrid_es.identifiers import extract_identifiers


def chunk_id(doc_id: str, version: int, number: int) -> str:
    return f"{doc_id}::v{version}::c{number:04d}"


def build_chunk_records(
    doc: Document, *, now: datetime, embedding_model: str, size: int = 200, overlap: int = 40
) -> list[dict[str, Any]]:
    """The chunk documents for ``doc``, without vectors. Pure."""
    doc_hash = doc.content_hash()
    records = []
    for ch in chunk_text(doc.body, size=size, overlap=overlap):
        header = extractive_header(doc, ch)
        payload = f"{header}\n{ch.text}"
        ids = sorted(
            {
                *extract_identifiers(ch.text),
                *doc.contract_ids,
                *doc.room_codes,
                *doc.booking_ids,
                *doc.property_ids,
            },
            key=str.lower,
        )
        rec: dict[str, Any] = {
            "chunk_id": chunk_id(doc.id, doc.version, ch.number),
            "doc_id": doc.id,
            "chunk_no": ch.number,
            "title": doc.title,
            "heading_path": " > ".join(ch.heading_path),
            "context_header": header,
            "raw_chunk_text": ch.text,
            "search_payload": payload,
            "ids": ids,
            "doc_hash": doc_hash,
            "chunk_hash": hashlib.sha256(payload.encode()).hexdigest(),
            "header_prompt_version": EXTRACTIVE_PROMPT_VERSION,
            "embedding_model": embedding_model,
            "ingested_at": now.isoformat(),
            "metadata": doc.metadata,
            **doc.policy_fields(),
        }
        records.append(rec)
    return records


@dataclass
class IngestReport:
    documents: int = 0
    chunks: int = 0
    skipped_unchanged: int = 0
    superseded: int = 0
    removed_chunks: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    watermarks: dict[str, int] = field(default_factory=dict)


class Ingestor:
    def __init__(
        self,
        client: Elasticsearch,
        embedder: Embedder,
        *,
        index: str = "hybrid-es-chunks",
        corpus_state: CorpusState | None = None,
        chunk_size: int = 200,
        overlap: int = 40,
        batch_size: int = 64,
    ) -> None:
        self.client = client
        self.embedder = embedder
        self.index = index
        self.corpus_state = corpus_state or CorpusState(client)
        self.chunk_size = chunk_size
        self.overlap = overlap
        self.batch_size = batch_size

    def check_model(self) -> None:
        """Refuse, before any write, an index whose vectors come from another model or size.

        An empty index takes the embedder's model id and dimension into its mapping ``_meta``.
        """
        try:
            if not self.client.indices.exists(index=self.index):
                self.client.indices.create(index=self.index)
            mapping = self.client.indices.get_mapping(index=self.index)
            (body,) = mapping.body.values()
            props = body["mappings"].get("properties", {})
            meta = body["mappings"].get("_meta", {})
            count = int(self.client.count(index=self.index)["count"])
        except Exception as exc:
            raise translate_es_error(exc, what=f"checking {self.index}") from exc
        field_dims = props.get("embedding", {}).get("dims")
        if field_dims is not None and int(field_dims) != self.embedder.dims:
            raise ModelError(
                f"index {self.index} stores {field_dims}-dimensional vectors but the embedder "
                f"{self.embedder.model_id} makes {self.embedder.dims}; nothing was written",
                hint="use a matching embedder, or an index template with the right dims",
            )
        if count and meta.get("embedding_model") not in (None, self.embedder.model_id):
            raise ModelError(
                f"index {self.index} holds vectors from {meta.get('embedding_model')}, not "
                f"{self.embedder.model_id}; nothing was written",
                hint="ingest into a new index, or use the index's embedder",
            )
        if meta.get("embedding_model") != self.embedder.model_id:
            self.client.indices.put_mapping(
                index=self.index,
                meta={
                    "embedding_model": self.embedder.model_id,
                    "embedding_dims": self.embedder.dims,
                },
            )

    def _existing(self, doc_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Chunks already indexed for these documents (any version)."""
        out: dict[str, list[dict[str, Any]]] = {}
        if not doc_ids or not self.client.indices.exists(index=self.index):
            return out
        for hit in helpers.scan(
            self.client,
            index=self.index,
            query={
                "query": {"terms": {"doc_id": doc_ids}},
                "_source": [
                    "doc_id",
                    "version",
                    "doc_hash",
                    "chunk_id",
                    "superseded_by",
                    "valid_to",
                    "tenant",
                ],
            },
        ):
            out.setdefault(hit["_source"]["doc_id"], []).append(hit["_source"])
        return out

    def ingest(
        self,
        docs: Iterable[Document],
        *,
        now: datetime | None = None,
        progress: Callable[[int], None] | None = None,
        refresh: bool = True,
    ) -> IngestReport:
        """Index ``docs``; raise BulkIndexError (listing every failed item) if any item failed."""
        now = now or datetime.now(UTC)
        self.check_model()
        report = IngestReport()
        batch: list[Document] = []
        for doc in docs:
            batch.append(doc)
            if len(batch) >= self.batch_size:
                self._ingest_batch(batch, now, report, progress)
                batch = []
        if batch:
            self._ingest_batch(batch, now, report, progress)
        if refresh:
            self.client.indices.refresh(index=self.index)
        if report.failed:
            raise BulkIndexError(
                f"{len(report.failed)} of {report.chunks} chunk writes failed", failed=report.failed
            )
        return report

    def _ingest_batch(
        self,
        batch: list[Document],
        now: datetime,
        report: IngestReport,
        progress: Callable[[int], None] | None,
    ) -> None:
        try:
            existing = self._existing([d.id for d in batch])
        except Exception as exc:
            raise translate_es_error(exc, what="reading existing chunks") from exc
        actions: list[dict[str, Any]] = []
        records: list[dict[str, Any]] = []
        changed_tenants: dict[str, str] = {}
        for doc in batch:
            report.documents += 1
            old = existing.get(doc.id, [])
            same_version = [c for c in old if c.get("version") == doc.version]
            if same_version and all(c.get("doc_hash") == doc.content_hash() for c in same_version):
                report.skipped_unchanged += 1
                continue
            recs = build_chunk_records(
                doc,
                now=now,
                embedding_model=self.embedder.model_id,
                size=self.chunk_size,
                overlap=self.overlap,
            )
            new_ids = {r["chunk_id"] for r in recs}
            for c in same_version:  # a corrected document: drop chunks that no longer exist
                if c["chunk_id"] not in new_ids:
                    actions.append(
                        {"_op_type": "delete", "_index": self.index, "_id": c["chunk_id"]}
                    )
                    report.removed_chunks += 1
            for c in old:  # older versions are superseded, not overwritten
                if c.get("version", 0) < doc.version and not c.get("superseded_by"):
                    upd: dict[str, Any] = {"superseded_by": chunk_id(doc.id, doc.version, 0)}
                    if not c.get("valid_to") and doc.valid_from:
                        upd["valid_to"] = str(doc.valid_from)
                    actions.append(
                        {
                            "_op_type": "update",
                            "_index": self.index,
                            "_id": c["chunk_id"],
                            "doc": upd,
                        }
                    )
                    report.superseded += 1
            records.extend(recs)
            change = "correction" if same_version else ("supersede" if old else "ingest")
            if doc.deleted:
                change = "delete"
            changed_tenants[doc.tenant] = change
        if records:
            vecs = self.embedder.embed_passages([r["search_payload"] for r in records])
            for r, v in zip(records, vecs, strict=True):
                r["embedding"] = [float(x) for x in v]
                actions.append(
                    {"_op_type": "index", "_index": self.index, "_id": r["chunk_id"], "_source": r}
                )
        report.chunks += len(records)
        self._bulk(actions, report)
        for tenant, change in changed_tenants.items():
            report.watermarks[tenant] = self.corpus_state.bump(tenant, change)
        if progress:
            progress(len(batch))

    def _bulk(self, actions: list[dict[str, Any]], report: IngestReport) -> None:
        if not actions:
            return
        try:
            for ok, item in helpers.streaming_bulk(
                self.client,
                actions,
                chunk_size=500,
                max_retries=5,
                initial_backoff=1,
                max_backoff=30,
                raise_on_error=False,
                raise_on_exception=False,
            ):
                if not ok:
                    ((op, info),) = item.items()
                    report.failed.append(
                        {
                            "op": op,
                            "id": info.get("_id"),
                            "status": info.get("status"),
                            "reason": str(info.get("error"))[:500],
                        }
                    )
        except Exception as exc:
            raise translate_es_error(exc, what="bulk indexing") from exc

    def delete_document(self, tenant: str, doc_id: str) -> int:
        """Mark every chunk of a document deleted (kept for audit, filtered from search)."""
        try:
            resp = self.client.search(
                index=self.index,
                size=10_000,
                source_includes=["chunk_id"],
                query={
                    "bool": {"filter": [{"term": {"doc_id": doc_id}}, {"term": {"tenant": tenant}}]}
                },
            )
            actions = [
                {
                    "_op_type": "update",
                    "_index": self.index,
                    "_id": h["_id"],
                    "doc": {"deleted": True},
                }
                for h in resp["hits"]["hits"]
            ]
        except Exception as exc:
            raise translate_es_error(exc, what="deleting a document") from exc
        report = IngestReport()
        self._bulk(actions, report)
        if report.failed:
            raise BulkIndexError(f"{len(report.failed)} chunk updates failed", failed=report.failed)
        self.client.indices.refresh(index=self.index)
        self.corpus_state.bump(tenant, "delete")
        return len(actions)
