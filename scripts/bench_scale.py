#!/usr/bin/env python
"""Growth benchmark: how indexing, storage, memory, latency and kNN recall grow with the corpus.

For each size (``--sizes``) and vector quantisation (``--quantizations``) it builds one index
``hybrid-es-scale-<q>-<n>`` with the real chunk mapping and analysis (``es_templates``: the
``hybrid-es-chunks`` index template's mappings, the ``hybrid-es-settings`` and
``hybrid-es-analysis`` components' settings), only ``embedding.index_options.type`` replaced,
loads it with the bulk helper (refresh off), and measures:

- indexing rate (chunks/s of the bulk load; refresh and the optional force-merge apart);
- size on disk per chunk (``_stats`` store size / docs) and vector memory per chunk (the index
  stats' ``dense_vector.off_heap`` section: raw vectors ``vec``, quantised ``veq``, binarised
  ``veb``, HNSW graph ``vex``);
- p50/p95 of ``HybridSearcher.search`` for the BM25 leg, the kNN leg and the client-side fused
  hybrid (query vectors cached, no reranker: the cluster's part of a search);
- recall@10 of the approximate kNN leg against exact brute force (numpy, float32 dot products
  over exactly the vectors indexed, filtered to the query's tenant, which is what the policy
  filter admits here) at each ``--num-candidates``.

The data: real chunks of the shared datasets (SciFact abstracts, Cranfield, the Anthropic
codebase chunks), made by the real chunker and record builder (``hybrid_es.ingest.plan``) and
embedded once with MiniLM (cached under ``~/.cache/hybrid-es/bench-scale/``). A size up to the
pool's size uses real chunks and real vectors only; beyond it, chunk ``i`` is a copy of pool
chunk ``perm[i % pool]`` with ~10 % of its words dropped and its vector perturbed (Gaussian noise
of ``--noise`` per dimension, renormalised). Every chunk gets one of ``--tenants`` tenants at
random and an ACL that the benchmark's principal (group ``staff``) passes, so the policy filter
of a search admits exactly its tenant's chunks.

Run from the repository root with the project venv and the dev node up::

    source ~/.cache/hybrid-es/venv/bin/activate; export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
    eval "$(scripts/es.sh env)"
    python scripts/bench_scale.py --sizes 10000,100000 --merge
    python scripts/bench_scale.py --sizes 1000000 --quantizations int8_hnsw --merge

``--merge`` keeps the rows of an earlier run in ``--json`` (another size or quantisation) and
replaces those rerun, so the table and the plot cover every run. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import math
import os
import random
import shlex
import shutil
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.cluster.templates import (
    ANALYSIS_TEMPLATE,
    CHUNKS_TEMPLATE,
    SETTINGS_TEMPLATE,
    load_templates,
)
from hybrid_es.evaluation.bench import bench_client, machine, percentile, print_rows
from hybrid_es.ingest.beir import read_corpus, read_queries
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.plan import build_chunk_records
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.analysis import ANALYSIS_VERSION
from hybrid_es.retrieval.dialects import dialect_for
from hybrid_es.retrieval.embedder import Embedder, make_embedder
from hybrid_es.retrieval.folding import fold_for_matching
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import RetrievalParams, clean_query
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.retrieval.vector_cache import QueryVectorCache
from hybrid_es.settings import Settings

REPO = Path(__file__).resolve().parents[1]
DATASETS = (REPO / ".." / "shared" / "datasets").resolve()
CACHE = Path.home() / ".cache" / "hybrid-es" / "bench-scale"
QUANTIZATIONS = ("hnsw", "int8_hnsw", "bbq_hnsw")
PREFIX = "hybrid-es-scale"
CORPUS_STATE = "hybrid-es-corpus-state-bench-scale"
GROUP = "staff"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
"""The fixed ``now`` of the pool's records (ingested_at); searches use the real clock."""
BLOCK = 1000
"""Chunks generated together (one noise draw per block: the brute force redraws it)."""
DIMS = 384


# -- the pool of real chunks --------------------------------------------------------------------


def _pool_docs() -> Iterator[tuple[str, Document]]:
    """Every document of the three datasets, tagged with its dataset."""
    for name in ("scifact", "cranfield"):
        for doc in read_corpus(DATASETS / name, tenant="pool", acl_groups=(GROUP,)):
            yield name, doc
    rows = json.loads((DATASETS / "anthropic_codebase" / "codebase_chunks.json").read_text())
    for row in rows:
        for ch in row["chunks"]:
            body = str(ch["content"]).strip()
            if body:
                ident = f"code-{row['doc_id']}-{ch['original_index']}".replace("/", "_")
                yield (
                    "codebase",
                    Document(
                        id=ident[:200],
                        tenant="pool",
                        body=body,
                        acl_groups=(GROUP,),
                        source_type="code",
                    ),
                )


