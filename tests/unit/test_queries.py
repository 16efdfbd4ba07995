"""Request builders, query cleaning, retrieval knobs, and the policy-filter check on bodies.

The golden files under tests/golden/ hold the exact bodies sent to Elasticsearch for one
question. Rebuild them after an intended change with:

    REGEN_GOLDEN=1 python -m pytest tests/unit/test_queries.py

and read the diff before committing it.
"""

from __future__ import annotations

import copy
import json
import os
from datetime import date
from pathlib import Path

import pytest

from hybrid_es.errors import BadQueryError, PolicyViolationError
from hybrid_es.models import Principal, RequestScope
from hybrid_es.retrieval.dialects import OpenSearchDialect, assert_policy_opensearch
from hybrid_es.retrieval.fusion import FIXED_ALPHA
from hybrid_es.retrieval.policy import policy_filter
from hybrid_es.retrieval.queries import (
    ID_BOOST,
    ID_FIELDS,
    MAX_NUM_CANDIDATES,
    MAX_QUERY_CHARS,
    RetrievalParams,
    assert_policy,
    clean_query,
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
POLICY = policy_filter(PRINCIPAL, SCOPE, NOW)
PARAMS = RetrievalParams()


def _leaves():
    return [standard_retriever(QUERY, POLICY), knn_retriever(VECTOR, POLICY, PARAMS)]


def build_golden() -> dict[str, object]:
    """The bodies the searcher sends for the golden question, by golden file name.

    Mirrors ``Searcher._retrieve``: the native body fuses both leaves, the client path sends
    each leaf as its own search; every body asks for ``window`` hits.
    """
    window = PARAMS.window
    opensearch = OpenSearchDialect()
    return {
        "rrf_kyo_h12.json": search_body(rrf_retriever(_leaves(), PARAMS), window),
        "client_legs_kyo_h12.json": [search_body(leaf, window) for leaf in _leaves()],
        # OpenSearch's native fusion: the hybrid query, fused by the inline search pipeline
        # (2.19 reads the rank constant under the processor's parameters).
        "opensearch_hybrid_rrf_kyo_h12.json": opensearch.native(
            QUERY, VECTOR, POLICY, PARAMS, "rrf", FIXED_ALPHA
        ),
        "opensearch_hybrid_linear_kyo_h12.json": opensearch.native(
            QUERY, VECTOR, POLICY, PARAMS, "linear", FIXED_ALPHA
        ),
    }


def regenerate_golden() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, body in build_golden().items():
        (GOLDEN / name).write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")


if os.environ.get("REGEN_GOLDEN") == "1":
    regenerate_golden()


def _golden(name):
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))


def _bodies(name):
    data = _golden(name)
    return data if isinstance(data, list) else [data]


# --- clean_query ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\t\n", "\x00\x07\x1b"])
def test_clean_query_refuses_empty(text):
    with pytest.raises(BadQueryError, match="empty"):
        clean_query(text)


def test_clean_query_turns_control_characters_into_spaces():
    assert clean_query("  KYO-H12\x00rate\n\tApril\x7f ") == "KYO-H12 rate April"


def test_clean_query_length_limit():
    assert clean_query("a" * MAX_QUERY_CHARS) == "a" * MAX_QUERY_CHARS
    with pytest.raises(BadQueryError, match=f"limit is {MAX_QUERY_CHARS}"):
        clean_query("a" * (MAX_QUERY_CHARS + 1))


def test_clean_query_counts_after_collapsing_whitespace():
    # Padding is not the user's fault: the limit applies to the cleaned text.
    assert clean_query(" " * MAX_QUERY_CHARS + "rate") == "rate"


def test_clean_query_refuses_non_text():
    with pytest.raises(BadQueryError, match="must be text"):
        clean_query(b"rate")  # type: ignore[arg-type]


def test_clean_query_keeps_lucene_syntax_as_plain_text():
    text = 'title:(a OR b) AND c* "quoted" -x +y ~2 \\'
    assert clean_query(text) == text
    # And it reaches Elasticsearch as multi_match text, not as a query_string.
    leaf = standard_retriever(clean_query(text), POLICY)
    should = leaf["standard"]["query"]["bool"]["should"]
    assert should[0]["multi_match"]["query"] == text
    assert "query_string" not in json.dumps(leaf)


