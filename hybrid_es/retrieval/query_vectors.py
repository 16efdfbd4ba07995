"""A query's vector: which embedder makes it, and the cache and batching in front of it.

The embedder is the one the searched index records (``embedder_choice``: one fixed model, or
``auto``). Every vector is cached under the tenant, the model and the cleaned text
(:class:`QueryVectorCache`), so one tenant's question never answers another's, a tenant cannot
learn from a search's timing that another asked the same question, and one model's vector is never
read for another's index. Each model has its own :class:`QueryBatcher`: concurrent questions
embedded in one model call.

**Batching.** Under concurrent searches on a few cores, each search running its own forward pass
of the query embedder makes them compete for the same cores, and a batch of short queries costs
the model far less than the same queries one at a time. A batcher runs one model call at a time:
a caller that finds the model free takes every query waiting (its own included, up to
``max_batch``) and embeds them together; the others wait for their vector, or for the model to be
free again with theirs still waiting. No thread of its own and no timer: a lone search is
embedded at once, and a batch forms only from searches that are already waiting. A query's vector
is the one the embedder gives for it in a batch; with padding and batched arithmetic it can differ
from the vector of the same query alone in the last float bits.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders


class QueryVectors:
    """Query vectors for a searcher: ``embedders`` (fixed or auto), a cache of ``cache_size``
    vectors and batches of at most ``batch`` questions per model call."""

    def __init__(self, embedders: Embedders, *, cache_size: int, batch: int) -> None:
        self.embedders = embedders
        self.cache = QueryVectorCache(cache_size)
        self.batch = batch
        self._batchers: dict[str, QueryBatcher] = {}

    def batcher(self, embedder: Embedder) -> QueryBatcher:
        """The query batcher of ``embedder`` (one per model: a batch is one model call)."""
        batcher = self._batchers.get(embedder.model_id)
        if batcher is None:
            batcher = QueryBatcher(embedder.embed_queries, max_batch=self.batch)
            self._batchers[embedder.model_id] = batcher
        return batcher

    def vector(self, tenant: str, text: str, embedder: Embedder) -> list[float]:
        """The embedding of the cleaned query ``text`` by ``embedder``, from the cache when this
        tenant asked it of that model before."""
        key = QueryVectorCache.key(tenant, embedder.model_id, text)
        vector = self.cache.get(key)
        if vector is None:
            vector = [float(x) for x in self.batcher(embedder).embed(text)]
            self.cache.put(key, vector)
        return vector

    def warm_up(self) -> None:
        """One tiny embedding by each model made so far (the default one when none is)."""
        for embedder in self.embedders.loaded() or [self.embedders.default]:
            embedder.embed_queries(["warm-up"])


# -- the cache -----------------------------------------------------------------------------

DEFAULT_QUERY_CACHE_SIZE = 1024
"""Vectors kept per searcher (384 float32 dimensions: about 1.5 kB each)."""

CacheKey = tuple[str, str, str]
"""(tenant, embedding model id, cleaned query text)."""


class QueryVectorCache:
    """At most ``size`` query vectors, the least recently used dropped first."""

    def __init__(self, size: int = DEFAULT_QUERY_CACHE_SIZE) -> None:
        if size < 0:
            raise ValueError(f"the query vector cache size must be >= 0, got {size}")
        self.size = size
        self.hits = 0
        self.misses = 0
        self._vectors: OrderedDict[CacheKey, tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(tenant: str, model_id: str, text: str) -> CacheKey:
        return (tenant, model_id, text)

    def get(self, key: CacheKey) -> list[float] | None:
        """The vector stored under ``key`` (a fresh list: the caller may change it), or None."""
        if not self.size:
            return None
        with self._lock:
            vector = self._vectors.get(key)
            if vector is None:
                self.misses += 1
                return None
            self._vectors.move_to_end(key)
            self.hits += 1
        return list(vector)

    def put(self, key: CacheKey, vector: Sequence[float]) -> None:
        """Store ``vector`` under ``key`` (a copy), dropping the least recently used beyond
        ``size``."""
        if not self.size:
            return
        stored = tuple(float(x) for x in vector)
        with self._lock:
            self._vectors[key] = stored
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._vectors)


# -- the batcher ---------------------------------------------------------------------------

DEFAULT_EMBED_BATCH = 8
"""Most queries embedded in one model call (``HYBRID_ES_EMBED_BATCH``; 1: every query alone)."""


@dataclass
class _Waiting:
    text: str
    vector: Sequence[float] | None = None
    error: BaseException | None = None
    done: bool = field(default=False)


class QueryBatcher:
    """Coalesces concurrent ``embed`` calls into calls of ``embed_many`` (a list of texts in,
    one vector per text out, in order: a list of lists or a 2-d array). An error of a batch is
    raised to every caller in it."""

    def __init__(
        self,
        embed_many: Callable[[list[str]], Any],
        *,
        max_batch: int = DEFAULT_EMBED_BATCH,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self._embed_many = embed_many
        self.max_batch = max_batch
        self._cond = threading.Condition()
        self._queue: list[_Waiting] = []
        self._busy = False
        self.batches = 0
        self.queries = 0
        """Model calls made and queries embedded (their ratio: the mean batch size)."""

    def embed(self, text: str) -> Sequence[float]:
        """The vector of ``text``, embedded alone or with the queries waiting beside it."""
        me = _Waiting(text)
        with self._cond:
            self._queue.append(me)
        while True:
            with self._cond:
                while not me.done and self._busy:
                    self._cond.wait()
                if me.done:
                    return self._result(me)
                self._busy = True
                batch = self._queue[: self.max_batch]
                del self._queue[: self.max_batch]
            self._run(batch)
            if me.done:
                return self._result(me)

    def _run(self, batch: list[_Waiting]) -> None:
        try:
            vectors = self._embed_many([w.text for w in batch])
            if len(vectors) != len(batch):
                raise RuntimeError(f"the embedder gave {len(vectors)} vectors for {len(batch)}")
            for w, v in zip(batch, vectors, strict=True):
                w.vector = v
        except BaseException as exc:  # every caller of the batch sees its error
            for w in batch:
                w.error = exc
        finally:
            with self._cond:
                for w in batch:
                    w.done = True
                self.batches += 1
                self.queries += len(batch)
                self._busy = False
                self._cond.notify_all()

    @staticmethod
    def _result(w: _Waiting) -> Sequence[float]:
        if w.error is not None:
            raise w.error
        assert w.vector is not None
        return w.vector
