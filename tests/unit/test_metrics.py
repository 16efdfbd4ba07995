"""The metrics go through ranx and reproduce the seed's fixture numbers (linear gains)."""

import math

import pytest

from hybrid_es.metrics import evaluate, ranking_to_run

GAINS = {"q": {"D1-current-contract": 2, "D2-accessibility-note": 1, "D4-generic-brochure": 0}}


def test_the_target_order_scores_one_everywhere():
    run = {
        "q": ranking_to_run(["D1-current-contract", "D2-accessibility-note", "D4-generic-brochure"])
    }
    assert evaluate(GAINS, run).scores == {"recall@3": 1.0, "mrr": 1.0, "ndcg@3": 1.0}


def test_swapping_d1_and_d2_gives_the_seed_ndcg():
    run = {
        "q": ranking_to_run(["D2-accessibility-note", "D1-current-contract", "D4-generic-brochure"])
    }
    dcg = 1 + 2 / math.log2(3)  # 2.261860
    ideal = 2 + 1 / math.log2(3)  # 2.630930
    scores = evaluate(GAINS, run).scores
    assert round(dcg, 6) == 2.261860 and round(ideal, 6) == 2.630930
    assert scores["ndcg@3"] == pytest.approx(dcg / ideal)
    assert round(scores["ndcg@3"], 6) == 0.859719
    assert scores["recall@3"] == 1.0 and scores["mrr"] == 1.0


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
