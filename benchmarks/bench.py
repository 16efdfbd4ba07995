"""What the benchmark scripts share: the cluster they measure, the machine they ran on,
percentiles, and the tables they print. The scripts under ``scripts/`` are thin entry points.
"""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.engine import Engine, as_engine, connect
from hybrid_es.encoders.embedder import Embedder, make_embedder
from hybrid_es.errors import EngineError
from hybrid_es.settings import Settings


def bench_client(
    settings: Settings | None = None, *, install: bool = True, **client: Any
) -> Engine:
    """The engine of the configured cluster (``client``: client options, as for
    :func:`~hybrid_es.cluster.engine.connect`); ``install`` brings the templates up to date first
    (a benchmark's own indices then get the current mappings)."""
    s = settings or Settings()
    engine = connect(s, **client)
    if install:
        bootstrap(engine, probe(engine), s, force=True)
    return engine


def bench_embedder(name: str, settings: Settings | None = None) -> Embedder:
    """``hash`` (the model-free hashing embedder: the cluster is the subject) or a real model,
    loaded and warmed up before anything is timed, its query threads from ``settings``
    (``HYBRID_ES_EMBED_THREADS``)."""
    if name == "hash":
        from hybrid_es.evaluation.metering import HashEmbedder

        return HashEmbedder()
    s = settings or Settings()
    emb = make_embedder(name, query_threads=s.embed_threads, runtime=s.embed_runtime)
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


def machine(client: Engine | Any | None = None) -> dict[str, Any]:
    """What a benchmark ran on: cores, platform, Python, and with ``client`` (an engine, or a
    client it wraps) the engine (``Elasticsearch`` or ``OpenSearch``), the local node's version
    and, on Elasticsearch, the licence (OpenSearch has none)."""
    out: dict[str, Any] = {
        "nproc": len(os.sched_getaffinity(0)),
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }
    if client is not None:
        engine = as_engine(client)
        out["engine"] = engine.name
        out["engine_version"] = str(engine.node_info().get("version", engine.version))
        if engine.flavor == "elasticsearch":
            try:
                resp = engine.request("GET", "/_license", what="reading the licence")
                out["license"] = str(resp["license"]["type"])
            except (EngineError, KeyError, TypeError):
                out["license"] = "unknown"
    return out


def engine_line(m: Mapping[str, Any]) -> str:
    """The engine part of a :func:`machine` record, for a report's prose: ``Elasticsearch 8.15.0
    (basic licence)`` or ``OpenSearch 2.17.0``."""
    name = f"{m.get('engine', 'the engine')} {m.get('engine_version', 'unknown')}"
    return f"{name} ({m['license']} licence)" if "license" in m else name


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
