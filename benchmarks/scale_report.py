"""The growth benchmark's results: the JSON record, its merge with earlier runs, and the table.

The record (``docs/scale/bench_scale.json`` by default) holds how the data was made, one entry per
run of the script (command, machine, wall time, the rows it measured) and one row per size and
quantisation. With ``--merge`` the rows of an earlier run that this one does not redo are kept,
so the table and the plot cover every run. The record is rewritten after every row, so a run
stopped half-way leaves what it measured. Building the record and the table is pure; the writer
reads the earlier record and writes the new one and the plot.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from benchmarks.bench import print_rows
from benchmarks.scale_corpus import Pool
from benchmarks.scale_options import ScaleOptions, row_order
from benchmarks.scale_plot import plot
from benchmarks.scale_stats import load_averages

TABLE_TITLE = (
    "hybrid-es growth benchmark (latency ms: searcher total, query vectors cached, no reranker)"
)
TABLE_WIDTH = 220


def table_row(r: Mapping[str, Any], ncs: Sequence[int]) -> dict[str, Any]:
    """One line of the printed table for a result row (kNN latency at nc 100, else the first)."""
    lat = r["latency_ms"]
    knn = next((k for k in lat if k == "knn@100"), next(k for k in lat if k.startswith("knn")))
    row = {
        "size x quant": f"{r['size']:,} {r['quantization']}",
        "index/s": "-" if r["index_rate_per_s"] is None else f"{r['index_rate_per_s']:,.0f}",
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
    before = r.get("before_force_merge")
    if before:  # the same searches on the segments the load left
        hyb = before["latency_ms"]["hybrid"]
        row["unmerged: segs, hybrid p50/p95"] = f"{before['segments']}, {hyb['p50']}/{hyb['p95']}"
    for nc in ncs:
        row[f"R@10 nc{nc}"] = r["recall@10"].get(str(nc), "-")
    row["load"] = f"{r['load_average_start'][0]:.1f}-{r['load_average_end'][0]:.1f}"
    return row


def table_rows(rows: list[dict[str, Any]], ncs: Sequence[int]) -> list[dict[str, Any]]:
    """The printed table's lines, by size then quantisation."""
    return [table_row(r, ncs) for r in sorted(rows, key=row_order)]


def print_table(rows: list[dict[str, Any]], ncs: Sequence[int]) -> None:
    print_rows(TABLE_TITLE, table_rows(rows, ncs), width=TABLE_WIDTH)


def data_section(pool: Pool, options: ScaleOptions, embed_ms: Mapping[str, Any]) -> dict[str, Any]:
    """How the benchmark's texts, vectors and queries were made."""
    return {
        "pool_chunks": len(pool.records),
        "pool_sources": pool.sources,
        "pool_embed_seconds": pool.embed_seconds,
        "texts": "real chunks (hybrid_es.ingest.plan.build_chunk_records, 200/40 tokens) of "
        "SciFact, Cranfield and the Anthropic codebase; copies beyond the pool drop ~10 % of "
        "their words",
        "vectors": "MiniLM (all-MiniLM-L6-v2) of each real chunk's search_payload; copies "
        f"beyond the pool: the real vector + N(0, {options.noise}^2) per dimension, "
        "renormalised",
        "queries": f"the first {options.queries} SciFact queries; "
        f"tenant t(i mod {options.tenants})",
        "query_embedding_ms": embed_ms,
    }


def merge_record(
    old: Mapping[str, Any] | None,
    rows: list[dict[str, Any]],
    this_run: dict[str, Any],
    started: str | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows and runs of the new record: ``old``'s rows that ``rows`` do not redo, then
    ``rows`` (sorted); ``old``'s runs without the one that started at ``started`` (this run's
    earlier entry; None drops the runs that record no start), then ``this_run``."""
    done = {(r["size"], r["quantization"]) for r in rows}
    kept: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    if old is not None:
        kept = [r for r in old.get("rows", []) if (r["size"], r["quantization"]) not in done]
        runs = old.get("runs", [])
    runs = [r for r in runs if r.get("started") != started]
    return sorted(kept + rows, key=row_order), [*runs, this_run]


@dataclass
class ReportWriter:
    """Writes the record and the plot of one run of the benchmark, again after every row."""

    options: ScaleOptions
    machine: dict[str, Any]
    pool: Pool
    embed_ms: dict[str, Any]
    t_all: float
    """``time.perf_counter()`` when the run began."""
    command: str
    started: str | None = None
    """When this run's first record was written (its entry among the runs)."""

    def this_run(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "command": self.command,
            "machine": {**self.machine, "load_average_now": load_averages(os.getloadavg())},
            "wall_s": round(time.perf_counter() - self.t_all, 1),
            "rows": [(r["size"], r["quantization"]) for r in rows],
        }

    def write(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Write the record (and the plot, when there are rows); every row it holds, sorted."""
        path = self.options.json
        old = json.loads(path.read_text()) if self.options.merge and path.is_file() else None
        this_run = self.this_run(rows)
        all_rows, runs = merge_record(old, rows, this_run, self.started)
        self.started = self.started or datetime.now(UTC).isoformat()
        this_run["started"] = self.started
        out = {
            "data": data_section(self.pool, self.options, self.embed_ms),
            "runs": runs,
            "rows": all_rows,
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=1, default=str) + "\n")
        if all_rows:
            plot(all_rows, self.options.plot)
        return list(all_rows)
