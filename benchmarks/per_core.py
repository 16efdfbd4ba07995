"""Searches per core: what one search costs in CPU, in the client and in the engine, and how close
a load comes to what the machine's cores allow (``scripts/bench_per_core.py``). Pure: the
measurements come in (``per_core_run`` takes them), rows and figures go out.

One search costs ``client`` CPU-ms in this Python process (``time.process_time``: every thread,
the query embedding's included) and ``engine`` CPU-ms in the cluster's nodes (the delta of
``_nodes/stats/process`` ``cpu.total_in_millis``, less what the nodes burn when this process
sends nothing, measured around the window; the raw delta is reported beside it). A machine of
``cores`` cores that runs both can then serve at most ``cores * 1000 / (client + engine)``
searches a second: the limit. A load that reaches it is CPU-bound with nothing wasted; one
far below it waits (on a lock, the network, a single thread) or shares the machine with other
work.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.bench import percentile


@dataclass(frozen=True)
class Window:
    """What one measured window of a load saw: ``clients`` threads searching for ``seconds``
    (wall), the latency of each search that ended inside it, the CPU seconds this process spent
    (``client_cpu_s``), the CPU milliseconds the engine's nodes spent (``engine_cpu_ms``) and
    their background rate when this process sent nothing (``engine_idle_ms_per_s``, measured
    around the window: the node is shared)."""

    clients: int
    seconds: float
    latencies_ms: tuple[float, ...]
    client_cpu_s: float
    engine_cpu_ms: float
    engine_idle_ms_per_s: float = 0.0
    errors: int = 0
    model_calls: int = 0
    """Query-embedding model calls in the window (the batcher coalesces concurrent queries)."""
    load_1m: float = 0.0
    """The machine's one-minute load average at the window's end (other work shares it)."""

    @property
    def searches(self) -> int:
        return len(self.latencies_ms)


def node_cpu_ms(stats: Mapping[str, Any]) -> int:
    """The CPU milliseconds of every node in a ``_nodes/stats/process`` answer, summed (a node
    without the figure counts 0)."""
    nodes = stats.get("nodes") or {}
    return sum(
        int(((n.get("process") or {}).get("cpu") or {}).get("total_in_millis") or 0)
        for n in nodes.values()
    )


def idle_rate(cpu_ms_delta: float, seconds: float) -> float:
    """The engine's background CPU in ms per second of wall time (0 for an empty window)."""
    return max(0.0, cpu_ms_delta) / seconds if seconds > 0 else 0.0


def engine_ms_per_search(w: Window) -> float:
    """The engine's CPU-ms per search: the window's delta less the background over its length,
    never below 0; 0 when no search ended."""
    if not w.searches:
        return 0.0
    return max(0.0, w.engine_cpu_ms - w.engine_idle_ms_per_s * w.seconds) / w.searches


def client_ms_per_search(w: Window) -> float:
    """This process's CPU-ms per search (0 when no search ended)."""
    return w.client_cpu_s * 1000.0 / w.searches if w.searches else 0.0


def limit_per_s(cores: int, client_ms: float, engine_ms: float) -> float:
    """The most searches a second ``cores`` cores allow when each costs ``client_ms`` +
    ``engine_ms`` of CPU: ``cores * 1000 / (client_ms + engine_ms)`` (0 when nothing is known)."""
    cost = client_ms + engine_ms
    return cores * 1000.0 / cost if cost > 0 else 0.0