def _pool_key(model_id: str) -> str:
    h = hashlib.sha256()
    for rel in (
        "scifact/corpus.jsonl",
        "cranfield/corpus.jsonl",
        "anthropic_codebase/codebase_chunks.json",
    ):
        st = (DATASETS / rel).stat()
        h.update(f"{rel}:{st.st_size}:{int(st.st_mtime)};".encode())
    h.update(f"{model_id};{ANALYSIS_VERSION};size200/40".encode())
    return h.hexdigest()[:16]


@dataclass
class Pool:
    records: list[dict[str, Any]]
    vectors: np.ndarray  # (n, 384) float32, unit length
    sources: dict[str, int]
    embed_seconds: float | None
    """Seconds it took to embed the pool (recorded beside the cache when it was built)."""


def load_pool(embedder: Embedder, log: Any) -> Pool:
    """The real chunks of the datasets and their MiniLM vectors, built once and cached."""
    key = _pool_key(embedder.model_id)
    rec_path, vec_path = CACHE / f"pool-{key}.jsonl", CACHE / f"pool-{key}.npy"
    if rec_path.is_file() and vec_path.is_file():
        records = [json.loads(line) for line in rec_path.open(encoding="utf-8")]
        vectors = np.load(vec_path)
        meta_path = rec_path.with_suffix(".meta.json")
        meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        embed_seconds = meta.get("embed_seconds")
    else:
        CACHE.mkdir(parents=True, exist_ok=True)
        records = []
        for source, doc in _pool_docs():
            for rec in build_chunk_records(doc, now=NOW, embedding_model=embedder.model_id):
                rec["_pool_source"] = source
                records.append(rec)
        log(
            f"pool: {len(records)} real chunks; embedding them with {embedder.model_id} "
            "(once; cached)"
        )
        t = time.perf_counter()
        parts = []
        for start in range(0, len(records), 512):
            batch = [r["search_payload"] for r in records[start : start + 512]]
            parts.append(embedder.embed_passages(batch))
            log(f"  embedded {min(start + 512, len(records))}/{len(records)}")
        embed_seconds = time.perf_counter() - t
        vectors = np.ascontiguousarray(np.vstack(parts), dtype=np.float32)
        np.save(vec_path, vectors)
        rec_path.with_suffix(".meta.json").write_text(
            json.dumps(
                {
                    "embed_seconds": round(embed_seconds, 1),
                    "passages": len(records),
                    "load_average_end": [round(x, 2) for x in os.getloadavg()],
                }
            )
        )
        with rec_path.open("w", encoding="utf-8") as fh:
            for r in records:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    sources = Counter(r.pop("_pool_source", "?") for r in records)
    for r in records:
        r.pop("tenant", None)
        r.pop("acl_users", None)
        r.pop("acl_groups", None)
    return Pool(records, vectors, dict(sources), embed_seconds)


def load_queries(embedder: Embedder, n: int) -> tuple[list[str], np.ndarray, dict[str, float]]:
    """The first ``n`` SciFact queries (file order), cleaned, their vectors (cached), and the
    single-query embedding latency (ms) measured now over up to 50 of them."""
    texts = [clean_query(t) for t in read_queries(DATASETS / "scifact").values() if t.strip()][:n]
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
    return texts, vecs, _stats(times)


# -- synthetic chunks ---------------------------------------------------------------------------


