"""The query vector cache, per-thread torch thread counts, and the searcher's warm-up."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest
from elasticsearch import Elasticsearch

from hybrid_es.encoders.embedder import DEFAULT_EMBED_THREADS, torch_threads
from hybrid_es.retrieval.query_vectors import DEFAULT_QUERY_CACHE_SIZE, QueryVectorCache
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings


class CountingEmbedder:
    """A vector per text that differs by text; counts the query embeddings it made."""

    dims = 3

    def __init__(self, model_id: str = "model-a") -> None:
        self.model_id = model_id
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            self.calls.extend(texts)
        return np.array([[len(t), float(sum(map(ord, t))), 1.0] for t in texts], np.float32)

    embed_passages = embed_queries


class RecordingReranker:
    model_name, weight, scripts = "recording", 1.0, None

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def covers(self, query: str) -> tuple[bool, str]:
        return True, "latin"

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.calls.append((query, list(passages)))
        return [0.0] * len(passages)


def _searcher(embedder: CountingEmbedder, **kwargs: object) -> HybridSearcher:
    # No request reaches the cluster: only the cache and the warm-up are exercised.
    return HybridSearcher(
        Elasticsearch("http://127.0.0.1:1"),
        embedder,
        index="hybrid-es-chunks-unit",
        **kwargs,  # type: ignore[arg-type]
    )


# -- the cache on its own ---------------------------------------------------------------------


def test_the_cache_drops_the_least_recently_used() -> None:
    cache = QueryVectorCache(2)
    a, b, c = (QueryVectorCache.key("t", "m", q) for q in "abc")
    cache.put(a, [1.0])
    cache.put(b, [2.0])
    assert cache.get(a) == [1.0]  # a is now the most recently used
    cache.put(c, [3.0])
    assert (cache.get(a), cache.get(b), cache.get(c)) == ([1.0], None, [3.0])
    assert len(cache) == 2 and (cache.hits, cache.misses) == (3, 1)


def test_a_cache_of_size_zero_keeps_nothing() -> None:
    cache = QueryVectorCache(0)
    key = QueryVectorCache.key("t", "m", "q")
    cache.put(key, [1.0])
    assert cache.get(key) is None and len(cache) == 0


def test_a_negative_size_is_refused() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        QueryVectorCache(-1)


def test_the_cache_hands_out_copies() -> None:
    cache = QueryVectorCache(4)
    key = QueryVectorCache.key("t", "m", "q")
    given = [1.0, 2.0]
    cache.put(key, given)
    given[0] = 9.0
    got = cache.get(key)
    assert got == [1.0, 2.0]
    assert got is not None
    got[1] = 9.0
    assert cache.get(key) == [1.0, 2.0]


def test_the_cache_is_thread_safe() -> None:
    cache = QueryVectorCache(50)
    errors: list[BaseException] = []

    def work(wid: int) -> None:
        try:
            for i in range(2000):
                key = QueryVectorCache.key(f"t{wid % 3}", "m", f"q{i % 80}")
                got = cache.get(key)
                if got is None:
                    cache.put(key, [float(i % 80)])
                else:
                    assert got == [float(i % 80)]
                assert len(cache) <= 50
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(cache) == 50
    assert cache.hits + cache.misses == 8 * 2000


# -- the cache in the searcher ----------------------------------------------------------------


def test_a_repeated_query_of_a_tenant_is_embedded_once() -> None:
    emb = CountingEmbedder()
    s = _searcher(emb)
    first = s.vectors.vector("tenant-a", "cancellation terms", s.embedder)
    second = s.vectors.vector("tenant-a", "cancellation terms", s.embedder)
    assert first == second and emb.calls == ["cancellation terms"]
    assert (s.query_cache.hits, s.query_cache.misses) == (1, 1)


def test_the_same_query_of_another_tenant_is_embedded_again() -> None:
    # The tenant is part of the key: a cache hit (a faster answer) must not tell one tenant
    # that another asked the same question.
    emb = CountingEmbedder()
    s = _searcher(emb)
    a = s.vectors.vector("tenant-a", "cancellation terms", s.embedder)
    b = s.vectors.vector("tenant-b", "cancellation terms", s.embedder)
    assert a == b and emb.calls == ["cancellation terms"] * 2
    assert s.query_cache.hits == 0


def test_another_model_never_gets_a_cached_vector() -> None:
    s = _searcher(CountingEmbedder("model-a"))
    s.vectors.vector("t", "q", s.embedder)
    other = CountingEmbedder("model-b")  # another index's model (HYBRID_ES_EMBEDDER=auto)
    s.vectors.vector("t", "q", other)
    assert other.calls == ["q"]


def test_query_cache_size_zero_embeds_every_time() -> None:
    emb = CountingEmbedder()
    s = _searcher(emb, query_cache_size=0)
    s.vectors.vector("t", "q", s.embedder)
    s.vectors.vector("t", "q", s.embedder)
    assert emb.calls == ["q", "q"] and len(s.query_cache) == 0


def test_the_searcher_cache_defaults_and_settings_agree() -> None:
    assert _searcher(CountingEmbedder()).query_cache.size == DEFAULT_QUERY_CACHE_SIZE
    assert Settings().query_cache_size == DEFAULT_QUERY_CACHE_SIZE
    assert Settings().embed_threads == DEFAULT_EMBED_THREADS


def test_thread_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYBRID_ES_EMBED_THREADS", "2")
    monkeypatch.setenv("HYBRID_ES_RERANKER_THREADS", "1")
    monkeypatch.setenv("HYBRID_ES_QUERY_CACHE_SIZE", "0")
    s = Settings()
    assert (s.embed_threads, s.reranker_threads, s.query_cache_size) == (2, 1, 0)


# -- warm-up ----------------------------------------------------------------------------------


def test_warm_up_runs_each_model_once_and_caches_nothing() -> None:
    emb, ce = CountingEmbedder(), RecordingReranker()
    s = _searcher(emb, reranker=ce)
    took = s.warm_up()
    assert set(took) == {"embed", "rerank"}
    assert len(emb.calls) == 1 and len(ce.calls) == 1 and len(s.query_cache) == 0


def test_warm_up_leaves_out_what_the_searcher_will_not_use() -> None:
    emb, ce = CountingEmbedder(), RecordingReranker()
    assert set(_searcher(emb, reranker=ce).warm_up(rerank=False)) == {"embed"}
    assert ce.calls == []
    bm25 = CountingEmbedder()
    assert _searcher(bm25, pipeline="bm25").warm_up() == {}
    assert bm25.calls == []


# -- torch threads ----------------------------------------------------------------------------


def test_torch_threads_apply_to_the_calling_thread_and_are_restored() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    other: dict[str, int] = {}
    inside = threading.Event()
    done = threading.Event()

    def elsewhere() -> None:
        with torch_threads(2):
            inside.set()
            done.wait(5)
            other["n"] = torch.get_num_threads()

    t = threading.Thread(target=elsewhere)
    with torch_threads(1):
        t.start()
        inside.wait(5)
        assert torch.get_num_threads() == 1
        done.set()
        t.join()
    assert other["n"] == 2  # the main thread's count did not reach the other thread
    assert torch.get_num_threads() == before


def test_no_thread_count_leaves_torch_alone() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    with torch_threads(None), torch_threads(0):
        assert torch.get_num_threads() == before
