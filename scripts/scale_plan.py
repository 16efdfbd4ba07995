#!/usr/bin/env python
"""The capacity plan of docs/scale.md, computed from the growth benchmark's measurements.

Reads ``docs/scale/bench_scale.json`` (``scripts/bench_scale.py``) and prints, as Markdown, per
quantisation and corpus size (10M, 100M, 1B chunks by default): bytes per vector, disk, hot
vector memory (page cache), primary shards, data nodes and a p95 estimate per shard. Every input
is either a measured figure from the JSON or one of the assumptions below, each named with its
source or marked as this plan's own choice::

    python scripts/scale_plan.py                      # the tables of docs/scale.md
    python scripts/scale_plan.py --node-ram-gb 128 --heap-gb 31

What comes from where:

- bytes per chunk on disk, hot off-heap bytes per chunk (HNSW graph ``vex`` + the vectors the
  graph search compares: ``vec`` floats, ``veq`` int8 or ``veb`` binarised), raw float bytes
  per chunk: measured, from the largest measured size of each quantisation (``_stats``);
- search p95 per shard: measured at that size (searcher total, query vectors cached, no
  reranker), extrapolated to the planned shard size along the log-log slope measured between
  the two largest sizes (an extrapolation, and labelled as one);
- shard size: Elastic, "Size your shards": aim for 10-50 GB and at most 200M documents per shard;
- disk per node usable to 85 %: Elasticsearch's default low disk watermark
  (``cluster.routing.allocation.disk.watermark.low``);
- heap at most half the RAM and under ~31 GB: Elastic, "Set the JVM heap size";
- HNSW needs its graph and vectors in the page cache: Elastic, "Tune approximate kNN search";
- node RAM, disk and the share of the page cache the hot vectors may take: this plan's choice
  (``--node-ram-gb``, ``--heap-gb``, ``--disk-tb``, ``--vector-cache-share``), not a measurement.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
GB = 1e9
SIZES = (10_000_000, 100_000_000, 1_000_000_000)
MAX_SHARD_GB = 50.0  # Elastic, "Size your shards": 10-50 GB
MAX_SHARD_DOCS = 200_000_000  # Elastic, "Size your shards": <= 200M documents
DISK_WATERMARK = 0.85  # Elasticsearch's default low disk watermark
OS_RESERVE_GB = 2.0  # this plan's choice: the OS and the JVM's own off-heap needs


def largest(rows: list[dict[str, Any]], q: str) -> list[dict[str, Any]]:
    """The rows of quantisation ``q``, by size."""
    return sorted((r for r in rows if r["quantization"] == q), key=lambda r: r["size"])


def slope(rs: list[dict[str, Any]], leg: str) -> float:
    """log-log slope of p95 against size between the two largest sizes (0 if one size)."""
    if len(rs) < 2:
        return 0.0
    a, b = rs[-2], rs[-1]
    pa, pb = a["latency_ms"][leg]["p95"], b["latency_ms"][leg]["p95"]
    if pa <= 0 or pb <= 0:
        return 0.0
    return math.log(pb / pa) / math.log(b["size"] / a["size"])


def plan(data: dict[str, Any], args: argparse.Namespace) -> str:
    rows = data["rows"]
    page_cache_gb = args.node_ram_gb - args.heap_gb - OS_RESERVE_GB
    vector_budget_gb = page_cache_gb * args.vector_cache_share
    disk_gb = args.disk_tb * 1000 * DISK_WATERMARK
    out = [
        f"Node profile (this plan's choice): {args.node_ram_gb:g} GB RAM, heap {args.heap_gb:g}"
        f" GB, {page_cache_gb:g} GB page cache of which {args.vector_cache_share:.0%} for the hot"
        f" vectors ({vector_budget_gb:g} GB), {args.disk_tb:g} TB disk used to "
        f"{DISK_WATERMARK:.0%}; {args.replicas} replica.",
        "",
        "| quantisation | measured at | bytes/vector hot (graph + search vectors) | raw float "
        "B/vector | disk B/chunk |",
        "|---|---|---|---|---|",
    ]
    per_q = {}
    for q in ("hnsw", "int8_hnsw", "bbq_hnsw"):
        rs = largest(rows, q)
        if not rs:
            continue
        r = rs[-1]
        docs = r["index_stats"]["docs"]
        off = r["index_stats"]["off_heap"]
        per_q[q] = (rs, r)
        out.append(
            f"| {q} | {r['size']:,} | {r['hot_offheap_bytes_per_chunk']:,.0f} "
            f"(graph {off.get('total_vex_size_bytes', 0) / docs:,.0f}) | "
            f"{off.get('total_vec_size_bytes', 0) / docs:,.0f} | "
            f"{r['store_bytes_per_chunk']:,.0f} |"
        )
    out += [
        "",
        "| chunks | quantisation | primary disk | hot vectors, all copies | primary shards "
        "(chunks each) | data nodes (bound by) | kNN p95 / shard | hybrid p95 / shard |",
        "|---|---|---|---|---|---|---|---|",
    ]
    copies = 1 + args.replicas
    for n in args.sizes:
        for q, (rs, r) in per_q.items():
            disk = n * r["store_bytes_per_chunk"]
            hot = n * r["hot_offheap_bytes_per_chunk"] * copies
            shards = max(math.ceil(disk / (MAX_SHARD_GB * GB)), math.ceil(n / MAX_SHARD_DOCS), 1)
            by_mem = math.ceil(hot / (vector_budget_gb * GB))
            by_disk = math.ceil(disk * copies / (disk_gb * GB))
            nodes = max(by_mem, by_disk, copies + 1)
            bound = (
                "memory"
                if by_mem >= max(by_disk, copies + 1)
                else ("disk" if by_disk >= copies + 1 else "HA minimum")
            )
            # every node holds a copy: at least nodes / copies primaries
            shards = max(shards, math.ceil(nodes / copies))
            per_shard = n / shards
            est = []
            for leg in ("knn@100", "hybrid"):
                k = slope(rs, leg)
                p95 = r["latency_ms"][leg]["p95"] * (per_shard / r["size"]) ** k
                est.append(f"{p95:,.0f} ms (slope {k:.2f})")
            out.append(
                f"| {n:,} | {q} | {disk / GB:,.0f} GB | {hot / GB:,.0f} GB | {shards} "
                f"({per_shard / 1e6:,.1f}M) | {nodes} ({bound}) | {est[0]} | {est[1]} |"
            )
    return "\n".join(out)


def results(data: dict[str, Any]) -> str:
    """The measured rows as the Markdown tables of docs/scale.md."""
    rows = sorted(
        data["rows"],
        key=lambda r: (r["size"], ("hnsw", "int8_hnsw", "bbq_hnsw").index(r["quantization"])),
    )

    def pp(st: dict[str, Any]) -> str:
        return f"{st['p50']:g} / {st['p95']:g}"

    out = [
        "| chunks | quantisation | index chunks/s | refresh s | segments | disk B/chunk | vector "
        "files B/chunk | hot B/chunk | BM25 p50 / p95 ms | kNN (nc 100) p50 / p95 ms | hybrid "
        "p50 / p95 ms | recall@10 nc 50 / 100 / 200 | load avg (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lat, rec = r["latency_ms"], r["recall@10"]
        out.append(
            f"| {r['size']:,} | {r['quantization']} | {r['index_rate_per_s']:,.0f} | "
            f"{r['refresh_s']:g} | {r['index_stats']['segments']} | "
            f"{r['store_bytes_per_chunk']:,.0f} | {r['offheap_bytes_per_chunk']:,.0f} | "
            f"{r['hot_offheap_bytes_per_chunk']:,.0f} | {pp(lat['bm25'])} | "
            f"{pp(lat['knn@100'])} | {pp(lat['hybrid'])} | "
            f"{rec.get('50', '-')} / {rec.get('100', '-')} / {rec.get('200', '-')} | "
            f"{r['load_average_start'][0]:.1f} -> {r['load_average_end'][0]:.1f} |"
        )
    out += [
        "",
        "| chunks | quantisation | `_msearch` round trip p50 / p95 ms: BM25 | kNN nc 50 | kNN "
        "nc 100 | kNN nc 200 | hybrid (both legs) | heap peak during load (of max) | bulk s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        m, h = r["retrieval_ms"], r["node_heap_during_load"]
        out.append(
            f"| {r['size']:,} | {r['quantization']} | {pp(m['bm25'])} | {pp(m['knn@50'])} | "
            f"{pp(m['knn@100'])} | {pp(m['knn@200'])} | {pp(m['hybrid'])} | "
            f"{h['heap_used_peak_bytes'] / 2**20:,.0f} MiB ({h['heap_max_bytes'] / 2**20:,.0f})"
            f" | {r['bulk_s']:g} |"
        )
    out += [
        "",
        "| chunks | quantisation | oversample | recall@10 (nc 100) | kNN round trip p50 / p95 ms |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        for o, v in (r.get("oversample_nc100") or {}).items():
            out.append(
                f"| {r['size']:,} | {r['quantization']} | {o} | {v['recall@10']} | {pp(v['ms'])} |"
            )
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=REPO / "docs" / "scale" / "bench_scale.json")
    p.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    p.add_argument("--node-ram-gb", type=float, default=64)
    p.add_argument("--heap-gb", type=float, default=16)
    p.add_argument("--disk-tb", type=float, default=2)
    p.add_argument("--vector-cache-share", type=float, default=0.6)
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--results", action="store_true", help="print the measured tables instead")
    args = p.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    data = json.loads(args.json.read_text())
    print(results(data) if args.results else plan(data, args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
