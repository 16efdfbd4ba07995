"""The growth benchmark's real data: the pool of real chunks and the SciFact queries, embedded once
and cached.

The pool is every document of SciFact, Cranfield and the Anthropic codebase chunks, cut by the
real chunker and record builder (``hybrid_es.ingest.plan``) and embedded with MiniLM. Records and
vectors are cached under ``~/.cache/hybrid-es/bench-scale/``, keyed by the dataset files, the
model and the analysis version, so a second run reads them back instead of embedding again. The
query vectors are cached the same way; the single-query embedding latency is measured each run.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.scale_stats import latency_stats
from hybrid_es.encoders.embedder import Embedder
from hybrid_es.ingest.beir import read_corpus, read_queries
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import build_chunk_records
from hybrid_es.retrieval.queries import clean_query
from hybrid_es.text.analysis import ANALYSIS_VERSION

CACHE = Path.home() / ".cache" / "hybrid-es" / "bench-scale"
GROUP = "staff"
"""The group every chunk's ACL admits (the benchmark's principal is in it)."""
NOW = datetime(2026, 1, 1, tzinfo=UTC)
"""The fixed ``now`` of the pool's records (ingested_at); searches use the real clock."""
POOL_FILES = (
    "scifact/corpus.jsonl",
    "cranfield/corpus.jsonl",
    "anthropic_codebase/codebase_chunks.json",
)
EMBED_BATCH = 512

Log = Callable[[str], None]


@dataclass
class Pool:
    records: list[dict[str, Any]]
    vectors: NDArray[np.float32]  # (n, 384) float32, unit length
    sources: dict[str, int]
    embed_seconds: float | None
    """Seconds it took to embed the pool (recorded beside the cache when it was built)."""


def codebase_documents(rows: list[dict[str, Any]]) -> Iterator[Document]:
    """The Anthropic codebase's chunks (``codebase_chunks.json``) as documents, empty ones left
    out."""
    for row in rows:
        for ch in row["chunks"]:
            body = str(ch["content"]).strip()
            if body:
                ident = f"code-{row['doc_id']}-{ch['original_index']}".replace("/", "_")
                yield Document(
                    id=ident[:200],
                    tenant="pool",
                    body=body,
                    acl_groups=(GROUP,),
                    source_type="code",
                )


def pool_docs(datasets: Path) -> Iterator[tuple[str, Document]]:
    """Every document of the three datasets, tagged with its dataset."""
    for name in ("scifact", "cranfield"):
        for doc in read_corpus(datasets / name, tenant="pool", acl_groups=(GROUP,)):
            yield name, doc
    rows = json.loads((datasets / "anthropic_codebase" / "codebase_chunks.json").read_text())
    for doc in codebase_documents(rows):
        yield "codebase", doc


def pool_key(datasets: Path, model_id: str) -> str:
    """The cache key of the pool: the dataset files' contents, the model, the analysis. By
    content, not modification time: a copy of the same datasets (a fresh checkout, a refreshed
    shared folder) reuses the pool instead of embedding it again (about 10 minutes)."""
    h = hashlib.sha256()
    for rel in POOL_FILES:
        h.update(f"{rel}:{hashlib.sha256((datasets / rel).read_bytes()).hexdigest()};".encode())
    h.update(f"{model_id};{ANALYSIS_VERSION};size200/40".encode())
    return h.hexdigest()[:16]


def _read_pool(
    rec_path: Path, vec_path: Path
) -> tuple[list[dict[str, Any]], NDArray[np.float32], float | None]:
    records = [json.loads(line) for line in rec_path.open(encoding="utf-8")]
    vectors = np.load(vec_path)
    meta_path = rec_path.with_suffix(".meta.json")
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    return records, vectors, meta.get("embed_seconds")


def _embed_pool(
    records: list[dict[str, Any]], embedder: Embedder, log: Log
) -> tuple[NDArray[np.float32], float]:
    t = time.perf_counter()
    parts = []
    for start in range(0, len(records), EMBED_BATCH):
        batch = [r["search_payload"] for r in records[start : start + EMBED_BATCH]]
        parts.append(embedder.embed_passages(batch))
        log(f"  embedded {min(start + EMBED_BATCH, len(records))}/{len(records)}")
    embed_seconds = time.perf_counter() - t
    return np.ascontiguousarray(np.vstack(parts), dtype=np.float32), embed_seconds


def _build_pool(
    datasets: Path, embedder: Embedder, rec_path: Path, vec_path: Path, log: Log
) -> tuple[list[dict[str, Any]], NDArray[np.float32], float]:
    CACHE.mkdir(parents=True, exist_ok=True)
    records = []
    for source, doc in pool_docs(datasets):
        for rec in build_chunk_records(doc, now=NOW, embedding_model=embedder.model_id):
            rec["_pool_source"] = source
            records.append(rec)
    log(f"pool: {len(records)} real chunks; embedding them with {embedder.model_id} (once; cached)")
    vectors, embed_seconds = _embed_pool(records, embedder, log)
    np.save(vec_path, vectors)
    meta = {
        "embed_seconds": round(embed_seconds, 1),
        "passages": len(records),
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
    }
    rec_path.with_suffix(".meta.json").write_text(json.dumps(meta))
    with rec_path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return records, vectors, embed_seconds


def strip_pool_records(records: list[dict[str, Any]]) -> dict[str, int]:
    """Take the source tag, tenant and ACL off each record (a corpus sets its own); the count of
    records per source."""
    sources = Counter(r.pop("_pool_source", "?") for r in records)
    for r in records:
        r.pop("tenant", None)
        r.pop("acl_users", None)
        r.pop("acl_groups", None)
    return dict(sources)


def load_pool(embedder: Embedder, log: Log, datasets: Path) -> Pool:
    """The real chunks of the datasets and their MiniLM vectors, built once and cached."""
    key = pool_key(datasets, embedder.model_id)
    rec_path, vec_path = CACHE / f"pool-{key}.jsonl", CACHE / f"pool-{key}.npy"
    if rec_path.is_file() and vec_path.is_file():
        records, vectors, embed_seconds = _read_pool(rec_path, vec_path)
    else:
        records, vectors, embed_seconds = _build_pool(datasets, embedder, rec_path, vec_path, log)
    sources = strip_pool_records(records)
    return Pool(records, vectors, sources, embed_seconds)


def load_queries(
    embedder: Embedder, n: int, datasets: Path
) -> tuple[list[str], NDArray[np.float32], dict[str, float]]:
    """The first ``n`` SciFact queries (file order), cleaned, their vectors (cached), and the
    single-query embedding latency (ms) measured now over up to 50 of them."""
    texts = [clean_query(t) for t in read_queries(datasets / "scifact").values() if t.strip()][:n]
    key = hashlib.sha256(("\n".join(texts) + embedder.model_id).encode()).hexdigest()[:16]
    path = CACHE / f"queries-{key}.npy"
    if path.is_file():
        vecs = np.load(path)
    else:
        CACHE.mkdir(parents=True, exist_ok=True)
        vecs = np.asarray(embedder.embed_queries(texts), dtype=np.float32)
        np.save(path, vecs)
    embedder.embed_queries(["warm-up"])
    times = []
    for t in texts[:50]:
        t0 = time.perf_counter()
        embedder.embed_queries([t])
        times.append((time.perf_counter() - t0) * 1000)
    return texts, vecs, latency_stats(times)
