"""A BEIR-layout collection ingested into an index of its own, for evaluation and training.

Ingestion reuses unchanged documents by content hash, so the second command over the same
collection and embedder only checks hashes. The index name is derived from the collection's folder
and the embedder unless given.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, as_engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.reranker import rerank_passage
from hybrid_es.evaluation.progress import NoProgress, Progress
from hybrid_es.evaluation.reranker_train import Candidate
from hybrid_es.ingest.beir import read_corpus
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Chunker, Ingestor, IngestReport
from hybrid_es.models import EVERYONE, WRITER_ROLE, Principal, RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher

EVAL_TENANT = "eval"
EVAL_PRINCIPAL = Principal(tenant=EVAL_TENANT, user_id="eval", roles=(WRITER_ROLE,))


def collection_name(dataset: Path) -> str:
    return dataset.resolve().name.lower().replace("_", "-")


def embedder_slug(embedder: str) -> str:
    """A short, valid index-name part for an embedder: ``minilm`` and ``e5`` as they are, a hub
    name lower-cased with ``/`` (and anything else an index name may not hold) as ``-``, a local
    folder as its lower-cased name plus 8 hex digits of its resolved path (two folders of one
    name get two indices)."""
    if embedder in ("minilm", "e5"):
        return embedder
    local = embedder.startswith(("/", ".", "~")) or Path(embedder).expanduser().exists()
    name = Path(embedder).expanduser().name if local else embedder
    slug = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-_.")[:48] or "model"
    if local:
        resolved = str(Path(embedder).expanduser().resolve())
        slug = f"{slug}-{hashlib.sha256(resolved.encode()).hexdigest()[:8]}"
    return slug


def default_index(dataset: Path, embedder: str) -> str:
    return f"hybrid-es-chunks-eval-{collection_name(dataset)}-{embedder_slug(embedder)}"


@dataclass
class Collection:
    """An ingested collection: where it lives (``es``: the engine) and what its ingest did."""

    es: Engine
    embedder: Embedder
    index: str
    state_index: str
    url: str
    report: IngestReport
    ingest_s: float
    documents: int

    def first_stage(
        self,
        queries: Mapping[str, str],
        qids: Iterable[str],
        *,
        depth: int = 50,
        progress: Callable[[int], None] | None = None,
    ) -> tuple[dict[str, list[Candidate]], dict[str, float]]:
        """Hybrid RRF (client-side) top ``depth`` chunks of each query with its text, as the
        reranker would see them, and each search's measured time in ms. Queries without text
        are left out."""
        searcher = self.searcher(pipeline="hybrid", fusion_method="rrf", fusion="client")
        ranked: dict[str, list[Candidate]] = {}
        took: dict[str, float] = {}
        for qid in qids:
            if queries.get(qid, "").strip():
                resp = searcher.search(
                    queries[qid], EVAL_PRINCIPAL, RequestScope(), top_k=depth, rerank=False
                )
                ranked[qid] = [
                    Candidate(h.chunk_id, h.doc_id, rerank_passage(h.source)) for h in resp.hits
                ]
                took[qid] = resp.timings_ms["total"]
            if progress:
                progress(1)
        return ranked, took

    def searcher(self, **kwargs: object) -> HybridSearcher:
        """A searcher over this collection (keyword arguments as for HybridSearcher)."""
        return HybridSearcher(
            self.es,
            self.embedder,
            index=self.index,
            corpus_state_index=self.state_index,
            url=self.url,
            **kwargs,  # type: ignore[arg-type]
        )


def ingest_collection(
    es: Engine | Any,
    embedder: Embedder,
    dataset: Path,
    *,
    index: str,
    state_index: str,
    url: str,
    progress: Progress | None = None,
    docs: list[Document] | None = None,
    chunker: Chunker | None = None,
) -> Collection:
    """Ingest ``dataset``'s corpus (or ``docs``, cut by ``chunker`` when given) for the
    evaluation tenant; unchanged documents are skipped. ``es``: an engine, or a client it wraps.
    ``progress`` shows it as the "ingest" stage, one step per document."""
    import time

    step = (progress or NoProgress()).stage("ingest")
    engine = as_engine(es, url=url)
    docs = docs if docs is not None else list(read_corpus(dataset, tenant=EVAL_TENANT))
    step.update(completed=0, total=len(docs))
    # A public collection has no ACLs: every user of the evaluation tenant may read it.
    ing = Ingestor(
        engine,
        embedder,
        index=index,
        corpus_state=CorpusState(engine, state_index, url=url),
        chunker=chunker,
        default_acl=(EVERYONE,),
    )
    t = time.perf_counter()
    rep = ing.ingest(docs, EVAL_PRINCIPAL, progress=step.advance)
    return Collection(
        engine, embedder, index, state_index, url, rep, time.perf_counter() - t, len(docs)
    )