# --- RetrievalParams --------------------------------------------------------------------------


def test_retrieval_params_defaults():
    assert (PARAMS.window, PARAMS.num_candidates, PARAMS.rank_constant) == (50, 100, 60)
    assert PARAMS.vector_field == "embedding"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"window": 0}, "window"),
        ({"window": 101, "num_candidates": 100}, "k <= num_candidates"),
        ({"num_candidates": MAX_NUM_CANDIDATES + 1}, "num_candidates must be"),
        ({"num_candidates": 0}, "num_candidates must be"),
        ({"rank_constant": -1}, "rank_constant"),
        ({"rank_constant": float("nan")}, "rank_constant"),
        ({"rank_constant": float("inf")}, "rank_constant"),
        # Issue 11, item 12: native rrf needs an integer >= 1; both paths accept the same values.
        ({"rank_constant": 0}, "integer >= 1"),
        ({"rank_constant": 1.5}, "integer >= 1"),
        ({"rank_constant": 60.0}, "integer >= 1"),
    ],
)
def test_retrieval_params_refuses_bad_values(kwargs, message):
    with pytest.raises(BadQueryError, match=message):
        RetrievalParams(**kwargs)


def test_retrieval_params_edges_are_allowed():
    assert RetrievalParams(window=100, num_candidates=100).window == 100
    assert RetrievalParams(num_candidates=MAX_NUM_CANDIDATES).num_candidates == MAX_NUM_CANDIDATES
    assert RetrievalParams(rank_constant=1).rank_constant == 1


# --- builders ---------------------------------------------------------------------------------


def test_standard_retriever_adds_exact_id_terms():
    leaf = standard_retriever(QUERY, POLICY)
    query = leaf["standard"]["query"]["bool"]
    assert query["filter"] == [POLICY]
    assert query["minimum_should_match"] == 1
    assert query["should"][1] == {
        "match": {"search_terms": {"query": "kyo h12 april roll shower rate"}}
    }
    assert query["should"][2:] == [
        {"terms": {f: ["KYO-H12"], "boost": ID_BOOST}} for f in ID_FIELDS
    ]


def test_standard_retriever_without_ids_is_text_only():
    leaf = standard_retriever("what is the April rate for a roll-in shower room", POLICY)
    should = leaf["standard"]["query"]["bool"]["should"]
    assert len(should) == 2
    assert "multi_match" in should[0]
    # stemmed, stop words dropped (client-side analysis)
    assert should[1] == {"match": {"search_terms": {"query": "what april rate roll shower room"}}}
    assert not [c for c in should if "terms" in c]  # no exact-identifier clause


def test_knn_retriever():
    params = RetrievalParams(window=10, num_candidates=200, vector_field="vec")
    assert knn_retriever([1, 0.5], POLICY, params) == {
        "knn": {
            "field": "vec",
            "query_vector": [1.0, 0.5],
            "k": 10,
            "num_candidates": 200,
            "filter": POLICY,
        }
    }


def test_knn_query_vector_is_plain_floats():
    # numpy floats and ints are not JSON serialisable by every transport: they are converted.
    vector = knn_retriever([1, 2], POLICY, PARAMS)["knn"]["query_vector"]
    assert [type(x) for x in vector] == [float, float]


def test_rrf_retriever():
    leaves = _leaves()
    params = RetrievalParams(window=20, rank_constant=10)
    assert rrf_retriever(leaves, params) == {
        "rrf": {"retrievers": leaves, "rank_constant": 10, "rank_window_size": 20}
    }


def test_a_leg_returns_ids_and_scores_only_and_counts_no_hits():
    body = search_body({"standard": {}}, 7)
    assert body == {
        "retriever": {"standard": {}},
        "size": 7,
        "_source": False,
        "track_total_hits": False,
    }


