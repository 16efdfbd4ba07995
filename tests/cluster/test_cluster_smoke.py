"""A smoke test on a real local cluster of three Elasticsearch nodes (``scripts/es.sh --nodes 3``):
bootstrap with one replica, ingest the travel fixture, search, SIGKILL one data node, search
again (same hits, none of another tenant), restart the node, and the cluster is green again.

It runs where ``HYBRID_ES_CLUSTER_URL`` names the cluster's first node (``scripts/test.sh`` starts
the cluster, sets it and stops the cluster afterwards); elsewhere it is skipped. The client talks
to that first node only, so the node killed is another one: the one holding most primaries of the
chunks index, so that its copies elsewhere are promoted under the search.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hybrid_es.cluster.bootstrap import bootstrap
from hybrid_es.cluster.capabilities import probe
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.errors import HybridEsError
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope, SearchResponse
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.cluster.settings import cluster_settings
from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents
from tests.constants import NOW, QUERY

CLUSTER_URL = os.environ.get("HYBRID_ES_CLUSTER_URL", "")
NODES = int(os.environ.get("HYBRID_ES_CLUSTER_NODES", "3"))
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not CLUSTER_URL,
        reason="needs the local 3-node cluster: scripts/es.sh --nodes 3 start, then "
        "HYBRID_ES_CLUSTER_URL=http://127.0.0.1:9271 (scripts/test.sh does both)",
    ),
]

ES_SH = Path(__file__).resolve().parents[2] / "scripts" / "es.sh"
STAY = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
AGENT_A = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
AGENT_B = Principal(tenant="demo-B", user_id="agent-9", groups=("travel-agents",))


def es_sh(*args: str) -> subprocess.CompletedProcess[str]:
    """scripts/es.sh on this cluster (its first HTTP port from the URL)."""
    port = str(urlsplit(CLUSTER_URL).port or 9271)
    return subprocess.run(
        [str(ES_SH), "--nodes", str(NODES), *args],
        env={**os.environ, "HYBRID_ES_PORT": port},
        text=True,
        capture_output=True,
        timeout=420,
    )


def tenants_of(resp: SearchResponse) -> set[str]:
    """The tenants of every chunk the search touched: hits, both legs, the reranker's input."""
    owners = {d.id: d.tenant for d in travel_documents()}
    seen = [
        *(h.chunk_id for h in resp.hits),
        *resp.legs.get("sparse", ()),
        *resp.legs.get("dense", ()),
        *resp.reranker_inputs,
    ]
    return {owners[c.split("::")[0]] for c in seen} | {
        str(h.source.get("tenant")) for h in resp.hits if h.source.get("tenant")
    }


def search_both(searcher: HybridSearcher) -> dict[str, Any]:
    """Each tenant's hits (doc ids) and the tenants they touched."""
    out: dict[str, Any] = {}
    for agent in (AGENT_A, AGENT_B):
        resp = searcher.search(QUERY, agent, STAY, now=NOW, top_k=10)
        out[agent.tenant] = (frozenset(h.doc_id for h in resp.hits), tenants_of(resp))
    return out


def node_holding_most_primaries(es: Engine, index: str) -> int:
    """Of nodes 2..N (the client talks to node 1), the one with most primaries of ``index``."""
    shards = es.request(
        "GET",
        f"/_cat/shards/{index}",
        params={"format": "json", "h": "prirep,node"},
        what="listing shards",
    )
    counts = {i: 0 for i in range(2, NODES + 1)}
    for s in shards:
        number = int(str(s.get("node") or "-0").rsplit("-", 1)[-1] or 0)
        if s.get("prirep") == "p" and number in counts:
            counts[number] += 1
    return max(counts, key=lambda i: (counts[i], i))


def test_a_three_node_cluster_answers_the_same_after_losing_a_node_and_heals(capsys):
    timings: dict[str, float] = {}
    t = time.monotonic()
    started = es_sh("start")  # at once when every node is up and the cluster green
    assert started.returncode == 0, started.stderr[-3000:]
    timings["start (or check)"] = time.monotonic() - t

    tag = uuid.uuid4().hex[:8]
    settings = cluster_settings(CLUSTER_URL, tag, suite="smoke", shards=2)
    layout = settings.layout()
    es = connect(settings)
    caps = probe(es, layout=layout)
    assert (caps.nodes, caps.data_nodes) == (NODES, NODES), caps.notes
    victim = 0
    try:
        t = time.monotonic()
        bootstrap(es, caps, settings, force=True)
        report = ingest_as_owners(Ingestor(es, HashEmbedder(), layout=layout), travel_documents())
        assert not report.failed and report.chunks > 0
        health = es.health(wait_for_status="green", timeout="60s")
        assert health["status"] == "green", health
        timings["bootstrap + ingest + green"] = time.monotonic() - t

        # Bootstrap's settings reached the indices, and the capability report shows them.
        shown = {i.name: (i.shards, i.replicas) for i in probe(es, layout=layout).indices or ()}
        assert shown[layout.chunks] == (2, 1)
        assert shown[layout.corpus_state] == shown[layout.packets] == (1, 1)

        searcher = HybridSearcher(
            es, HashEmbedder(), layout=layout, corpus_state_index=layout.corpus_state
        )
        before = search_both(searcher)
        assert "D1-current-contract" in before["demo-A"][0]
        assert before["demo-A"][1] == {"demo-A"} and before["demo-B"][1] == {"demo-B"}

        victim = killed_node = node_holding_most_primaries(es, layout.chunks)
        killed = es_sh("kill", "--node", str(victim))
        assert killed.returncode == 0, killed.stderr[-2000:]
        t = time.monotonic()
        failures: list[str] = []
        after: dict[str, Any] | None = None
        while after is None and time.monotonic() - t < 60:
            try:
                after = search_both(searcher)
            except HybridEsError as exc:  # e.g. a shard copy lost before its replica took over
                failures.append(type(exc).__name__)
                time.sleep(0.5)
        timings["first answer after the kill"] = time.monotonic() - t
        assert after is not None, f"no answer within 60 s of the kill: {failures}"
        assert after == before, failures
        status = es.health()["status"]
        assert status in ("yellow", "green"), status  # never red: every shard has a copy left

        t = time.monotonic()
        restarted = es_sh("start", "--node", str(victim))
        assert restarted.returncode == 0, restarted.stderr[-3000:]
        victim = 0
        timings["restart to green"] = time.monotonic() - t
        health = es.health()
        assert (health["status"], health["number_of_nodes"]) == ("green", NODES)
        assert search_both(searcher) == before
    finally:
        if victim:  # leave the cluster whole for the next run
            es_sh("start", "--node", str(victim))
        es.delete_index(f"{layout.chunks},{layout.packets},{layout.corpus_state}")
    with capsys.disabled():
        print(
            f"\ncluster smoke: {NODES} nodes, node {killed_node} killed, "
            f"{len(failures)} searches failed before the first answer ({failures}); "
            + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
        )
