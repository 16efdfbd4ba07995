"""Rank fusion: reciprocal rank fusion and min-max linear fusion, as pure functions."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hybrid_es.retrieval.fusion import (
    DEFAULT_RANK_CONSTANT,
    FIXED_ALPHA,
    MIN_SPREAD_HITS,
    SPREAD,
    Fused,
    check_alpha,
    fixed_alpha,
    hybrid_linear,
    linear,
    minmax,
    rrf,
    spread_alpha,
    top_margin,
)

D1, D2, D4 = "D1-current-contract", "D2-accessibility-note", "D4-generic-brochure"

# The seed fixture: the BM25 leg and the kNN leg for the KYO-H12 question.
SPARSE = [D1, D4, D2]
DENSE = [D2, D1, D4]


# --- reciprocal rank fusion -------------------------------------------------------------------


def test_default_rank_constant_is_60():
    assert DEFAULT_RANK_CONSTANT == 60


def test_rrf_seed_fixture_order_and_rounded_scores():
    fused = rrf([SPARSE, DENSE])
    assert [(f.doc_id, round(f.score, 6)) for f in fused] == [
        (D1, 0.032522),
        (D2, 0.032266),
        (D4, 0.032002),
    ]


def test_rrf_seed_fixture_exact_formula_values():
    scores = {f.doc_id: f.score for f in rrf([SPARSE, DENSE])}
    assert scores[D1] == pytest.approx(1 / (60 + 1) + 1 / (60 + 2), rel=1e-12)
    assert scores[D2] == pytest.approx(1 / (60 + 3) + 1 / (60 + 1), rel=1e-12)
    assert scores[D4] == pytest.approx(1 / (60 + 2) + 1 / (60 + 3), rel=1e-12)


def test_rrf_records_one_based_rank_per_list():
    ranks = {f.doc_id: f.ranks for f in rrf([SPARSE, DENSE])}
    assert ranks == {D1: (1, 2), D2: (3, 1), D4: (2, 3)}


def test_rrf_absent_document_contributes_zero_and_rank_none():
    fused = {f.doc_id: f for f in rrf([["a", "b"], ["b"]])}
    # "a" is missing from the second list: only its first-list term counts.
    assert fused["a"].score == pytest.approx(1 / (60 + 1), rel=1e-12)
    assert fused["a"].ranks == (1, None)
    assert fused["b"].score == pytest.approx(1 / (60 + 2) + 1 / (60 + 1), rel=1e-12)
    assert fused["b"].ranks == (2, 1)


def test_rrf_custom_k():
    (only,) = rrf([["a"], ["a"]], k=10)
    assert only.score == pytest.approx(1 / (10 + 1) + 1 / (10 + 1), rel=1e-12)


def test_rrf_k_zero_is_allowed():
    fused = rrf([["a", "b"]], k=0)
    assert [(f.doc_id, f.score) for f in fused] == [("a", 1 / (0 + 1)), ("b", 1 / (0 + 2))]


@pytest.mark.parametrize("k", [-1, -0.5, math.nan, math.inf, -math.inf])
def test_rrf_rejects_negative_or_non_finite_k(k):
    with pytest.raises(ValueError, match="rank constant"):
        rrf([["a"]], k=k)


def test_rrf_rejects_duplicate_within_one_list():
    with pytest.raises(ValueError, match="more than once"):
        rrf([["a", "b"], ["c", "a", "c"]])


def test_rrf_same_id_in_different_lists_is_not_a_duplicate():
    (only,) = rrf([["a"], ["a"]])
    assert only.ranks == (1, 1)


def test_rrf_empty_input():
    assert rrf([]) == []
    assert rrf([[], []]) == []


def test_rrf_tie_broken_by_id_regardless_of_input_order():
    # "x" and "y" swap places between the lists, so their scores are exactly equal.
    forward = rrf([["y", "x"], ["x", "y"]])
    backward = rrf([["x", "y"], ["y", "x"]])
    assert forward[0].score == forward[1].score
    assert [f.doc_id for f in forward] == ["x", "y"]
    assert [f.doc_id for f in backward] == ["x", "y"]


def test_rrf_returns_fused_records():
    assert rrf([["a"]]) == [Fused("a", 1 / (60 + 1), (1,))]


def test_rrf_tie_with_three_lists_is_broken_by_id():
    # "a" ranks (1, 7, 2) and "b" ranks (7, 2, 1): the same three terms, so the same RRF score,
    # and "a" must come first by id. Summed in list order the floats differ in the last bit.
    lists = [
        ["a", "p1", "p2", "p3", "p4", "p5", "b"],
        ["p1", "b", "p2", "p3", "p4", "p5", "a"],
        ["b", "a", "p2", "p3", "p4", "p5", "p6"],
    ]
    fused = {f.doc_id: f for f in rrf(lists)}
    assert (fused["a"].ranks, fused["b"].ranks) == ((1, 7, 2), (7, 2, 1))
    assert fused["a"].score == fused["b"].score
    assert [f.doc_id for f in rrf(lists) if f.doc_id in "ab"] == ["a", "b"]


ids = st.text(alphabet="abcdefgh", min_size=1, max_size=3)


@st.composite
def rankings_and_order(draw):
    rankings = draw(st.lists(st.lists(ids, unique=True, max_size=8), max_size=4))
    return rankings, draw(st.permutations(range(len(rankings))))


@settings(database=None, max_examples=200)
@given(case=rankings_and_order(), k=st.integers(min_value=0, max_value=100))
# Found by this test: fused scores that depend on the order of the lists (see the test above).
@example(case=([[], ["a"], ["a"], ["b", "a"]], [0, 1, 3, 2]), k=100)
def test_rrf_properties(case, k):
    rankings, order = case
    fused = rrf(rankings, k=k)
    union = {d for ranking in rankings for d in ranking}
    # A permutation of the union of the inputs: every document exactly once.
    assert sorted(f.doc_id for f in fused) == sorted(union)
    assert fused == sorted(fused, key=lambda f: (-f.score, f.doc_id))
    # Reordering the lists changes which slot each rank sits in, not the fused order or scores.
    shuffled = rrf([rankings[i] for i in order], k=k)
    assert [(f.doc_id, f.score) for f in shuffled] == [(f.doc_id, f.score) for f in fused]
    by_id = {f.doc_id: f.ranks for f in fused}
    for f in shuffled:
        assert f.ranks == tuple(by_id[f.doc_id][i] for i in order)


# --- min-max linear fusion --------------------------------------------------------------------


def test_minmax_scales_to_unit_interval():
    assert minmax({"a": 2.0, "b": 4.0, "c": 3.0}) == {
        "a": (2.0 - 2.0) / (4.0 - 2.0),
        "b": (4.0 - 2.0) / (4.0 - 2.0),
        "c": (3.0 - 2.0) / (4.0 - 2.0),
    }


def test_minmax_all_equal_scores_map_to_one():
    assert minmax({"a": 7.5, "b": 7.5}) == {"a": 1.0, "b": 1.0}
    # A single score is the degenerate all-equal case.
    assert minmax({"a": 0.0}) == {"a": 1.0}


def test_minmax_empty():
    assert minmax({}) == {}


def test_minmax_floor_lifts_only_the_minimum():
    assert minmax({"a": 2.0, "b": 4.0, "c": 3.0}, floor=0.001) == {"a": 0.001, "b": 1.0, "c": 0.5}
    assert minmax({"a": 2.0, "b": 2.0}, floor=0.001) == {"a": 1.0, "b": 1.0}


def test_linear_hand_computed_example():
    sparse = {"a": 10.0, "b": 5.0, "c": 0.0}
    dense = {"b": 0.9, "d": 0.5}
    fused = {f.doc_id: f for f in linear([sparse, dense], [0.4, 0.6])}
    # sparse scales to a=1, b=0.5, c=0.001 (a list's minimum is floored); dense to b=1,
    # d=0.001; absent documents contribute 0 (OpenSearch's normalization-processor).
    assert fused["a"].score == pytest.approx(0.4 * 1.0 + 0.6 * 0.0)
    assert fused["b"].score == pytest.approx(0.4 * 0.5 + 0.6 * 1.0)
    assert fused["c"].score == pytest.approx(0.4 * 0.001 + 0.6 * 0.0)
    assert fused["d"].score == pytest.approx(0.4 * 0.0 + 0.6 * 0.001)
    assert fused["b"].ranks == (2, 1)
    assert fused["d"].ranks == (None, 2)
    assert [f.doc_id for f in linear([sparse, dense], [0.4, 0.6])] == ["b", "a", "d", "c"]


def test_linear_is_a_weighted_mean():
    # Weights need not sum to 1: the result is divided by their sum.
    halves = linear([{"a": 1.0, "b": 0.0}, {"b": 1.0}], [0.5, 0.5])
    doubles = linear([{"a": 1.0, "b": 0.0}, {"b": 1.0}], [2.0, 2.0])
    assert [(f.doc_id, f.score) for f in halves] == [(f.doc_id, f.score) for f in doubles]


def test_linear_all_equal_list_maps_to_one():
    (only,) = linear([{"a": 3.0}, {"a": 0.2}], [0.5, 0.5])
    assert only.score == pytest.approx(0.5 * 1.0 + 0.5 * 1.0)


def test_linear_rejects_weight_count_mismatch():
    with pytest.raises(ValueError, match="2 score lists but 1 weights"):
        linear([{"a": 1.0}, {"a": 1.0}], [1.0])


@pytest.mark.parametrize("weights", [[-0.1, 1.0], [math.nan, 1.0], [math.inf, 1.0], [0.0, 0.0]])
def test_linear_rejects_bad_weights(weights):
    with pytest.raises(ValueError, match="weights must be"):
        linear([{"a": 1.0}, {"b": 1.0}], weights)


def test_linear_one_zero_weight_is_allowed():
    fused = linear([{"a": 1.0, "b": 0.0}, {"b": 1.0}], [1.0, 0.0])
    assert [(f.doc_id, f.score) for f in fused] == [("a", 1.0 * 1.0), ("b", 1.0 * 0.001)]


_SCORES = st.dictionaries(
    st.text("abcdefgh", min_size=1, max_size=2),
    st.floats(min_value=-50, max_value=50, allow_nan=False, allow_infinity=False),
    max_size=12,
)


@given(
    a=_SCORES,
    b=_SCORES,
    w=st.tuples(st.floats(0, 5), st.floats(0, 5)).filter(lambda w: w[0] + w[1] > 0),
)
def test_two_lists_fuse_to_the_general_paths_scores_bit_for_bit(a, b, w):
    # A third, empty list of weight 0 sends the same two lists down the general (fsum) path.
    two = linear([a, b], list(w))
    general = linear([a, b, {}], [*w, 0.0])
    assert [(f.doc_id, f.score, f.ranks) for f in two] == [
        (f.doc_id, f.score, f.ranks[:2]) for f in general
    ]


def test_hybrid_linear_weights_dense_by_alpha():
    sparse = {"a": 2.0, "b": 1.0}
    dense = {"a": 0.1, "b": 0.3}
    fused = {f.doc_id: f.score for f in hybrid_linear(sparse, dense, alpha=0.7)}
    assert fused["a"] == pytest.approx(0.7 * 0.001 + (1 - 0.7) * 1.0)
    assert fused["b"] == pytest.approx(0.7 * 1.0 + (1 - 0.7) * 0.001)


def test_hybrid_linear_default_is_the_per_query_spread_weight():
    # Two-document legs are too short to read a spread from: the fixed weight.
    sparse = {"a": 2.0, "b": 1.0}
    dense = {"a": 0.1, "b": 0.3}
    assert hybrid_linear(sparse, dense) == hybrid_linear(sparse, dense, alpha=FIXED_ALPHA)
    # BM25's top stands out, the dense leg is flat: the weight leans to BM25.
    sparse = {"a": 12.0, "b": 3.0, "c": 2.5, "d": 2.0, "e": 1.5}
    dense = {"a": 0.50, "b": 0.52, "c": 0.51, "d": 0.49, "e": 0.50}
    w = spread_alpha(sparse.values(), dense.values())
    assert w == pytest.approx(
        top_margin(list(dense.values()))
        / (top_margin(list(sparse.values())) + top_margin(list(dense.values())))
    )
    assert w < 0.5
    assert hybrid_linear(sparse, dense) == linear([sparse, dense], [1 - w, w])
    assert hybrid_linear(sparse, dense) == hybrid_linear(sparse, dense, alpha=SPREAD)


def test_spread_weight_of_a_short_or_flat_leg():
    # A leg of fewer than two hits has no spread: the fixed weight. One BM25 hit is a strong
    # answer (a rare exact term), which a margin of 0 would have silenced.
    assert spread_alpha([3.0, 1.0], []) == FIXED_ALPHA
    assert spread_alpha([7.5], [0.9, 0.8, 0.1]) == FIXED_ALPHA
    assert spread_alpha([], [0.9, 0.1]) == FIXED_ALPHA
    flat = [1.0] * MIN_SPREAD_HITS
    assert spread_alpha(flat, [0.5] * MIN_SPREAD_HITS) == 0.5  # neither stands out
    only = hybrid_linear({"vpn": 7.5}, {"passwords": 0.62, "vpn": 0.55})
    assert [f.doc_id for f in only] == ["vpn", "passwords"]
    # Two 2-hit legs in opposite orders: margins of 1.0 each would tie them at 0.5.
    two = hybrid_linear({"vpn": 1.07, "pw": 1.00}, {"pw": 0.61, "vpn": 0.60})
    assert [f.doc_id for f in two] == ["vpn", "pw"] and two[0].score > two[1].score


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.4", "spreads", None, True, float("nan")])
def test_alpha_is_a_weight_in_0_1_or_spread(bad):
    with pytest.raises(ValueError, match="alpha"):
        check_alpha(bad)
    assert check_alpha(SPREAD) == SPREAD and check_alpha(1) == 1.0
    assert fixed_alpha(SPREAD) == FIXED_ALPHA == 0.4 and fixed_alpha(0.7) == 0.7


@pytest.mark.parametrize(("alpha", "expected"), [(0.0, ["a", "b"]), (1.0, ["b", "a"])])
def test_hybrid_linear_alpha_bounds_are_inclusive(alpha, expected):
    # alpha 0 is pure sparse, alpha 1 pure dense: the other leg's document scores 0.
    fused = hybrid_linear({"a": 1.0}, {"b": 1.0}, alpha=alpha)
    assert [f.doc_id for f in fused] == expected
    assert [f.score for f in fused] == [1.0, 0.0]


@pytest.mark.parametrize("alpha", [-0.01, 1.01, math.nan])
def test_hybrid_linear_rejects_alpha_outside_unit_interval(alpha):
    with pytest.raises(ValueError, match="alpha"):
        hybrid_linear({"a": 1.0}, {"a": 1.0}, alpha=alpha)


def test_the_settings_default_to_the_fusion_the_table_chose():
    from hybrid_es.retrieval.fusion import DEFAULT_ALPHA, DEFAULT_METHOD
    from hybrid_es.settings import Settings

    fields = Settings.model_fields
    assert fields["fusion_method"].default == DEFAULT_METHOD
    assert fields["fusion_alpha"].default == DEFAULT_ALPHA


def test_weighted_rrf_is_the_weighted_sum_of_reciprocal_ranks():
    fused = {f.doc_id: f.score for f in rrf([["a", "b"], ["b", "c"]], k=60, weights=(1.0, 0.5))}
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 0.5 / 61)
    assert fused["c"] == pytest.approx(0.5 / 62)


def test_dbsf_maps_three_standard_deviations_to_the_unit_interval():
    from hybrid_es.retrieval.fusion import dbsf

    scores = {"a": 1.0, "b": 2.0, "c": 3.0}
    sd = math.sqrt(2 / 3)
    out = dbsf(scores)
    assert out["b"] == pytest.approx(0.5)
    assert out["c"] == pytest.approx((1.0 + 3 * sd) / (6 * sd))
    assert dbsf({"a": 2.0, "b": 2.0}) == {"a": 1.0, "b": 1.0}
