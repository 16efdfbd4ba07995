"""Ingestion: documents -> chunks with context headers -> embeddings -> bulk index.

Chunk ids are deterministic (document, version, chunk number), so a retried, re-run or killed and
restarted ingest can never duplicate a chunk. Each chunk stores three SHA-256 based markers: the
document's hash (``doc_hash``), the hash of its own raw text (``chunk_hash``) and the prompt
version of its header (``header_prompt_version``). A document is skipped, before any embedding or
model call, only when every chunk it would produce is already stored under the same id with the
same hashes, header version and embedding model, and nothing else of that version is stored: so a
partly written document (an ingest killed mid-way, an item that failed) is written again in full,
and a changed one regenerates all of its chunks and headers and removes the ones that vanished.

A new version supersedes the old one (validity closed, ``superseded_by`` set) instead of
overwriting it. Every failed bulk item, and every document the contextualizer failed on, is
reported with its reason. Calls to the cluster are retried as a whole on connection failures only;
429s inside a bulk are retried by the bulk helper with back-off.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

import elastic_transport
from elasticsearch import ApiError, BadRequestError, Elasticsearch, helpers
from tenacity import (
    retry,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_attempt,
    stop_after_delay,
    wait_exponential,
)

from hybrid_es.chunking import Chunk, chunk_text, counter_for
from hybrid_es.contextual import (
    Contextualizer,
    ContextUsage,
    ExtractiveContextualizer,
)
from hybrid_es.corpus_state import CorpusState
from hybrid_es.documents import Document
from hybrid_es.embedder import Embedder
from hybrid_es.errors import (
    BulkIndexError,
    ConfigurationError,
    ModelError,
    translate_es_error,
)
from hybrid_es.ingest_plan import build_chunk_records, chunk_id, plan_document

__all__ = ["IngestReport", "Ingestor", "build_chunk_records", "chunk_id", "plan_document"]

Chunker = Callable[[Document], list[Chunk]]
MAX_CONSECUTIVE_DOCUMENT_FAILURES = 5
"""After this many documents in a row fail in the contextualizer, the service is taken to be down
and the ingest stops (rather than failing every remaining document slowly)."""

_F = TypeVar("_F", bound=Callable[..., Any])


def _on_connection_failure(fn: _F) -> _F:
    """Retry a whole call when the cluster cannot be reached; never on an answer (4xx/5xx)."""
    wrapped = retry(
        retry=retry_if_exception_type(elastic_transport.ConnectionError),
        stop=stop_after_attempt(4),
        wait=wait_exponential(multiplier=0.5, max=8),
        reraise=True,
    )(fn)
    return cast(_F, wrapped)


@dataclass
class IngestReport:
    documents: int = 0
    chunks: int = 0
    """Chunks written (embedded and indexed) by this run."""
    skipped_unchanged: int = 0
    superseded: int = 0
    removed_chunks: int = 0
    embedded: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    """Bulk items that failed: op, id, status, reason."""
    failed_documents: list[dict[str, Any]] = field(default_factory=list)
    """Documents not written at all: doc_id, tenant, reason."""
    watermarks: dict[str, int] = field(default_factory=dict)
    context: ContextUsage = field(default_factory=ContextUsage)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed and not self.failed_documents


class Ingestor:
    """Writes documents into one chunks index. See the module docstring for the guarantees.

    ``contextualizer`` defaults to the extractive one; ``chunker`` to :func:`chunk_text` with
    the embedder's own token count (:func:`~hybrid_es.chunking.counter_for`).
    """

    def __init__(
        self,
        client: Elasticsearch,
        embedder: Embedder,
        *,
        index: str = "hybrid-es-chunks",
        corpus_state: CorpusState | None = None,
        contextualizer: Contextualizer | None = None,
        chunker: Chunker | None = None,
        chunk_size: int = 200,
        overlap: int = 40,
        batch_size: int = 64,
    ) -> None:
        if chunk_size < 16 or not 0 <= overlap < chunk_size // 2:
            raise ConfigurationError(
                f"need chunk_size >= 16 and 0 <= overlap < chunk_size/2, got {chunk_size}/{overlap}"
            )
        self.client = client
        self.embedder = embedder
        self.index = index
        self.corpus_state = corpus_state or CorpusState(client)
        self.contextualizer: Contextualizer = contextualizer or ExtractiveContextualizer()
        self.chunk_size = chunk_size
        self.overlap = overlap
        self.batch_size = batch_size
        if chunker is None:
            count = counter_for(embedder)
            chunker = lambda doc: chunk_text(  # noqa: E731
                doc.body, size=chunk_size, overlap=overlap, count=count
            )
        self.chunker = chunker
        self._consecutive_failures = 0

    def check_model(self) -> None:
        """Refuse, before any write, an index whose vectors come from another model or size.

        An empty index takes the embedder's model id and dimension into its mapping ``_meta``.
        """
        try:
            props, meta, count = self._mapping()
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
            try:
                self._put_meta()
            except Exception as exc:
                raise translate_es_error(exc, what=f"recording the model on {self.index}") from exc

    @_on_connection_failure
    def _mapping(self) -> tuple[dict[str, Any], dict[str, Any], int]:
        if not self.client.indices.exists(index=self.index):
            try:
                self.client.indices.create(index=self.index)
            except BadRequestError as exc:  # another writer created it first: that is fine
                if exc.error != "resource_already_exists_exception":
                    raise
        # A concurrent writer may have created the index a moment ago: wait until its primary
        # shard has started, or the count below meets a 503 (returns at once when it has).
        self.client.cluster.health(index=self.index, wait_for_status="yellow", timeout="30s")
        mapping = self.client.indices.get_mapping(index=self.index)
        (body,) = mapping.body.values()
        props = body["mappings"].get("properties", {})
        meta = body["mappings"].get("_meta", {})
        return props, meta, self._count()

    @retry(
        retry=retry_if_exception(lambda e: isinstance(e, ApiError) and e.meta.status == 503),
        stop=stop_after_delay(60),
        wait=wait_exponential(multiplier=0.2, max=5),
        reraise=True,
    )
    def _count(self) -> int:
        # A shard that is still starting (a busy or recovering node) answers 503 for a while.
        return int(self.client.count(index=self.index)["count"])

    @_on_connection_failure
    def _put_meta(self) -> None:
        self.client.indices.put_mapping(
            index=self.index,
            meta={"embedding_model": self.embedder.model_id, "embedding_dims": self.embedder.dims},
        )

    @_on_connection_failure
    def _existing(self, doc_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Chunks already indexed for these documents (any version, any tenant)."""
        out: dict[str, list[dict[str, Any]]] = {}
        if not doc_ids:
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
                    "chunk_hash",
                    "chunk_id",
                    "header_prompt_version",
                    "analysis_version",
                    "embedding_model",
                    "superseded_by",
                    "valid_to",
                    "tenant",
                ],
            },
        ):
            out.setdefault(hit["_source"]["doc_id"], []).append(hit["_source"])
        return out

    @_on_connection_failure
    def _refresh(self) -> None:
        self.client.indices.refresh(index=self.index)

    def ingest(
        self,
        docs: Iterable[Document],
        *,
        now: datetime | None = None,
        progress: Callable[[int], None] | None = None,
        refresh: bool = True,
        raise_on_error: bool = True,
    ) -> IngestReport:
        """Index ``docs`` in batches. Returns the report; with ``raise_on_error`` (the default)
        raises BulkIndexError listing every failed item and document instead, after the rest
        was written. Raises ModelError for an embedding model that does not match the index
        (before any write), ConfigurationError when the contextualizer cannot run at all."""
        t0 = time.perf_counter()
        now = now or datetime.now(UTC)
        self.check_model()
        report = IngestReport()
        self._consecutive_failures = 0
        try:
            # What an earlier run (perhaps killed) wrote must be visible to the skip check.
            self._refresh()
        except Exception as exc:
            raise translate_es_error(exc, what=f"refreshing {self.index}") from exc
        batch: list[Document] = []
        for doc in docs:
            if any(d.id == doc.id for d in batch):
                # Another version of a document in this batch: the earlier one must be stored
                # (and visible) before this one is planned against it.
                self._ingest_batch(batch, now, report, progress)
                batch = []
                self._refresh()
            batch.append(doc)
            if len(batch) >= self.batch_size:
                self._ingest_batch(batch, now, report, progress)
                batch = []
        if batch:
            self._ingest_batch(batch, now, report, progress)
        if refresh:
            try:
                self._refresh()
            except Exception as exc:
                raise translate_es_error(exc, what=f"refreshing {self.index}") from exc
        report.seconds = time.perf_counter() - t0
        if raise_on_error and not report.ok:
            failed = report.failed + report.failed_documents
            raise BulkIndexError(
                f"{len(report.failed)} of {report.chunks} chunk writes and "
                f"{len(report.failed_documents)} documents failed",
                failed=failed,
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
            existing = self._existing(list(dict.fromkeys(d.id for d in batch)))
        except Exception as exc:
            raise translate_es_error(exc, what="reading existing chunks") from exc
        records: list[dict[str, Any]] = []
        later: list[dict[str, Any]] = []  # supersede updates and deletes, after the new chunks
        changed_tenants: dict[str, str] = {}
        for doc in batch:
            report.documents += 1
            chunks = self.chunker(doc)
            plan = plan_document(
                doc,
                chunks,
                existing.get(doc.id, []),
                prompt_version=self.contextualizer.prompt_version,
                embedding_model=self.embedder.model_id,
            )
            if plan.action == "skip":
                report.skipped_unchanged += 1
                continue
            if plan.action == "conflict":
                report.failed_documents.append(
                    {"doc_id": doc.id, "tenant": doc.tenant, "reason": plan.reason}
                )
                continue
            try:
                headers = self.contextualizer.headers(doc, chunks, report.context)
            except ConfigurationError:
                raise
            except ModelError as exc:
                report.failed_documents.append(
                    {"doc_id": doc.id, "tenant": doc.tenant, "reason": str(exc)}
                )
                self._consecutive_failures += 1
                if self._consecutive_failures >= MAX_CONSECUTIVE_DOCUMENT_FAILURES:
                    raise ModelError(
                        f"the contextualizer failed on {self._consecutive_failures} documents in a "
                        f"row; stopping. Last: {exc.message}",
                        hint="check the model service; rerun the ingest, which resumes where "
                        "it stopped",
                    ) from exc
                continue
            self._consecutive_failures = 0
            records.extend(
                build_chunk_records(
                    doc,
                    now=now,
                    embedding_model=self.embedder.model_id,
                    chunks=chunks,
                    headers=headers,
                    superseded_by=plan.superseded_by,
                )
            )
            for cid, upd in plan.supersede:
                later.append({"_op_type": "update", "_index": self.index, "_id": cid, "doc": upd})
            later.extend(
                {"_op_type": "delete", "_index": self.index, "_id": cid} for cid in plan.deletes
            )
            report.superseded += len(plan.supersede)
            report.removed_chunks += len(plan.deletes)
            changed_tenants[doc.tenant] = plan.change
        actions: list[dict[str, Any]] = []
        if records:
            vecs = self.embedder.embed_passages([r["search_payload"] for r in records])
            report.embedded += len(records)
            for r, v in zip(records, vecs, strict=True):
                r["embedding"] = [float(x) for x in v]
                actions.append(
                    {"_op_type": "index", "_index": self.index, "_id": r["chunk_id"], "_source": r}
                )
        report.chunks += len(records)
        self._bulk(actions + later, report)
        for tenant, change in changed_tenants.items():
            report.watermarks[tenant] = self.corpus_state.bump(tenant, change)
        if progress:
            progress(len(batch))

    def _bulk(self, actions: list[dict[str, Any]], report: IngestReport) -> None:
        if not actions:
            return
        try:
            report.failed.extend(self._bulk_once(actions))
        except Exception as exc:
            raise translate_es_error(exc, what="bulk indexing") from exc

    @_on_connection_failure
    def _bulk_once(self, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One pass over ``actions``; the failed items. Safe to repeat as a whole: index ops
        carry deterministic ids, updates set fixed values, and a delete whose target is already
        gone has done its job."""
        failed: list[dict[str, Any]] = []
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
            if ok:
                continue
            ((op, info),) = item.items()
            if op == "delete" and info.get("status") == 404:
                continue
            failed.append(
                {
                    "op": op,
                    "id": info.get("_id"),
                    "status": info.get("status"),
                    "reason": str(info.get("error"))[:500],
                }
            )
        return failed

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
        self._refresh()
        self.corpus_state.bump(tenant, "delete")
        return len(actions)
