"""A metadata filter can only narrow a search, never widen it (issue 24).

The attacker is an agent of tenant demo-A who writes the filter. Every record in the world
carries the same filterable metadata (``team: x``), the other tenant's and the ones the agent may
not see included (another user's and another group's, embargoed, deleted, superseded), so a
filter that matched on metadata alone would bring them in. Filters built to widen (tautologies,
``$or`` with a negation, ``$not`` of something false, ``$ne`` and ``$nin`` that every record
passes) return exactly the records the agent sees without a filter, never one more; one that
names a policy field is refused before anything is sent. In both tenancy modes.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from hybrid_es.cluster.templates import filter_mapping
from hybrid_es.errors import FilterError
from hybrid_es.ingest.documents import Document
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.retrieval.policy import authorize
from hybrid_es.retrieval.searcher import HybridSearcher
from tests.conftest import HashEmbedder, ingest_as_owners, travel_documents, unguarded
from tests.security.conftest import AGENT_A, AGENT_B, NOW, QUERY, SCOPE, World, make_world

pytestmark = pytest.mark.integration

FIELDS = parse_filterable_fields("team:keyword,year:number")
HIDDEN = {
    "H1-another-users": {"acl_users": ["someone-else"], "acl_groups": []},
    "H2-another-group": {"acl_groups": ["managers"]},
    "H3-embargoed": {"acl_groups": ["*"], "embargo_until": str((NOW + timedelta(days=30)).date())},
    "H4-deleted": {"acl_groups": ["*"], "deleted": True},
}
"""demo-A records the agent may not see, each for its own reason."""


def _documents() -> list[Document]:
    docs = [
        d.model_copy(update={"metadata": {**d.metadata, "team": "x", "year": 2026}})
        for d in travel_documents()
    ]
    for doc_id, fields in HIDDEN.items():
        docs.append(
            Document.model_validate(
                {
                    "id": doc_id,
                    "tenant": "demo-A",
                    "title": f"Supplier contract KYO-H12 ({doc_id})",
                    "body": "Contract KYO-H12: the April rate for the roll-in shower room "
                    f"is secret ({doc_id}).",
                    "contract_ids": ["KYO-H12"],
                    "metadata": {"team": "x", "year": 2026},
                    **fields,
                }
            )
        )
    return docs


@pytest.fixture(scope="module", params=["index-per-tenant", "shared"])
def world(request, es, bootstrapped) -> Iterator[World]:  # type: ignore[no-untyped-def]
    """The world in each tenancy mode, built once per mode for the module: every test here only
    searches it (and refreshes), so 36 tests need 2 ingests, not 36."""
    w = make_world(es, request.param)
    for tenant in ("demo-A", "demo-B"):
        index = w.layout.chunks_for(tenant)
        es.create_index(index)  # from the template, then the declared fields as bootstrap adds them
        es.put_mapping(index, {"properties": {"meta_filter": filter_mapping(FIELDS)}})
    ingest_as_owners(w.ingestor, _documents(), now=NOW)
    # fusion "auto": native on a cluster that runs it (OpenSearch), so its bodies are tried too.
    # A fixed weight: OpenSearch then fuses in its hybrid query, whose bodies the test reads.
    w.searcher = HybridSearcher(
        es, HashEmbedder(), layout=w.layout, filterable_fields=FIELDS, alpha=0.4
    )
    try:
        yield w
    finally:
        es.delete_index(w.indices)


WIDENING = [
    {"team": "x"},
    {"$or": [{"team": "x"}, {"team": {"$ne": "x"}}]},
    {"$or": [{"team": "x"}, {"$not": {"team": "x"}}]},
    {"$not": {"team": "no-such-team"}},
    {"$not": {"$and": [{"team": "x"}, {"team": "y"}]}},
    {"team": {"$nin": ["no-such-team"]}},
    {"year": {"$ne": 1}},
    {"$or": [{"year": {"$gte": 0}}, {"$not": {"year": {"$gte": 0}}}]},
    {"$not": {"$not": {"team": "x"}}},
]


def test_every_record_matches_the_filter_on_metadata_alone(world: World, es):
    # Not vacuous: read without any policy, the hidden and the other tenant's records all
    # carry the filtered value, so only the policy keeps them out below.
    es.refresh(world.layout.chunks_pattern())
    body = {"query": {"term": {"meta_filter.team": "x"}}, "size": 100, "_source": ["doc_id"]}
    hits = unguarded(es).search(world.layout.chunks_pattern(), body)["hits"]["hits"]
    assert {*HIDDEN, "D5-other-tenant", "D0-stale-contract"} <= {
        h["_source"]["doc_id"] for h in hits
    }


@pytest.mark.parametrize("filters", WIDENING, ids=range(len(WIDENING)))
def test_a_filter_never_widens_the_callers_scope(world: World, es, filters):
    unfiltered = world.searcher.search(QUERY, AGENT_A, SCOPE, now=NOW, rerank=False, top_k=50)
    seen = {h.doc_id for h in unfiltered.hits}
    assert seen and not seen & set(HIDDEN)
    resp = world.searcher.search(
        QUERY, AGENT_A, SCOPE, now=NOW, rerank=False, top_k=50, filters=filters
    )
    got = {h.doc_id for h in resp.hits}
    if es.flavor == "opensearch":  # the hybrid query's bodies, with the filter in each leaf
        assert resp.fusion_path.startswith("native"), resp.fusion_reason
    # Every one of these filters is true of every record: the answer is the caller's scope.
    assert got == seen, (filters, sorted(got ^ seen))
    for h in resp.hits:
        assert h.source["tenant"] == "demo-A" and h.doc_id not in HIDDEN
        assert authorize(AGENT_A, SCOPE, NOW, h.source).allowed
    for leg in resp.legs.values():
        assert not {cid.split("::")[0] for cid in leg} & {*HIDDEN, "D5-other-tenant"}


def test_the_other_tenant_is_not_reached_by_a_filter_either(world: World):
    a = world.searcher.search(
        QUERY, AGENT_B, SCOPE, now=NOW, rerank=False, top_k=50, filters=WIDENING[1]
    )
    assert {h.doc_id for h in a.hits} == {"D5-other-tenant"}


@pytest.mark.parametrize(
    "filters",
    [
        {"tenant": "demo-B"},
        {"$or": [{"team": "x"}, {"tenant": "demo-B"}]},
        {"$or": [{"team": "x"}, {"acl_groups": "managers"}]},
        {"$not": {"deleted": True}},
        {"$or": [{"team": "x"}, {"embargo_until": {"$gte": "2000-01-01"}}]},
        {"superseded_by": {"$ne": "x"}},
        {"booking_ids": {"$in": ["JPN-2026-0417"]}},
    ],
)
def test_a_filter_on_a_policy_field_is_refused(world: World, filters):
    with pytest.raises(FilterError, match="is a policy field"):
        world.searcher.search(QUERY, AGENT_A, SCOPE, now=NOW, filters=filters)
