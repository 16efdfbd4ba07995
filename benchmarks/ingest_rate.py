"""How fast ingest writes chunks, against the encoder alone: what ``scripts/bench_ingest.py``
runs (issue 28 item 5).

The same texts three ways: the first documents of a BEIR corpus (SciFact) whose chunks add up to
``--chunks``, cut by the ingestor's own chunker with its default (extractive) headers:

- ``encoder``: ``embed_passages`` on exactly the texts an ingest embeds, in the same groups (one
  call per ingest batch of ``--batch-size`` documents): the most an ingest can reach;
- ``ingest, overlap``: ``Ingestor.ingest`` into a fresh index (the default: a batch's bulk
  request is sent while the next batch is embedded);
- ``ingest, no overlap``: the same with ``overlap_bulk=False`` (each batch embedded, then sent).

Each ingest counts everything a caller waits for: the index check, the bracket (repair, begin,
finish), the refresh. The machine may be shared, so each variant runs ``--rounds`` times,
interleaved (the order reversed every other round); every run is reported, none averaged away.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.bench import bench_client, bench_embedder, machine, print_rows
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.evaluation.metering import MeteredEmbedder
from hybrid_es.ingest.beir import read_corpus
from hybrid_es.ingest.contextual import ContextUsage, ExtractiveContextualizer
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Chunker, Ingestor
from hybrid_es.ingest.plan import build_chunk_records
from hybrid_es.models import EVERYONE, WRITER_ROLE, Principal

TENANT = "bench-ingest"
PRINCIPAL = Principal(tenant=TENANT, user_id="bench", roles=(WRITER_ROLE,))
VARIANTS = ("encoder", "ingest, overlap", "ingest, no overlap")


@dataclass
class IngestRateOptions:
    """The parsed command line of ``scripts/bench_ingest.py`` (one field per flag)."""

    dataset: Path
    chunks: int
    batch_size: int
    embedder: str
    rounds: int
    index_prefix: str
    json: bool


@dataclass(frozen=True)
class Corpus:
    """The documents measured and, per ingest batch, the texts an ingest of them embeds."""

    docs: list[Document]
    batches: list[list[str]]

    @property
    def chunks(self) -> int:
        return sum(len(b) for b in self.batches)


def load_corpus(dataset: Path, chunker: Chunker, *, chunks: int, batch_size: int) -> Corpus:
    """The first documents of ``dataset`` whose chunks (``chunker``: the ingestor's) reach
    ``chunks``, and the search payloads an ingest embeds, grouped as its batches are."""
    docs: list[Document] = []
    payloads: list[list[str]] = []
    total = 0
    for doc in read_corpus(dataset, tenant=TENANT):
        if total >= chunks:
            break
        pieces = chunker(doc)
        headers = ExtractiveContextualizer().headers(doc, pieces, ContextUsage())
        records = build_chunk_records(
            doc,
            now=datetime.now(UTC),
            embedding_model="unused",
            chunks=pieces,
            headers=headers,
        )
        docs.append(doc)
        payloads.append([r["search_payload"] for r in records])
        total += len(records)
    batches = [
        [t for texts in payloads[i : i + batch_size] for t in texts]
        for i in range(0, len(payloads), batch_size)
    ]
    return Corpus(docs, batches)


def encoder_run(embedder: Embedder, corpus: Corpus) -> dict[str, Any]:
    """``embed_passages`` on each batch's texts, one call per batch."""
    t = time.perf_counter()
    for texts in corpus.batches:
        embedder.embed_passages(texts)
    seconds = time.perf_counter() - t
    return _row(corpus.chunks, seconds, embed_seconds=seconds)


def ingest_run(
    client: Engine,
    embedder: Embedder,
    corpus: Corpus,
    *,
    overlap: bool,
    batch_size: int,
    index: str,
    state: str,
) -> dict[str, Any]:
    """One ingest of the corpus into a fresh ``index`` (deleted afterwards)."""
    client.delete_index(f"{index},{state}")
    metered = MeteredEmbedder(embedder)
    ing = Ingestor(
        client,
        metered,
        index=index,
        corpus_state=CorpusState(client, state, url=client.url),
        batch_size=batch_size,
        default_acl=(EVERYONE,),
        overlap_bulk=overlap,
    )
    try:
        rep = ing.ingest(corpus.docs, PRINCIPAL)
    finally:
        client.delete_index(f"{index},{state}")
    if rep.chunks != corpus.chunks:
        raise RuntimeError(f"the ingest wrote {rep.chunks} chunks, expected {corpus.chunks}")
    return _row(rep.chunks, rep.seconds, embed_seconds=metered.seconds)


def _row(chunks: int, seconds: float, *, embed_seconds: float) -> dict[str, Any]:
    return {
        "chunks": chunks,
        "seconds": round(seconds, 2),
        "chunks_per_s": round(chunks / seconds, 1),
        "embed_seconds": round(embed_seconds, 2),
    }


def measure(
    client: Engine, embedder: Embedder, corpus: Corpus, options: IngestRateOptions
) -> list[dict[str, Any]]:
    """Every variant ``options.rounds`` times, interleaved (every other round reversed)."""
    index = f"{options.index_prefix}-{int(time.time())}"
    state = index.replace("chunks", "corpus-state", 1)
    runs: list[dict[str, Any]] = []
    for r in range(options.rounds):
        order = VARIANTS if r % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            print(f"round {r + 1}: {variant}", file=sys.stderr, flush=True)
            if variant == "encoder":
                row = encoder_run(embedder, corpus)
            else:
                row = ingest_run(
                    client,
                    embedder,
                    corpus,
                    overlap=variant == "ingest, overlap",
                    batch_size=options.batch_size,
                    index=index,
                    state=state,
                )
            runs.append({"variant": variant, "round": r + 1, **row})
    return runs


def table(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run, grouped by variant (in :data:`VARIANTS` order), then by round."""
    rows = sorted(runs, key=lambda x: (VARIANTS.index(x["variant"]), x["round"]))
    return [
        {
            "variant": x["variant"],
            "round": x["round"],
            "chunks": x["chunks"],
            "seconds": x["seconds"],
            "embedding s": x["embed_seconds"],
            "chunks/s": x["chunks_per_s"],
        }
        for x in rows
    ]


def run(options: IngestRateOptions, command: str) -> int:
    """Load, measure, print (a table, or one JSON object with ``--json``)."""
    client = bench_client()
    at_start = machine(client)
    embedder = bench_embedder(options.embedder)
    chunker = Ingestor(client, embedder, index=options.index_prefix).chunker_for(embedder)
    corpus = load_corpus(
        options.dataset, chunker, chunks=options.chunks, batch_size=options.batch_size
    )
    runs = measure(client, embedder, corpus, options)
    out = {
        "command": command,
        "machine": at_start,
        "embedder": embedder.model_id,
        "documents": len(corpus.docs),
        "chunks": corpus.chunks,
        "batch_size": options.batch_size,
        "runs": runs,
    }
    if options.json:
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
    else:
        print_rows(
            f"ingest rate: {corpus.chunks} chunks of {len(corpus.docs)} documents, "
            f"{embedder.model_id}, batches of {options.batch_size} documents",
            table(runs),
        )
    return 0
