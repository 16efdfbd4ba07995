"""AsyncHybridSearcher on each engine's async client: the same answers as the blocking searcher,
under concurrency, behind the same door, with the same refusals (both engines)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from hybrid_es.cluster.async_engine import async_engine_for
from hybrid_es.errors import FilterError, PolicyViolationError, UnknownTenantError
from hybrid_es.models import Principal, SearchResponse
from hybrid_es.retrieval.async_searcher import AsyncHybridSearcher
from tests.conftest import travel_documents
from tests.integration.test_retrieval import (
    AGENT,
    FORBIDDEN,
    NOW,
    QUERY,
    SEED_FIXTURE,
    STAY,
    _ingest,
    _searcher,
)

pytestmark = pytest.mark.integration

QUESTIONS = [
    QUERY,
    "roll-in shower",
    "April rate KYO-H12",
    "cherry blossom",
    "accessibility note",
    "contract",
    "fold-down seat",
    "JPY 31,500",
]


def _shape(resp: SearchResponse) -> list[tuple[Any, ...]]:
    return [
        (h.chunk_id, h.fused_score, h.sparse_rank, h.dense_rank, h.authorization.allowed)
        for h in resp.hits
    ]


@pytest.fixture(scope="module")
def pair(es, settings, embedder, bootstrapped) -> Iterator[tuple[Any, Any]]:  # type: ignore[no-untyped-def]
    """The seed fixture in indices of the module's own, ingested once: every test here only
    searches it."""
    tag = uuid.uuid4().hex[:10]
    names = {
        "chunks": f"{settings.chunks_index}-test-{tag}",
        "corpus_state": f"{settings.corpus_state_index}-test-{tag}",
    }
    for name in names.values():
        es.create_index(name)
    try:
        _ingest(es, embedder, names, travel_documents(*SEED_FIXTURE))
        yield _searcher(es, embedder, names, fusion="client"), settings
    finally:
        es.delete_index(",".join(names.values()))


def test_async_answers_equal_the_blocking_ones_under_concurrency(pair):  # type: ignore[no-untyped-def]
    searcher, settings = pair
    blocking = {q: searcher.search(q, AGENT, STAY, now=NOW, rerank=False) for q in QUESTIONS}

    async def main() -> list[SearchResponse]:
        async with AsyncHybridSearcher.from_searcher(searcher, settings) as asearcher:
            asks = [QUESTIONS[i % len(QUESTIONS)] for i in range(32)]
            return await asyncio.gather(
                *(asearcher.search(q, AGENT, STAY, now=NOW, rerank=False) for q in asks)
            )

    answers = asyncio.run(main())
    assert len(answers) == 32
    for i, resp in enumerate(answers):
        want = blocking[QUESTIONS[i % len(QUESTIONS)]]
        assert _shape(resp) == _shape(want)
        assert resp.fusion_path == want.fusion_path
        assert not {h.doc_id for h in resp.hits} & set(FORBIDDEN)


def test_the_async_client_refuses_a_body_around_the_door(pair):  # type: ignore[no-untyped-def]
    searcher, settings = pair
    index = searcher.layout.chunks

    async def main() -> None:
        engine = async_engine_for(searcher.client, settings)
        try:
            await engine.msearch([{"index": index}, {"query": {"match_all": {}}}])
        finally:
            await engine.close()

    with pytest.raises(PolicyViolationError, match="did not come through the policy door"):
        asyncio.run(main())


def test_refusals_are_the_blocking_ones(pair):  # type: ignore[no-untyped-def]
    searcher, settings = pair

    async def ask(principal: Principal, **kw: Any) -> SearchResponse:
        async with AsyncHybridSearcher.from_searcher(searcher, settings) as asearcher:
            return await asearcher.search(QUERY, principal, STAY, now=NOW, rerank=False, **kw)

    with pytest.raises(FilterError):
        asyncio.run(ask(AGENT, filters={"tenant": "demo-B"}))
    with pytest.raises(UnknownTenantError):
        asyncio.run(ask(Principal(tenant="demo-nobody", user_id="x")))


def test_the_adapters_async_paths_await_the_async_searcher(pair):  # type: ignore[no-untyped-def]
    """LangChain's ainvoke, Haystack's run_async and LlamaIndex's aretrieve, given an
    AsyncHybridSearcher, answer as their blocking calls do (and the principal stays required)."""
    from hybrid_es.adapters import haystack as hs
    from hybrid_es.adapters import langchain as lc
    from hybrid_es.adapters import llamaindex as li

    searcher, settings = pair
    want = [h.chunk_id for h in searcher.search(QUERY, AGENT, STAY, now=None, rerank=False).hits]

    async def main() -> dict[str, list[str]]:
        async with AsyncHybridSearcher.from_searcher(searcher, settings) as asearcher:
            lang = lc.HybridEsRetriever(searcher=searcher, rerank=False, async_searcher=asearcher)
            hay = hs.HybridEsRetriever(searcher, rerank=False, async_searcher=asearcher)
            llama = li.HybridEsRetriever(
                searcher, AGENT, scope=STAY, rerank=False, async_searcher=asearcher
            )
            with pytest.raises(PolicyViolationError):
                await lang.ainvoke(QUERY)
            return {
                "langchain": [d.id for d in await lang.ainvoke(QUERY, principal=AGENT, scope=STAY)],
                "haystack": [
                    d.id
                    for d in (await hay.run_async(query=QUERY, principal=AGENT, scope=STAY))[
                        "documents"
                    ]
                ],
                "llamaindex": [n.node.node_id for n in await llama.aretrieve(QUERY)],
            }

    got = asyncio.run(main())
    assert want and all(ids == want for ids in got.values()), (want, got)
