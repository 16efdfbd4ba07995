"""Faults against real nodes: a node killed mid-ingest, a cluster down, 429s, timeouts."""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import UTC, datetime

import pytest

from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.client import make_client
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.errors import EngineUnavailableError, HybridEsError, SearchTimeoutError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.conftest import HashEmbedder, owner

pytestmark = pytest.mark.integration
NOW = datetime(2026, 4, 1, tzinfo=UTC)


def _docs(n: int) -> list[Document]:
    # Several chunks per document, so a kill can land between a document's chunks.
    return [
        Document(
            id=f"doc-{i:04d}",
            tenant="t",
            title=f"Contract {i}",
            body=" ".join(f"Clause {j} of contract {i} fixes the April rate." for j in range(12)),
        )
        for i in range(n)
    ]


def _ready(fault) -> object:  # type: ignore[no-untyped-def]
    client = make_client(fault["settings"], max_retries=3, request_timeout=30)
    # After a crash the node replays its translogs; tests start once nothing is initializing.
    client.cluster.health(
        wait_for_status="yellow", wait_for_no_initializing_shards=True, timeout="120s"
    )
    caps = probe(client, url=fault["settings"].redacted_url())
    bootstrap(client, caps, fault["settings"], force=True)
    return client


def test_a_node_killed_mid_ingest_then_restarted_ends_with_every_chunk_exactly_once(fault_node):
    client = _ready(fault_node)
    index = f"hybrid-es-chunks-kill-{os.getpid()}"
    state_index = f"hybrid-es-corpus-state-kill-{os.getpid()}"
    docs = _docs(120)
    ing = Ingestor(
        client,
        HashEmbedder(),
        index=index,
        corpus_state=CorpusState(client, state_index),
        chunk_size=24,
        overlap=0,
        batch_size=10,
    )
    expected = sum(len(r) for r in [ing_records(ing, d) for d in docs])
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["report"] = ing.ingest(docs, owner("t"), now=NOW)
        except HybridEsError as exc:
            outcome["error"] = exc

    t = threading.Thread(target=run)
    t.start()
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if client.indices.exists(index=index) and client.count(index=index)["count"] > 0:
                break
        except Exception:
            pass
        time.sleep(0.05)
    os.kill(int(fault_node["pidfile"].read_text()), signal.SIGKILL)
    t.join(timeout=300)
    assert "error" in outcome, "the ingest should have failed when its node died"
    assert isinstance(outcome["error"], EngineUnavailableError | HybridEsError)

    restarted = fault_node["es_sh"]("start")
    assert restarted.returncode == 0, restarted.stderr[-2000:]
    client = _ready(fault_node)
    ing.client = client
    ing.corpus_state = CorpusState(client, state_index)
    again = ing.ingest(docs, owner("t"), now=NOW)
    assert not again.failed
    client.indices.refresh(index=index)
    assert client.count(index=index)["count"] == expected
    agg = client.search(
        index=index,
        size=0,
        aggs={
            "docs": {"cardinality": {"field": "doc_id"}},
            "chunks": {"cardinality": {"field": "chunk_id"}},
        },
    )
    assert agg["aggregations"]["docs"]["value"] == len(docs)
    assert agg["aggregations"]["chunks"]["value"] == expected
    client.indices.delete(index=f"{index},{state_index}", ignore_unavailable=True)


def ing_records(ing: Ingestor, doc: Document) -> list[dict[str, object]]:
    from hybrid_es.ingest.indexer import build_chunk_records

    return build_chunk_records(
        doc, now=NOW, embedding_model="x", size=ing.chunk_size, overlap=ing.overlap
    )


def test_bulk_429s_are_retried_with_back_off_and_nothing_is_lost(fault_node):
    client = _ready(fault_node)
    index = f"hybrid-es-chunks-429-{os.getpid()}"
    state_index = f"hybrid-es-corpus-state-429-{os.getpid()}"
    before = _rejected(client)
    reports: list[object] = []

    def run(part: int) -> None:
        ing = Ingestor(
            client,
            HashEmbedder(),
            index=index,
            corpus_state=CorpusState(client, state_index),
            batch_size=50,
        )
        reports.append(
            ing.ingest(
                [Document(id=f"p{part}-{i}", tenant="t", body=f"note {i}") for i in range(200)],
                owner("t"),
                now=NOW,
            )
        )

    threads = [threading.Thread(target=run, args=(p,)) for p in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    client.indices.refresh(index=index)
    assert client.count(index=index)["count"] == 800
    assert len(reports) == 4  # no thread raised: every 429 was retried
    assert _rejected(client) > before, "the tiny write queue should have rejected some bulks"
    client.indices.delete(index=f"{index},{state_index}", ignore_unavailable=True)


def _rejected(client) -> int:  # type: ignore[no-untyped-def]
    stats = client.nodes.stats(metric="thread_pool")
    return sum(n["thread_pool"]["write"]["rejected"] for n in stats["nodes"].values())


def test_cluster_down_during_search_is_a_clear_error_not_a_partial_answer(settings):
    down = make_client(
        settings.model_copy(update={"url": "http://127.0.0.1:9"}), max_retries=0, request_timeout=2
    )
    s = HybridSearcher(
        down, HashEmbedder(), index="hybrid-es-chunks", native_rrf=False, url="http://127.0.0.1:9"
    )
    with pytest.raises(
        EngineUnavailableError, match=r"cannot reach Elasticsearch at http://127\.0\.0\.1:9"
    ):
        s.search("rate", Principal(tenant="t", user_id="u"), RequestScope(), now=NOW)


def test_a_search_timeout_is_reported_as_such(fault_node):
    # A stalled node (SIGSTOP: alive, holding its connections, answering nothing) makes the
    # search run past the client's timeout, every time; a 1 ms timeout against a fast node was
    # flaky (a tiny search can answer within it).
    client = _ready(fault_node)
    index = f"hybrid-es-chunks-stall-{os.getpid()}"
    state_index = f"hybrid-es-corpus-state-stall-{os.getpid()}"
    ing = Ingestor(
        client, HashEmbedder(), index=index, corpus_state=CorpusState(client, state_index)
    )
    ing.ingest(_docs(5), owner("t"), now=NOW)
    impatient = make_client(fault_node["settings"], max_retries=0, request_timeout=1.0)
    s = HybridSearcher(
        impatient, HashEmbedder(), index=index, native_rrf=False, corpus_state_index=state_index
    )
    s.search("April rate", Principal(tenant="t", user_id="u"), RequestScope(), now=NOW)  # warm
    pid = int(fault_node["pidfile"].read_text())
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(SearchTimeoutError, match="timed out"):
            s.search("April rate", Principal(tenant="t", user_id="u"), RequestScope(), now=NOW)
    finally:
        os.kill(pid, signal.SIGCONT)
    client.indices.delete(index=f"{index},{state_index}", ignore_unavailable=True)
