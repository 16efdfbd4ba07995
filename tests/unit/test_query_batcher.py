"""The query batcher: concurrent queries share model calls, each gets its own vector, errors reach
every caller of the failed batch, a lone query is embedded at once."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from hybrid_es.retrieval.query_vectors import QueryBatcher


class _SlowModel:
    """Vectors that name their text; each call takes a while, so that callers pile up."""

    def __init__(self, delay: float = 0.02) -> None:
        self.calls: list[list[str]] = []
        self.delay = delay
        self.active = 0
        self.most_active = 0
        self._lock = threading.Lock()

    def __call__(self, texts: list[str]) -> list[list[float]]:
        with self._lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
            self.calls.append(list(texts))
        time.sleep(self.delay)
        with self._lock:
            self.active -= 1
        return [[float(len(t)), float(sum(map(ord, t)))] for t in texts]


def _vector(text: str) -> list[float]:
    return [float(len(text)), float(sum(map(ord, text)))]


def test_a_lone_query_is_one_call_of_one_text():
    model = _SlowModel(delay=0)
    batcher = QueryBatcher(model, max_batch=8)
    assert list(batcher.embed("rate")) == _vector("rate")
    assert model.calls == [["rate"]]


@pytest.mark.parametrize("max_batch", [1, 3, 8])
def test_concurrent_queries_get_their_own_vectors_in_fewer_calls(max_batch):
    model = _SlowModel()
    batcher = QueryBatcher(model, max_batch=max_batch)
    texts = [f"query {i}" * (i % 4 + 1) for i in range(40)]
    with ThreadPoolExecutor(max_workers=16) as pool:
        got = list(pool.map(batcher.embed, texts))
    assert [list(v) for v in got] == [_vector(t) for t in texts]
    assert sorted(t for call in model.calls for t in call) == sorted(texts)  # each once
    assert max(len(c) for c in model.calls) <= max_batch
    assert model.most_active == 1  # one model call at a time
    if max_batch > 1:
        assert len(model.calls) < len(texts)
    assert batcher.queries == len(texts) and batcher.batches == len(model.calls)


def test_an_error_reaches_every_caller_of_its_batch_and_the_next_batch_still_runs():
    fail = threading.Event()
    fail.set()
    model = _SlowModel()

    def flaky(texts: list[str]) -> list[list[float]]:
        if fail.is_set() and any(t.startswith("bad") for t in texts):
            raise RuntimeError("model down")
        return model(texts)

    batcher = QueryBatcher(flaky, max_batch=8)
    with pytest.raises(RuntimeError, match="model down"):
        batcher.embed("bad query")
    fail.clear()
    assert list(batcher.embed("good")) == _vector("good")


def test_a_wrong_number_of_vectors_is_an_error_not_a_misplaced_vector():
    batcher = QueryBatcher(lambda texts: [[0.0]] * (len(texts) + 1), max_batch=4)
    with pytest.raises(RuntimeError, match="2 vectors for 1"):
        batcher.embed("x")


def test_max_batch_must_be_positive():
    with pytest.raises(ValueError, match="max_batch"):
        QueryBatcher(lambda texts: [], max_batch=0)
