"""Faults against real nodes: a node killed mid-ingest, a cluster down, 429s, timeouts.

The node that is killed, stalled and flooded is ``fault_node``, a disposable Elasticsearch node
of its own (scripts/es.sh): those tests are Elasticsearch-only. The shared OpenSearch node of the
suite cannot be killed or stopped under the other tests; on either engine, a cluster that is down
and a server that accepts connections and never answers are run against the engine's own client.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest

from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.client import make_client
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import (
    Engine,
    OpenSearchEngine,
    _opensearch_client,
    as_engine,
    connect,
)
from hybrid_es.errors import EngineUnavailableError, HybridEsError, SearchTimeoutError
from hybrid_es.ingest.documents import Document
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from tests.conftest import HashEmbedder, owner, unguarded

pytestmark = pytest.mark.integration
NOW = datetime(2026, 4, 1, tzinfo=UTC)
FAULT_NODE = (
    "fault_node is a disposable Elasticsearch node (scripts/es.sh) that the test kills, stops or "
    "floods; the suite's OpenSearch node is shared and cannot be"
)


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


def _ready(fault) -> Engine:  # type: ignore[no-untyped-def]
    client = connect(fault["settings"], max_retries=3, request_timeout=30)
    # After a crash the node replays its translogs; tests start once nothing is initializing.
    client.health(wait_for_status="yellow", wait_for_no_initializing_shards=True, timeout="120s")
    caps = probe(client)
    bootstrap(client, caps, fault["settings"], force=True)
    return client


@pytest.mark.engine("elasticsearch", reason=FAULT_NODE)
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
            if client.index_exists(index) and unguarded(client).count(index) > 0:
                break
        except Exception:
            pass
        time.sleep(0.05)
    os.kill(int(fault_node["pidfile"].read_text()), signal.SIGKILL)
    t.join(timeout=300)
    assert "error" in outcome, "the ingest should have failed when its node died"
    # ... because its node could not be reached: no answer (so no status), not a timeout, not a
    # bulk item's failure (BulkIndexError) nor any other error of the library's.
    error = outcome["error"]
    assert type(error) is EngineUnavailableError and error.status is None, repr(error)

    restarted = fault_node["es_sh"]("start")
    assert restarted.returncode == 0, restarted.stderr[-2000:]
    client = _ready(fault_node)
    ing.client = client
    ing.corpus_state = CorpusState(client, state_index)
    again = ing.ingest(docs, owner("t"), now=NOW)
    assert not again.failed
    client.refresh(index)
    assert unguarded(client).count(index) == expected
    agg = unguarded(client).search(
        index,
        {
            "size": 0,
            "aggs": {
                "docs": {"cardinality": {"field": "doc_id"}},
                "chunks": {"cardinality": {"field": "chunk_id"}},
            },
        },
    )
    assert agg["aggregations"]["docs"]["value"] == len(docs)
    assert agg["aggregations"]["chunks"]["value"] == expected
    client.delete_index(f"{index},{state_index}")


def ing_records(ing: Ingestor, doc: Document) -> list[dict[str, object]]:
    from hybrid_es.ingest.indexer import build_chunk_records

    return build_chunk_records(
        doc, now=NOW, embedding_model="x", size=ing.chunk_size, overlap=ing.overlap
    )


@pytest.mark.engine("elasticsearch", reason=FAULT_NODE)
def test_bulk_429s_are_retried_with_back_off_and_nothing_is_lost(fault_node):
    client = _ready(fault_node)
    index = f"hybrid-es-chunks-429-{os.getpid()}"
    state_index = f"hybrid-es-corpus-state-429-{os.getpid()}"
    before = _rejected(client)
    reports: list[object] = []
    errors: list[BaseException] = []

    def run(part: int) -> None:
        try:
            _run(part)
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            errors.append(exc)

    def _run(part: int) -> None:
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
    assert not any(t.is_alive() for t in threads), "an ingest thread still ran after 300 s"
    assert not errors, f"an ingest thread raised: {errors!r}"
    client.refresh(index)
    assert unguarded(client).count(index) == 800
    assert len(reports) == 4  # no thread raised: every 429 was retried
    assert _rejected(client) > before, "the tiny write queue should have rejected some bulks"
    client.delete_index(f"{index},{state_index}")


def test_the_corpus_state_waits_for_a_shard_that_is_still_starting(es):
    """A state index whose shard has not started answers 503 to every read; the bracket an
    ingest opens (repair, then begin) waits for the shard instead of failing the run. The shard
    is held unassigned by an allocation filter that a timer lifts, so the wait is real."""
    index = f"hybrid-es-corpus-state-starting-{os.getpid()}"
    es.delete_index(index)
    es.request(
        "PUT",
        f"/{index}",
        params={"wait_for_active_shards": "0"},
        body={
            "settings": {
                "number_of_replicas": 0,
                "index.routing.allocation.include._name": "no-such-node",
            }
        },
    )
    lift = threading.Timer(
        2.0,
        lambda: es.request(
            "PUT", f"/{index}/_settings", body={"index.routing.allocation.include._name": None}
        ),
    )
    try:
        with pytest.raises(HybridEsError) as raised:
            es.get(index, "t")
        assert raised.value.status == 503  # the condition is real, not assumed
        lift.start()
        state = CorpusState(es, index)
        t0 = time.monotonic()
        assert state.repair("t") == []
        assert time.monotonic() - t0 >= 1.5, "the read should have waited for the shard"
        run_id = state.begin("t")
        assert state.finish("t", run_id, "ingest") == 1
    finally:
        lift.cancel()
        lift.join()
        es.delete_index(index)


def _rejected(client: Engine) -> int:
    stats = client.request("GET", "/_nodes/stats/thread_pool")
    return sum(n["thread_pool"]["write"]["rejected"] for n in stats["nodes"].values())


def _engine_at(es: Engine, settings: Settings, url: str, **update: object) -> Engine:
    """An engine of the flavour under test with the environment's settings at another ``url``,
    built without a request (``connect`` would fail before the search)."""
    s = settings.model_copy(update={"url": url, **update})
    if es.flavor == "opensearch":
        return OpenSearchEngine(_opensearch_client(s), url=s.redacted_url())
    return as_engine(make_client(s), url=s.redacted_url())


def test_cluster_down_during_search_is_a_clear_error_not_a_partial_answer(es, settings):
    url = f"{urlsplit(settings.url).scheme}://127.0.0.1:9"
    down = _engine_at(es, settings, url, max_retries=0, request_timeout=2)
    s = HybridSearcher(down, HashEmbedder(), index="hybrid-es-chunks", native_rrf=False)
    with pytest.raises(EngineUnavailableError, match=rf"cannot reach {es.name} at {url}"):
        s.search("rate", Principal(tenant="t", user_id="u"), RequestScope(), now=NOW)


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and never answers: what a stalled node looks like to a
    client."""
    held: list[socket.socket] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield server.getsockname()[1]
    stop.set()
    t.join(timeout=5)
    for conn in held:
        conn.close()
    server.close()


def test_a_search_against_a_server_that_never_answers_times_out(es, settings, silent_server):
    # The engine's own client and its timeout translation, on either engine: what the stalled
    # fault node below checks on Elasticsearch.
    # Plain HTTP: the silent server completes no TLS handshake (a stalled node already had).
    url = f"http://127.0.0.1:{silent_server}"
    impatient = _engine_at(es, settings, url, max_retries=0, request_timeout=1.0, ca_certs=None)
    s = HybridSearcher(impatient, HashEmbedder(), index="hybrid-es-chunks", native_rrf=False)
    started = time.monotonic()
    with pytest.raises(SearchTimeoutError, match="timed out"):
        s.search("April rate", Principal(tenant="t", user_id="u"), RequestScope(), now=NOW)
    assert time.monotonic() - started < 30


@pytest.mark.engine("elasticsearch", reason=FAULT_NODE)
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
    impatient = connect(fault_node["settings"], max_retries=0, request_timeout=1.0)
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
    client.delete_index(f"{index},{state_index}")
