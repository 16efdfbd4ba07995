"""Hybrid search on the event loop: :class:`AsyncHybridSearcher`.

The same search as :class:`~hybrid_es.retrieval.searcher.HybridSearcher` (its generator of
effects, ``search_run.search_steps``: every decision, check and span is that code), with the
I/O that differs: the ``_msearch`` requests go out on an async client
(:class:`~hybrid_es.cluster.async_engine.AsyncEngine`, through the async chunks door) and are
awaited, while the model work (the query embedding, the cross-encoder) and a tenant's first
checks run in worker threads, never on the loop. Many concurrent searches then share one
event loop and a small thread pool instead of a thread each; concurrent query embeddings are
batched by the searcher's query batcher as in the blocking path.

    async with HybridEs(settings) as hes:                 # the front door: hes.async_searcher
        response = await hes.asearch(SearchRequest(question, principal, scope))

``scripts/bench_async.py`` measures it against the thread-per-request path.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hybrid_es.cluster.async_engine import AsyncEngine, async_engine_for
from hybrid_es.models import Principal, RequestScope, SearchRequest, SearchResponse
from hybrid_es.retrieval import effects, search_run
from hybrid_es.retrieval.answers import Answers
from hybrid_es.retrieval.door import AsyncChunksDoor
from hybrid_es.retrieval.effects import Msearch
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings

DEFAULT_MODEL_THREADS = 32
"""Worker threads for the model work of searches in flight. Each mostly waits in the searcher's
query batcher, which embeds the questions of concurrent searches in one model call: with fewer
threads than searches in flight, fewer questions share a call (the event loop's default pool has
min(32, cores + 4) threads: 6 on 2 cores, which measured 17% fewer searches/s at 32 in flight)."""


class AsyncHybridSearcher:
    """Async hybrid search over ``searcher``'s configuration (layout, embedder, reranker,
    fusion, hooks) with ``client`` (an :class:`AsyncEngine`, or an ``AsyncElasticsearch`` /
    ``AsyncOpenSearch`` of the same cluster) for the searches themselves; ``model_threads``
    worker threads for the model work (:data:`DEFAULT_MODEL_THREADS`)."""

    def __init__(
        self,
        searcher: HybridSearcher,
        client: AsyncEngine | Any,
        *,
        model_threads: int = DEFAULT_MODEL_THREADS,
    ) -> None:
        self.searcher = searcher
        self.executor = ThreadPoolExecutor(
            max_workers=model_threads, thread_name_prefix="hybrid-es-model"
        )
        if not isinstance(client, AsyncEngine):
            client = AsyncEngine(client, searcher.client.flavor, url=searcher.url)
        client.guard(searcher.layout.chunks, *searcher.client.guarded)
        self.client: AsyncEngine = client
        self.door = AsyncChunksDoor(client, searcher.dialect)

    @classmethod
    def from_searcher(
        cls, searcher: HybridSearcher, settings: Settings | None = None
    ) -> AsyncHybridSearcher:
        """Beside ``searcher``, an async client built from ``settings`` (default: from the
        environment) to the same cluster."""
        return cls(searcher, async_engine_for(searcher.client, settings or Settings()))

    async def search(
        self,
        request: SearchRequest | str,
        principal: Principal | None = None,
        scope: RequestScope | None = None,
        **options: Any,
    ) -> SearchResponse:
        """:meth:`HybridSearcher.search`, awaited: the same request (or shorthand), checks,
        errors, hooks and response."""
        ctx = self.searcher.context()
        asked = SearchRequest.of(request, principal, scope, options)
        sender = AsyncAnswers(self.door, ctx.answers)
        return await effects.arun(search_run.search_steps(ctx, asked), sender.send, self.executor)

    async def close(self) -> dict[str, Any]:
        """Close the async client, then the searcher (flushing its trace writer, in a thread);
        returns what :meth:`HybridSearcher.close` returns."""
        await self.client.close()
        closed = await asyncio.to_thread(self.searcher.close)
        self.executor.shutdown(wait=False)
        return closed

    async def __aenter__(self) -> AsyncHybridSearcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncAnswers:
    """``answers.Answers`` with the async chunks ``door``: the ``_msearch`` awaited, the answers
    checked by the blocking searcher's own checks."""

    def __init__(self, door: AsyncChunksDoor, answers: Answers) -> None:
        self.door = door
        self.answers = answers

    async def send(self, effect: Msearch) -> tuple[list[dict[str, Any]], str]:
        pairs = [(effect.req.index, body) for body in effect.searches]
        items = await self.door.msearch(
            pairs, effect.req.policy, opaque_id=effect.req.trace_id or None
        )
        return self.answers.checked(items, pairs)
