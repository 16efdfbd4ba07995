"""Part 2 of the contextual-retrieval benchmark (``--scifact``): the cost of re-ingesting.

The SciFact corpus goes into its own index three times, with extractive headers: from empty,
again unchanged (everything must be skipped: nothing embedded, no header asked for), and with 1 %
of the documents edited (those regenerate all their chunks, the rest are skipped). Each run
records its time, what it wrote, skipped and removed, the passages embedded and the headers
asked for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.contextual_ingest import (
    CountingContextualizer,
    fresh,
    ingestor,
)
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.evaluation.metering import MeteredEmbedder
from hybrid_es.ingest.beir import read_corpus
from hybrid_es.ingest.contextual import ExtractiveContextualizer
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import IngestReport
from hybrid_es.models import Principal

if TYPE_CHECKING:
    from rich.console import Console


TENANT = "bench-scifact"
STATE = "hybrid-es-corpus-state-bench-scifact"
EDIT = " (Edited: one sentence added.)"
EDIT_EVERY = 100
"""One document in this many is edited (the first, then every hundredth)."""


def edited(docs: list[Document]) -> list[Document]:
    """``docs`` with every :data:`EDIT_EVERY`-th body (from the first) lengthened by a sentence."""
    return [
        Document.model_validate({**d.model_dump(), "body": d.body + EDIT})
        if i % EDIT_EVERY == 0
        else d
        for i, d in enumerate(docs)
    ]


def reingest_figures(
    rep: IngestReport, emb: MeteredEmbedder, ctx: CountingContextualizer, chunks_in_index: int
) -> dict[str, Any]:
    """One ingest's figures: time, what it wrote, skipped and removed, what it embedded."""
    return {
        "seconds": round(rep.seconds, 1),
        "documents": rep.documents,
        "skipped_unchanged": rep.skipped_unchanged,
        "chunks_written": rep.chunks,
        "removed_chunks": rep.removed_chunks,
        "embedded": emb.passages,
        "embed_seconds": round(emb.seconds, 1),
        "header_calls": ctx.documents,
        "docs_per_second": round(rep.documents / rep.seconds, 1),
        "chunks_in_index": chunks_in_index,
    }


def scifact_part(
    client: Engine,
    embedder: Embedder,
    console: Console,
    *,
    dataset: Path,
    limit: int | None,
    index_prefix: str,
    keep: bool,
) -> dict[str, Any]:
    """Part 2: the first ``limit`` SciFact documents (all when None) ingested three times."""
    docs = list(read_corpus(dataset, tenant=TENANT))
    if limit:
        docs = docs[:limit]
    index = f"{index_prefix}-scifact"
    fresh(client, index, STATE)
    runs = {}
    for name, batch in (("first ingest", docs), ("unchanged", docs), ("1% edited", edited(docs))):
        console.print(f"scifact: {name} ({len(batch)} documents)", highlight=False)
        emb = MeteredEmbedder(embedder)
        ctx = CountingContextualizer(ExtractiveContextualizer())
        ing = ingestor(client, emb, index, STATE, ctx)
        rep = ing.ingest(batch, Principal(tenant=TENANT, user_id="bench"))
        runs[name] = reingest_figures(rep, emb, ctx, client.count(index))
    if not keep:
        fresh(client, index, STATE)
    return {"index": index, "runs": runs}
