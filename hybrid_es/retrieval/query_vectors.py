"""A query's vector: which embedder makes it, and the cache and batching in front of it.

The embedder is the one the searched index records (``embedder_choice``: one fixed model, or
``auto``); each model has its own batcher (``query_batcher``: concurrent questions embedded in one
model call), and every vector is cached under the tenant, the model and the cleaned text
(``vector_cache``), so one tenant's question never answers another's and one model's vector is
never read for another's index.
"""

from __future__ import annotations

from hybrid_es.encoders.embedder import Embedder
from hybrid_es.encoders.embedder_choice import Embedders
from hybrid_es.retrieval.query_batcher import QueryBatcher
from hybrid_es.retrieval.vector_cache import QueryVectorCache


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
