"""The golden request bodies (tests/golden/) sent as they are to the real engine: the
Elasticsearch retriever bodies to Elasticsearch, the OpenSearch ``hybrid`` bodies (with their
inline search pipeline) to OpenSearch.

tests/unit/test_queries.py pins them byte for byte against the builders; this catches what the
cluster would reject, and shows that what they return is what the golden policy admits.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.policy import authorize
from tests.conftest import ingest_as_owners, travel_documents, unguarded
from tests.constants import NOW

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
# The golden question's principal, scope and moment (tests/unit/test_queries.py).
PRINCIPAL = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
SCOPE = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))


@pytest.mark.engine("elasticsearch", reason="Elasticsearch's retriever bodies")
@pytest.mark.parametrize("name", ["rrf_kyo_h12.json", "client_legs_kyo_h12.json"])
def test_the_cluster_runs_each_golden_body_and_returns_only_admitted_hits(
    es, caps, embedder, fresh_indices, name
):
    if name.startswith("rrf") and not caps.native_rrf:
        pytest.skip("missing capability: native rrf retriever (rank-rrf module or licence)")
    _runs_and_admits(es, embedder, fresh_indices, name)


@pytest.mark.engine("opensearch", reason="OpenSearch's hybrid query and search pipeline")
@pytest.mark.parametrize(
    "name", ["opensearch_hybrid_rrf_kyo_h12.json", "opensearch_hybrid_linear_kyo_h12.json"]
)
def test_opensearch_runs_each_golden_hybrid_body_and_returns_only_admitted_hits(
    es, embedder, fresh_indices, name
):
    _runs_and_admits(es, embedder, fresh_indices, name)


def _runs_and_admits(es, embedder, fresh_indices, name):  # type: ignore[no-untyped-def]
    ing = Ingestor(
        es,
        embedder,
        index=fresh_indices["chunks"],
        corpus_state=CorpusState(es, fresh_indices["corpus_state"]),
    )
    ingest_as_owners(ing, travel_documents(), now=NOW)
    data = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    for body in data if isinstance(data, list) else [data]:
        hits = unguarded(es).search(fresh_indices["chunks"], body)["hits"]["hits"]
        assert hits and all("_source" not in h for h in hits)  # ids and scores only
        # The records behind the hits, read without any filter: what the legs admitted.
        ids = [h["_id"] for h in hits]
        hits = unguarded(es).search(
            fresh_indices["chunks"], {"query": {"ids": {"values": ids}}, "size": len(ids)}
        )["hits"]["hits"]
        docs = {h["_source"]["doc_id"] for h in hits}
        # The current contract passes the policy; the stale one and the other tenant's do not.
        assert "D1-current-contract" in docs
        assert not docs & {"D0-stale-contract", "D5-other-tenant"}
        for h in hits:
            assert authorize(PRINCIPAL, SCOPE, NOW, h["_source"]).allowed, h["_id"]
