"""The growth benchmark end to end: what ``scripts/bench_scale.py`` runs.

For each size and quantisation it creates a fresh index (the real chunk body, refresh off),
checks that no index template applies to it and that the disk has room, loads the synthetic
corpus, reads the stats, judges kNN recall against brute force over exactly the vectors indexed
(after checking that the policy filter admits exactly the tenant's chunks, which is what the
brute force compares to), times every search path, and records one row. The record and the plot
are rewritten after every row; the table is printed at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.bench import bench_client, machine
from benchmarks.scale_corpus import Pool, load_pool, load_queries
from benchmarks.scale_index import (
    DISK_PER_CHUNK,
    index_body,
    index_stats,
    node_heap,
    refresh_interval,
    templates_matching,
    vector_index_options,
)
from benchmarks.scale_load import force_merge, load
from benchmarks.scale_options import (
    CORPUS_STATE,
    PREFIX,
    ScaleOptions,
    index_name,
)
from benchmarks.scale_report import ReportWriter, print_table
from benchmarks.scale_search import (
    measure_oversample,
    measure_search,
    principal,
    searchers,
)
from benchmarks.scale_stats import load_averages, per_chunk
from benchmarks.scale_synth import Synth
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine
from hybrid_es.encoders.embedder import Embedder, make_embedder
from hybrid_es.models import RequestScope
from hybrid_es.retrieval.door import ChunksDoor
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.settings import Settings

Log = Callable[[str], None]
OVERSAMPLE_NUM_CANDIDATES = 100


def vectors_note(size: int, real: int, pool_size: int, noise: float) -> str:
    """Where a corpus's vectors come from, in words."""
    if size <= pool_size:
        return "real MiniLM"
    return f"{real} real MiniLM + {size - real} perturbed copies (noise {noise}/dim, renormalised)"


def _create(engine: Engine, index: str, q: str, size: int, log: Log) -> tuple[Any, Any, Any]:
    """A fresh, empty ``index`` with refresh off: the templates matching it, the vector field's
    index options and the refresh interval to put back after the load."""
    if engine.index_exists(index):
        engine.delete_index(index)
    matching = templates_matching(engine, index)
    if matching["overlapping"] or matching["applies"]:
        log(f"  note: index templates apply to {index}: {matching}")
    body = index_body(engine, q)
    interval = refresh_interval(body)
    body["settings"].setdefault("index", {})["refresh_interval"] = "-1"
    free = shutil.disk_usage(Path.home()).free
    if size * DISK_PER_CHUNK > free:
        raise SystemExit(f"{index}: {free / 1e9:.0f} GB free on disk is too little for {size}")
    engine.create_index(index, body)
    return matching, vector_index_options(engine, index), interval


def _loaded(engine: Engine, index: str, size: int) -> bool:
    """Whether ``index`` exists with exactly ``size`` chunks (what a finished load leaves)."""
    if not engine.index_exists(index):
        return False
    engine.refresh(index)
    return ChunksDoor(engine).size(index) == size


def _chunks_of_t0(engine: Engine, index: str, synth: Synth) -> int:
    """The chunks of tenant t0, after checking that the policy filter admits exactly as many as
    the corpus gave t0 (what the brute force compares to). Read through the policy door, as
    every body read of a chunks index."""
    policy = policy_filter(principal(0), RequestScope(), datetime.now(UTC))
    by_policy = ChunksDoor(engine).count(index, {"bool": {"filter": [policy]}}, policy)
    by_tenant = sum(int((synth.block(b)[2] == 0).sum()) for b in range(synth.blocks))
    if by_policy != by_tenant:
        raise SystemExit(f"the policy filter admits {by_policy} chunks of t0, not {by_tenant}")
    return by_tenant


def _search(
    engine: Engine,
    embedder: Embedder,
    index: str,
    q: str,
    texts: list[str],
    qvecs: NDArray[np.float32],
    qtenants: NDArray[np.int64],
    exact: NDArray[np.int64],
    options: ScaleOptions,
    log: Log,
) -> dict[str, Any]:
    """Every search path's latency and recall, and the oversample settings on quantised ones."""
    ss = searchers(
        engine, embedder, index, texts, qvecs, qtenants, options.num_candidates, options.window
    )
    log(f"{index}: searching ({len(texts)} queries x {len(ss)} paths)")
    search = measure_search(ss, texts, qtenants, exact)
    if q != "hnsw" and options.oversample:
        log(f"{index}: kNN leg with rescore_vector.oversample {options.oversample}")
        search["oversample_nc100"] = measure_oversample(
            engine,
            index,
            qvecs,
            qtenants,
            exact,
            options.oversample,
            OVERSAMPLE_NUM_CANDIDATES,
            options.window,
        )
    return search


