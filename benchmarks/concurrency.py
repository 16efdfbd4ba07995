"""Many searches at once: the blocking searcher with a thread per request against the async
searcher on one event loop (``scripts/bench_async.py``).

Both run the same search (``HybridSearcher.search_steps``) over the same index, questions and
models; only how the waiting is done differs. A round sends every question with at most
``concurrency`` in flight and records each search's latency (from the moment it starts, a
worker thread or a slot of the ``concurrency`` being free, to its answer: the time one search
takes with that many beside it) and the round's wall time (searches per second). The rounds of
the two paths alternate, so a slow spell of the machine falls on both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from benchmarks.bench import percentile
from hybrid_es.models import Principal
from hybrid_es.retrieval.async_searcher import AsyncHybridSearcher
from hybrid_es.retrieval.searcher import HybridSearcher


@dataclass
class Round:
    """One round of one path: each search's latency and the round's wall time."""

    path: str
    concurrency: int
    latencies_ms: list[float] = field(default_factory=list)
    wall_s: float = 0.0

    def row(self) -> dict[str, Any]:
        n = len(self.latencies_ms)
        return {
            "path": self.path,
            "in flight": self.concurrency,
            "searches": n,
            "p50 ms": round(percentile(self.latencies_ms, 50), 1),
            "p95 ms": round(percentile(self.latencies_ms, 95), 1),
            "searches/s": round(n / self.wall_s, 1) if self.wall_s else 0.0,
        }


def thread_round(
    searcher: HybridSearcher,
    questions: Sequence[str],
    principal: Principal,
    concurrency: int,
    **search: Any,
) -> Round:
    """Every question through ``searcher.search``, a worker thread per search in flight."""
    out = Round("threads (blocking searcher)", concurrency)

    def one(question: str) -> float:
        started = time.perf_counter()
        searcher.search(question, principal, **search)
        return (time.perf_counter() - started) * 1000

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = [pool.submit(one, q) for q in questions]
        out.latencies_ms = [f.result() for f in futures]
    out.wall_s = time.perf_counter() - t0
    return out


def async_round(
    make: Callable[[], AsyncHybridSearcher],
    questions: Sequence[str],
    principal: Principal,
    concurrency: int,
    **search: Any,
) -> Round:
    """Every question through an async searcher (``make``: a fresh one, for this round's event
    loop), at most ``concurrency`` in flight."""
    out = Round("async (AsyncHybridSearcher)", concurrency)

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)
        async with make() as asearcher:
            await asearcher.search(questions[0], principal, **search)  # the pool's connections

            async def one(question: str) -> float:
                async with gate:
                    started = time.perf_counter()
                    await asearcher.search(question, principal, **search)
                    return (time.perf_counter() - started) * 1000

            t0 = time.perf_counter()
            out.latencies_ms = list(await asyncio.gather(*(one(q) for q in questions)))
            out.wall_s = time.perf_counter() - t0

    asyncio.run(main())
    return out
