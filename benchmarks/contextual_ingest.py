"""Ingesting for the contextual-retrieval benchmark (``scripts/bench_contextual.py``), with what
each ingest cost counted.

The embedder is metered (``MeteredEmbedder``: passages embedded, seconds) and the contextualizer
wrapped to count the documents it was asked headers for, so a re-ingest of unchanged documents
can be seen to embed nothing and ask for no header. The package code runs unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.evaluation.cookbook import Codebase
from hybrid_es.evaluation.metering import MeteredEmbedder
from hybrid_es.ingest.chunking import Chunk
from hybrid_es.ingest.contextual import Contextualizer, ContextUsage, Header
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor, IngestReport
from hybrid_es.models import EVERYONE, WRITER_ROLE, Principal

TENANT = "bench-cc"
PRINCIPAL = Principal(tenant=TENANT, user_id="bench", roles=(WRITER_ROLE,))


class CountingContextualizer:
    """Counts the documents a contextualizer was asked headers for (an LLM one calls the model
    once per chunk of each)."""

    def __init__(self, inner: Contextualizer) -> None:
        self.inner = inner
        self.documents = 0
        self.chunks = 0

    @property
    def prompt_version(self) -> str:
        return self.inner.prompt_version

    def headers(self, doc: Document, chunks: Sequence[Chunk], usage: ContextUsage) -> list[Header]:
        self.documents += 1
        self.chunks += len(chunks)
        return self.inner.headers(doc, chunks, usage)


def fresh(client: Engine, *names: str) -> None:
    """Delete the indices ``names`` (those that exist)."""
    client.delete_index(",".join(names))


def ingestor(
    client: Engine,
    emb: MeteredEmbedder,
    index: str,
    state: str,
    ctx: CountingContextualizer,
    **kwargs: Any,
) -> Ingestor:
    """An ``Ingestor`` into ``index`` whose chunks everyone may read (``kwargs``: a chunker)."""
    return Ingestor(
        client,
        emb,
        index=index,
        corpus_state=CorpusState(client, state, url=client.url),
        contextualizer=ctx,
        default_acl=(EVERYONE,),
        **kwargs,
    )


def ingest_codebase(
    client: Engine,
    embedder: Embedder,
    cb: Codebase,
    index: str,
    state: str,
    contextualizer: Contextualizer,
) -> tuple[IngestReport, MeteredEmbedder, CountingContextualizer]:
    """Ingest the codebase set's documents with their own chunks into ``index``."""
    emb = MeteredEmbedder(embedder)
    ctx = CountingContextualizer(contextualizer)
    ing = ingestor(client, emb, index, state, ctx, chunker=lambda doc: cb.chunks[doc.id])
    return ing.ingest(cb.docs, PRINCIPAL), emb, ctx
