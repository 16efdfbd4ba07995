"""What the benchmark scripts share: the cluster they measure, the machine they ran on,
percentiles, and the tables they print. The scripts under ``scripts/`` are thin entry points.
"""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from elasticsearch import Elasticsearch

from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.client import make_client
from hybrid_es.retrieval.embedder import Embedder, make_embedder
from hybrid_es.settings import Settings


def bench_client(
    settings: Settings | None = None, *, install: bool = True, **client: Any
) -> Elasticsearch:
    """A client for the configured cluster; ``install`` brings the templates up to date first
    (a benchmark's own indices then get the current mappings)."""
    s = settings or Settings()
    es = make_client(s, **client)
    if install:
        bootstrap(es, probe(es, url=s.redacted_url()), s, force=True)
    return es


def bench_embedder(name: str) -> Embedder:
    """``hash`` (the model-free hashing embedder: the cluster is the subject) or a real model,
    loaded and warmed up before anything is timed."""
    if name == "hash":
        from hybrid_es.evaluation.metering import HashEmbedder

        return HashEmbedder()
    emb = make_embedder(name)
    emb.embed_queries(["warm-up"])
    return emb


def percentile(xs: Sequence[float], q: float) -> float:
    """The ``q``-th percentile, linear between the closest ranks (numpy's default); 0 for none."""
    if not xs:
        return 0.0
    if len(xs) == 1:
        return float(xs[0])
    return statistics.quantiles(sorted(xs), n=100, method="inclusive")[int(q) - 1]


def summary(xs: Sequence[float], digits: int = 1) -> dict[str, float | int]:
    """p50, p95, mean, max and count of ``xs`` (milliseconds, usually)."""
    if not xs:
        return {"n": 0}
    return {
        "p50": round(percentile(xs, 50), digits),
        "p95": round(percentile(xs, 95), digits),
        "mean": round(statistics.fmean(xs), digits),
        "max": round(max(xs), digits),
        "n": len(xs),
    }


def machine(client: Elasticsearch | None = None) -> dict[str, Any]:
    """What a benchmark ran on: cores, platform, Python, and the node's version and licence."""
    out: dict[str, Any] = {
        "nproc": len(os.sched_getaffinity(0)),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    if client is not None:
        nodes = client.nodes.info(node_id="_local", filter_path="nodes.*.version")
        node: dict[str, Any] = next(iter(nodes.body.get("nodes", {}).values()), {})
        out["es_version"] = str(node.get("version", "unknown"))
        try:
            out["es_license"] = str(client.license.get().body["license"]["type"])
        except Exception:
            out["es_license"] = "unknown"
    return out


def print_rows(title: str, rows: Iterable[Mapping[str, Any]], *, width: int = 160) -> None:
    """A list of same-keyed dicts as one table (the first key left-aligned, the rest right)."""
    from rich.console import Console
    from rich.table import Table

    rows = list(rows)
    table = Table(title=title)
    if rows:
        first = next(iter(rows[0]))
        for col in rows[0]:
            table.add_column(col, justify="left" if col == first else "right")
        for r in rows:
            table.add_row(*(str(v) for v in r.values()))
    Console(width=width).print(table)