def run_one(
    engine: Engine,
    embedder: Embedder,
    pool: Pool,
    size: int,
    q: str,
    texts: list[str],
    qvecs: NDArray[np.float32],
    options: ScaleOptions,
    log: Log,
) -> dict[str, Any]:
    """Build, load, measure and (unless ``keep``) delete one index; its result row."""
    index = index_name(q, size)
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    synth = Synth(pool, size, options.tenants, options.noise, options.seed)
    if options.reuse and _loaded(engine, index, size):
        log(f"{index}: searching the {size} chunks an earlier run loaded (--reuse)")
        matching = templates_matching(engine, index)
        index_options = vector_index_options(engine, index)
        timing: dict[str, Any] = {"bulk_s": None, "refresh_s": None, "force_merge_s": None}
        timing |= {"chunks": size, "node_heap_during_load": None, "reused_index": True}
    else:
        matching, index_options, interval = _create(engine, index, q, size, log)
        log(f"{index}: loading {size} chunks ({synth.real} real, {size - synth.real} perturbed)")
        timing = load(
            engine,
            synth,
            index,
            bulk_threads=options.bulk_threads,
            bulk_size=options.bulk_size,
            segments=0,
            refresh_interval=interval,
            log=log,
        )
    qtenants = np.arange(len(texts)) % options.tenants
    t = time.perf_counter()
    exact = synth.exact_top(qvecs, qtenants, 10)
    brute_s = time.perf_counter() - t
    by_tenant = _chunks_of_t0(engine, index, synth)
    before: dict[str, Any] | None = None
    if options.force_merge:
        # The same searches on the segments the load left, then merged: what merging buys.
        before = {"segments": index_stats(engine, index)["segments"]}
        before |= _search(engine, embedder, index, q, texts, qvecs, qtenants, exact, options, log)
        log(f"{index}: force-merging to {options.force_merge} segment(s)")
        timing["force_merge_s"] = round(force_merge(engine, index, options.force_merge), 2)
    stats = index_stats(engine, index)
    heap = node_heap(engine)
    search = _search(engine, embedder, index, q, texts, qvecs, qtenants, exact, options, log)
    row = {
        "size": size,
        "quantization": q,
        "index": index,
        "real_chunks": synth.real,
        "perturbed_chunks": size - synth.real,
        "vectors": vectors_note(size, synth.real, len(pool.records), options.noise),
        "tenants": options.tenants,
        "chunks_per_tenant_t0": by_tenant,
        **timing,
        **per_chunk(size, q, timing, stats),
        "index_stats": stats,
        "node_heap_after_load": heap,
        "brute_force_s": round(brute_s, 2),
        **search,
        "before_force_merge": before,
        "templates_matching_index": matching,
        "embedding_index_options": index_options,
        "load_average_start": load_averages(load_start),
        "load_average_end": load_averages(os.getloadavg()),
        "wall_s": round(time.perf_counter() - t_start, 1),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if not options.keep:
        engine.delete_index(index)
    return row


def make_log(t_all: float) -> Log:
    """A progress line printer: seconds since ``t_all`` and the load average before each line."""

    def log(msg: str) -> None:
        print(
            f"[{time.perf_counter() - t_all:7.1f}s load {os.getloadavg()[0]:.1f}] {msg}", flush=True
        )

    return log


def exit_on_signals(log: Log) -> None:
    """On SIGTERM or SIGHUP, exit at once: the bulk helper's worker threads would keep the
    process alive; the index is left behind (the next run of the same size and format deletes
    it first)."""

    def stopped(signum: int, _frame: Any) -> None:
        log(f"stopped by signal {signum}; {PREFIX}-* and {CORPUS_STATE} may be left behind")
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGHUP, stopped)


def _summary_line(row: dict[str, Any]) -> str:
    return (
        f"{row['index']}: {row['index_rate_per_s'] or '-'} chunks/s, "
        f"{row['store_bytes_per_chunk']:.0f} B/chunk on disk, "
        f"p95 bm25 {row['latency_ms']['bm25']['p95']} ms, "
        f"hybrid {row['latency_ms']['hybrid']['p95']} ms, "
        f"recall@10 {row['recall@10']}, {row['wall_s']:.0f} s"
    )


def run(options: ScaleOptions, *, datasets: Path, command: str) -> int:
    """Every size x quantisation of ``options``, then the table; ``datasets``: the shared
    datasets folder; ``command``: the command line the record names."""
    t_all = time.perf_counter()
    log = make_log(t_all)
    exit_on_signals(log)
    settings = Settings()
    # The client writes with orjson (cluster.client.orjson_serializers): a float32 vector in its
    # shortest form (~11 characters a number against json's 19), which halves the bulk bodies.
    engine = bench_client(settings, install=False, request_timeout=120)
    mach = machine(engine)
    embedder = make_embedder("minilm", query_threads=settings.embed_threads)
    pool = load_pool(embedder, log, datasets)
    log(f"pool: {len(pool.records)} real chunks {pool.sources}")
    texts, qvecs, embed_ms = load_queries(embedder, options.queries, datasets)
    state = CorpusState(engine, CORPUS_STATE)
    for t in range(options.tenants):
        state.bump(f"t{t}", "bench-scale")
    writer = ReportWriter(options, mach, pool, embed_ms, t_all, command)
    rows: list[dict[str, Any]] = []
    try:
        for size in options.sizes:
            for q in options.quantizations:
                row = run_one(engine, embedder, pool, size, q, texts, qvecs, options, log)
                rows.append(row)
                log(_summary_line(row))
                writer.write(rows)
    finally:
        if not options.keep and engine.index_exists(CORPUS_STATE):
            engine.delete_index(CORPUS_STATE)
    print_table(writer.write(rows), options.num_candidates)
    log(f"done; wrote {options.json} and {options.plot}")
    return 0
