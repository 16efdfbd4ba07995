"""The growth benchmark's arithmetic: latency percentiles, recall against the exact top, and the
per-chunk rates and sizes of an index.

Pure functions of numbers already measured; nothing here talks to the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from benchmarks.bench import percentile

HOT_VECTORS = {
    "hnsw": "total_vec_size_bytes",
    "int8_hnsw": "total_veq_size_bytes",
    "bbq_hnsw": "total_veb_size_bytes",
}
"""The off-heap section of the vectors an HNSW search compares, per quantisation."""


def latency_stats(xs: Sequence[float]) -> dict[str, float]:
    """p50 and p95 (one decimal) and the count of ``xs``."""
    return {"p50": round(percentile(xs, 50), 1), "p95": round(percentile(xs, 95), 1), "n": len(xs)}


def chunk_number(chunk_id: str) -> int:
    """The number of a benchmark chunk from its id (``s<n>``)."""
    return int(chunk_id[1:])


def recall_at_10(got: Iterable[int], exact: Iterable[Any]) -> float:
    """The share of the exact top 10 (chunk numbers) among ``got`` (the top 10 returned)."""
    return len(set(got) & {int(x) for x in exact}) / 10


def mean4(xs: Sequence[float]) -> float:
    """The mean of ``xs``, four decimals (numpy's mean: nan for none)."""
    return round(float(np.mean(xs)), 4)


def hot_bytes(quantization: str, off: Mapping[str, int]) -> int:
    """Off-heap bytes the HNSW search reads on every query: the graph and the vectors it
    compares (raw floats for hnsw, int8 for int8_hnsw, the binarised vectors for bbq_hnsw).
    The raw floats of a quantised index are read only for rescoring and merging."""
    graph = off.get("total_vex_size_bytes", 0)
    return graph + off.get(HOT_VECTORS[quantization], 0)


def per_chunk(
    size: int, quantization: str, timing: Mapping[str, Any], stats: Mapping[str, Any]
) -> dict[str, float | None]:
    """Indexing rates (chunks/s; None for an index loaded by an earlier run) and bytes per
    chunk, from a load's timing and the index stats."""
    off = stats["off_heap"]
    docs = max(stats["docs"], 1)
    loaded = timing.get("bulk_s") is not None  # None: an index loaded by an earlier run
    return {
        "index_rate_per_s": round(size / timing["bulk_s"], 1) if loaded else None,
        "index_rate_incl_refresh_per_s": (
            round(size / (timing["bulk_s"] + timing["refresh_s"]), 1) if loaded else None
        ),
        "store_bytes_per_chunk": round(stats["store_bytes"] / docs, 1),
        "offheap_bytes_per_chunk": round(off.get("total_size_bytes", 0) / docs, 1),
        "hot_offheap_bytes_per_chunk": round(hot_bytes(quantization, off) / docs, 1),
    }


def load_averages(values: Iterable[float]) -> list[float]:
    return [round(x, 2) for x in values]
