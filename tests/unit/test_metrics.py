"""The metrics go through ranx and reproduce the seed's fixture numbers (linear gains)."""

import pytest

from hybrid_es.evaluation.metrics import evaluate, ranking_to_run

GAINS = {"q": {"D1-current-contract": 2, "D2-accessibility-note": 1, "D4-generic-brochure": 0}}


def test_the_target_order_scores_one_everywhere():
    run = {
        "q": ranking_to_run(["D1-current-contract", "D2-accessibility-note", "D4-generic-brochure"])
    }
    assert evaluate(GAINS, run).scores == {"recall@3": 1.0, "mrr": 1.0, "ndcg@3": 1.0}


def test_swapping_d1_and_d2_gives_the_seed_ndcg():
    # The seed's own figures: DCG 2.261860 against the ideal 2.630930, nDCG@3 0.859719 (with
    # exponential 2**rel - 1 gains it would be 0.797; linear gains are the stated convention).
    run = {
        "q": ranking_to_run(["D2-accessibility-note", "D1-current-contract", "D4-generic-brochure"])
    }
    scores = evaluate(GAINS, run).scores
    assert round(scores["ndcg@3"], 6) == 0.859719
    assert scores["recall@3"] == 1.0 and scores["mrr"] == 1.0


@pytest.mark.parametrize(
    ("ranking", "expected"),
    [
        # Worked by hand with linear gains D1=2, D2=1, D4=0 and the ideal DCG 2.630930:
        # D4, D2, D1 -> (0 + 1/log2(3) + 2/log2(4)) / ideal = 1.630930 / 2.630930.
        (
            ["D4-generic-brochure", "D2-accessibility-note", "D1-current-contract"],
            {"recall@3": 1.0, "mrr": 0.5, "ndcg@3": 0.619906},
        ),
        # D2 alone: recall 1 of 2 relevant, first relevant at rank 1, DCG 1 / ideal.
        (["D2-accessibility-note"], {"recall@3": 0.5, "mrr": 1.0, "ndcg@3": 0.380094}),
        # Only the irrelevant brochure: nothing relevant retrieved.
        (["D4-generic-brochure"], {"recall@3": 0.0, "mrr": 0.0, "ndcg@3": 0.0}),
    ],
)
def test_hand_worked_rankings(ranking, expected):
    scores = evaluate(GAINS, {"q": ranking_to_run(ranking)}).scores
    assert {m: round(v, 6) for m, v in scores.items()} == expected


def test_zero_relevant_queries_are_excluded_and_counted():
    qrels = {**GAINS, "empty": {"D4-generic-brochure": 0}}
    run = {
        "q": ranking_to_run(["D4-generic-brochure", "D1-current-contract"]),
        "empty": ranking_to_run(["D1-current-contract"]),
    }
    ev = evaluate(qrels, run)
    assert ev.queries == 1 and ev.zero_relevant == 1
    assert ev.scores["mrr"] == 0.5  # first relevant at rank 2; the empty query does not count


def test_a_query_without_results_scores_zero():
    ev = evaluate(GAINS, {})
    assert ev.scores == {"recall@3": 0.0, "mrr": 0.0, "ndcg@3": 0.0}
