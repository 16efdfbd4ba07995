"""A caller's filter inside the policy filter of every body (``policy.policy_filter(...,
narrowed_by=...)``), and the filtered golden bodies.

The golden question is tests/unit/test_queries.py's, with a filter on declared metadata fields;
its bodies are pinned byte for byte in tests/golden/*_filtered.json. Rebuild them after an
intended change with:

    REGEN_GOLDEN=1 python -m pytest tests/unit/test_filtered_bodies.py

and read the diff. tests/integration/test_filters.py sends them to the real Elasticsearch.
"""

from __future__ import annotations

import json
import os
from datetime import date
from pathlib import Path

import pytest

from hybrid_es.errors import PolicyViolationError
from hybrid_es.metadata_fields import parse_filterable_fields
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.dialects import OpenSearchDialect, assert_policy_opensearch
from hybrid_es.retrieval.filters import translate_filter
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import (
    RetrievalParams,
    assert_policy,
    knn_retriever,
    records_body,
    rrf_retriever,
    search_body,
    standard_retriever,
)
from tests.constants import NOW, QUERY

GOLDEN = Path(__file__).resolve().parents[1] / "golden"

PRINCIPAL = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
SCOPE = RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14))
VECTOR = [round(i / 384, 4) for i in range(384)]
PARAMS = RetrievalParams()

FIELDS = parse_filterable_fields("team:keyword,year:number,draft:boolean")
FILTER = {"team": "contracts", "year": {"$gte": 2026}, "$not": {"draft": True}}
NARROWING = translate_filter(FILTER, FIELDS)
POLICY = policy_filter(PRINCIPAL, SCOPE, NOW)
FILTERED = policy_filter(PRINCIPAL, SCOPE, NOW, narrowed_by=NARROWING)


def _leaves(policy):  # type: ignore[no-untyped-def]
    return [standard_retriever(QUERY, policy), knn_retriever(VECTOR, policy, PARAMS)]


def build_golden() -> dict[str, object]:
    """The bodies the searcher sends for the golden question with ``FILTER``."""
    window = PARAMS.window
    return {
        "rrf_kyo_h12_filtered.json": search_body(rrf_retriever(_leaves(FILTERED), PARAMS), window),
        "client_legs_kyo_h12_filtered.json": [
            search_body(leaf, window) for leaf in _leaves(FILTERED)
        ],
    }


if os.environ.get("REGEN_GOLDEN") == "1":
    for _name, _body in build_golden().items():
        (GOLDEN / _name).write_text(json.dumps(_body, indent=2) + "\n", encoding="utf-8")


def _bodies(name):  # type: ignore[no-untyped-def]
    data = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    return data if isinstance(data, list) else [data]


def test_the_filter_is_the_last_clause_of_the_policys_own_filter():
    assert NARROWING == {
        "bool": {
            "filter": [
                {"term": {"meta_filter.team": "contracts"}},
                {"range": {"meta_filter.year": {"gte": 2026}}},
                {"bool": {"must_not": [{"term": {"meta_filter.draft": True}}]}},
            ]
        }
    }
    # Every rule's clause as it was, in its place; the filter ANDed after them; the rules'
    # must_not untouched.
    assert FILTERED["bool"]["filter"] == [*POLICY["bool"]["filter"], NARROWING]
    assert FILTERED["bool"]["must_not"] == POLICY["bool"]["must_not"]
    assert policy_filter(PRINCIPAL, SCOPE, NOW, narrowed_by=None) == POLICY


def test_or_and_not_stay_inside_the_callers_clause():
    narrowing = translate_filter({"$or": [{"team": "x"}, {"$not": {"year": 1}}]}, FIELDS)
    filtered = policy_filter(PRINCIPAL, SCOPE, NOW, narrowed_by=narrowing)
    (added,) = [c for c in filtered["bool"]["filter"] if c not in POLICY["bool"]["filter"]]
    assert added == narrowing
    assert json.dumps(added).count('"should"') == 1  # the caller's own $or, nothing else


@pytest.mark.parametrize("name", sorted(build_golden()))
def test_builders_match_golden_byte_for_byte(name):
    text = (GOLDEN / name).read_text(encoding="utf-8")
    assert json.dumps(build_golden()[name], indent=2) + "\n" == text


@pytest.mark.parametrize("name", sorted(build_golden()))
def test_every_filtered_golden_body_carries_the_filtered_policy(name):
    for body in _bodies(name):
        assert assert_policy(body, FILTERED) >= 1


@pytest.mark.parametrize("name", sorted(build_golden()))
def test_a_filtered_body_is_not_the_unfiltered_policy_and_the_other_way_round(name):
    # assert_policy compares the whole filter: a leaf that dropped the caller's filter, or one
    # that carries it where the request has none, is refused.
    for body in _bodies(name):
        with pytest.raises(PolicyViolationError):
            assert_policy(body, POLICY)
    unfiltered = search_body(rrf_retriever(_leaves(POLICY), PARAMS), PARAMS.window)
    with pytest.raises(PolicyViolationError):
        assert_policy(unfiltered, FILTERED)


def test_a_leaf_without_the_filter_is_refused_beside_one_with_it():
    mixed = [standard_retriever(QUERY, FILTERED), knn_retriever(VECTOR, POLICY, PARAMS)]
    with pytest.raises(PolicyViolationError, match="knn"):
        assert_policy(search_body(rrf_retriever(mixed, PARAMS), PARAMS.window), FILTERED)


def test_the_records_read_is_under_the_filter_too():
    body = records_body(["demo-A::K::v1::c0000"], FILTERED)
    assert body["query"]["bool"]["filter"][0] == FILTERED
    assert assert_policy(body, FILTERED) == 1


@pytest.mark.parametrize("method", ["rrf", "linear"])
def test_opensearch_bodies_carry_the_filter_in_every_leaf(method):
    d = OpenSearchDialect()
    sparse = d.sparse_body(QUERY, FILTERED, PARAMS)
    dense = d.dense_body(VECTOR, FILTERED, PARAMS)
    native = d.native(QUERY, VECTOR, FILTERED, PARAMS, method, 0.4)
    for body in (sparse, dense, native):
        assert assert_policy_opensearch(body, FILTERED) >= 1
        assert json.dumps(body).count('"meta_filter.team"') == (2 if body is native else 1)
        with pytest.raises(PolicyViolationError):
            assert_policy_opensearch(body, POLICY)
