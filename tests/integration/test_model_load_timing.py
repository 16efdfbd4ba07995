"""A search's first model load is reported apart from its embedding (``timings_ms["model_load"]``,
and the trace's ``latency_ms.model_load``), never counted as ``embed``."""

from __future__ import annotations

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.encoders.embedder import make_embedder
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.traces.documents import search_trace
from tests.conftest import ingest_as_owners, travel_documents
from tests.security.conftest import AGENT_A, NOW, QUERY, SCOPE

pytestmark = [pytest.mark.integration, pytest.mark.models]


def test_the_first_search_reports_its_model_load_apart_from_embed(es, fresh_indices, embedder):
    ingestor = Ingestor(
        es,
        embedder,
        index=fresh_indices["chunks"],
        corpus_state=CorpusState(es, fresh_indices["corpus_state"]),
    )
    ingest_as_owners(ingestor, travel_documents(), now=NOW)
    cold = make_embedder("minilm")  # a fresh model object: not loaded yet
    searcher = HybridSearcher(
        es, cold, index=fresh_indices["chunks"], corpus_state_index=fresh_indices["corpus_state"]
    )
    first = searcher.search(QUERY, AGENT_A, SCOPE, now=NOW, rerank=False)
    assert first.hits
    load = first.timings_ms["model_load"]  # 90 ms with torch imported and a warm file cache
    assert load > 0 and "embed" in first.timings_ms, first.timings_ms
    second = searcher.search(QUERY + " again", AGENT_A, SCOPE, now=NOW, rerank=False)
    assert "model_load" not in second.timings_ms
    trace = search_trace(AGENT_A, first, now=NOW)
    assert trace["hybrid_es"]["latency_ms"]["model_load"] == pytest.approx(load, abs=0.01)
