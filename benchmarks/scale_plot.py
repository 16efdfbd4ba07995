"""The growth benchmark's figure (``docs/scale/scale.png`` by default): four panels against the
number of chunks in the index, one colour per quantisation.

The panels: indexing rate; search p95 of the BM25 leg, the kNN leg at ``num_candidates`` 100 and
the fused hybrid; bytes per chunk on disk and of hot vector memory; kNN recall@10 against the
exact top at each ``num_candidates``. matplotlib is imported when a figure is drawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.scale_options import QUANTIZATIONS

COLORS = {"hnsw": "tab:blue", "int8_hnsw": "tab:orange", "bbq_hnsw": "tab:green"}
TITLES = (
    "indexing rate (chunks/s)",
    "search p95 (ms, searcher total, vectors cached)",
    "bytes per chunk",
)
SUPTITLE = "hybrid-es growth benchmark (1 node, 1 shard; 2 loaded CPUs: timings noisy)"


def by_quantization(rows: Sequence[dict[str, Any]], q: str) -> list[dict[str, Any]]:
    """The rows of quantisation ``q``, by size."""
    return sorted((r for r in rows if r["quantization"] == q), key=lambda r: r["size"])


def _growth_panels(axes: Any, rows: Sequence[dict[str, Any]]) -> None:
    """Indexing rate, search p95 and bytes per chunk (the first three panels)."""
    for q in QUANTIZATIONS:
        rs = by_quantization(rows, q)
        if not rs:
            continue
        x = [r["size"] for r in rs]
        c = COLORS[q]
        loaded = [r for r in rs if r["index_rate_per_s"]]  # a reused index has no rate
        if loaded:
            xs = [r["size"] for r in loaded]
            axes[0].plot(xs, [r["index_rate_per_s"] for r in loaded], "o-", color=c, label=q)
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
    for ax, title in zip(axes[:3], TITLES, strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("chunks in the index")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)


def _recall_panel(ax: Any, rows: Sequence[dict[str, Any]]) -> None:
    """kNN recall@10 at num_candidates 50, 100 and 200 (the fourth panel)."""
    for q in QUANTIZATIONS:
        rs = by_quantization(rows, q)
        for nc, style in (("50", ":"), ("100", "-"), ("200", "--")):
            y = [r["recall@10"].get(nc) for r in rs]
            if rs and all(v is not None for v in y):
                ax.plot(
                    [r["size"] for r in rs], y, "o" + style, color=COLORS[q], label=f"{q} nc {nc}"
                )
    ax.set_xscale("log")
    ax.set_xlabel("chunks in the index")
    ax.set_title("kNN recall@10 vs exact (tenant-filtered)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Draw the four panels of ``rows`` and save them as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(21, 4.8))
    _growth_panels(axes, rows)
    _recall_panel(axes[3], rows)
    fig.suptitle(SUPTITLE)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