class Synth:
    """Chunk ``i`` of a corpus of ``n``: deterministic per block of BLOCK chunks."""

    def __init__(self, pool: Pool, n: int, tenants: int, noise: float, seed: int) -> None:
        self.pool, self.n, self.tenants, self.noise, self.seed = pool, n, tenants, noise, seed
        self.perm = np.random.default_rng(seed).permutation(len(pool.records))
        self.blocks = math.ceil(n / BLOCK)

    @property
    def real(self) -> int:
        return min(self.n, len(self.pool.records))

    def block(self, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Chunk numbers, pool indices, tenants and vectors (float32) of block ``b``."""
        i = np.arange(b * BLOCK, min(self.n, (b + 1) * BLOCK))
        d = len(self.pool.records)
        base = self.perm[i % d]
        rng = np.random.default_rng([self.seed, b])
        tenant = rng.integers(self.tenants, size=len(i))
        vecs = self.pool.vectors[base].copy()
        noise = rng.standard_normal((len(i), vecs.shape[1]), dtype=np.float32) * self.noise
        copies = (i // d) > 0
        if copies.any():
            v = vecs[copies] + noise[copies]
            vecs[copies] = v / np.linalg.norm(v, axis=1, keepdims=True)
        return i, base, tenant, vecs.astype(np.float32)

    def actions(self, index: str) -> Iterator[dict[str, Any]]:
        """The bulk actions, generated block by block (memory stays bounded)."""
        d = len(self.pool.records)
        for b in range(self.blocks):
            i, base, tenant, vecs = self.block(b)
            rnd = random.Random(self.seed * 1_000_003 + b)
            for k in range(len(i)):
                n = int(i[k])
                src = dict(self.pool.records[int(base[k])])
                if n >= d:  # a perturbed copy: ~10 % of the words dropped
                    words = src["search_payload"].split()
                    kept = [w for w in words if rnd.random() > 0.1] or words
                    src["search_payload"] = " ".join(kept)
                    if "search_folded" in src:  # what BM25 reads (retrieval.folding)
                        src["search_folded"] = fold_for_matching(src["search_payload"])
                    raw = src["raw_chunk_text"].split()
                    src["raw_chunk_text"] = (
                        " ".join(w for w in raw if rnd.random() > 0.1) or src["raw_chunk_text"]
                    )
                    src["doc_id"] = f"{src['doc_id']}~{n // d}"
                src["chunk_id"] = f"s{n}"
                src["tenant"] = f"t{int(tenant[k])}"
                src["acl_groups"] = [GROUP] if rnd.random() < 0.7 else [GROUP, "ops"]
                src["acl_users"] = [f"u{rnd.randrange(1000)}"]
                src["valid_from"] = f"20{rnd.randrange(15, 25)}-01-01"
                src["deleted"] = False
                src["embedding"] = vecs[k]
                yield {"_index": index, "_id": str(n), "_source": src}

    def exact_top(self, qvecs: np.ndarray, qtenant: np.ndarray, k: int) -> np.ndarray:
        """Brute force: the ``k`` best chunk numbers per query among its tenant's chunks
        (cosine = dot product: every vector is unit length)."""
        nq = len(qvecs)
        best_s = np.full((nq, k), -np.inf, dtype=np.float32)
        best_i = np.full((nq, k), -1, dtype=np.int64)
        q = qvecs.astype(np.float32)
        for b in range(self.blocks):
            i, _, tenant, vecs = self.block(b)
            s = vecs @ q.T  # (block, nq)
            s[tenant[:, None] != qtenant[None, :]] = -np.inf
            s = s.T  # (nq, block)
            all_s = np.concatenate([best_s, s], axis=1)
            all_i = np.concatenate([best_i, np.broadcast_to(i, s.shape)], axis=1)
            top = np.argpartition(-all_s, k - 1, axis=1)[:, :k]
            best_s = np.take_along_axis(all_s, top, axis=1)
            best_i = np.take_along_axis(all_i, top, axis=1)
        order = np.argsort(-best_s, axis=1)
        return np.take_along_axis(best_i, order, axis=1)


# -- the index ----------------------------------------------------------------------------------


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(a)
    for k, v in b.items():
        out[k] = (
            _merge(out[k], v)
            if isinstance(v, dict) and isinstance(out.get(k), dict)
            else copy.deepcopy(v)
        )
    return out


def index_body(engine: Engine, quantization: str) -> dict[str, Any]:
    """The chunks index template's mappings and its components' settings, composed as
    Elasticsearch composes them, with ``embedding.index_options.type`` = ``quantization``."""
    templates = {
        t.name: t for t in load_templates(probe(engine).analysis_profile, flavor=engine.flavor)
    }
    chunks = templates[CHUNKS_TEMPLATE].body
    settings: dict[str, Any] = {}
    for name in chunks.get("composed_of", [SETTINGS_TEMPLATE, ANALYSIS_TEMPLATE]):
        settings = _merge(settings, templates[name].body.get("template", {}).get("settings", {}))
    settings = _merge(settings, chunks["template"].get("settings", {}))
    mappings = copy.deepcopy(chunks["template"]["mappings"])
    emb = mappings["properties"]["embedding"]
    emb["index_options"]["type"] = quantization
    return {"settings": settings, "mappings": mappings}


def templates_matching(engine: Engine, index: str) -> dict[str, Any]:
    """Which index template would apply to ``index`` (none is the intent: the benchmark
    composes the chunk template's body itself)."""
    sim = engine.simulate_index_template(index)
    overlapping = [o.get("name") for o in sim.get("overlapping", [])]
    applied = sim.get("template", {})
    matched = (applied.get("settings") or applied.get("mappings")) and sim.get("template")
    return {"overlapping": overlapping, "applies": bool(matched)}


def _stats(xs: Sequence[float]) -> dict[str, float]:
    return {"p50": round(percentile(xs, 50), 1), "p95": round(percentile(xs, 95), 1), "n": len(xs)}


def index_stats(engine: Engine, index: str) -> dict[str, Any]:
    s = engine.request("GET", f"/{index}/_stats", what="reading index stats")
    p = s["indices"][index]["primaries"]
    docs = int(p["docs"]["count"])
    off = p.get("dense_vector", {}).get("off_heap", {})
    seg = engine.request("GET", f"/{index}/_segments", what="reading segments")
    shards = seg["indices"][index]["shards"]
    segments = sum(len(c["segments"]) for copies in shards.values() for c in copies)
    return {
        "docs": docs,
        "store_bytes": int(p["store"]["size_in_bytes"]),
        "segments": segments,
        "dense_vector_count": p.get("dense_vector", {}).get("value_count"),
        "off_heap": {k: int(v) for k, v in off.items() if isinstance(v, int | float)},
    }


def node_heap(engine: Engine) -> dict[str, int]:
    s = engine.request("GET", "/_nodes/_local/stats/jvm", what="reading node stats")
    (node,) = s["nodes"].values()
    mem = node["jvm"]["mem"]
    return {
        "heap_used_bytes": int(mem["heap_used_in_bytes"]),
        "heap_max_bytes": int(mem["heap_max_in_bytes"]),
    }


def hot_bytes(quantization: str, off: dict[str, int]) -> int:
    """Off-heap bytes the HNSW search reads on every query: the graph and the vectors it
    compares (raw floats for hnsw, int8 for int8_hnsw, the binarised vectors for bbq_hnsw).
    The raw floats of a quantised index are read only for rescoring and merging."""
    graph = off.get("total_vex_size_bytes", 0)
    vectors = {
        "hnsw": "total_vec_size_bytes",
        "int8_hnsw": "total_veq_size_bytes",
        "bbq_hnsw": "total_veb_size_bytes",
    }[quantization]
    return graph + off.get(vectors, 0)


def load(
    engine: Engine, synth: Synth, index: str, args: argparse.Namespace, log: Any
) -> dict[str, Any]:
    from elasticsearch.helpers import parallel_bulk

    bulk = engine.with_options(request_timeout=600, max_retries=3)
    sampler = HeapSampler(engine)
    sampler.start()
    t0 = time.perf_counter()
    done = 0
    for ok, item in parallel_bulk(
        bulk.raw,
        synth.actions(index),
        thread_count=args.bulk_threads,
        chunk_size=args.bulk_size,
        queue_size=args.bulk_threads,
        raise_on_error=True,
    ):
        if not ok:
            raise SystemExit(f"bulk failure: {item}")
        done += 1
        if done % 100_000 == 0:
            el = time.perf_counter() - t0
            log(f"  {index}: {done}/{synth.n} in {el:.0f} s ({done / el:.0f}/s)")
    bulk_s = time.perf_counter() - t0
    engine.put_settings(index, {"index": {"refresh_interval": args.refresh_interval}})
    t = time.perf_counter()
    bulk.request("POST", f"/{index}/_refresh", what="refreshing")
    refresh_s = time.perf_counter() - t
    merge_s = None
    if args.force_merge:
        t = time.perf_counter()
        bulk.request(
            "POST",
            f"/{index}/_forcemerge",
            params={"max_num_segments": str(args.force_merge)},
            what="force-merging",
        )
        merge_s = time.perf_counter() - t
    heap = sampler.stop()
    return {
        "bulk_s": round(bulk_s, 2),
        "refresh_s": round(refresh_s, 2),
        "force_merge_s": None if merge_s is None else round(merge_s, 2),
        "chunks": done,
        "node_heap_during_load": heap,
    }


class HeapSampler(threading.Thread):
    """Samples the node's heap every 2 s while a load runs: the highest heap used, and the
    old-generation collections it caused. The node is shared with other work: an upper bound."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(daemon=True)
        self.engine = engine
        self.halt = threading.Event()
        self.peak = 0
        self.samples = 0
        self.max_bytes = 0
        self.old_gc_start: int | None = None
        self.old_gc_end: int | None = None

    def _read(self) -> None:
        s = self.engine.request("GET", "/_nodes/_local/stats/jvm", what="reading node stats")
        (node,) = s["nodes"].values()
        jvm = node["jvm"]
        self.peak = max(self.peak, int(jvm["mem"]["heap_used_in_bytes"]))
        self.max_bytes = int(jvm["mem"]["heap_max_in_bytes"])
        old = int(jvm["gc"]["collectors"].get("old", {}).get("collection_count", 0))
        if self.old_gc_start is None:
            self.old_gc_start = old
        self.old_gc_end = old
        self.samples += 1

    def run(self) -> None:
        while not self.halt.is_set():
            with contextlib.suppress(Exception):  # a missed sample does not stop a load
                self._read()
            self.halt.wait(2.0)

    def stop(self) -> dict[str, int]:
        self.halt.set()
        self.join(timeout=10)
        return {
            "heap_used_peak_bytes": self.peak,
            "heap_max_bytes": self.max_bytes,
            "samples": self.samples,
            "old_gc_collections": (self.old_gc_end or 0) - (self.old_gc_start or 0),
        }


# -- searching ----------------------------------------------------------------------------------


def searchers(
    engine: Engine,
    embedder: Embedder,
    index: str,
    texts: list[str],
    qvecs: np.ndarray,
    qtenants: np.ndarray,
    ncs: Sequence[int],
    window: int,
) -> dict[str, HybridSearcher]:
    """One searcher per measured path, each with every query vector already in its cache."""
    out = {
        "bm25": HybridSearcher(
            engine,
            embedder,
            index=index,
            pipeline="bm25",
            fusion="client",
            corpus_state_index=CORPUS_STATE,
        ),
        "hybrid": HybridSearcher(
            engine,
            embedder,
            index=index,
            pipeline="hybrid",
            fusion="client",
            corpus_state_index=CORPUS_STATE,
            params=RetrievalParams(window=window),
        ),
    }
    for nc in ncs:
        out[f"knn@{nc}"] = HybridSearcher(
            engine,
            embedder,
            index=index,
            pipeline="dense",
            fusion="client",
            corpus_state_index=CORPUS_STATE,
            params=RetrievalParams(window=min(window, nc), num_candidates=nc),
        )
    for s in out.values():
        for text, vec, t in zip(texts, qvecs, qtenants, strict=True):
            s.query_cache.put(
                QueryVectorCache.key(f"t{t}", embedder.model_id, text), [float(x) for x in vec]
            )
    return out


def principal(t: int) -> Principal:
    return Principal(tenant=f"t{t}", user_id="bench-reader", groups=(GROUP,))


def measure_search(
    ss: dict[str, HybridSearcher], texts: list[str], qtenants: np.ndarray, exact: np.ndarray
) -> dict[str, Any]:
    scope = RequestScope()
    for s in ss.values():  # warm-up, untimed: mapping check, corpus state, first queries
        for text, t in list(zip(texts, qtenants, strict=True))[:5]:
            s.search(text, principal(int(t)), scope, top_k=10, rerank=False)
    out: dict[str, Any] = {"latency_ms": {}, "retrieval_ms": {}, "recall@10": {}, "embed_ms": {}}
    total: dict[str, list[float]] = {n: [] for n in ss}
    retrieval: dict[str, list[float]] = {n: [] for n in ss}
    embeds: dict[str, list[float]] = {n: [] for n in ss}
    recalls: dict[str, list[float]] = {n: [] for n in ss if n.startswith("knn@")}
    # the paths take turns on each query, so a burst of load on this shared machine falls on
    # all of them alike
    for qn, (text, t) in enumerate(zip(texts, qtenants, strict=True)):
        for name, s in ss.items():
            resp = s.search(text, principal(int(t)), scope, top_k=10, rerank=False)
            total[name].append(resp.timings_ms["total"])
            retrieval[name].append(resp.timings_ms["retrieval"])
            embeds[name].append(resp.timings_ms.get("embed", 0.0))
            if name in recalls:
                got = {int(h.chunk_id[1:]) for h in resp.hits[:10]}
                recalls[name].append(len(got & {int(x) for x in exact[qn]}) / 10)
    for name in ss:
        out["latency_ms"][name] = _stats(total[name])
        out["retrieval_ms"][name] = _stats(retrieval[name])
        out["embed_ms"][name] = round(max(embeds[name]), 3)
        if name in recalls:
            out["recall@10"][name.removeprefix("knn@")] = round(float(np.mean(recalls[name])), 4)
    return out


def measure_oversample(
    engine: Engine,
    index: str,
    qvecs: np.ndarray,
    qtenants: np.ndarray,
    exact: np.ndarray,
    oversamples: Sequence[float],
    num_candidates: int,
    window: int,
) -> dict[str, Any]:
    """The kNN leg's body as the searcher builds it (``dialect.dense_body``, the policy filter
    in it) with ``rescore_vector.oversample`` set per request (0: no rescoring; the mapping's
    default otherwise applies): recall@10 and the round trip per setting."""
    dialect = dialect_for(engine.flavor)
    params = RetrievalParams(window=window, num_candidates=num_candidates)
    now = datetime.now(UTC)
    times: dict[float, list[float]] = {o: [] for o in oversamples}
    recalls: dict[float, list[float]] = {o: [] for o in oversamples}
    for qn, (vec, t) in enumerate(zip(qvecs, qtenants, strict=True)):
        policy = policy_filter(principal(int(t)), RequestScope(), now)
        for o in oversamples:  # the settings take turns on each query
            body = dialect.dense_body([float(x) for x in vec], policy, params)
            body["retriever"]["knn"]["rescore_vector"] = {"oversample": o}
            body["_source"] = ["chunk_id"]
            t0 = time.perf_counter()
            resp = engine.search(index, body)
            if qn >= 5:  # the first five warm up
                times[o].append((time.perf_counter() - t0) * 1000)
            got = {int(h["_source"]["chunk_id"][1:]) for h in resp["hits"]["hits"][:10]}
            recalls[o].append(len(got & {int(x) for x in exact[qn]}) / 10)
    return {
        f"{o:g}": {"recall@10": round(float(np.mean(recalls[o])), 4), "ms": _stats(times[o])}
        for o in oversamples
    }


# -- one run ------------------------------------------------------------------------------------


def run_one(
    engine: Engine,
    embedder: Embedder,
    pool: Pool,
    size: int,
    q: str,
    texts: list[str],
    qvecs: np.ndarray,
    args: argparse.Namespace,
    log: Any,
) -> dict[str, Any]:
    index = f"{PREFIX}-{q.replace('_', '-')}-{size}"
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    if engine.index_exists(index):
        engine.delete_index(index)
    matching = templates_matching(engine, index)
    if matching["overlapping"] or matching["applies"]:
        log(f"  note: index templates apply to {index}: {matching}")
    body = index_body(engine, q)
    body["settings"].setdefault("index", {})["refresh_interval"] = "-1"
    args.refresh_interval = (
        index_body(engine, q)["settings"].get("index", {}).get("refresh_interval", "1s")
    )
    free = shutil.disk_usage(Path.home()).free
    if size * 8_000 * 3 > free:  # ~6-8 KB a chunk measured at 10k-100k, merges need headroom
        raise SystemExit(f"{index}: {free / 1e9:.0f} GB free on disk is too little for {size}")
    engine.create_index(index, body)
    field = engine.request(
        "GET",
        f"/{index}/_mapping/field/embedding",
        params={"include_defaults": "true"},
        what="reading the vector field",
    )
    index_options = field[index]["mappings"]["embedding"]["mapping"]["embedding"].get(
        "index_options", {}
    )
    synth = Synth(pool, size, args.tenants, args.noise, args.seed)
    log(f"{index}: loading {size} chunks ({synth.real} real, {size - synth.real} perturbed)")
    timing = load(engine, synth, index, args, log)
    stats = index_stats(engine, index)
    heap = node_heap(engine)
    qtenants = np.arange(len(texts)) % args.tenants
    t = time.perf_counter()
    exact = synth.exact_top(qvecs, qtenants, 10)
    brute_s = time.perf_counter() - t
    # the policy filter admits exactly the tenant's chunks (what the brute force compares to)
    p = principal(0)
    by_policy = engine.count(
        index, {"bool": {"filter": [policy_filter(p, RequestScope(), datetime.now(UTC))]}}
    )
    by_tenant = engine.count(index, {"term": {"tenant": "t0"}})
    if by_policy != by_tenant:
        raise SystemExit(f"the policy filter admits {by_policy} chunks of t0, not {by_tenant}")
    ss = searchers(
        engine, embedder, index, texts, qvecs, qtenants, args.num_candidates, args.window
    )
    log(f"{index}: searching ({len(texts)} queries x {len(ss)} paths)")
    search = measure_search(ss, texts, qtenants, exact)
    if q != "hnsw" and args.oversample:
        log(f"{index}: kNN leg with rescore_vector.oversample {args.oversample}")
        search["oversample_nc100"] = measure_oversample(
            engine, index, qvecs, qtenants, exact, args.oversample, 100, args.window
        )
    off = stats["off_heap"]
    docs = max(stats["docs"], 1)
    row = {
        "size": size,
        "quantization": q,
        "index": index,
        "real_chunks": synth.real,
        "perturbed_chunks": size - synth.real,
        "vectors": "real MiniLM"
        if size <= len(pool.records)
        else f"{synth.real} real MiniLM + {size - synth.real} perturbed copies "
        f"(noise {args.noise}/dim, renormalised)",
        "tenants": args.tenants,
        "chunks_per_tenant_t0": by_tenant,
        **timing,
        "index_rate_per_s": round(size / timing["bulk_s"], 1),
        "index_rate_incl_refresh_per_s": round(size / (timing["bulk_s"] + timing["refresh_s"]), 1),
        "store_bytes_per_chunk": round(stats["store_bytes"] / docs, 1),
        "offheap_bytes_per_chunk": round(off.get("total_size_bytes", 0) / docs, 1),
        "hot_offheap_bytes_per_chunk": round(hot_bytes(q, off) / docs, 1),
        "index_stats": stats,
        "node_heap_after_load": heap,
        "brute_force_s": round(brute_s, 2),
        **search,
        "templates_matching_index": matching,
        "embedding_index_options": index_options,
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.perf_counter() - t_start, 1),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if not args.keep:
        engine.delete_index(index)
    return row


# -- output -------------------------------------------------------------------------------------


def table_rows(rows: list[dict[str, Any]], ncs: Sequence[int]) -> list[dict[str, Any]]:
    out = []
    for r in sorted(rows, key=lambda r: (r["size"], QUANTIZATIONS.index(r["quantization"]))):
        lat = r["latency_ms"]
        knn = next((k for k in lat if k == "knn@100"), next(k for k in lat if k.startswith("knn")))
        row = {
            "size x quant": f"{r['size']:,} {r['quantization']}",
            "index/s": f"{r['index_rate_per_s']:,.0f}",
            "refresh s": r["refresh_s"],
            "merge s": "-" if r.get("force_merge_s") is None else r["force_merge_s"],
            "segs": r["index_stats"]["segments"],
            "disk B/chunk": f"{r['store_bytes_per_chunk']:,.0f}",
            "vec off-heap B/chunk": f"{r['offheap_bytes_per_chunk']:,.0f}",
            "hot B/chunk": f"{r['hot_offheap_bytes_per_chunk']:,.0f}",
            "bm25 p50/p95": f"{lat['bm25']['p50']}/{lat['bm25']['p95']}",
            f"{knn} p50/p95": f"{lat[knn]['p50']}/{lat[knn]['p95']}",
            "hybrid p50/p95": f"{lat['hybrid']['p50']}/{lat['hybrid']['p95']}",
            "hybrid msearch p95": r["retrieval_ms"]["hybrid"]["p95"],
        }
        for nc in ncs:
            row[f"R@10 nc{nc}"] = r["recall@10"].get(str(nc), "-")
        row["load"] = f"{r['load_average_start'][0]:.1f}-{r['load_average_end'][0]:.1f}"
        out.append(row)
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(21, 4.8))
    colors = {"hnsw": "tab:blue", "int8_hnsw": "tab:orange", "bbq_hnsw": "tab:green"}
    for q in QUANTIZATIONS:
        rs = sorted((r for r in rows if r["quantization"] == q), key=lambda r: r["size"])
        if not rs:
            continue
        x = [r["size"] for r in rs]
        c = colors[q]
        axes[0].plot(x, [r["index_rate_per_s"] for r in rs], "o-", color=c, label=q)
        for leg, style in (("bm25", ":"), ("knn@100", "-"), ("hybrid", "--")):
            y = [r["latency_ms"].get(leg, {}).get("p95") for r in rs]
            if all(v is not None for v in y):
                axes[1].plot(x, y, "o" + style, color=c, label=f"{q} {leg}")
        axes[2].plot(x, [r["store_bytes_per_chunk"] for r in rs], "o-", color=c, label=f"{q} disk")
        axes[2].plot(
            x,
            [r["hot_offheap_bytes_per_chunk"] for r in rs],
            "s--",
            color=c,
            label=f"{q} hot vector memory",
        )
    titles = (
        "indexing rate (chunks/s)",
        "search p95 (ms, searcher total, vectors cached)",
        "bytes per chunk",
    )
    for ax, title in zip(axes[:3], titles, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("chunks in the index")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    for q in QUANTIZATIONS:
        rs = sorted((r for r in rows if r["quantization"] == q), key=lambda r: r["size"])
        for nc, style in (("50", ":"), ("100", "-"), ("200", "--")):
            y = [r["recall@10"].get(nc) for r in rs]
            if rs and all(v is not None for v in y):
                axes[3].plot(
                    [r["size"] for r in rs], y, "o" + style, color=colors[q], label=f"{q} nc {nc}"
                )
    axes[3].set_xscale("log")
    axes[3].set_xlabel("chunks in the index")
    axes[3].set_title("kNN recall@10 vs exact (tenant-filtered)")
    axes[3].grid(True, which="both", alpha=0.3)
    axes[3].legend(fontsize=7)
    fig.suptitle("hybrid-es growth benchmark (1 node, 1 shard; 2 loaded CPUs: timings noisy)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


# -- main ---------------------------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--sizes", default="10000,100000,1000000", help="chunks per index")
    p.add_argument("--quantizations", default=",".join(QUANTIZATIONS))
    p.add_argument("--queries", type=int, default=100, help="SciFact queries timed and judged")
    p.add_argument("--num-candidates", default="50,100,200", help="kNN num_candidates settings")
    p.add_argument("--window", type=int, default=50, help="per-leg window (kNN k)")
    p.add_argument(
        "--oversample",
        default="0,1.5,3",
        help="rescore_vector.oversample settings tried on the quantised indices (0: none)",
    )
    p.add_argument("--tenants", type=int, default=4)
    p.add_argument(
        "--noise",
        type=float,
        default=0.04,
        help="Gaussian noise per dimension of a perturbed copy's vector",
    )
    p.add_argument("--seed", type=int, default=16)
    p.add_argument("--bulk-size", type=int, default=500, help="chunks per bulk request")
    p.add_argument("--bulk-threads", type=int, default=2)
    p.add_argument(
        "--force-merge",
        type=int,
        default=0,
        help="force-merge to this many segments after the refresh (0: no)",
    )
    p.add_argument("--keep", action="store_true", help="keep the indices")
    p.add_argument("--json", type=Path, default=REPO / "docs" / "scale" / "bench_scale.json")
    p.add_argument("--plot", type=Path, default=REPO / "docs" / "scale" / "scale.png")
    p.add_argument(
        "--merge", action="store_true", help="keep the rows of --json that this run does not redo"
    )
    args = p.parse_args(argv)
    args.sizes = _ints(args.sizes)
    args.num_candidates = _ints(args.num_candidates)
    args.oversample = [float(x) for x in args.oversample.split(",") if x.strip()]
    args.quantizations = [q.strip() for q in args.quantizations.split(",") if q.strip()]
    bad = [q for q in args.quantizations if q not in QUANTIZATIONS]
    if bad:
        p.error(f"unknown quantizations {bad}; use {QUANTIZATIONS}")
    if any(nc < args.window for nc in args.num_candidates):
        args.window = min(args.num_candidates)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    t_all = time.perf_counter()

    def log(msg: str) -> None:
        print(
            f"[{time.perf_counter() - t_all:7.1f}s load {os.getloadavg()[0]:.1f}] {msg}", flush=True
        )

    from elasticsearch.serializer import OrjsonSerializer

    def stopped(signum: int, _frame: Any) -> None:
        # exit at once: the bulk helper's worker threads would keep the process alive; the
        # index is left behind (the next run of the same size and format deletes it first)
        log(f"stopped by signal {signum}; {PREFIX}-* and {CORPUS_STATE} may be left behind")
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGHUP, stopped)

    settings = Settings()
    # orjson writes a float32 vector in its shortest form (~11 characters a number against
    # json's 19), which halves the bulk bodies.
    engine = bench_client(
        settings, install=False, serializer=OrjsonSerializer(), request_timeout=120
    )
    mach = machine(engine)
    embedder = make_embedder("minilm", query_threads=settings.embed_threads)
    pool = load_pool(embedder, log)
    log(f"pool: {len(pool.records)} real chunks {pool.sources}")
    texts, qvecs, embed_ms = load_queries(embedder, args.queries)
    state = CorpusState(engine, CORPUS_STATE)
    for t in range(args.tenants):
        state.bump(f"t{t}", "bench-scale")
    rows: list[dict[str, Any]] = []
    try:
        for size in args.sizes:
            for q in args.quantizations:
                row = run_one(engine, embedder, pool, size, q, texts, qvecs, args, log)
                rows.append(row)
                log(
                    f"{row['index']}: {row['index_rate_per_s']:.0f} chunks/s, "
                    f"{row['store_bytes_per_chunk']:.0f} B/chunk on disk, "
                    f"p95 bm25 {row['latency_ms']['bm25']['p95']} ms, "
                    f"hybrid {row['latency_ms']['hybrid']['p95']} ms, "
                    f"recall@10 {row['recall@10']}, {row['wall_s']:.0f} s"
                )
                _write(args, mach, pool, embed_ms, rows, t_all)
    finally:
        if not args.keep and engine.index_exists(CORPUS_STATE):
            engine.delete_index(CORPUS_STATE)
    all_rows = _write(args, mach, pool, embed_ms, rows, t_all)
    print_rows(
        "hybrid-es growth benchmark (latency ms: searcher total, query vectors cached, "
        "no reranker)",
        table_rows(all_rows, args.num_candidates),
        width=220,
    )
    log(f"done; wrote {args.json} and {args.plot}")
    return 0


def _write(
    args: argparse.Namespace,
    mach: dict[str, Any],
    pool: Pool,
    embed_ms: dict[str, Any],
    rows: list[dict[str, Any]],
    t_all: float,
) -> list[dict[str, Any]]:
    done = {(r["size"], r["quantization"]) for r in rows}
    kept: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    if args.merge and args.json.is_file():
        old = json.loads(args.json.read_text())
        kept = [r for r in old.get("rows", []) if (r["size"], r["quantization"]) not in done]
        runs = old.get("runs", [])
    this_run = {
        "command": "python scripts/bench_scale.py " + shlex.join(sys.argv[1:]),
        "machine": {**mach, "load_average_now": [round(x, 2) for x in os.getloadavg()]},
        "wall_s": round(time.perf_counter() - t_all, 1),
        "rows": [(r["size"], r["quantization"]) for r in rows],
    }
    runs = [r for r in runs if r.get("started") != getattr(args, "_started", None)]
    args._started = getattr(args, "_started", None) or datetime.now(UTC).isoformat()
    this_run["started"] = args._started
    runs.append(this_run)
    all_rows = kept + rows
    out: dict[str, Any] = {
        "data": {
            "pool_chunks": len(pool.records),
            "pool_sources": pool.sources,
            "pool_embed_seconds": pool.embed_seconds,
            "texts": "real chunks (hybrid_es.ingest.plan.build_chunk_records, 200/40 tokens) of "
            "SciFact, Cranfield and the Anthropic codebase; copies beyond the pool drop ~10 % of "
            "their words",
            "vectors": "MiniLM (all-MiniLM-L6-v2) of each real chunk's search_payload; copies "
            f"beyond the pool: the real vector + N(0, {args.noise}^2) per dimension, "
            "renormalised",
            "queries": f"the first {args.queries} SciFact queries; tenant t(i mod {args.tenants})",
            "query_embedding_ms": embed_ms,
        },
        "runs": runs,
        "rows": sorted(all_rows, key=lambda r: (r["size"], QUANTIZATIONS.index(r["quantization"]))),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
    if all_rows:
        plot(all_rows, args.plot)
    return list(out["rows"])


if __name__ == "__main__":
    raise SystemExit(main())