def level_row(w: Window, cores: int) -> dict[str, Any]:
    """One table row: throughput, latency, CPU per search on each side, the limit and the share
    of it achieved."""
    per_s = w.searches / w.seconds if w.seconds > 0 else 0.0
    client = client_ms_per_search(w)
    engine = engine_ms_per_search(w)
    limit = limit_per_s(cores, client, engine)
    return {
        "clients": w.clients,
        "searches": w.searches,
        "searches/s": round(per_s, 1),
        "p50 ms": round(percentile(w.latencies_ms, 50), 1),
        "p95 ms": round(percentile(w.latencies_ms, 95), 1),
        "client CPU-ms": round(client, 2),
        "engine CPU-ms": round(engine, 2),
        "engine raw CPU-ms": round(w.engine_cpu_ms / w.searches, 2) if w.searches else 0.0,
        "engine idle ms/s": round(w.engine_idle_ms_per_s, 1),
        "limit/s": round(limit, 1),
        "achieved %": round(100.0 * per_s / limit, 1) if limit else 0.0,
        "queries/model call": round(w.searches / w.model_calls, 2) if w.model_calls else 0.0,
        "load 1m": round(w.load_1m, 1),
        "errors": w.errors,
    }


def client_split(search_cpu_ms: Sequence[float], embed_cpu_ms: Sequence[float]) -> dict[str, float]:
    """The client's CPU-ms of one search (from a single-thread pass: ``search_cpu_ms``, each
    search) split into the query embedding (``embed_cpu_ms``: the same queries embedded alone)
    and the rest (building bodies, HTTP, JSON, fusion, the policy re-check, assembly)."""
    search = statistics.fmean(search_cpu_ms) if search_cpu_ms else 0.0
    embed = statistics.fmean(embed_cpu_ms) if embed_cpu_ms else 0.0
    return {
        "search": round(search, 3),
        "embed": round(embed, 3),
        "rest": round(max(0.0, search - embed), 3),
        "embed share %": round(100.0 * embed / search, 1) if search else 0.0,
    }


ProfileRow = tuple[str, int, str]
"""A profiled function: (file, line, name), as ``pstats.Stats.stats`` keys it."""


def area(filename: str, function: str) -> str:
    """Where a profiled function lives, for grouping: ``hybrid_es/<module>`` for the package, the
    distribution's top folder for site-packages, the standard library module, or the built-in's
    name (``<method 'recv_into' ...>``, time waiting on a socket, stays apart)."""
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1].split("/", 1)[0]
    if "/hybrid_es/" in filename:
        return "hybrid_es/" + filename.split("/hybrid_es/", 1)[1]
    if "/lib/python3" in filename:
        return filename.split("/lib/python3", 1)[1].split("/", 1)[-1]
    if filename.startswith("<frozen "):
        return filename
    return function


def grouped_costs(
    stats: Mapping[ProfileRow, tuple[Any, ...]], searches: int, *, top: int = 20
) -> list[dict[str, Any]]:
    """The ``top`` areas (:func:`area`) by own time per search in a cProfile's ``stats``
    (``(file, line, name) -> (primitive calls, calls, own time, cumulative time, callers)``),
    with their calls per search."""
    own: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for (filename, _line, function), row in stats.items():
        key = area(filename, function)
        own[key] += float(row[2])
        calls[key] += int(row[1])
    n = max(searches, 1)
    ranked = sorted(own, key=lambda k: -own[k])[:top]
    return [
        {
            "area": k,
            "ms/search": round(own[k] * 1000 / n, 3),
            "calls/search": round(calls[k] / n, 1),
        }
        for k in ranked
    ]


def top_functions(
    stats: Mapping[ProfileRow, tuple[Any, ...]], searches: int, *, top: int = 25
) -> list[dict[str, Any]]:
    """The ``top`` functions by own time per search (cProfile's ``tottime``)."""
    n = max(searches, 1)
    ranked = sorted(stats.items(), key=lambda kv: -float(kv[1][2]))[:top]
    return [
        {
            "function": name if f == "~" else f"{area(f, name)}:{line}({name})",
            "ms/search": round(float(row[2]) * 1000 / n, 3),
            "calls/search": round(int(row[1]) / n, 1),
        }
        for (f, line, name), row in ranked
    ]


def rows_table(rows: Iterable[Mapping[str, Any]]) -> str:
    """Rows of one shape as a GitHub-flavoured Markdown table (for a report)."""
    rows = list(rows)
    if not rows:
        return ""
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines)
