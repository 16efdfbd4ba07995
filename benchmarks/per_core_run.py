"""Searches per core, measured: what ``scripts/bench_per_core.py`` runs (the figures: ``per_core``).

One searcher (the default search: ``HybridSearcher.search(query, principal)``, the query vector
cache off, so every search embeds its query) over an ingested BEIR collection, its judged
queries in turn. For each client count: the engine's background CPU while this process sends
nothing, then ``clients`` threads searching without pause; after a warm-up the window opens
(this process's ``time.process_time``, the nodes' CPU, the embedding batcher's model calls),
stays open for the stated seconds and closes; the threads finish the search they are in and
stop, and the background is read again. Then one thread alone: every search's CPU, and the same
queries embedded alone, which splits the client's cost into the model and the rest; and, when
asked, a cProfile of one thread.
"""

from __future__ import annotations

import cProfile
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import per_core
from benchmarks.bench import bench_embedder, machine
from benchmarks.per_core import Window
from benchmarks.search_measure import select_queries
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.evaluation.collection import EVAL_PRINCIPAL, ingest_collection
from hybrid_es.ingest.beir import read_qrels
from hybrid_es.retrieval.query_vectors import QueryBatcher
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

Search = Callable[[str], object]
MAX_ERRORS = 50
"""A level stops early past this many failed searches (a cluster that refuses every one)."""


@dataclass(frozen=True)
class Level:
    """How each client count is run: warm-up, window and idle seconds."""

    warmup: float = 3.0
    seconds: float = 20.0
    idle: float = 3.0


@dataclass(frozen=True)
class PerCoreOptions:
    """The parsed command line of ``scripts/bench_per_core.py``. The collection is searched
    as the evaluation tenant (``evaluation.collection``) in ``index``, ingested there first
    when the index does not exist (``hybrid-es eval`` over the same collection and embedder
    makes the same index)."""

    dataset: Path
    index: str
    state_index: str
    split: str = "test"
    embedder: str = "minilm"
    clients: tuple[int, ...] = (1, 2, 4, 8)
    level: Level = Level()
    single: int = 200
    profile: int = 0


def run(options: PerCoreOptions, command: str) -> dict[str, Any]:
    """Every level, the single-thread split and (``options.profile``) the profile, as one
    record; ``command`` is the command line recorded."""
    settings = Settings()
    engine = connect(settings)
    ran_on = machine(engine)
    embedder = bench_embedder(options.embedder, settings)
    queries = judged_queries(options.dataset, options.split)
    if not engine.index_exists(options.index):
        ingest_collection(
            engine,
            embedder,
            options.dataset,
            index=options.index,
            state_index=options.state_index,
            url=engine.url,
        )
    searcher = HybridSearcher(
        engine,
        embedder,
        index=options.index,
        corpus_state_index=options.state_index,
        url=engine.url,
        query_cache_size=0,  # every search embeds its query
    )
    searcher.warm_up()

    def search(text: str) -> object:
        return searcher.search(text, EVAL_PRINCIPAL)

    first = searcher.search(queries[0], EVAL_PRINCIPAL)  # the tenant's checks, the probe
    batcher = searcher.query_batcher
    windows = [
        run_level(search, queries, n, engine, batcher, options.level) for n in options.clients
    ]
    split = single_pass(search, embedder.embed_queries, queries, options.single)
    cores = int(ran_on["nproc"])
    return {
        "command": command,
        "machine": ran_on,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "index": options.index,
        "queries": len(queries),
        "embedder": embedder.model_id,
        "fusion_path": first.fusion_path,
        "level": vars(options.level),
        "levels": [per_core.level_row(w, cores) for w in windows],
        "client_split": split,
        "profile": profile_pass(search, queries, options.profile) if options.profile else None,
    }


def judged_queries(dataset: Path, split: str) -> list[str]:
    """The texts of the judged queries of ``split``, in file order."""
    return [text for _, text in select_queries(dataset, read_qrels(dataset, split), None)]


