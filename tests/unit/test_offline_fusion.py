"""Offline fusion of cached legs (evaluation.offline_fusion): the per-query spread rule, the gate,
and runs keyed by document or chunk."""

from __future__ import annotations

import math

import pytest

from hybrid_es.evaluation import offline_fusion as O
from hybrid_es.retrieval import fusion as F

SPARSE = [("c1", "d1", 12.0), ("c3", "d2", 3.0), ("c2", "d1", 2.0), ("c4", "d3", 1.0)]
DENSE = [("c3", "d2", 0.80), ("c4", "d3", 0.79), ("c1", "d1", 0.78)]
# Legs long enough for the spread rule (fusion.MIN_SPREAD_HITS).
LONG_SPARSE = [*SPARSE, ("c5", "d4", 0.5)]
LONG_DENSE = [*DENSE, ("c5", "d4", 0.70), ("c2", "d1", 0.69)]


def _sd(xs: list[float]) -> float:
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def test_top_margin_is_the_best_score_in_standard_deviations() -> None:
    xs = [12.0, 3.0, 2.0, 1.0]
    assert F.top_margin(xs) == pytest.approx((12.0 - 4.5) / _sd(xs))
    assert F.top_margin([5.0, 5.0]) == 0.0
    assert F.top_margin([5.0]) == 0.0
    assert F.top_margin([]) == 0.0
    # scale-free: a leg multiplied by 100 stands out as much
    assert F.top_margin([1200.0, 300.0, 200.0, 100.0]) == pytest.approx(F.top_margin(xs))


def test_spread_alpha_leans_to_the_leg_whose_top_stands_out() -> None:
    ms = F.top_margin([s for _, _, s in LONG_SPARSE])
    md = F.top_margin([s for _, _, s in LONG_DENSE])
    assert O.spread_alpha(LONG_SPARSE, LONG_DENSE) == pytest.approx(md / (ms + md))
    assert O.spread_alpha(LONG_SPARSE, LONG_DENSE) < 0.5  # BM25's top hit stands out here
    assert O.spread_alpha([], []) == F.FIXED_ALPHA  # no spread to read in a short leg
    assert O.spread_alpha(SPARSE, []) == F.FIXED_ALPHA


def test_spread_weighted_follows_the_confident_leg() -> None:
    # BM25's top (c1) stands far above its list, so it stays first, where RRF puts c3 (ranks 2
    # and 1: 1 / 62 + 1 / 61 beats c1's 1 / 61 + 1 / 63) first.
    assert O.spread_weighted()(LONG_SPARSE, LONG_DENSE)[0] == "c1"
    assert O.rrf(60)(LONG_SPARSE, LONG_DENSE)[0] == "c3"
    assert O.only(1)(SPARSE, DENSE) == ["c3", "c4", "c1"]


def _col(unit: str, embedder: str = "sentence-transformers/all-MiniLM-L6-v2") -> dict:
    return {
        "name": "t",
        "unit": unit,
        "embedder": embedder,
        "queries": {"en": "what is c", "zh": "什么是数据"},
        "qrels": {"en": {"d2": 1}, "zh": {"d2": 1}},
        "legs": {
            "en": {"bm25": [list(x) for x in SPARSE], "dense": [list(x) for x in DENSE]},
            "zh": {"bm25": [list(x) for x in SPARSE], "dense": [list(x) for x in DENSE]},
        },
    }


def test_fused_run_keys_by_best_chunks_document_and_gates_minilm_on_chinese() -> None:
    run = O.fused_run(_col("doc"), O.only(1))
    assert list(run["en"]) == ["d2", "d3", "d1"]
    assert list(run["zh"]) == []  # MiniLM's kNN leg is dropped for a Chinese question
    assert list(O.fused_run(_col("doc"), O.only(1), gate=False)["zh"]) == ["d2", "d3", "d1"]
    e5 = _col("doc", embedder="intfloat/multilingual-e5-small")
    assert list(O.fused_run(e5, O.only(1))["zh"]) == ["d2", "d3", "d1"]
    chunks = O.fused_run(_col("chunk"), O.only(0))
    assert list(chunks["en"]) == ["c1", "c3", "c2", "c4"]
    assert list(O.fused_run(_col("doc"), O.only(0))["en"]) == ["d1", "d2", "d3"]


def test_score_table_scores_every_candidate_on_every_collection() -> None:
    table = O.score_table([_col("doc")], {"bm25": O.only(0), "knn": O.only(1)}, metric="ndcg@10")
    assert table["knn"]["t"] == pytest.approx(0.5)  # en: d2 first (1.0); zh gated: 0.0
    assert table["bm25"]["t"] == pytest.approx(1 / math.log2(3))


def test_interleaved_latency_times_every_embedder_on_every_text_in_turn() -> None:
    from benchmarks.embed_latency import interleaved_latency

    calls: list[tuple[str, str]] = []
    embed = {n: (lambda texts, n=n: calls.append((n, texts[0]))) for n in ("a", "b")}
    ms = interleaved_latency(embed, ["t1", "t2", "t3"])
    assert calls == [("a", "t1"), ("b", "t1"), ("b", "t2"), ("a", "t2"), ("a", "t3"), ("b", "t3")]
    assert [len(v) for v in ms.values()] == [3, 3]
    assert all(x >= 0.0 for v in ms.values() for x in v)
