"""Measuring what a run spends on the model, and leaving the model out where it is not measured.

``MeteredEmbedder`` counts the passages an embedder embeds and the time spent (benchmarks and the
ingest tests use it to show that an unchanged document is never re-embedded). ``HashEmbedder`` is
a deterministic, model-free embedder for benchmarks and tests whose subject is the cluster, not
the model.
"""

from __future__ import annotations

import hashlib
import math
import time

from hybrid_es.encoders.embedder import Embedder, Vectors
from hybrid_es.ingest.chunking import estimate_tokens


class MeteredEmbedder:
    """Wraps an embedder and counts the passages it embeds and the seconds spent (benchmarks,
    tests); queries and token counts pass straight through."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.passages = 0
        self.seconds = 0.0

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dims(self) -> int:
        return self.inner.dims

    def count_tokens(self, text: str) -> int:
        counter = getattr(self.inner, "count_tokens", None)
        return estimate_tokens(text) if counter is None else int(counter(text))

    def truncates(self, text: str) -> bool:
        check = getattr(self.inner, "truncates", None)
        return bool(check(text)) if callable(check) else False

    def embed_queries(self, texts: list[str]) -> Vectors:
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: list[str]) -> Vectors:
        t = time.perf_counter()
        try:
            return self.inner.embed_passages(texts)
        finally:
            self.seconds += time.perf_counter() - t
            self.passages += len(texts)


class HashEmbedder:
    """A bag of hashed character trigrams, L2-normalised (384 dimensions). Deterministic and
    model-free: not a stand-in for Elasticsearch (its vectors go to the real cluster), a
    stand-in for the model where the model is not the subject (fault injection, load, scale)."""

    model_id = "test/hashed-trigrams"
    dims = 384

    def _one(self, text: str) -> list[float]:
        v = [0.0] * self.dims
        t = f"  {text.lower()}  "
        for i in range(len(t) - 2):
            h = int.from_bytes(
                hashlib.blake2b(t[i : i + 3].encode(), digest_size=4).digest(), "big"
            )
            v[h % self.dims] += 1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]

    def embed_queries(self, texts: list[str]) -> Vectors:
        import numpy as np

        return np.asarray([self._one(t) for t in texts], dtype=np.float32)

    def embed_passages(self, texts: list[str]) -> Vectors:
        return self.embed_queries(texts)
