"""One ingest batch from the caller's stream to the bulk writer: the stream cut into batches
(:func:`batches`), each document planned (skipped, or its chunk records, supersede updates and
deletes collected, with its context headers), and the batch as it is handed to the bulk writer
(:class:`PreparedBatch`).

A document is refused, and reported, when its writer may not write it (``ingest.authority``), a
filterable metadata value has the wrong type or the contextualizer failed on it; after
:data:`MAX_CONSECUTIVE_DOCUMENT_FAILURES` such contextualizer failures in a row the service is
taken to be down and the ingest stops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from hybrid_es import telemetry
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.errors import ConfigurationError, ModelError
from hybrid_es.identity import SEPARATOR, chunk_id
from hybrid_es.ingest.authority import refusal_message, write_verdict
from hybrid_es.ingest.chunking import Chunk
from hybrid_es.ingest.contextual import Contextualizer, Header
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import build_chunk_records, plan_document
from hybrid_es.ingest.report import IngestReport
from hybrid_es.metadata_fields import FilterableFields, filter_values
from hybrid_es.models import Principal

Chunker = Callable[[Document], list[Chunk]]

MAX_CONSECUTIVE_DOCUMENT_FAILURES = 5
"""After this many documents in a row fail in the contextualizer, the service is taken to be down
and the ingest stops (rather than failing every remaining document slowly)."""


def batches(
    docs: Iterable[Document], tenant: str, size: int, report: IngestReport
) -> Iterator[tuple[list[Document], bool]]:
    """``tenant``'s documents in batches of ``size``, each with whether the index must be
    refreshed before it is planned: a batch that starts with another version of a document of
    the batch before (that one must be stored, and visible, first). A document of another
    tenant is refused here, reported in stream order, and never written."""
    batch: list[Document] = []
    after_refresh = False
    for doc in docs:
        if doc.tenant != tenant:
            report.documents += 1
            report.failed_documents.append(
                {
                    "doc_id": doc.id,
                    "tenant": doc.tenant,
                    "reason": f"the document names tenant {doc.tenant!r}, but this "
                    f"ingest writes for tenant {tenant!r}; nothing was written",
                }
            )
            continue
        if any(d.id == doc.id for d in batch):
            yield batch, after_refresh
            batch, after_refresh = [], True
        batch.append(doc)
        if len(batch) >= size:
            yield batch, after_refresh
            batch, after_refresh = [], False
    if batch:
        yield batch, after_refresh


@dataclass
class BatchWork:
    """What one batch writes: new chunk records, then supersede updates and deletes."""

    records: list[dict[str, Any]] = field(default_factory=list)
    supersede: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    replaced: dict[str, str] = field(default_factory=dict)
    """Stored chunk id -> the chunk id replacing it: kept as audit copies before the batch is
    sent (``plan.DocumentPlan.replaced``)."""

    def drop(self, doc_ids: set[str]) -> None:
        """Write nothing of the documents ``doc_ids`` (their earlier text could not be kept)."""

        def of(cid: str) -> str:
            return cid.split(SEPARATOR, 1)[0]

        self.records = [r for r in self.records if r["doc_id"] not in doc_ids]
        self.supersede = [(c, u) for c, u in self.supersede if of(c) not in doc_ids]
        self.deletes = [c for c in self.deletes if of(c) not in doc_ids]
        self.replaced = {c: n for c, n in self.replaced.items() if of(c) not in doc_ids}


@dataclass(frozen=True)
class PreparedBatch:
    """A batch planned and embedded, ready to send: its bulk actions and what settling it
    needs (the run's change, the figures of its span)."""

    documents: int
    doc_ids: frozenset[str]
    actions: list[dict[str, Any]]
    changes: list[str]
    """The watermark changes of its documents (the last one is the run's, if anything lands)."""
    counts: dict[str, int]
    """What planning and embedding it added to the report (``report.report_counts``)."""
    laps: dict[str, float]


@dataclass
class FailureStreak:
    """Documents the contextualizer failed on in a row, over one ingest's batches."""

    count: int = 0


@dataclass
class Planning:
    """What planning a batch's documents needs from its ingest."""

    principal: Principal
    """The writer: what it may write is decided per document (``ingest.authority``)."""
    now: datetime
    embedder: Embedder
    chunker: Chunker
    contextualizer: Contextualizer
    default_acl: tuple[str, ...]
    filterable: FilterableFields
    streak: FailureStreak


def plan_into(
    doc: Document,
    stored: list[dict[str, Any]],
    how: Planning,
    report: IngestReport,
    work: BatchWork,
) -> None:
    """Skip ``doc``, or add its chunk records, supersede updates and deletes to ``work``.
    A value of the wrong type in a filterable field refuses the document, reported."""
    report.documents += 1
    if doc.acl_unset:
        report.default_acl += 1
        doc = doc.with_acl(how.default_acl)
    try:
        meta_filter = filter_values(doc.metadata, how.filterable)
    except ValueError as exc:
        report.failed_documents.append(
            {"doc_id": doc.id, "tenant": doc.tenant, "reason": f"{exc}; nothing was written"}
        )
        return
    verdict = write_verdict(how.principal, doc, stored)
    if not verdict.allowed:
        report.refused += 1
        telemetry.record_refused_write("write", verdict.reason)
        report.failed_documents.append(
            {
                "doc_id": doc.id,
                "tenant": doc.tenant,
                "reason": refusal_message(how.principal, doc.id),
            }
        )
        return
    chunks = how.chunker(doc)
    model = how.embedder.model_id
    plan = plan_document(
        doc,
        chunks,
        stored,
        prompt_version=how.contextualizer.prompt_version,
        embedding_model=model,
        meta_filter=meta_filter,
    )
    if plan.action == "skip":
        report.skipped_unchanged += 1
        return
    headers = headers_for(doc, chunks, how, report)
    if headers is None:
        return
    work.records.extend(
        build_chunk_records(
            doc,
            now=how.now,
            embedding_model=model,
            chunks=chunks,
            headers=headers,
            superseded_by=plan.superseded_by,
            meta_filter=meta_filter,
        )
    )
    work.supersede.extend(plan.supersede)
    work.deletes.extend(plan.deletes)
    work.changes.append(plan.change)
    first = chunk_id(doc.id, doc.version, 0)
    work.replaced.update((cid, first) for cid in plan.replaced)
    report.superseded += len(plan.supersede)
    report.removed_chunks += len(plan.deletes)


def headers_for(
    doc: Document, chunks: list[Chunk], how: Planning, report: IngestReport
) -> list[Header] | None:
    """The document's context headers, or None when the contextualizer failed on it (the
    document is reported; after too many failures in a row, ModelError stops the ingest).
    ConfigurationError (the contextualizer cannot run at all) is raised as it is."""
    try:
        headers = how.contextualizer.headers(doc, chunks, report.context)
    except ConfigurationError:
        raise
    except ModelError as exc:
        report.failed_documents.append({"doc_id": doc.id, "tenant": doc.tenant, "reason": str(exc)})
        how.streak.count += 1
        if how.streak.count >= MAX_CONSECUTIVE_DOCUMENT_FAILURES:
            raise ModelError(
                f"the contextualizer failed on {how.streak.count} documents in a "
                f"row; stopping. Last: {exc.message}",
                hint="check the model service; rerun the ingest, which resumes where it stopped",
            ) from exc
        return None
    how.streak.count = 0
    return headers
