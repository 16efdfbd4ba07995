"""Ingesting a file or folder for one caller: load, then chunk, contextualise, embed and index.

What ``hybrid-es ingest`` runs, as one library call that returns a result object: the load
report (every rejected line or file, with where it is), the ingest report (every failed write),
and the summary both the CLI and programs print or inspect. A dry run loads and chunks only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.errors import ConfigurationError
from hybrid_es.ingest.chunking import chunk_document, counter_for
from hybrid_es.ingest.contextual import Contextualizer, ExtractiveContextualizer
from hybrid_es.ingest.indexer import Ingestor, IngestReport, script_texts
from hybrid_es.ingest.loaders import (
    TEXT_SUFFIXES,
    Format,
    LoadOptions,
    LoadReport,
    load_documents,
)
from hybrid_es.models import Principal
from hybrid_es.tenancy import IndexLayout

FORMATS = ("auto", "jsonl", "beir", "folder")


@dataclass(frozen=True)
class PathIngest:
    """How to read and write one path (every field has the CLI's default)."""

    format: Format = "auto"
    contextualizer: Contextualizer = field(default_factory=ExtractiveContextualizer)
    chunk_size: int = 200
    overlap: int = 40
    batch_size: int = 64
    suffixes: tuple[str, ...] = TEXT_SUFFIXES
    field_map: Mapping[str, str] = field(default_factory=dict)
    version_from_label: bool = False
    default_acl: tuple[str, ...] = ()
    fail_fast: bool = False
    dry_run: bool = False

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ConfigurationError(
                f"format must be one of {', '.join(FORMATS)}, not {self.format!r}"
            )
        if self.chunk_size < 16 or not 0 <= self.overlap < self.chunk_size // 2:
            raise ConfigurationError(
                "need chunk_size >= 16 and 0 <= overlap < chunk_size / 2, "
                f"got {self.chunk_size}/{self.overlap}"
            )
        if not 1 <= self.batch_size <= 10_000:
            raise ConfigurationError(f"batch_size must be 1..10000, got {self.batch_size}")


@dataclass
class IngestRun:
    """What one ``ingest_path`` did."""

    path: Path
    tenant: str
    dry_run: bool
    load: LoadReport
    report: IngestReport | None
    """None for a dry run."""
    planned_chunks: int = 0
    """Chunks a dry run would write."""
    contextualizer: str = ""
    seconds: float = 0.0

    @property
    def failures(self) -> list[dict[str, Any]]:
        """Failed writes and documents (each with its reason)."""
        return [] if self.report is None else self.report.failed + self.report.failed_documents

    @property
    def ok(self) -> bool:
        """Everything read was written (nothing rejected, nothing failed)."""
        return not self.load.errors and not self.failures

    def summary(self) -> dict[str, Any]:
        """The run as ``(what, value)`` pairs for a table or ``--json``."""
        if self.report is None:
            return {
                "documents": self.load.documents,
                "chunks": self.planned_chunks,
                "rejected_input": len(self.load.errors),
                "seconds": round(self.seconds, 2),
            }
        rep = self.report
        out: dict[str, Any] = {
            "documents": rep.documents,
            "chunks": rep.chunks,
            "skipped_unchanged": rep.skipped_unchanged,
            "failed": len(self.failures),
            "refused": rep.refused,
            "rejected_input": len(self.load.errors),
            "superseded": rep.superseded,
            "default_acl_applied": rep.default_acl,
            "removed_chunks": rep.removed_chunks,
            "audit_copies": rep.audit_copies,
            "embedded": rep.embedded,
            "contextualizer": self.contextualizer,
            "llm_calls": rep.context.calls,
            "guardrail_rejections": rep.context.guardrail_rejections,
            "cost_usd": rep.context.cost_usd if rep.context.calls else 0.0,
            "watermarks": rep.watermarks,
            "docs_per_second": round(rep.documents / rep.seconds, 1) if rep.seconds else None,
        }
        if rep.context.calls:
            out["llm_usage"] = rep.context.summary()
        out["seconds"] = round(self.seconds, 2)
        return out


# Stays whole: load, then either plan (dry run) or write; one result object for both.
def ingest_path(
    client: Engine | Any,
    embedder: Embedder | Embedders,
    path: Path,
    principal: Principal,
    *,
    layout: IndexLayout,
    how: PathIngest | None = None,
    on_total: Callable[[int], None] | None = None,
    progress: Callable[[int], None] | None = None,
) -> IngestRun:
    """Load ``path`` for ``principal``'s tenant and ingest what loaded.

    ``client`` is an :class:`~hybrid_es.cluster.engine.Engine` (``hybrid_es.connect``), or an
    elasticsearch-py / opensearch-py client, which is wrapped in one.

    Rejected input (a bad line, a document of another tenant, an unreadable file) is listed in
    ``run.load.errors`` and the rest goes on, unless ``how.fail_fast`` (then IngestError).
    Raises IngestError when the path itself cannot be read, and what ``Ingestor.ingest`` raises
    for the cluster or the model; failed writes are in ``run.failures``, never raised.
    """
    how = how or PathIngest()
    t0 = time.perf_counter()
    load = LoadReport()
    options = LoadOptions(
        tenant=principal.tenant,
        field_map=dict(how.field_map),
        version_from_label=how.version_from_label,
    )
    docs = list(
        load_documents(
            path,
            report=load,
            options=options,
            format=how.format,
            fail_fast=how.fail_fast,
            suffixes=how.suffixes,
        )
    )
    if on_total:
        on_total(len(docs))
    run = IngestRun(
        path,
        principal.tenant,
        how.dry_run,
        load,
        None,
        contextualizer=how.contextualizer.prompt_version,
    )
    if how.dry_run:
        # The embedder a new index would take (an existing index keeps its own).
        count = counter_for(Embedders.of(embedder).for_documents(script_texts(docs)).embedder)
        run.planned_chunks = sum(
            len(chunk_document(d, size=how.chunk_size, overlap=how.overlap, count=count))
            for d in docs
        )
    else:
        engine = as_engine(client)
        ingestor = Ingestor(
            engine,
            embedder,
            layout=layout,
            corpus_state=CorpusState(engine, layout.corpus_state),
            default_acl=how.default_acl,
            contextualizer=how.contextualizer,
            chunk_size=how.chunk_size,
            overlap=how.overlap,
            batch_size=how.batch_size,
        )
        run.report = ingestor.ingest(docs, principal, progress=progress, raise_on_error=False)
    run.seconds = time.perf_counter() - t0
    return run


def with_suffixes(extra: Iterable[str]) -> tuple[str, ...]:
    """The folder loader's text suffixes plus ``extra`` (``py`` or ``.py``)."""
    return (*TEXT_SUFFIXES, *(e if e.startswith(".") else f".{e}" for e in extra))