def engine_cpu_ms(engine: Engine) -> int:
    """The CPU milliseconds the cluster's nodes have spent since they started."""
    stats = engine.request(
        "GET",
        "/_nodes/stats/process",
        params={"filter_path": "nodes.*.process.cpu.total_in_millis"},
        what="reading node stats",
    )
    return per_core.node_cpu_ms(stats)


def idle_rate(engine: Engine, seconds: float) -> float:
    """The engine's CPU in ms per second while this process sends nothing (other work on a
    shared node)."""
    if seconds <= 0:
        return 0.0
    e0, t0 = engine_cpu_ms(engine), time.perf_counter()
    time.sleep(seconds)
    return per_core.idle_rate(engine_cpu_ms(engine) - e0, time.perf_counter() - t0)


def run_level(
    search: Search,
    queries: Sequence[str],
    clients: int,
    engine: Engine,
    batcher: QueryBatcher,
    level: Level,
) -> Window:
    """``clients`` threads searching ``queries`` (each from its own offset) without pause; the
    window after the warm-up, as :class:`~benchmarks.per_core.Window`. The
    engine's background is the mean of its rate just before the threads start and just after
    they stop (a shared node's other work comes and goes)."""
    idle_before = idle_rate(engine, level.idle)
    stop = threading.Event()
    ended: list[tuple[float, float]] = []  # (end, latency ms) of each search
    errors: list[str] = []
    lock = threading.Lock()

    def worker(i: int) -> None:
        k = i * len(queries) // clients
        while not stop.is_set() and len(errors) < MAX_ERRORS:
            text = queries[k % len(queries)]
            k += 1
            t = time.perf_counter()
            try:
                search(text)
            except Exception as exc:
                with lock:
                    errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            end = time.perf_counter()
            with lock:
                ended.append((end, (end - t) * 1000.0))

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for th in threads:
        th.start()
    time.sleep(level.warmup)
    e0, b0, c0, t0 = (
        engine_cpu_ms(engine),
        batcher.batches,
        time.process_time(),
        time.perf_counter(),
    )
    time.sleep(level.seconds)
    t1, c1, b1, e1 = (
        time.perf_counter(),
        time.process_time(),
        batcher.batches,
        engine_cpu_ms(engine),
    )
    stop.set()
    for th in threads:
        th.join()
    with lock:
        latencies = tuple(ms for end, ms in ended if t0 <= end < t1)
    idle = (idle_before + idle_rate(engine, level.idle)) / 2
    return Window(
        clients=clients,
        seconds=t1 - t0,
        latencies_ms=latencies,
        client_cpu_s=c1 - c0,
        engine_cpu_ms=float(e1 - e0),
        engine_idle_ms_per_s=idle,
        errors=len(errors),
        model_calls=b1 - b0,
        load_1m=os.getloadavg()[0],
    )


def single_pass(
    search: Search, embed: Callable[[list[str]], Any], queries: Sequence[str], n: int
) -> dict[str, float]:
    """One thread: the CPU-ms of each of ``n`` searches, then of the same queries embedded alone
    (the model's share); ``per_core.client_split`` of the two."""
    chosen = [queries[i % len(queries)] for i in range(n)]
    search_ms, embed_ms = [], []
    for text in chosen:
        c = time.process_time()
        search(text)
        search_ms.append((time.process_time() - c) * 1000.0)
    for text in chosen:
        c = time.process_time()
        embed([text])
        embed_ms.append((time.process_time() - c) * 1000.0)
    return per_core.client_split(search_ms, embed_ms)


def profile_pass(search: Search, queries: Sequence[str], n: int) -> dict[str, Any]:
    """One thread, ``n`` searches under cProfile timed by this process's CPU clock (waiting on
    the engine costs nothing; the profiler's own time inflates Python-heavy code, so read the
    shares, not the totals): the costliest areas and functions per search."""
    prof = cProfile.Profile(time.process_time)
    prof.enable()
    for i in range(n):
        search(queries[i % len(queries)])
    prof.disable()
    prof.create_stats()
    stats: dict[per_core.ProfileRow, tuple[Any, ...]] = prof.stats
    return {
        "searches": n,
        "areas": per_core.grouped_costs(stats, n),
        "functions": per_core.top_functions(stats, n),
    }
