"""Loading one growth-benchmark index: the bulk load and what it costs the node.

The corpus goes in through the client's ``parallel_bulk`` helper with refresh off; then the
index's own refresh interval is put back, the index refreshed and, when asked, force-merged, each
step timed apart. A background thread samples the node's heap while this runs (its peak, and the
old-generation collections the load caused).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from benchmarks.scale_synth import Synth
from hybrid_es.cluster.engine import Engine

PROGRESS_EVERY = 100_000
"""Chunks between two progress lines of a load."""


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


def _bulk(
    bulk: Engine,
    synth: Synth,
    index: str,
    threads: int,
    chunk_size: int,
    log: Callable[[str], None],
) -> tuple[int, float]:
    """Send the corpus; the chunks written and the seconds it took."""
    from elasticsearch.helpers import parallel_bulk

    t0 = time.perf_counter()
    done = 0
    for ok, item in parallel_bulk(
        bulk.raw,
        synth.actions(index),
        thread_count=threads,
        chunk_size=chunk_size,
        queue_size=threads,
        raise_on_error=True,
    ):
        if not ok:
            raise SystemExit(f"bulk failure: {item}")
        done += 1
        if done % PROGRESS_EVERY == 0:
            el = time.perf_counter() - t0
            log(f"  {index}: {done}/{synth.n} in {el:.0f} s ({done / el:.0f}/s)")
    return done, time.perf_counter() - t0


MERGE_TIMEOUT_S = 7200
"""A force-merge of a million-chunk index rebuilds its HNSW graph: tens of minutes on 2 cores."""


def force_merge(engine: Engine, index: str, segments: int) -> float:
    """Merge ``index`` down to ``segments`` segments (waiting for it); the seconds it took."""
    t = time.perf_counter()
    engine.with_options(request_timeout=MERGE_TIMEOUT_S, max_retries=0).request(
        "POST",
        f"/{index}/_forcemerge",
        params={"max_num_segments": str(segments)},
        what="force-merging",
    )
    return time.perf_counter() - t


def load(
    engine: Engine,
    synth: Synth,
    index: str,
    *,
    bulk_threads: int,
    bulk_size: int,
    segments: int,
    refresh_interval: Any,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Bulk-load ``synth`` into ``index`` (created with refresh off), then put
    ``refresh_interval`` back, refresh and force-merge to ``segments`` (0: no merge); the timings
    and the heap."""
    bulk = engine.with_options(request_timeout=600, max_retries=3)
    sampler = HeapSampler(engine)
    sampler.start()
    done, bulk_s = _bulk(bulk, synth, index, bulk_threads, bulk_size, log)
    engine.put_settings(index, {"index": {"refresh_interval": refresh_interval}})
    t = time.perf_counter()
    bulk.request("POST", f"/{index}/_refresh", what="refreshing")
    refresh_s = time.perf_counter() - t
    merge_s = force_merge(engine, index, segments) if segments else None
    heap = sampler.stop()
    return {
        "bulk_s": round(bulk_s, 2),
        "refresh_s": round(refresh_s, 2),
        "force_merge_s": None if merge_s is None else round(merge_s, 2),
        "chunks": done,
        "node_heap_during_load": heap,
    }