def test_opensearch_legs_count_no_hits_but_its_hybrid_query_keeps_the_count():
    dialect = OpenSearchDialect()
    assert dialect.sparse_body(QUERY, POLICY, PARAMS)["track_total_hits"] is False
    assert dialect.dense_body(VECTOR, POLICY, PARAMS)["track_total_hits"] is False
    native = dialect.native(QUERY, VECTOR, POLICY, PARAMS, "rrf", FIXED_ALPHA)
    assert "track_total_hits" not in native


def test_the_records_of_the_head_are_read_under_the_policy_without_the_embedding():
    policy = {"bool": {"filter": [{"term": {"tenant": "t"}}]}}
    body = records_body(["t::a", "t::b"], policy)
    assert body == {
        "query": {"bool": {"filter": [policy, {"ids": {"values": ["t::a", "t::b"]}}]}},
        "size": 2,
        "_source": {"excludes": ["embedding"]},
    }
    assert assert_policy(body, policy) == 1
    assert assert_policy_opensearch(body, policy) == 1
    with pytest.raises(PolicyViolationError):
        assert_policy(records_body(["t::a"], {"term": {"tenant": "other"}}), policy)


# --- assert_policy ----------------------------------------------------------------------------


def test_assert_policy_accepts_the_rrf_body_and_counts_leaves():
    body = search_body(rrf_retriever(_leaves(), PARAMS), 50)
    assert assert_policy(body, POLICY) == 2


@pytest.mark.parametrize("leg", [0, 1])
def test_assert_policy_accepts_each_leg(leg):
    assert assert_policy(search_body(_leaves()[leg], 50), POLICY) == 1


def test_assert_policy_accepts_top_level_query_and_knn():
    body = {
        "query": {"bool": {"filter": [POLICY]}},
        "knn": [{"field": "embedding", "filter": [POLICY]}, {"field": "e", "filter": POLICY}],
    }
    assert assert_policy(body, POLICY) == 3


def _rrf_body():
    return search_body(rrf_retriever(_leaves(), PARAMS), 50)


def _without_standard_filter(body):
    body["retriever"]["rrf"]["retrievers"][0]["standard"]["query"]["bool"]["filter"] = []


def _without_knn_filter(body):
    del body["retriever"]["rrf"]["retrievers"][1]["knn"]["filter"]


def _standard_filter_one_clause_short(body):
    bool_ = body["retriever"]["rrf"]["retrievers"][0]["standard"]["query"]["bool"]
    bool_["filter"][0]["bool"]["filter"].pop()


def _knn_filter_one_clause_short(body):
    body["retriever"]["rrf"]["retrievers"][1]["knn"]["filter"]["bool"]["must_not"].pop()


def _post_filter(body):
    body["post_filter"] = POLICY


def _aggs(body):
    body["aggs"] = {"tenants": {"terms": {"field": "tenant"}}}


def _empty_rrf(body):
    body["retriever"]["rrf"]["retrievers"] = []


@pytest.mark.parametrize(
    "breakage",
    [
        _without_standard_filter,
        _without_knn_filter,
        _standard_filter_one_clause_short,
        _knn_filter_one_clause_short,
        _post_filter,
        _aggs,
        _empty_rrf,
    ],
)
def test_assert_policy_refuses_a_broken_body(breakage):
    body = copy.deepcopy(_rrf_body())
    breakage(body)
    with pytest.raises(PolicyViolationError):
        assert_policy(body, POLICY)


def test_assert_policy_refuses_an_unknown_retriever_even_around_a_filtered_leaf():
    # A reranker over a compliant leaf could still be given other inputs; refuse what cannot
    # be verified rather than guess at its structure.
    reranker = {
        "text_similarity_reranker": {
            "retriever": _leaves()[0],
            "field": "search_payload",
            "inference_id": "my-reranker",
            "inference_text": QUERY,
        }
    }
    with pytest.raises(PolicyViolationError, match="'text_similarity_reranker' is not allowed"):
        assert_policy(search_body(reranker, 50), POLICY)
    inside_rrf = search_body(rrf_retriever([*_leaves(), reranker], PARAMS), 50)
    with pytest.raises(PolicyViolationError, match="'text_similarity_reranker' is not allowed"):
        assert_policy(inside_rrf, POLICY)


