"""A small LRU cache of query vectors, so a repeated question skips the query embedding.

Keyed by (tenant, embedding model id, cleaned query text): the tenant is part of the key, so one
tenant cannot learn from a search's timing that another tenant asked the same question, and a
searcher whose embedder changes never reuses a vector of the old model. Thread-safe; a cache of
size 0 keeps nothing.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

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
