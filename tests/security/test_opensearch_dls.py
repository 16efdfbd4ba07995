"""Native document-level security on OpenSearch, with real security-plugin users.

Bootstrap installs each tenant's reader role (``es_templates/opensearch/roles``: its own index by
name, with a ``dls`` query on the tenant) and maps it to the backend role
``hybrid-es-tenant-<tenant>``; the users here are internal users carrying that backend role. Since
the role names only the tenant's own index, tenant A's records are put into tenant B's own index
here, so that document-level security is what stands between them. Every request below is sent
with tenant B's credentials and **without** hybrid-es's own policy filter: document-level security
alone must keep tenant A's chunks out of the hybrid query, the kNN leg, get, mget, count and
aggregations.

neural-search#1303: OpenSearch 2.19 refuses a ``hybrid`` query from a DLS user ("hybrid query
must be a top level query"); a dummy ``suggest`` section is the known workaround. One test fails
if the workaround stops enforcing DLS; another notices when the workaround is no longer needed
(the searcher probes for it on first use, and must use it exactly when the engine needs it).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from hybrid_es.cluster.capabilities import native_fusion_works, version_tuple
from hybrid_es.cluster.corpus_state import CorpusState
from hybrid_es.cluster.engine import Engine, connect
from hybrid_es.cluster.security import install_tenant_reader
from hybrid_es.cluster.templates import backend_role, pipeline_definition
from hybrid_es.errors import EngineError, UnknownTenantError
from hybrid_es.ingest.indexer import Ingestor
from hybrid_es.models import Principal
from hybrid_es.retrieval.dialects import dls_suggest, is_hybrid_dls_refusal
from hybrid_es.retrieval.searcher import HybridSearcher
from hybrid_es.settings import Settings
from hybrid_es.tenancy import IndexLayout
from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents, unguarded
from tests.constants import NOW

pytestmark = [
    pytest.mark.integration,
    pytest.mark.engine(
        "opensearch",
        reason="native DLS users need the security plugin's store; Elasticsearch's integ-test "
        "node cannot store native roles (its DLS is tested with file-realm users instead)",
    ),
]
TENANT_A, TENANT_B = "demo-A", "demo-B"
AGENT_B = Principal(tenant=TENANT_B, user_id="agent-1", groups=("travel-agents",))
AGENT_A = Principal(tenant=TENANT_A, user_id="agent-1", groups=("travel-agents",))
WORKAROUND_NEEDED_THROUGH = (3, 6)
"""The newest OpenSearch on which a one-DLS-role user's plain hybrid query is known to fail: 2.19
answers 400 "must be a top level query", 3.6 a ClassCastException (neural-search#1432 in 3.2
unwraps only the rule shape of two or more DLS roles; docs/opensearch.md)."""


@dataclass
class DlsWorld:
    admin: Engine
    reader_b: Engine
    index: str
    state: str
    a_keys: list[str]
    b_count: int


def _user(admin: Engine, name: str, password: str, tenant: str) -> None:
    admin.request(
        "PUT",
        f"/_plugins/_security/api/internalusers/{name}",
        body={"password": password, "backend_roles": [backend_role(tenant)]},
        what="creating a test user",
    )


@pytest.fixture(scope="module")
def dls(es, settings, bootstrapped) -> Iterator[DlsWorld]:  # type: ignore[no-untyped-def]
    from hybrid_es.cluster.capabilities import probe

    caps = probe(es)
    if not caps.native_security_store:
        pytest.skip(f"missing capability: security plugin roles ({'; '.join(caps.notes)})")
    tag = uuid.uuid4().hex[:8]
    layout = IndexLayout(
        chunks=f"hybrid-es-chunks-dls-{tag}", corpus_state=f"hybrid-es-corpus-state-dls-{tag}"
    )
    # What `bootstrap --tenant` installs: each reader role names its tenant's own index only
    # (issue 23). Document-level security on top is what this module tests, so tenant A's
    # records are misrouted into tenant B's own index, beside B's: only DLS keeps them out.
    for tenant in (TENANT_A, TENANT_B):
        install_tenant_reader(es, tenant, layout)
    index, state = layout.chunks_for(TENANT_B), layout.corpus_state
    emb = HashEmbedder()
    ing = Ingestor(es, emb, index=index, corpus_state=CorpusState(es, state))
    ingest_as_owners(ing, travel_documents(), now=NOW)
    es.refresh(index)
    a_keys = [
        h["_id"]
        for h in unguarded(es).search(
            index, {"size": 100, "query": {"term": {"tenant": TENANT_A}}, "_source": False}
        )["hits"]["hits"]
    ]
    b_count = unguarded(es).count(index, {"term": {"tenant": TENANT_B}})
    assert a_keys and b_count, "the fixture must hold both tenants' chunks"
    name, password = f"dls-b-{tag}", f"Dls-{secrets.token_hex(8)}-Aa1!"
    _user(es, name, password, TENANT_B)
    reader = connect(Settings(**{**settings.model_dump(), "username": name, "password": password}))
    yield DlsWorld(es, reader, index, state, a_keys, b_count)
    es.request("DELETE", f"/_plugins/_security/api/internalusers/{name}", what="cleanup")
    es.delete_index(f"{index},{state}")


def _hybrid_body(vector: list[float], engine: Engine, *, suggest: bool) -> dict[str, Any]:
    """A native RRF hybrid query with no policy filter anywhere."""
    works, why = native_fusion_works(engine, "rrf")  # also finds the pipeline's form
    assert works, why
    body: dict[str, Any] = {
        "size": 100,
        "query": {
            "hybrid": {
                "queries": [
                    {"match_all": {}},
                    {"knn": {"embedding": {"vector": vector, "k": 100}}},
                ]
            }
        },
        "search_pipeline": pipeline_definition(
            "rrf", rank_constant=60, alpha=0.5, rank_constant_at=engine.rrf_rank_constant_at
        ),
        "_source": ["tenant"],
    }
    if suggest:
        body["suggest"] = dls_suggest()
    return body


def _vector() -> list[float]:
    return [float(x) for x in HashEmbedder().embed_queries(["contract rate"])[0]]


def _needs_workaround(engine: Engine) -> bool:
    if engine.version in ("", "unknown"):
        return True
    return version_tuple(engine.version)[:2] <= WORKAROUND_NEEDED_THROUGH


def test_the_hybrid_query_with_the_workaround_still_enforces_dls(dls):
    """Fails if the suggest workaround ever stops enforcing DLS."""
    resp = dls.reader_b.search(dls.index, _hybrid_body(_vector(), dls.admin, suggest=True))
    tenants = {h["_source"]["tenant"] for h in resp["hits"]["hits"]}
    assert tenants == {TENANT_B}, tenants
    assert len(resp["hits"]["hits"]) == dls.b_count


def test_the_workaround_is_used_exactly_when_the_engine_needs_it(dls, es):
    """Notices when neural-search#1303 no longer bites: the plain hybrid query then works for a
    DLS user, and the searcher (which probes for the refusal) must stop adding the suggest."""
    version = es.version
    try:
        resp = dls.reader_b.search(dls.index, _hybrid_body(_vector(), dls.admin, suggest=False))
        refused = False
        assert {h["_source"]["tenant"] for h in resp["hits"]["hits"]} == {TENANT_B}
    except EngineError as exc:
        refused = True
        assert is_hybrid_dls_refusal(exc.message), exc.message
    assert refused == _needs_workaround(es), (
        f"OpenSearch {version}: a DLS user's plain hybrid query was "
        f"{'refused' if refused else 'accepted'}; update WORKAROUND_NEEDED_THROUGH and the README"
    )
    searcher = _searcher(dls, "native")
    resp = searcher.search("contract rate", AGENT_B, now=NOW, rerank=False)
    assert resp.fusion_path == "native-rrf"
    assert searcher.dls_suggest is refused


@pytest.mark.parametrize(
    "body",
    [
        {"query": {"match_all": {}}, "size": 100},
        {"query": {"terms": {"tenant": [TENANT_A, TENANT_B]}}, "size": 100},
        {"query": {"knn": {"embedding": {"vector": "VECTOR", "k": 100}}}, "size": 100},
    ],
    ids=["match_all", "terms-on-tenant", "knn-leg"],
)
def test_a_query_without_the_policy_filter_sees_only_the_callers_tenant(dls, body):
    if "knn" in body["query"]:
        body = {"query": {"knn": {"embedding": {"vector": _vector(), "k": 100}}}, "size": 100}
    # The attack's own raw body (no policy): sent around the library's door on purpose.
    resp = unguarded(dls.reader_b).search(dls.index, {**body, "_source": ["tenant"]})
    hits = resp["hits"]["hits"]
    assert hits and {h["_source"]["tenant"] for h in hits} == {TENANT_B}
    assert not {h["_id"] for h in hits} & set(dls.a_keys)


def test_get_mget_count_and_aggregations_are_bound_by_dls(dls):
    reader = unguarded(dls.reader_b)  # raw reads with no policy: DLS alone must hold
    assert reader.get(dls.index, dls.a_keys[0]) is None
    docs = reader.mget(dls.index, dls.a_keys[:5])
    assert not any(d.get("found") for d in docs)
    assert reader.count(dls.index) == dls.b_count
    assert reader.count(dls.index, {"term": {"tenant": TENANT_A}}) == 0
    aggs = reader.search(dls.index, {"size": 0, "aggs": {"t": {"terms": {"field": "tenant"}}}})[
        "aggregations"
    ]["t"]["buckets"]
    assert [b["key"] for b in aggs] == [TENANT_B]


def _searcher(dls: DlsWorld, fusion: str) -> HybridSearcher:
    return HybridSearcher(
        dls.reader_b,
        HashEmbedder(),
        index=dls.index,
        corpus_state_index=dls.state,
        fusion=fusion,  # type: ignore[arg-type]
        fusion_method="rrf",  # these tests pin the rrf pipeline (the default is linear)
    )


def test_the_searcher_on_tenant_b_credentials_cannot_reach_tenant_a(dls):
    """An application that hands the searcher the wrong principal still cannot reach tenant A
    through B's credentials: tenant A's corpus looks exactly like one that does not exist, and
    with that check passed, the policy filter (tenant A) and DLS (tenant B) intersect to
    nothing, on the native path as on the client one."""
    for fusion in ("native", "client"):
        with pytest.raises(UnknownTenantError):
            _searcher(dls, fusion).search("contract rate", AGENT_A, now=NOW, rerank=False)
        searcher = _searcher(dls, fusion)
        searcher._known_tenants.add(TENANT_A)  # as if the tenant check had passed
        resp = searcher.search("contract rate", AGENT_A, now=NOW, rerank=False)
        assert not resp.hits, fusion
        assert not resp.legs["sparse"] and not resp.legs["dense"]


def test_the_searcher_as_tenant_b_finds_tenant_b(dls):
    resp = _searcher(dls, "native").search("contract rate", AGENT_B, now=NOW, rerank=False)
    assert resp.hits and {h.source["tenant"] for h in resp.hits} == {TENANT_B}
