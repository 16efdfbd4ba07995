"""Traces from the library (issue 25): an application built as the README shows, through the one
entry point ``hybrid_es.HybridEs``, writes a trace of every search (its own, and one
through a framework adapter) once ``HYBRID_ES_TRACES`` is on, and closing the searcher flushes
them; with the switch off (the library's default) it writes none and closing costs nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import date

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.trace_storage import delete_data_stream
from hybrid_es.deployment import HybridEs
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import RequestScope
from hybrid_es.settings import Settings
from hybrid_es.traces.storage import trace_storage
from hybrid_es.traces.wiring import trace_stats, tracer_of
from hybrid_es.traces.writer import TraceWriterStats
from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents
from tests.constants import AGENT, NOW, QUERY

pytestmark = pytest.mark.integration

STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))


@pytest.fixture(scope="module")
def deployment(es, bootstrapped, settings) -> Iterator[Settings]:  # type: ignore[no-untyped-def]
    """The travel documents in this module's own indices, and settings that name them (and a
    trace storage of this module's own, deleted afterwards)."""
    tag = uuid.uuid4().hex[:10]
    chunks = f"{settings.chunks_index}-test-bydefault-{tag}"
    state = f"{settings.corpus_state_index}-test-bydefault-{tag}"
    for name in (chunks, state):
        es.create_index(name)
    s = settings.model_copy(
        update={
            "traces": True,
            "chunks_index": chunks,
            "corpus_state_index": state,
            "traces_index": f"{settings.traces_index}-test-bydefault-{tag}",
            "tenancy": "shared",  # one chunks index for every tenant: the one made here
        }
    )
    storage = trace_storage(es, s)
    try:
        ing = Ingestor(es, HashEmbedder(), index=chunks, corpus_state=CorpusState(es, state))
        ingest_as_owners(ing, travel_documents(), now=NOW)
        yield s
    finally:
        es.delete_index(f"{chunks},{state}")
        if storage.is_stream:
            delete_data_stream(es, storage.stream)
        es.delete_index(storage.pattern)


def _traces(es, s: Settings) -> list[dict]:  # type: ignore[no-untyped-def]
    pattern = trace_storage(es, s).pattern
    es.refresh(pattern)
    resp = es.search(pattern, {"size": 100, "query": {"match_all": {}}})
    return [h["_source"] for h in resp["hits"]["hits"]]


def test_an_application_built_as_the_readme_shows_writes_its_traces(es, deployment):
    s = deployment
    # The README's application: settings in, a traced searcher out (the client is connect(s)).
    searcher = HybridEs(s, embedder=HashEmbedder(), client=es).searcher
    assert tracer_of(searcher) is not None
    direct = searcher.search(QUERY, AGENT, STAY, now=NOW)
    ids = {direct.trace_id}
    try:
        from hybrid_es.adapters.langchain import HybridEsRetriever
    except ImportError:
        HybridEsRetriever = None  # type: ignore[assignment,misc]
    if HybridEsRetriever is not None:
        docs = HybridEsRetriever(searcher=searcher, top_k=5).invoke(
            QUERY, principal=AGENT, scope=STAY
        )
        assert docs
    stats = searcher.close()["traces"]
    assert isinstance(stats, TraceWriterStats)
    expected = 2 if HybridEsRetriever is not None else 1
    assert (stats.written, stats.dropped, stats.errors) == (expected, 0, 0)
    assert searcher.close()["traces"] is stats  # closing twice closes once

    docs = [d for d in _traces(es, s) if d["event"]["action"] == "search"]
    assert len(docs) == expected
    assert ids <= {d["trace"]["id"] for d in docs}
    assert {d["organization"]["id"] for d in docs} == {"demo-A"}
    assert all(d["event"]["outcome"] == "success" for d in docs)
    assert all("query_text" not in d["hybrid_es"] for d in docs)


def test_with_the_switch_off_nothing_is_traced_and_close_is_free(es, deployment):
    s = deployment.model_copy(update={"traces": False})
    with HybridEs(s, embedder=HashEmbedder(), client=es).searcher as searcher:
        assert tracer_of(searcher) is None and trace_stats(searcher) is None
        searcher.search(QUERY, AGENT, STAY, now=NOW)
    assert searcher.close() == {}


def test_a_deployments_packet_service_traces_into_the_searchers_writer(es, deployment):
    with HybridEs(deployment, embedder=HashEmbedder(), client=es) as hes:
        tracer = tracer_of(hes.searcher)
        assert tracer is not None and hes.packets.on_event == tracer.packet_event
        assert hes.packets.searcher is hes.searcher
        assert trace_stats(hes.searcher) is not None
    assert isinstance(hes.close()["traces"], TraceWriterStats)  # closed once, with the searcher
