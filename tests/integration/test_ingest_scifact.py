"""SciFact (5,183 abstracts) through the whole ingest path against the real cluster, with exact
counts; re-ingest skips every document. A hashing embedder stands in for the model so the test
measures ingestion, not CPU inference (the benchmark uses the real model). SciFact is a shared
collection: where ``../shared/datasets`` is absent the test is skipped by name (it fails instead
under ``HYBRID_ES_REQUIRE_SHARED``, as in CI: ``tests/conftest.py``, ``require_shared``)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.encoders.embedder import Vectors
from hybrid_es.ingest.beir import read_corpus
from hybrid_es.ingest.indexer import Ingestor
from tests.conftest import owner, require_shared, unguarded

pytestmark = pytest.mark.integration
DOCUMENTS = 5183
CHUNKS = 7744
"""Chunks at the default size/overlap (200/40) with the estimated token count (7,800 before
chunks became verbatim pieces: a decimal point such as "0.05" no longer ends a sentence)."""


class HashEmbedder:
    """Deterministic unit vectors from the SHA-256 of the text: same text, same vector."""

    model_id = "test/sha256-384"
    dims = 384

    def __init__(self) -> None:
        self.passages = 0

    def _vec(self, text: str) -> Vectors:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dims).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_queries(self, texts: list[str]) -> Vectors:
        return np.stack([self._vec(t) for t in texts])

    def embed_passages(self, texts: list[str]) -> Vectors:
        self.passages += len(texts)
        return np.stack([self._vec(t) for t in texts])


@pytest.fixture
def scifact():  # type: ignore[no-untyped-def]
    """The shared collection (a skip or failure from a fixture is reported at the test)."""
    return require_shared("scifact")


def test_scifact_ingests_with_exact_counts_and_reingest_skips_everything(
    scifact, es, fresh_indices
):
    docs = list(read_corpus(scifact, tenant="scifact"))
    assert len(docs) == DOCUMENTS
    emb = HashEmbedder()
    ing = Ingestor(
        es,
        emb,
        index=fresh_indices["chunks"],
        corpus_state=CorpusState(es, fresh_indices["corpus_state"]),
        batch_size=256,
    )
    first = ing.ingest(docs, owner("scifact"))
    assert (first.documents, first.chunks, first.skipped_unchanged) == (DOCUMENTS, CHUNKS, 0)
    assert first.ok and emb.passages == CHUNKS
    assert unguarded(es).count(fresh_indices["chunks"]) == CHUNKS
    again = ing.ingest(docs, owner("scifact"))
    assert (again.documents, again.chunks, again.skipped_unchanged) == (DOCUMENTS, 0, DOCUMENTS)
    assert emb.passages == CHUNKS and again.watermarks == {}