@pytest.mark.parametrize("key", ["post_filter", "aggs", "rescore", "suggest"])
def test_assert_policy_refuses_unexpected_top_level_keys(key):
    body = {**_rrf_body(), key: {}}
    with pytest.raises(PolicyViolationError, match=f"unexpected top-level keys \\['{key}'\\]"):
        assert_policy(body, POLICY)


def test_assert_policy_refuses_a_body_with_nothing_to_check():
    with pytest.raises(PolicyViolationError, match="no retriever"):
        assert_policy({"size": 10}, POLICY)


def test_assert_policy_refuses_another_principals_filter():
    other = policy_filter(PRINCIPAL.model_copy(update={"tenant": "demo-B"}), SCOPE, NOW)
    body = search_body(rrf_retriever([standard_retriever(QUERY, other)], PARAMS), 50)
    with pytest.raises(PolicyViolationError, match="standard query"):
        assert_policy(body, POLICY)


# --- golden bodies ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(build_golden()))
def test_builders_match_golden(name):
    assert build_golden()[name] == _golden(name)


@pytest.mark.parametrize("name", sorted(build_golden()))
def test_builders_match_golden_byte_for_byte(name):
    # Stricter than the parsed comparison above: key order too. The engine sends each body as
    # json.dumps in the dict's own key order, and elasticsearch.dsl writes keys in its classes'
    # order, not ours (issue 14, item 5: the golden bodies stay byte-identical).
    text = (GOLDEN / name).read_text(encoding="utf-8")
    assert json.dumps(build_golden()[name], indent=2) + "\n" == text


def _plain_json(node) -> bool:
    if isinstance(node, dict):
        return type(node) is dict and all(
            type(k) is str and _plain_json(v) for k, v in node.items()
        )
    if isinstance(node, list):
        return type(node) is list and all(_plain_json(v) for v in node)
    return node is None or type(node) in (str, int, float, bool)


@pytest.mark.parametrize(
    "text",
    [QUERY, "what is the April rate", "京都の4月の料金", "BK-1234 and JPN-2026-0417", "a__b c"],
)
@pytest.mark.parametrize("with_client_terms", [True, False])
def test_sparse_leaf_is_plain_json_built_from_dsl_clauses(text, with_client_terms):
    # The clauses come from elasticsearch.dsl objects; what leaves the builder is plain dicts,
    # lists and scalars only (no AttrDict or query object reaches the transport or the check).
    leaf = standard_retriever(text, POLICY, with_client_terms=with_client_terms)
    assert _plain_json(leaf)
    assert leaf["standard"]["query"]["bool"]["should"][0]["multi_match"]["query"] == text
    assert assert_policy(search_body(leaf, 10), POLICY) == 1


@pytest.mark.parametrize("name", sorted(build_golden()))
def test_every_golden_body_carries_the_policy(name):
    check = assert_policy_opensearch if name.startswith("opensearch") else assert_policy
    for body in _bodies(name):
        assert check(body, POLICY) >= 1


def test_golden_rrf_body_shape():
    # Read independently of the builders: what a reviewer checks by eye in the file.
    body = _golden("rrf_kyo_h12.json")
    rrf = body["retriever"]["rrf"]
    assert (rrf["rank_constant"], rrf["rank_window_size"], body["size"]) == (60, 50, 50)
    standard, knn = rrf["retrievers"]
    assert standard["standard"]["query"]["bool"]["filter"] == [POLICY]
    assert knn["knn"]["filter"] == POLICY
    assert {"terms": {"contract_ids": ["KYO-H12"], "boost": 5.0}} in (
        standard["standard"]["query"]["bool"]["should"]
    )
    assert (knn["knn"]["k"], knn["knn"]["num_candidates"]) == (50, 100)
    assert len(knn["knn"]["query_vector"]) == 384
    assert body["_source"] is False  # the records are read for the fused head only
