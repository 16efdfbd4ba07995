"""What an ingest reports: the run's counts, failures and watermarks (:class:`IngestReport`), and
the per-batch figures its telemetry span carries (:func:`report_counts`, :class:`Laps`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from hybrid_es.ingest.contextual import ContextUsage


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
    refused: int = 0
    """Documents its writer may not write (``ingest.authority``); each is also in
    ``failed_documents``."""
    audit_copies: int = 0
    """Replaced chunks kept as audit copies before their text was overwritten or removed."""
    default_acl: int = 0
    """Documents that named no ACL and got the ingest's default ACL."""
    watermarks: dict[str, int] = field(default_factory=dict)
    context: ContextUsage = field(default_factory=ContextUsage)
    seconds: float = 0.0
    embedder: str = ""
    """The model that embeds this index's chunks (``HYBRID_ES_EMBEDDER=auto``: the one the index
    records, or chose from this run's first documents)."""

    @property
    def ok(self) -> bool:
        return not self.failed and not self.failed_documents


def report_counts(report: IngestReport) -> dict[str, int]:
    """The report's running counts that a batch's span carries (as the batch's differences)."""
    return {
        "chunks": report.chunks,
        "embedded": report.embedded,
        "skipped_unchanged": report.skipped_unchanged,
        "superseded": report.superseded,
        "removed_chunks": report.removed_chunks,
        "failed": len(report.failed),
        "failed_documents": len(report.failed_documents),
        "refused": report.refused,
        "audit_copies": report.audit_copies,
    }


def count_changes(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """``after - before``, count by count (what one batch added)."""
    return {k: after[k] - before[k] for k in after}


class Laps:
    """Milliseconds per step of a batch (``read_ms``, ``plan_ms``, ...), for its span."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.ms[f"{step}_ms"] = round((now - self._t) * 1000.0, 3)
        self._t = now
