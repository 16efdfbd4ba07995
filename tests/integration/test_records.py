"""Listing records without a query (``HybridSearcher.records`` / ``count_records``), what the
framework stores read: the same policy as a search decides what is listed, on both engines.

Each listing is checked against the search policy evaluated in Python (``policy.authorize``)
over every stored record, read raw: a listing holds exactly the records the caller may read.
"""

from __future__ import annotations

import pytest

from hybrid_es.errors import BadQueryError, FilterError
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.policy import authorize
from tests.conftest import owner, unguarded
from tests.integration import test_filters
from tests.integration.test_filters import AGENT, NOW, SCOPE, searcher

indices = test_filters.indices  # the fixtures: the travel fixture with metadata, filterable
travel = test_filters.travel


def allowed(es, index: str, who: Principal, scope: RequestScope) -> set[str]:  # type: ignore[no-untyped-def]
    """The chunk ids the policy admits for ``who``, by Python over every stored record."""
    hits = unguarded(es).search(index, {"size": 1000, "query": {"match_all": {}}})["hits"]["hits"]
    return {
        h["_source"]["chunk_id"] for h in hits if authorize(who, scope, NOW, h["_source"]).allowed
    }


def test_a_listing_holds_exactly_what_the_policy_admits(es, travel):  # type: ignore[no-untyped-def]
    s = searcher(es, travel)
    for who, scope in ((AGENT, SCOPE), (AGENT, RequestScope()), (owner("demo-A"), SCOPE)):
        got = s.records(who, scope=scope, now=NOW)
        want = allowed(es, travel, who, scope)
        assert want, "the fixture should give every caller something"
        assert {r.chunk_id for r in got} == want
        assert s.count_records(who, scope=scope, now=NOW) == len(want)
        assert [(r.doc_id, r.chunk_no) for r in got] == sorted((r.doc_id, r.chunk_no) for r in got)
        assert all(r.text and "embedding" not in r.source for r in got)


def test_another_tenants_records_look_like_missing_ones(es, travel):  # type: ignore[no-untyped-def]
    s = searcher(es, travel)
    b_ids = [r.chunk_id for r in s.records(owner("demo-B"), now=NOW)]
    b_docs = sorted({r.doc_id for r in s.records(owner("demo-B"), now=NOW)})
    assert b_ids
    a = owner("demo-A")
    assert s.records(a, chunk_ids=b_ids, now=NOW) == []
    assert s.records(a, chunk_ids=["no-such-chunk"], now=NOW) == []
    only_b = [d for d in b_docs if d not in {r.doc_id for r in s.records(a, now=NOW)}]
    assert s.records(a, doc_ids=only_b, now=NOW) == []


def test_filters_narrow_a_listing_and_bad_ones_send_nothing(es, travel):  # type: ignore[no-untyped-def]
    s = searcher(es, travel)
    everything = s.records(AGENT, scope=SCOPE, now=NOW)
    contracts = s.records(AGENT, scope=SCOPE, filters={"team": "contracts"}, now=NOW)
    assert contracts and len(contracts) < len(everything)
    assert all("contracts" in str(r.metadata.get("team")) for r in contracts)
    assert {r.chunk_id for r in contracts} < {r.chunk_id for r in everything}
    for bad in ({"tenant": "demo-B"}, {"nope": 1}, {"team": {"$regex": ".*"}}):
        with pytest.raises(FilterError):
            s.records(AGENT, scope=SCOPE, filters=bad, now=NOW)


def test_more_records_than_the_limit_is_an_error_not_a_cut(es, travel):  # type: ignore[no-untyped-def]
    s = searcher(es, travel)
    a = owner("demo-A")
    n = s.count_records(a, now=NOW)
    assert len(s.records(a, limit=n, now=NOW)) == n
    with pytest.raises(BadQueryError, match=f"more than {n - 1} records match"):
        s.records(a, limit=n - 1, now=NOW)
    with pytest.raises(BadQueryError, match="limit"):
        s.records(a, limit=0, now=NOW)


def test_a_tenant_with_no_corpus_lists_nothing(es, travel):  # type: ignore[no-untyped-def]
    s = searcher(es, travel)
    nobody = Principal(tenant="demo-nobody", user_id="x", roles=("owner",))
    assert s.records(nobody, now=NOW) == []
    assert s.count_records(nobody, now=NOW) == 0
