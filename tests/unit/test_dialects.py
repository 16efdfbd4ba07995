"""The two engine dialects: request bodies, the policy check that walks them, and the version and
refusal rules that pick a path. Pure: no cluster.

The OpenSearch bodies are checked here for shape and filters; that they fuse exactly as the client
does is proven against a real OpenSearch in tests/integration/test_native_fusion.py.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, date, datetime

import pytest

from hybrid_es.cluster.capabilities import fuses_per_shard, native_fusion_works, version_tuple
from hybrid_es.cluster.engine import ElasticsearchEngine, OpenSearchEngine
from hybrid_es.errors import CapabilityMissingError, PolicyViolationError
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.dialects import (
    ElasticsearchDialect,
    OpenSearchDialect,
    assert_policy_opensearch,
    dialect_for,
    dls_suggest,
    is_hybrid_dls_refusal,
)
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import RetrievalParams, assert_policy

PRINCIPAL = Principal(tenant="demo-A", user_id="agent-1", groups=("travel-agents",))
POLICY = policy_filter(
    PRINCIPAL,
    RequestScope(stay_from=date(2026, 4, 10), stay_to=date(2026, 4, 14)),
    datetime(2026, 4, 1, 9, 0, tzinfo=UTC),
)
VECTOR = [0.25] * 8
PARAMS = RetrievalParams(window=20, num_candidates=40, rank_constant=30)
OS = OpenSearchDialect()
ES = ElasticsearchDialect()


def _native(method: str = "rrf", alpha: float = 0.6) -> dict:
    return OS.native("KYO-H12 rate", VECTOR, POLICY, PARAMS, method, alpha)  # type: ignore[arg-type]


def test_each_flavour_gets_its_dialect():
    assert isinstance(dialect_for("opensearch"), OpenSearchDialect)
    assert isinstance(dialect_for("elasticsearch"), ElasticsearchDialect)


def test_the_sparse_leg_is_the_same_query_on_both_engines():
    es_leaf = ES.sparse_body("KYO-H12 rate", POLICY, PARAMS)["retriever"]["standard"]["query"]
    os_body = OS.sparse_body("KYO-H12 rate", POLICY, PARAMS)
    assert os_body["query"] == es_leaf
    assert os_body["size"] == PARAMS.window
    assert os_body["_source"] is False  # ids and scores: the head's records are read after
    assert POLICY in os_body["query"]["bool"]["filter"]


def test_the_opensearch_knn_leg_filters_inside_the_graph_search():
    body = OS.dense_body(VECTOR, POLICY, PARAMS)
    assert body["size"] == PARAMS.window
    assert body["query"] == {
        "knn": {
            "embedding": {
                "vector": VECTOR,
                "k": PARAMS.window,
                "method_parameters": {"ef_search": PARAMS.num_candidates},
                "filter": POLICY,
            }
        }
    }


def test_the_native_body_is_a_hybrid_query_with_its_pipeline_inline():
    body = _native("rrf")
    subs = body["query"]["hybrid"]["queries"]
    assert subs[0] == OS.sparse_body("KYO-H12 rate", POLICY, PARAMS)["query"]
    assert subs[1] == OS.dense_body(VECTOR, POLICY, PARAMS)["query"]
    assert "filter" not in body["query"]["hybrid"]  # 2.19 rejects a top-level hybrid filter
    (proc,) = body["search_pipeline"]["phase_results_processors"]
    assert proc["score-ranker-processor"]["combination"]["parameters"] == {"rank_constant": 30}
    assert body["size"] == PARAMS.window
    assert OS.assert_policy(body, POLICY) == 2


def test_native_linear_carries_the_searchers_weights():
    (proc,) = _native("linear", 0.25)["search_pipeline"]["phase_results_processors"]
    assert proc["normalization-processor"]["combination"]["parameters"]["weights"] == [0.75, 0.25]


def test_client_terms_can_be_left_out_of_the_sparse_leg():
    on = OS.sparse_body("running shoes", POLICY, PARAMS)["query"]["bool"]["should"]
    off_params = RetrievalParams(window=20, num_candidates=40, client_terms=False)
    off = OS.sparse_body("running shoes", POLICY, off_params)["query"]["bool"]["should"]
    assert any("search_terms" in json.dumps(c) for c in on)
    assert not any("search_terms" in json.dumps(c) for c in off)


def test_elasticsearch_refuses_native_linear_fusion():
    with pytest.raises(CapabilityMissingError, match="OpenSearch only"):
        ES.native("q", VECTOR, POLICY, PARAMS, "linear", 0.5)
    body = ES.native("q", VECTOR, POLICY, PARAMS, "rrf", 0.5)
    assert assert_policy(body, POLICY) == 2


def _drop_filter(body: dict, where: str) -> dict:
    body = copy.deepcopy(body)
    subs = body["query"]["hybrid"]["queries"]
    if where == "sparse":
        subs[0]["bool"]["filter"] = []
    else:
        subs[1]["knn"]["embedding"].pop("filter")
    return body


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: _drop_filter(b, "sparse"), "lacks the policy filter"),
        (lambda b: _drop_filter(b, "dense"), "filter"),
        (lambda b: {**b, "post_filter": {"match_all": {}}}, "unexpected top-level keys"),
        (lambda b: {**b, "aggs": {}}, "unexpected top-level keys"),
        (
            lambda b: {**b, "query": {"hybrid": {**b["query"]["hybrid"], "filter": POLICY}}},
            "sub-queries, and nothing else",
        ),
        (
            lambda b: {**b, "query": {"hybrid": {"queries": [{"match_all": {}}]}}},
            "not allowed",
        ),
        (
            lambda b: {**b, "search_pipeline": {"request_processors": [{"filter_query": {}}]}},
            "only phase_results_processors",
        ),
        (
            lambda b: {
                **b,
                "search_pipeline": {"phase_results_processors": [{"rerank": {}}]},
            },
            "processor not allowed",
        ),
        (lambda b: {**b, "query": {"match_all": {}}}, "not allowed"),
    ],
    ids=[
        "sparse-without-filter",
        "knn-without-filter",
        "post-filter",
        "aggregations",
        "top-level-hybrid-filter",
        "unfiltered-sub-query",
        "request-processor",
        "other-result-processor",
        "match-all",
    ],
)
def test_the_opensearch_policy_check_refuses_what_could_score_outside_the_filter(mutate, message):
    with pytest.raises(PolicyViolationError, match=message):
        assert_policy_opensearch(mutate(_native()), POLICY)


def test_the_suggest_workaround_passes_the_policy_check_and_scores_nothing():
    body = {**_native(), "suggest": dls_suggest()}
    assert assert_policy_opensearch(body, POLICY) == 2
    ((_, spec),) = dls_suggest().items()
    assert spec["term"] == {"field": "tenant"}


@pytest.mark.parametrize(
    ("message", "refused"),
    [
        ("hybrid query must be a top level query and cannot be wrapped into other queries", True),
        (
            "class org.apache.lucene.search.BooleanQuery cannot be cast to class "
            "org.opensearch.neuralsearch.query.HybridQuery",
            True,
        ),
        ("index_not_found_exception: no such index", False),
    ],
)
def test_the_dls_refusal_of_both_versions_is_recognised(message, refused):
    assert is_hybrid_dls_refusal(message) is refused


@pytest.mark.parametrize(
    ("version", "expected"),
    [("2.19.1", (2, 19, 1)), ("3.6.0", (3, 6, 0)), ("2.10.0-SNAPSHOT", (2, 10, 0)), ("9", (9,))],
)
def test_versions_compare_numerically(version, expected):
    assert version_tuple(version) == expected
    assert version_tuple("2.9.0") < version_tuple("2.19.0")


@pytest.mark.parametrize(
    ("engine", "per_shard"),
    [
        (OpenSearchEngine(None, version="2.19.1"), True),
        (OpenSearchEngine(None, version="3.4.0"), True),
        (OpenSearchEngine(None, version="3.6.0"), False),
        (OpenSearchEngine(None, version="unknown"), True),
        (ElasticsearchEngine(None, version="9.5.4"), False),
    ],
)
def test_which_engines_fuse_per_shard(engine, per_shard):
    assert fuses_per_shard(engine) is per_shard


def test_an_opensearch_older_than_2_19_fuses_client_side_and_names_the_minimum():
    # Decided before any request (the engine has no client here): the version alone says it.
    works, why = native_fusion_works(OpenSearchEngine(None, version="2.17.1"), "rrf")
    assert not works
    assert "OpenSearch 2.17.1 is older than 2.19" in why and "client-side" in why


def test_elasticsearch_never_fuses_linear_natively():
    works, why = native_fusion_works(ElasticsearchEngine(None, version="9.5.4"), "linear")
    assert not works and "client-side" in why
